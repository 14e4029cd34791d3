"""`corpora_report.evaluate_corpora` and `markdown` on tiny QMSum, LoCoMo and AMI folders (no audio)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from meetmem.eval.corpora.report import PARTS, evaluate_corpora, markdown


@pytest.fixture
def result(corpora_folder: Path) -> dict[str, Any]:
    lines: list[str] = []
    out = evaluate_corpora(corpora_folder, routes=None, progress=lines.append)
    out["_progress"] = lines
    return out


def test_every_part_found_runs_and_a_missing_one_is_skipped(result: dict[str, Any]) -> None:
    parts = result["parts"]
    assert list(parts) == list(PARTS)
    assert "does not exist" in parts["audio"]["skipped"]
    for name in ("qmsum", "locomo", "ami"):
        assert "skipped" not in parts[name] and parts[name]["wall_s"] >= 0
    assert any("qmsum" in line for line in result["_progress"])
    json.dumps(result)


def test_the_figures_are_the_benchmarks_own(result: dict[str, Any]) -> None:
    qmsum = result["parts"]["qmsum"]
    assert set(qmsum["methods"]) == {"meetmem", "bm25"}  # BM25 alone: no dense or hybrid rows
    assert (qmsum["methods"]["bm25"]["hit@1"], qmsum["methods"]["bm25"]["p@5"]) == (1.0, 0.3)
    assert qmsum["queries"] == 2 and qmsum["embedder"] is None
    locomo = result["parts"]["locomo"]
    assert locomo["methods"]["bm25"]["answerable"]["recall@5"] == pytest.approx(0.875)
    assert locomo["conversations"][0]["first_session"] == "2022-12-17T11:01"
    assert locomo["unscored"] == 1
    ami = result["parts"]["ami"]
    # One todo extracted, on M1.B.2: it matches gold g1; g2 is not found. One decision, matching g3; "NA." skipped.
    assert ami["todos"]["evidence"] == {"precision": 1.0, "recall": 0.5, "recall_of_gold_with_evidence": 0.5}
    assert (ami["decisions"]["evidence"]["precision"], ami["decisions"]["evidence"]["recall"]) == (1.0, 1.0)
    assert ami["decisions"]["counts"]["gold"] == 1


def test_a_corpus_the_benchmark_refuses_is_skipped_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "qmsum").mkdir()
    out = evaluate_corpora(tmp_path, routes=None, parts=("qmsum",))
    assert "QMSum" in out["parts"]["qmsum"]["skipped"]
    assert out["parts"]["ami"] == {"skipped": "not asked for"}


def test_the_markdown_section_has_a_table_per_corpus(result: dict[str, Any]) -> None:
    text = "\n".join(markdown(result))
    assert text.startswith("## Real corpora")
    for title in ("### QMSum", "### LoCoMo", "### AMI", "### Speech clips"):
        assert title in text
    assert "| meetmem (`ask` citations) | 1.000 |" in text
    assert "| BM25 alone | 1.000 | 0.300 | 1.000 |" in text
    assert "| todos | 1 | 2 | 1.000 | 0.500 |" in text
    assert "Skipped:" in text and "audio does not exist" in text


def test_the_markdown_of_clip_figures() -> None:
    part = {"asr": "Whisper base", "rtf": 0.1, "wall_s": 30.0,
            "clips": [{"language": "en", "audio_s": 10.0}, {"language": "zh", "audio_s": 5.0}],
            "overall": {"en_WER": {"rate": 0.05}, "en_WER_raw": {"rate": 0.06}, "zh_CER": {"rate": 0.1},
                        "zh_CER_raw": {"rate": 0.1}}}
    text = "\n".join(markdown({"data": "d", "wall_s": 1.0, "parts": {"audio": part}}))
    assert "| en | WER | 1 | 10 | 0.050 (0.060) |" in text
    assert "| zh | CER | 1 | 5 | 0.100 (0.100) |" in text


def test_the_locomo_audit_beside_the_conversations_is_scored_too(corpora_folder: Path) -> None:
    multi = "Which composer's sonata did Ben play at his recital, and which instrument?"
    (corpora_folder / "locomo" / "locomo_audit_errors_dev.json").write_text(json.dumps([
        {"question_id": "locomo_0_qa2", "question": multi, "category": 1, "error_type": "WRONG_CITATION",
         "cited_evidence": ["D2:5; D1:4"], "correct_evidence": ["D2:5"]}]), encoding="utf-8")
    out = evaluate_corpora(corpora_folder, routes=None, parts=("locomo",))
    locomo = out["parts"]["locomo"]
    assert locomo["errata"]["questions_changed"] == 1
    assert locomo["methods"]["bm25"]["answerable_errata"]["recall@5"] == 1.0
    text = "\n".join(markdown(out))
    assert "third-party audit (unverified; 1 questions changed): recall@5 meetmem" in text
    assert "bm25 1.000" in text
