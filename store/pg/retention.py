"""The PostgreSQL log's retention settings and its meetings' ages: what `store/retention.py`'s
`RetentionPolicy` reads and writes, in the schema's `retention_policy` table (revision 0001).

The settings of every tenant are read across tenants (`ALL_TENANTS`), as the reaper applies them to all.
"""

from __future__ import annotations

from datetime import UTC, datetime

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

    def meeting_ages(self, *, tenant: str | None = None) -> list[tuple[str, str, str | None, str | None, str]]:
        sql = ("SELECT m.tenant, m.meeting_id, m.started_at, (SELECT MAX(received_at) FROM segments s "
               "WHERE s.tenant = m.tenant AND s.meeting_id = m.meeting_id), m.created_at FROM meetings m "
               + ("WHERE m.tenant = %s " if tenant is not None else "") + "ORDER BY m.created_at, m.ord")
        return [tuple(r) for r in self._rows(sql, (tenant,) if tenant is not None else (),  # type: ignore[misc]
                                             tenant=tenant if tenant is not None else ALL_TENANTS)]
