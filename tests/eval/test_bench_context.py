"""`meetmem bench context` on a short meeting (BM25 alone): the JSON's shape, and every prompt within budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RESULT_KEYS = {"hours", "segments", "planted_facts", "questions", "build", "full_transcript", "prompt_tokens",
               "prefix_reuse", "compaction", "needle_recall_at_5", "compile", "extractive_ask", "targets_met",
               "wall_s"}


def test_bench_context_json(meetmem_cli: Callable[..., Any]) -> None:
    budget = 4000
    result = meetmem_cli("bench", "context", "--hours", "0.1", "--budget", str(budget), "--json", "-q", db=None,
                         embedder="none", timeout=60)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert {"benchmark", "machine", "code", "config", "targets", "results", "wall_s"} <= report.keys()
    assert report["benchmark"] == "context"
    assert report["config"]["compiler_options"]["budget"] == budget
    (run,) = report["results"]
    assert RESULT_KEYS <= run.keys()
    assert run["questions"]["total"] == run["planted_facts"] > 0
    tokens = run["prompt_tokens"]
    assert {"p50", "p95", "max", "over_budget", "p50_share_of_full"} <= tokens.keys()
    assert 0 < tokens["max"] <= budget
    assert tokens["over_budget"] == 0
    assert run["full_transcript"]["tokens"] > 0 and run["full_transcript"]["fits_128k"] is True
    assert {"mean", "p10"} <= run["prefix_reuse"].keys()
    for path in ("compiled", "extractive"):
        assert 0.0 <= run["needle_recall_at_5"][path]["all"] <= 1.0
    compile_ = run["compile"]
    assert {"p50_ms", "p95_ms", "search", "digest_read", "rest"} <= compile_.keys()
    assert compile_["search"]["p50_ms"] <= compile_["p50_ms"]
    assert set(run["targets_met"].values()) <= {True, False}
