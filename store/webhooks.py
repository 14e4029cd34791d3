"""A tenant's webhook endpoints and the durable queue of their deliveries, in the log's database.

`webhooks` holds each endpoint (its URL, the events it wants, its signing secret); `webhook_deliveries` is
the queue and its record: one row per event and endpoint, made when the event happens (in the same database
whatever process noticed it), claimed by one sender at a time for a lease, and marked delivered on a 2xx or
retried later with backoff until it gives up. A delivery's id is its `webhook-id` header: it is sent under one
id however many attempts it takes, and an event enqueued twice (two processes noticing the same closure) is
stored once, by its key. Written once over the database seam (store/database.py) for both engines; every
row names its tenant, so one tenant never reads another's endpoints or deliveries.
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from .database import ALL_TENANTS
from .errors import StoreError
from .log import Log

#: The events an endpoint may ask for.
EVENTS = ("meeting.closed", "ledger.updated")
#: Attempts before a delivery is given up (about a day and a half of backoff, `RETRY_AFTER_S`).
MAX_ATTEMPTS = 8
#: Seconds before the attempt after the n-th failure (the last repeats).
RETRY_AFTER_S = (5, 30, 120, 600, 1800, 3600, 4 * 3600, 24 * 3600)
#: Secrets are at least this many random bytes (Standard Webhooks: 24 to 64).
MIN_SECRET_BYTES = 24
MAX_SECRET_BYTES = 64
SECRET_PREFIX = "whsec_"


class WebhookError(StoreError):
    """A webhook request that cannot be carried out: a bad URL, event or secret."""


class UnknownWebhook(WebhookError):
    """No such endpoint or delivery for the tenant."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    webhook_id: str
    tenant: str
    url: str
    events: tuple[str, ...]
    secret: str
    created_at: str
    description: str | None = None

    def public(self, *, with_secret: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.webhook_id, "url": self.url, "events": list(self.events),
                               "created_at": self.created_at, "description": self.description}
        if with_secret:
            out["secret"] = self.secret
        return out


@dataclass(frozen=True, slots=True)
class Delivery:
    delivery_id: str
    tenant: str
    webhook_id: str
    event: str
    meeting_id: str
    payload: str
    status: str  # pending, delivered, failed
    attempts: int
    next_attempt_at: str
    created_at: str
    last_status: int | None = None
    last_error: str | None = None
    delivered_at: str | None = None

    def public(self) -> dict[str, Any]:
        return {"id": self.delivery_id, "webhook_id": self.webhook_id, "event": self.event,
                "meeting_id": self.meeting_id, "status": self.status, "attempts": self.attempts,
                "next_attempt_at": self.next_attempt_at if self.status == "pending" else None,
                "last_status": self.last_status, "last_error": self.last_error, "created_at": self.created_at,
                "delivered_at": self.delivered_at}


_DELIVERY_COLUMNS = ("delivery_id, tenant, webhook_id, event, meeting_id, payload, status, attempts, next_attempt_at, "
                     "created_at, last_status, last_error, delivered_at")


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds")


def check_url(url: str) -> str:
    """An endpoint URL: http or https with a host, at most 2,000 characters."""
    text = (url or "").strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookError(f"webhook URL {url!r} is not an http(s) URL with a host: give one such as "
                           "https://hooks.example.com/meetmem")
    if len(text) > 2000:
        raise WebhookError("webhook URL is longer than 2,000 characters")
    return text


def check_events(events: Any) -> tuple[str, ...]:
    """The events asked for, each known, at least one, in `EVENTS` order."""
    names = [e.strip() for e in (events.split(",") if isinstance(events, str) else events or ()) if str(e).strip()]
    unknown = [e for e in names if e not in EVENTS]
    if unknown or not names:
        raise WebhookError(f"unknown webhook events {', '.join(unknown) or '(none given)'}: choose from "
                           f"{', '.join(EVENTS)}")
    return tuple(e for e in EVENTS if e in names)


def make_secret() -> str:
    """A new signing secret, `whsec_` and 32 random bytes in base64 (the Standard Webhooks form)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def check_secret(secret: str) -> str:
    """A signing secret given by the user: `whsec_` + base64 of 24 to 64 bytes."""
    body = (secret or "").strip()
    if body.startswith(SECRET_PREFIX):
        body = body[len(SECRET_PREFIX):]
    try:
        key = base64.b64decode(body, validate=True)
    except ValueError:
        raise WebhookError("the webhook secret is not base64 (give whsec_ and the base64 of 24 to 64 random "
                           "bytes, or leave it out and one is made)") from None
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise WebhookError(f"the webhook secret is {len(key)} bytes: give {MIN_SECRET_BYTES} to {MAX_SECRET_BYTES} "
                           "random bytes (shorter is guessable), or leave it out and one is made")
    return SECRET_PREFIX + base64.b64encode(key).decode("ascii")


class WebhookStore:
    """Endpoints and deliveries, on the log's database (the tables come with its schema on either engine)."""

    def __init__(self, log: Log) -> None:
        self.log = log

    def _rows(self, sql: str, args: Any = (), *, tenant: str) -> list[tuple[Any, ...]]:
        return self.log.database.rows(sql, args, tenant=tenant)

    def _write(self, tenant: str, sql: str, args: Any = ()) -> int:
        with self.log.database.session(tenant) as conn:
            cur = conn.execute(sql, args)
            return int(getattr(cur, "rowcount", 0) or 0)

    # -- endpoints --------------------------------------------------------------------------------------
    def add(self, tenant: str, url: str, events: Any, *, secret: str | None = None,
            description: str | None = None) -> Endpoint:
        """Register an endpoint; its secret (made when not given) is returned once here and by `get`."""
        endpoint = Endpoint("wh_" + secrets.token_hex(8), tenant, check_url(url), check_events(events),
                            check_secret(secret) if secret is not None else make_secret(), _iso(_now()),
                            (description or "").strip()[:200] or None)
        self._write(tenant, "INSERT INTO webhooks (webhook_id, tenant, url, events, secret, created_at, description) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [endpoint.webhook_id, tenant, endpoint.url, ",".join(endpoint.events), endpoint.secret,
                     endpoint.created_at, endpoint.description])
        return endpoint

    def list(self, tenant: str) -> list[Endpoint]:
        rows = self._rows("SELECT webhook_id, tenant, url, events, secret, created_at, description FROM webhooks "
                          "WHERE tenant = ? ORDER BY created_at, webhook_id", [tenant], tenant=tenant)
        return [Endpoint(w, t, u, tuple(e.split(",")), s, c, d) for w, t, u, e, s, c, d in rows]

    def get(self, tenant: str, webhook_id: str) -> Endpoint:
        for endpoint in self.list(tenant):
            if endpoint.webhook_id == webhook_id:
                return endpoint
        raise UnknownWebhook(f"no webhook {webhook_id!r} (see `meetmem webhook list`)")

    def remove(self, tenant: str, webhook_id: str) -> Endpoint:
        """Remove an endpoint; its pending deliveries are dropped, its record of past ones kept."""
        endpoint = self.get(tenant, webhook_id)
        with self.log.database.session(tenant) as conn:
            conn.execute("DELETE FROM webhooks WHERE tenant = ? AND webhook_id = ?", [tenant, webhook_id])
            conn.execute("UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint removed' "
                         "WHERE tenant = ? AND webhook_id = ? AND status = 'pending'", [tenant, webhook_id])
        return endpoint

    # -- deliveries -------------------------------------------------------------------------------------
    def enqueue(self, tenant: str, event: str, meeting_id: str, payload: dict[str, Any], *, key: str) -> int:
        """Queue `event` for every endpoint of the tenant that wants it; `key` names this occurrence of the
        event (a closure's chain position, a ledger's version), so a second call for it adds nothing.
        Returns the deliveries added."""
        wanting = [e for e in self.list(tenant) if event in e.events]
        if not wanting:
            return 0
        now = _iso(_now())
        added = 0
        with self.log.database.session(tenant) as conn:
            for endpoint in wanting:
                delivery_id = "msg_" + uuid.uuid4().hex
                body = json.dumps({"type": event, "timestamp": now, "data": payload}, ensure_ascii=False,
                                  separators=(",", ":"), sort_keys=True)
                cur = conn.execute(
                    "INSERT INTO webhook_deliveries (delivery_id, tenant, webhook_id, event, meeting_id, event_key, "
                    "payload, status, attempts, next_attempt_at, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?) ON CONFLICT DO NOTHING",
                    [delivery_id, tenant, endpoint.webhook_id, event, meeting_id, key, body, now, now])
                added += max(int(getattr(cur, "rowcount", 0) or 0), 0)
        return added

    def deliveries(self, tenant: str, *, webhook_id: str | None = None, limit: int = 100) -> list[Delivery]:
        sql = f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE tenant = ?"
        args: list[Any] = [tenant]
        if webhook_id is not None:
            sql += " AND webhook_id = ?"
            args.append(webhook_id)
        rows = self._rows(sql + " ORDER BY created_at DESC, delivery_id LIMIT ?", [*args, int(limit)], tenant=tenant)
        return [Delivery(*row) for row in rows]

    def due(self, *, limit: int = 16, lease_s: float = 60.0) -> list[tuple[Delivery, Endpoint]]:
        """Claim up to `limit` pending deliveries whose time has come, across tenants, for `lease_s` seconds:
        another sender (another process) skips them until the lease runs out. Returns each with its endpoint."""
        now = _now()
        rows = self._rows(
            f"SELECT {_DELIVERY_COLUMNS} FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? "
            "AND (claimed_until IS NULL OR claimed_until <= ?) ORDER BY next_attempt_at, delivery_id LIMIT ?",
            [_iso(now), _iso(now), int(limit)], tenant=ALL_TENANTS)
        claimed: list[tuple[Delivery, Endpoint]] = []
        endpoints: dict[tuple[str, str], Endpoint | None] = {}
        for row in rows:
            delivery = Delivery(*row)
            # The claim is a compare-and-set on the lease: of two senders, one gets the row.
            taken = self._write(delivery.tenant,
                                "UPDATE webhook_deliveries SET claimed_until = ? WHERE delivery_id = ? AND "
                                "status = 'pending' AND (claimed_until IS NULL OR claimed_until <= ?)",
                                [_iso(now + timedelta(seconds=lease_s)), delivery.delivery_id, _iso(now)])
            if taken != 1:
                continue
            key = (delivery.tenant, delivery.webhook_id)
            if key not in endpoints:
                try:
                    endpoints[key] = self.get(delivery.tenant, delivery.webhook_id)
                except UnknownWebhook:
                    endpoints[key] = None
            endpoint = endpoints[key]
            if endpoint is None:
                self.finish(delivery, status=None, error="endpoint removed", give_up=True)
                continue
            claimed.append((delivery, endpoint))
        return claimed

    def finish(self, delivery: Delivery, *, status: int | None, error: str | None = None,
               give_up: bool = False) -> str:
        """Record an attempt: delivered on a 2xx, else retried after `RETRY_AFTER_S` or, after `MAX_ATTEMPTS`
        (or `give_up`), failed for good. Returns the delivery's new status."""
        now = _now()
        attempts = delivery.attempts + 1
        if status is not None and 200 <= status < 300:
            new, next_at = "delivered", delivery.next_attempt_at
        elif give_up or attempts >= MAX_ATTEMPTS:
            new, next_at = "failed", delivery.next_attempt_at
        else:
            wait = RETRY_AFTER_S[min(attempts - 1, len(RETRY_AFTER_S) - 1)]
            new, next_at = "pending", _iso(now + timedelta(seconds=wait))
        self._write(delivery.tenant,
                    "UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status = ?, "
                    "last_error = ?, delivered_at = ?, claimed_until = NULL "
                    "WHERE delivery_id = ? AND status = 'pending'",
                    [new, attempts, next_at, status, (error or None) and str(error)[:500],
                     _iso(now) if new == "delivered" else None, delivery.delivery_id])
        return new

    def retry_now(self, tenant: str, delivery_id: str) -> None:
        """Bring a pending or failed delivery forward: the sender takes it on its next look."""
        if not self._rows("SELECT 1 FROM webhook_deliveries WHERE tenant = ? AND delivery_id = ?",
                          [tenant, delivery_id], tenant=tenant):
            raise UnknownWebhook(f"no delivery {delivery_id!r} (see `meetmem webhook deliveries`)")
        self._write(tenant, "UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, "
                    "claimed_until = NULL WHERE tenant = ? AND delivery_id = ? AND status != 'delivered'",
                    [_iso(_now()), tenant, delivery_id])
