"""The PostgreSQL log's retention settings and its meetings' ages: what `store/retention.py`'s
`RetentionPolicy` reads and writes, in the schema's `retention_policy` table (revision 0001).

The settings of every tenant are read across tenants (`ALL_TENANTS`), as the reaper applies them to all.
"""

from __future__ import annotations

from datetime import UTC, datetime

from ..retention import AGES_SQL, MeetingAge, is_open
from .connections import ALL_TENANTS


class PgRetentionSettings:
    """The PostgreSQL log's retention settings and its meetings' ages (a part of `PgTranscriptLog`)."""

    def retention_settings(self) -> dict[str, int]:
        rows = self._rows("SELECT tenant, days FROM retention_policy ORDER BY tenant", tenant=ALL_TENANTS)
        return {r[0]: int(r[1]) for r in rows}

    def set_retention(self, tenant: str, days: int | None) -> None:
        with self._session(tenant) as conn:
            if days is None:
                conn.execute("DELETE FROM retention_policy WHERE tenant = %s", (tenant,))
            else:
                conn.execute("INSERT INTO retention_policy (tenant, days, set_at) VALUES (%s, %s, %s) "
                             "ON CONFLICT (tenant) DO UPDATE SET days = excluded.days, set_at = excluded.set_at",
                             (tenant, days, datetime.now(UTC).isoformat(timespec="seconds")))

    def meeting_ages(self, *, tenant: str | None = None) -> list[MeetingAge]:
        """Every meeting's age as retention reads it (`MeetingAge`), oldest first."""
        sql = AGES_SQL + ("WHERE m.tenant = %s " if tenant is not None else "") + "ORDER BY m.created_at, m.ord"
        rows = self._rows(sql, (tenant,) if tenant is not None else (),
                          tenant=tenant if tenant is not None else ALL_TENANTS)
        return [MeetingAge(r[0], r[1], r[2], r[3], r[4], is_open(r[5], r[6])) for r in rows]
