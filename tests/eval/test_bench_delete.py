"""`meetmem bench delete` runs end to end on a small database and reports a whole deletion."""

from __future__ import annotations

from typing import Any


def test_bench_delete_small(meetmem_cli: Any) -> None:
    result = meetmem_cli("bench", "delete", "--segments", "120", "--meetings", "2", "-q", "--json", db=None)
    assert result.returncode == 0, result.stderr
    figures = result.json()
    assert figures["deleted"]["segments"] == 120 and figures["rows_left"] == 0
    assert figures["other_meeting_intact"] is True and figures["delete_s"] > 0
