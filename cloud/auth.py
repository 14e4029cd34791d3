"""Bearer tokens: each names one tenant; stored only as a hash; revoked at once; may expire.

A token is `mm_<id>_<secret>`: the id lets a person list and revoke tokens without ever seeing the secret
again, the secret is 32 random bytes. The database keeps sha256 of the whole token (a random 256-bit secret
needs no slow password hash), so a copy of the database does not hand out working tokens. Every request
looks its token up afresh, so a revocation or an expiry takes effect on the next request (and open event
streams look again every few seconds).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from meetmem.store.database import ALL_TENANTS
from meetmem.store.errors import StoreError
from meetmem.store.log import Log

TOKEN_PREFIX = "mm_"
_TOKEN_RE = re.compile(r"^mm_([0-9a-f]{12})_[A-Za-z0-9_-]{43}$")
_TENANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class TokenError(StoreError):
    """A token command was given something it cannot use (an unknown token id, a bad tenant name)."""


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """What is stored about a token (never the token itself)."""

    token_id: str
    tenant: str
    created_at: str
    revoked_at: str | None
    label: str | None
    expires_at: str | None = None

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and datetime.fromisoformat(self.expires_at) <= datetime.now(UTC)

    def public(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "tenant": self.tenant, "created_at": self.created_at,
                "revoked_at": self.revoked_at, "label": self.label, "expires_at": self.expires_at,
                "active": self.revoked_at is None and not self.expired}


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_expiry(text: str, *, now: datetime | None = None) -> datetime:
    """When a token made now with `--expires TEXT` stops working: a duration (`90s`, `30m`, `12h`, `30d`, `2w`)
    or an ISO 8601 date-time with an offset (`2027-03-01T00:00:00+00:00`).

    Raises:
        TokenError: the text is neither, or names a time already past.
    """
    now = now or datetime.now(UTC)
    match = _DURATION_RE.match(text or "")
    if match:
        try:
            when = now + timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
        except OverflowError:  # timedelta and datetime stop at the year 9999
            raise TokenError(f"--expires {text!r} is too far ahead (the calendar ends at the year 9999): leave "
                             "--expires out for a token that lasts until it is revoked") from None
    else:
        try:
            when = datetime.fromisoformat(text.strip())
        except ValueError:
            raise TokenError(f"--expires {text!r}: give a duration such as 90s, 30m, 12h, 30d or 2w, or an ISO "
                             "date-time with an offset such as 2027-03-01T00:00:00+00:00") from None
        if when.tzinfo is None:
            raise TokenError(f"--expires {text!r}: add the offset (for example +00:00), so the time is not a guess")
    if when <= now:
        raise TokenError(f"--expires {text!r} is already past")
    try:
        return when.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00:00-05:00 is past the calendar's end in UTC
        raise TokenError(f"--expires {text!r} is past the year 9999") from None


#: `Authorization: <scheme> <token68>` (RFC 9110 11.4, RFC 6750 2.1): one or more spaces or tabs between them.
_AUTHORIZATION_RE = re.compile(r"^[ \t]*([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]+([A-Za-z0-9._~+/-]+=*)[ \t]*$")


def parse_bearer(header: str | bytes | None) -> str | None:
    """The token of an `Authorization: Bearer TOKEN` header, or None when there is none.

    Parsed once, here, for the routes and the rate limit alike: the scheme is case-insensitive (RFC 9110
    11.1), and the whitespace around and between its parts does not matter, so `bearer`, `BEARER` or two
    spaces name the same token (and the same rate-limit bucket, issue 30 item 10).
    """
    if header is None:
        return None
    if isinstance(header, bytes):
        try:
            header = header.decode("ascii")
        except UnicodeDecodeError:
            return None
    match = _AUTHORIZATION_RE.match(header)
    if match is None or match.group(1).lower() != "bearer":
        return None
    return match.group(2)


def check_tenant_name(tenant: str) -> str:
    """A tenant name: 1-64 letters, digits, `.`, `_` or `-`, starting with a letter or digit."""
    if not _TENANT_RE.match(tenant or ""):
        raise TokenError(
            f"invalid tenant name {tenant!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter "
            "or digit"
        )
    return tenant


class TokenStore:
    """The tokens table, kept in the same database file as the transcript log."""

    def __init__(self, log: Log) -> None:
        # The table comes with the schema on either engine (store/schema.py, store/pg/migrations).
        self.log = log

    def create(self, tenant: str, *, label: str | None = None, expires_at: datetime | None = None) -> str:
        """Make a token for `tenant` and return it; only its hash is stored, so it cannot be shown again.

        Args:
            expires_at: when the token stops working (None: until revoked).
        """
        check_tenant_name(tenant)
        token_id = secrets.token_hex(6)
        token = f"{TOKEN_PREFIX}{token_id}_{secrets.token_urlsafe(32)}"
        expires = None if expires_at is None else expires_at.astimezone(UTC).isoformat(timespec="seconds")
        self._write(
            "INSERT INTO api_tokens (token_id, token_hash, tenant, created_at, label, expires_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [token_id, _digest(token), tenant, _now(), label, expires],
        )
        return token

    def _read(self, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        return self.log.database.rows(sql, args, tenant=ALL_TENANTS)

    def _write(self, sql: str, args: Any = ()) -> None:
        with self.log.database.session(ALL_TENANTS) as conn:
            conn.execute(sql, args)

    def tenant_for(self, token: str) -> str | None:
        """The tenant a token belongs to, or None when it is unknown, malformed, revoked or expired."""
        info = self.lookup(token)
        return info.tenant if info is not None else None

    def lookup(self, token: str) -> TokenInfo | None:
        """The stored record of a working token, or None when it is unknown, malformed, revoked or expired."""
        if not _TOKEN_RE.match(token):
            return None
        rows = self._read("SELECT token_id, tenant, created_at, revoked_at, label, expires_at FROM api_tokens "
                          "WHERE token_hash = ?", (_digest(token),))
        if not rows:
            return None
        info = TokenInfo(*rows[0])
        return info if info.revoked_at is None and not info.expired else None

    def revoke(self, token_or_id: str) -> TokenInfo:
        """Revoke a token, named by the token itself or by its id; the next request with it gets 401."""
        match = _TOKEN_RE.match(token_or_id)
        token_id = match.group(1) if match else token_or_id
        if not self._read("SELECT token_id FROM api_tokens WHERE token_id = ?", [token_id]):
            raise TokenError(f"no token with id {token_id!r} (see `meetmem token list`)")
        self._write("UPDATE api_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL",
                    [_now(), token_id])
        return next(t for t in self.list() if t.token_id == token_id)

    def list(self, *, tenant: str | None = None) -> list[TokenInfo]:
        sql = "SELECT token_id, tenant, created_at, revoked_at, label, expires_at FROM api_tokens"
        args: tuple[Any, ...] = ()
        if tenant is not None:
            sql += " WHERE tenant = ?"
            args = (tenant,)
        return [TokenInfo(*row) for row in self._read(sql + " ORDER BY created_at, token_id", args)]
