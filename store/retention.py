"""Retention: each tenant's meetings are deleted once they are older than N days.

A meeting's age runs from when the server first stored a row of it (the meeting's `created_at`, stamped
with the server's arrival clock), never from a time a device gave: a `started_at` of 1970 in a batch posted
a second ago does not make the meeting old, and one of 9999 does not keep it forever (issue 30). A meeting
still receiving segments is never deleted, whatever its age: one that is open (a segment arrived after its
last closure; the server closes a meeting after `close_after_silence`) or that stored a segment within the
last `ACTIVE_WINDOW`. The number of days comes from the tenant's own setting (`meetmem retention set
--tenant T --days N`, kept in the database), else from the service's `MEETMEM_RETENTION_DAYS` (none by
default: nothing is deleted). A tenant's 0 days means "keep forever", whatever the service's default.

Deleting goes through `TranscriptLog.delete_meeting`, as any deletion: each meeting leaves a signed
tombstone whose reason names the policy.

The decisions (`RetentionPolicy`) and the settings (`RetentionSettings`, a part of the log) are written once
for both backends.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .database import ALL_TENANTS, Database, Dialect
from .errors import InvalidSegment
from .interchange import check_id

#: A meeting that stored a segment this recently is still receiving, closed or not: never deleted.
ACTIVE_WINDOW = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class MeetingAge:
    """What retention reads of one meeting, all of it stamped by the server: when its first row was stored
    (`created_at`; the earliest arrival of its segments where that is earlier), when its newest segment
    arrived, and whether it is open (it holds segments and no closure covers the newest)."""

    tenant: str
    meeting_id: str
    created_at: str
    first_received: str | None
    last_received: str | None
    open: bool


def _parse(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Expired:
    """A meeting past its tenant's retention: how old it is, from which date, and the policy's days."""

    tenant: str
    meeting_id: str
    basis: str  # "first_received": the server's time of the meeting's first stored row
    since: str
    days: int

    def public(self) -> dict[str, object]:
        return {"tenant": self.tenant, "meeting_id": self.meeting_id, "basis": self.basis, "since": self.since,
                "days": self.days}


class RetentionPolicy:
    """Per-tenant retention settings in the log's database, and which meetings they expire."""

    def __init__(self, log: RetentionSettings, *, default_days: int | None = None) -> None:
        self.log = log
        self.default_days = default_days

    def set(self, tenant: str, days: int | None) -> None:
        """The tenant's retention in days (0: keep forever); None removes the tenant's own setting."""
        check_id("tenant", tenant)
        if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days < 0):
            raise InvalidSegment(f"retention days must be a whole number, 0 (keep forever) or more; got {days!r}")
        self.log.set_retention(tenant, days)

    def settings(self) -> dict[str, int]:
        """Each tenant's own setting."""
        return self.log.retention_settings()

    def days_for(self, tenant: str) -> tuple[int | None, str]:
        """The days in force for a tenant (None: kept forever) and which setting decided it."""
        own = self.settings().get(tenant)
        if own is not None:
            return (own or None), "tenant"
        return (self.default_days or None), "service"

    def expired(self, *, now: datetime | None = None, tenant: str | None = None,
                days: int | None = None) -> list[Expired]:
        """Meetings past retention (of one tenant, or every tenant), oldest first.

        `days` overrides every tenant's setting (`meetmem retention apply --days N`).
        """
        now = now or datetime.now(UTC)
        policy: dict[str, int | None] = {}
        out: list[Expired] = []
        for age in self.log.meeting_ages(tenant=tenant):
            if days is not None:
                limit = days
            else:
                if age.tenant not in policy:
                    policy[age.tenant] = self.days_for(age.tenant)[0]
                limit = policy[age.tenant]
            if not limit or age.open:
                continue
            last = _parse(age.last_received)
            if last is not None and now - last < ACTIVE_WINDOW:
                continue
            stamps = [(when, text) for text in (age.created_at, age.first_received)
                      if (when := _parse(text)) is not None]
            if not stamps:
                continue
            when, since = min(stamps)
            if now - when > timedelta(days=limit):
                out.append(Expired(age.tenant, age.meeting_id, "first_received", since, limit))
        return out


class RetentionSettings:
    """The log's retention settings and its meetings' ages (a part of `Log`, written once for both engines;
    the settings of every tenant are read across tenants, as the reaper applies them to all)."""

    if TYPE_CHECKING:  # the log's, which these methods use
        database: Database
        dialect: Dialect

    def retention_settings(self) -> dict[str, int]:
        """Each tenant's own retention setting in days (0: keep forever)."""
        rows = self.database.rows("SELECT tenant, days FROM retention_policy ORDER BY tenant", tenant=ALL_TENANTS)
        return {r[0]: int(r[1]) for r in rows}

    def set_retention(self, tenant: str, days: int | None) -> None:
        """Set a tenant's retention in days; None removes the tenant's own setting."""
        with self.database.session(tenant) as conn:
            if days is None:
                conn.execute("DELETE FROM retention_policy WHERE tenant = ?", (tenant,))
            else:
                conn.execute("INSERT INTO retention_policy (tenant, days, set_at) VALUES (?, ?, ?) "
                             "ON CONFLICT (tenant) DO UPDATE SET days = excluded.days, set_at = excluded.set_at",
                             (tenant, days, datetime.now(UTC).isoformat(timespec="microseconds")))

    def meeting_ages(self, *, tenant: str | None = None) -> list[MeetingAge]:
        """Every meeting's age as retention reads it (`MeetingAge`), oldest first."""
        sql = (AGES_SQL + ("WHERE m.tenant = ? " if tenant is not None else "")
               + f"ORDER BY m.created_at, m.{self.dialect.ordinal}")
        rows = self.database.rows(sql, (tenant,) if tenant is not None else (),
                                  tenant=tenant if tenant is not None else ALL_TENANTS)
        return [MeetingAge(r[0], r[1], r[2], r[3], r[4], is_open(r[5], r[6])) for r in rows]


#: `(tenant, meeting_id, created_at, first and last arrival, newest chain position, newest closure's
#: through_pos)` of each meeting; the same on both backends.
AGES_SQL = (
    "SELECT m.tenant, m.meeting_id, m.created_at, "
    "(SELECT MIN(received_at) FROM segments s WHERE s.tenant = m.tenant AND s.meeting_id = m.meeting_id), "
    "(SELECT MAX(received_at) FROM segments s WHERE s.tenant = m.tenant AND s.meeting_id = m.meeting_id), "
    "(SELECT MAX(chain_pos) FROM segments s WHERE s.tenant = m.tenant AND s.meeting_id = m.meeting_id), "
    "(SELECT MAX(through_pos) FROM meeting_closures c WHERE c.tenant = m.tenant AND c.meeting_id = m.meeting_id) "
    "FROM meetings m "
)


def is_open(head_pos: int | None, closed_through: int | None) -> bool:
    # Open: it holds segments, and no closure reaches its newest one (a segment after a closure reopens it).
    return head_pos is not None and (closed_through is None or int(closed_through) < int(head_pos))
