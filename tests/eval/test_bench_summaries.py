"""`meetmem bench summaries` on a short meeting, and the invariants of its planted-facts generator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from meetmem.eval.bench.planted_meeting import generate_meeting

RESULT_KEYS = {"hours", "segments", "segments_per_hour", "speakers", "topic_blocks", "planted_facts", "sections",
               "traceability", "drift", "cost", "ask", "wall_s"}
LAYERS = ("l1", "l2", "ledger", "rolling")


def test_planted_values_are_said_verbatim_once() -> None:
    meeting = generate_meeting(0.5, seed=3)
    assert generate_meeting(0.5, seed=3).texts == meeting.texts  # seeded
    assert meeting.facts
    assert 850 <= len(meeting) * 2 <= 1050  # ~950 segments an hour
    assert all(a <= b for a, b in zip(meeting.starts, meeting.starts[1:], strict=False))
    for fact in meeting.facts:
        assert meeting.texts[fact.index] == fact.text
        assert all(value in fact.text for value in fact.values.values())
        assert fact.answer in fact.values.values()
    # Dates and amounts are never repeated, so a value points at one segment of the meeting.
    for kind in ("due", "amount", "date"):
        values = [f.values[kind] for f in meeting.facts if kind in f.values]
        assert all(sum(v in t for t in meeting.texts) == 1 for v in values), kind


def test_bench_summaries_json(meetmem_cli: Callable[..., Any]) -> None:
    result = meetmem_cli("bench", "summaries", "--hours", "0.1", "--rounds", "1", "--json", "-q", db=None,
                         embedder="none", timeout=120)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert {"benchmark", "machine", "code", "config", "results", "wall_s"} <= report.keys()
    assert report["benchmark"] == "summaries"
    (run,) = report["results"]
    assert RESULT_KEYS <= run.keys()
    for layer in ("l1_lines", "l2_lines", "ledger_items"):
        assert run["traceability"][layer]["count"] > 0
        assert run["traceability"][layer]["share"] == 1.0
    drift = run["drift"]
    assert drift["raw"]["in_own_segment_share"] == 1.0
    for layer in LAYERS:
        assert {"facts", "kept", "kept_share", "verbatim", "verbatim_share_of_kept"} <= drift[layer].keys()
        # The extractive summaries and the rules' values never reword what they keep.
        assert drift[layer]["verbatim_share_of_kept"] in (None, 1.0) or layer == "ledger"
    cost = run["cost"]
    assert {"embed_s", "index_s", "digest_closed", "live"} <= cost.keys()
    assert {"sections_s", "l1_s", "l2_s", "ledger_s", "total_s"} <= cost["digest_closed"]["breakdown_s"].keys()
    assert cost["live"]["updates"] == -(-run["segments"] // 20)
    assert cost["live"]["final_digest_equals_closed"] is True
    assert {"p50_ms", "p95_ms"} <= cost["live"]["update"].keys()
    ask = run["ask"]
    assert ask["kinds"] == {"verbatim": ask["questions"]}
    assert {"p50_ms", "p95_ms"} <= ask["idle"].keys()
    assert {"p50_ms", "p95_ms", "rebuilds_completed"} <= ask["during_digest_rebuilds"].keys()
