"""`meetmem bench serve`'s report: the load's latencies, where the answers' time went, the same askers without and
with devices posting, and the issue's targets as pass/fail."""

from __future__ import annotations

import argparse
import math
from typing import Any

from ..harness import latency, rate
from .serve_load import Tally

TARGET = {"devices": 50, "askers": 10, "duration_s": 300.0, "ask_p95_ms": 300.0, "searchable_p95_ms": 1000.0}


def targets(args: argparse.Namespace, tally: Tally, ask: dict[str, Any], searchable: dict[str, Any]) -> dict[str, Any]:
    errors = sum(tally.errors.values())
    checks = {
        "scale": {"target": f"{TARGET['devices']} devices + {TARGET['askers']} askers for "
                            f"{TARGET['duration_s']:g} s",
                  "value": f"{args.devices} devices + {args.askers} askers for {args.duration:g} s",
                  "pass": args.devices >= TARGET["devices"] and args.askers >= TARGET["askers"]
                  and args.duration >= TARGET["duration_s"]},
        "errors": {"target": "0", "value": errors, "pass": errors == 0},
        "ask_p95_ms": {"target": f"<= {TARGET['ask_p95_ms']:g}", "value": ask.get("p95_ms"),
                       "pass": ask.get("n", 0) > 0 and ask["p95_ms"] <= TARGET["ask_p95_ms"]},
        "searchable_p95_ms": {"target": f"<= {TARGET['searchable_p95_ms']:g}", "value": searchable.get("p95_ms"),
                              "pass": searchable.get("n", 0) > 0
                              and searchable["p95_ms"] <= TARGET["searchable_p95_ms"]},
    }
    return {**checks, "all_pass": all(c["pass"] for c in checks.values())}


def ask_parts(tally: Tally) -> dict[str, Any]:
    """Where the answers' time went, by the server's Server-Timing spans (mean and p95 per part, ms; see
    meetmem.store.index.timing) plus `outside_handler`: the client's time the handler did not see."""
    out: dict[str, Any] = {}
    for name, values in tally.ask_spans.items():
        if values:
            ordered = sorted(values)
            out[name] = {"mean_ms": round(1000 * sum(values) / len(values), 1),
                         "p50_ms": round(1000 * ordered[(len(ordered) - 1) // 2], 1),
                         "p95_ms": round(1000 * ordered[math.ceil(0.95 * len(ordered)) - 1], 1),
                         "share_of_ask_time": round(sum(values) / max(1e-9, sum(tally.latency["ask"])), 3)}
    return out


def compared(without: Tally, with_ingest: Tally) -> dict[str, Any]:
    """The same askers' answers without and with devices posting (`--compare-ingest`)."""
    a, b = latency(without.latency["ask"]), latency(with_ingest.latency["ask"])
    pre_a = latency(without.ask_by_source.get("preloaded", []))
    pre_b = latency(with_ingest.ask_by_source.get("preloaded", []))
    return {
        "without_ingest": {"ask": a, "ask_preloaded": pre_a, "ask_time_by_part": ask_parts(without),
                           "errors": sum(without.errors.values())},
        "with_ingest": {"ask": b, "ask_preloaded": pre_b,
                        "ask_live": latency(with_ingest.ask_by_source.get("live", [])),
                        "ask_time_by_part": ask_parts(with_ingest), "errors": sum(with_ingest.errors.values())},
        "ask_p50_ratio": round(b["p50_ms"] / a["p50_ms"], 2) if a.get("n") and b.get("n") else None,
        "ask_p95_ratio": round(b["p95_ms"] / a["p95_ms"], 2) if a.get("n") and b.get("n") else None,
        "note": "the same askers and questions' seed, one server: first alone for --duration, then with --devices "
                "posting for --duration (the with-ingest askers also ask about the live meetings)",
    }


def load_report(args: argparse.Namespace, tally: Tally, load_s: float) -> dict[str, Any]:
    ask = latency(tally.latency["ask"])
    searchable = latency(tally.searchable)
    attempts = tally.probe_attempts
    cited = {
        source: {"asked": tally.cited[f"{source}_asked"],
                 "source_cited_first": round(tally.cited[f"{source}_first"] / tally.cited[f"{source}_asked"], 3),
                 "source_cited": round(tally.cited[f"{source}_any"] / tally.cited[f"{source}_asked"], 3)}
        for source in ("preloaded", "live") if tally.cited[f"{source}_asked"]
    }
    return {
        "requests": dict(tally.requests),
        "requests_per_s": rate(sum(tally.requests.values()), load_s),
        "segments_posted": tally.segments_posted,
        "segments_per_s": rate(tally.segments_posted, load_s),
        "ingest": latency(tally.latency["ingest"]),
        "ask": {**ask, "by_source": {k: latency(v) for k, v in tally.ask_by_source.items()},
                "answers_citing_the_source": cited},
        "searchable": {**searchable, "probes_found": len(attempts),
                       "found_at_first_search": sum(1 for a in attempts if a == 1),
                       "max_searches": max(attempts, default=0),
                       "finding_search_sent_after_ack": latency(tally.searchable_sent)},
        "ask_time_by_part": ask_parts(tally),
        "search_requests": latency(tally.latency["search"]),
        "errors": {"total": sum(tally.errors.values()), "by_kind": dict(tally.errors)},
        "targets": targets(args, tally, ask, searchable),
    }
