"""Retention: each tenant's meetings are deleted once they are older than N days.

A meeting's age runs from its `started_at` (the metadata a device or user gave), else from the arrival of
its last segment: a meeting with no stated start is kept N days after it last heard anything. The number
of days comes from the tenant's own setting (`meetmem retention set --tenant T --days N`, kept in the
database), else from the service's `MEETMEM_RETENTION_DAYS` (none by default: nothing is deleted). A
tenant's 0 days means "keep forever", whatever the service's default.

Deleting goes through `TranscriptLog.delete_meeting`, as any deletion: each meeting leaves a signed
tombstone whose reason names the policy.

The decisions (`RetentionPolicy`) are the same on both backends; each log keeps the settings and reports its
meetings' ages: the SQLite log through `RetentionSettings` below, the PostgreSQL one through
store/pg/retention.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .errors import InvalidSegment
from .interchange import check_id

if TYPE_CHECKING:
    from .log import TranscriptLog
    from .pg.log import PgTranscriptLog


@dataclass(frozen=True, slots=True)
class Expired:
    """A meeting past its tenant's retention: how old it is, from which date, and the policy's days."""

    tenant: str
    meeting_id: str
    basis: str  # "started_at" or "last_segment"
    since: str
    days: int

    def public(self) -> dict[str, object]:
        return {"tenant": self.tenant, "meeting_id": self.meeting_id, "basis": self.basis, "since": self.since,
                "days": self.days}


class RetentionPolicy:
    """Per-tenant retention settings in the log's database, and which meetings they expire."""

    def __init__(self, log: TranscriptLog | PgTranscriptLog, *, default_days: int | None = None) -> None:
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
        rows = self.log.meeting_ages(tenant=tenant)
        policy: dict[str, int | None] = {}
        out: list[Expired] = []
        for t, meeting_id, started_at, last, created_at in rows:
            if days is not None:
                limit = days
            else:
                if t not in policy:
                    policy[t] = self.days_for(t)[0]
                limit = policy[t]
            if not limit:
                continue
            basis, since = ("started_at", started_at) if started_at else ("last_segment", last or created_at)
            try:
                when = datetime.fromisoformat(since)
            except (TypeError, ValueError):
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            if now - when > timedelta(days=limit):
                out.append(Expired(t, meeting_id, basis, since, limit))
        return out


class RetentionSettings:
    """The SQLite log's retention settings and its meetings' ages (a part of `TranscriptLog`)."""

    def _retention_table(self) -> None:
        with self.transaction():
            self.db.execute("CREATE TABLE IF NOT EXISTS retention_policy (tenant TEXT PRIMARY KEY, "
                            "days INTEGER NOT NULL, set_at TEXT NOT NULL)")

    def retention_settings(self) -> dict[str, int]:
        """Each tenant's own retention setting in days (0: keep forever)."""
        self._retention_table()
        return {r[0]: int(r[1]) for r in self.read("SELECT tenant, days FROM retention_policy ORDER BY tenant")}

    def set_retention(self, tenant: str, days: int | None) -> None:
        """Set a tenant's retention in days; None removes the tenant's own setting."""
        self._retention_table()
        with self.transaction():
            if days is None:
                self.db.execute("DELETE FROM retention_policy WHERE tenant = ?", (tenant,))
            else:
                self.db.execute("INSERT OR REPLACE INTO retention_policy VALUES (?, ?, ?)",
                                (tenant, days, datetime.now(UTC).isoformat(timespec="microseconds")))

    def meeting_ages(self, *, tenant: str | None = None) -> list[tuple[str, str, str | None, str | None, str]]:
        """`(tenant, meeting_id, started_at, last segment's arrival, created_at)` of every meeting, oldest first."""
        return [tuple(r) for r in self.read(  # type: ignore[misc]
            "SELECT m.tenant, m.meeting_id, m.started_at, (SELECT MAX(received_at) FROM segments s "
            "WHERE s.tenant = m.tenant AND s.meeting_id = m.meeting_id), m.created_at FROM meetings m "
            + ("WHERE m.tenant = ? " if tenant is not None else "") + "ORDER BY m.created_at, m.rowid",
            (tenant,) if tenant is not None else (),
        )]
