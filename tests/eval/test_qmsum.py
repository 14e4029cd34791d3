"""`qmsum.evaluate_qmsum` and `meetmem bench qmsum` on a one-meeting folder in QMSum's published format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meetmem.eval.corpora.qmsum import evaluate_qmsum, load_qmsum, qmsum_segments
from meetmem.eval.harness import BenchDataError

#: The keys of `bench qmsum`'s JSON, in order (the CLI's output must not change).
BENCH_KEYS = ["benchmark", "split", "part", "k", "meetings", "queries", "queries_by_domain", "turns", "segments_stored",
              "turns_left_out_markers_only", "markers_removed", "default_configuration", "search_options_used",
              "query_adapter", "fusion_variants", "random_baseline", "methods", "ratios", "embedding", "wall_time",
              "code"]


def test_the_folder_loads_and_a_markers_only_turn_is_not_stored(qmsum_folder: Path) -> None:
    (meeting,), queries = load_qmsum(qmsum_folder, "val")
    assert meeting.domain == "committee" and meeting.timestamps is None
    assert [q.spans for q in queries] == [[(3, 3)], [(5, 6)]]  # the general query is not scored
    segments, skipped = qmsum_segments(meeting)
    assert skipped == 1 and 4 not in [s.seq for s in segments]
    assert segments[1].start == pytest.approx(6.0)  # untimed turns: 6 s each, by turn index
    with pytest.raises(BenchDataError):
        load_qmsum(qmsum_folder, "test")


def test_bm25_and_ask_hit_the_annotated_turns(qmsum_folder: Path) -> None:
    """Worked by hand: "cycling lanes ... Harbour Street" is only in turn 3 (span 3-3): hit@1 1, P@5 1/5.
    "ferry timetable ... late sailing" is in turns 5 and 6 (span 5-6): hit@1 1, P@5 2/5."""
    result = evaluate_qmsum(qmsum_folder, embedder=None)
    assert list(result["methods"]) == ["bm25", "ask"]
    bm25 = result["methods"]["bm25"]
    assert (bm25["n"], bm25["hit@1"], bm25["p@5"], bm25["hit@5"]) == (2, 1.0, 0.3, 1.0)
    assert bm25["by_domain"]["committee"]["n"] == 2
    assert result["methods"]["ask"]["hit@1"] == 1.0
    assert result["segments_stored"] == 8 and result["turns_left_out_markers_only"] == 1
    # Random P@5 = share of stored turns inside the spans: 1/8 and 2/8.
    assert result["random_baseline"]["p@5"] == pytest.approx((1 / 8 + 2 / 8) / 2, abs=1e-4)
    assert "ask/bm25" in result["ratios"]


@pytest.mark.model
def test_dense_rows_share_one_embedding_of_the_turns(qmsum_folder: Path, embedder: Any) -> None:
    from meetmem.store.index.embedder_routes import EmbedderRoutes

    result = evaluate_qmsum(qmsum_folder, embedder=EmbedderRoutes(embedder), fusion_variants=False)
    assert list(result["methods"]) == ["bm25", "dense", "hybrid_default", "ask"]
    assert result["embedding"]["segments"] == 8  # embedded once, for every method
    assert result["methods"]["hybrid_default"]["hit@1"] == 1.0
    with_variants = evaluate_qmsum(qmsum_folder, embedder=embedder, convex_weights=[0.5])
    assert {"hybrid_rrf", "hybrid_convex_d0.5"} <= set(with_variants["methods"])


def test_bench_qmsum_keeps_its_json(qmsum_folder: Path, run_cli: Any) -> None:
    result = run_cli("bench", "qmsum", "--data", str(qmsum_folder), "--json", db=None)
    assert result.returncode == 0, result.stderr
    report = result.json()
    assert list(report) == BENCH_KEYS
    assert report["methods"]["bm25"]["p@5"] == 0.3
    assert report["default_configuration"]["embedder"] == "none"
    assert report["query_adapter"] == {}  # no dense model, so no adapter moved a question


def test_the_dev_halves_are_fixed_and_cover_everything() -> None:
    from meetmem.eval.harness import BenchDataError, dev_part, in_part

    keys = [f"meeting-{i}" for i in range(200)]
    parts = [dev_part(k) for k in keys]
    assert parts == [dev_part(k) for k in keys]  # a fixed rule, not a draw
    assert 60 < parts.count("tune") < 140
    for key in keys:
        assert in_part(key, "all")
        assert in_part(key, "tune") != in_part(key, "report")
    with pytest.raises(BenchDataError, match="unknown part"):
        in_part("x", "train")
