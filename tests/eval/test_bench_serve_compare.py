"""`meetmem bench serve --compare-ingest`: the same askers alone, then with devices posting, in one run, with
the server's account of where each answer's time went (its Server-Timing spans)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def test_compare_ingest_reports_both_phases_and_where_asks_wait(meetmem_cli: Callable[..., Any]) -> None:
    r = meetmem_cli("bench", "serve", "--compare-ingest", "--devices", "4", "--per-meeting", "2", "--askers", "2",
                    "--duration", "4", "--hours", "0.1", "--quiet", "--json", db=None, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    compare = report["compare_ingest"]
    alone, busy = compare["without_ingest"], compare["with_ingest"]
    assert alone["ask"]["n"] > 0 and busy["ask"]["n"] > 0 and alone["errors"] == busy["errors"] == 0
    assert compare["ask_p50_ratio"] == round(busy["ask"]["p50_ms"] / alone["ask"]["p50_ms"], 2)
    assert report["segments_posted"] > 0  # only the second phase posted
    for phase in (alone, busy, {"ask_time_by_part": report["ask_time_by_part"]}):
        parts = phase["ask_time_by_part"]
        assert {"total", "rank", "catchup_wait", "outside_handler"} <= set(parts)
        assert 0 < parts["total"]["mean_ms"] and parts["rank"]["mean_ms"] <= parts["total"]["mean_ms"]
