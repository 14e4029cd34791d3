"""`meetmem eval report`: one generated meeting evaluated with BM25 alone, written as JSON, Markdown and PNGs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from meetmem.eval.needles.report import PLOTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_eval_report_writes_json_markdown_and_plots(tmp_path: Path, run_cli: Any) -> None:
    out = tmp_path / "report"
    result = run_cli("eval", "report", "--out", str(out), "--hours", "0.1", "--langs", "en", "--seed", "7",
                     "--k", "5", "--noisy-hours", "0.1", "--audio-hours", "0", "--speaker-hours", "0.1", db=None)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(out / "report.md")
    assert "meeting 1/2: en 0.1 h" in result.stderr and "elapsed" in result.stderr  # progress on stderr

    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["evaluation"] == "needles_report" and report["grid"]["hours"] == [0.1]
    one, noisy = report["results"]
    assert one["meeting"]["lang"] == "en" and one["config"]["search"] == "bm25"
    assert (out / "meetings" / "en-0.1h" / "meeting.jsonl").is_file()
    assert noisy["meeting"]["noise"] == 0.1 and (out / "meetings" / "en-0.1h-noise0.1" / "meeting.jsonl").is_file()
    assert "questions [" in result.stderr  # the progress bar
    # "Who said ...?" on the clean English meeting only, stored with edge labels named in the speaker map.
    speakers = one["speaker_needles"]
    assert "speaker_needles" not in noisy and report["grid"]["speaker_hours"] == [0.1]
    assert speakers["questions"] > 0 and 0.0 <= speakers["speaker_at_1"] <= speakers["speaker_at_5"] <= 1.0

    text = (out / "report.md").read_text(encoding="utf-8")
    assert "| method | en 0.1 h | en 0.1 h noise 0.1 |" in text
    assert "as_said" in text and "answered l2_answer" in text and "todo recall" in text
    methods = [row["method"] for row in one["by_method"]]
    assert "meetmem" in methods and "dense" not in methods  # no model, no dense row
    for method in methods:
        assert f"| {method} |" in text
    assert "exact answers" in text and "prefix reuse" in text and "ask p95 ms" in text
    assert "## Who said it: speaker needles" in text
    assert f"| en 0.1 h | {speakers['questions']} | {speakers['speaker_at_1']:.3f} |" in text

    for name in PLOTS:
        data = (out / f"{name}.png").read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000
        assert f"({name}.png)" in text


def test_eval_report_refuses_bad_lengths_and_languages(tmp_path: Path, run_cli: Any) -> None:
    for flag, value in (("--hours", "0,1"), ("--hours", "half"), ("--langs", "fr")):
        result = run_cli("eval", "report", "--out", str(tmp_path / "r"), flag, value, db=None)
        assert result.returncode == 2 and flag in result.stderr
    assert not (tmp_path / "r").exists()


def _result(lang: str, hours: float, recall: float, by_wording: dict[str, float], *, source: str = "text",
            noise: float = 0.0, kept: tuple[int, float, float] = (0, 0.0, 0.0)) -> dict[str, Any]:
    questions, raw, l2 = kept
    return {"meeting": {"lang": lang, "hours": hours, "source": source, "noise": noise},
            "methods": {"meetmem": {"recall_at_k": recall}},
            "by_wording": {w: {"questions": 10, "recall_at_k": {"meetmem": v}} for w, v in by_wording.items()},
            "drift": {"on_kept": {"l2": {"questions": questions, "raw_retrieval": raw if questions else None,
                                         "l2_answer": l2 if questions else None}}}}


def test_targets_are_checked_overall_and_per_wording_on_clean_meetings_only() -> None:
    from meetmem.eval.needles.report_md import targets

    results = [
        _result("en", 4.0, 0.91, {"as_said": 0.99, "reworded": 0.83}, kept=(3, 1.0, 1.0)),
        _result("en", 4.0, 0.10, {}, noise=0.1),  # noisy: no target speaks to it
        _result("zh", 1.0, 0.20, {}),  # not 4 hours
        _result("en", 0.5, 0.92, {}, source="audio", kept=(1, 1.0, 0.0)),
    ]
    checks = {(c["target"].split(" on ")[-1], c["meeting"]): (c["value"], c["met"]) for c in targets(results)}
    assert checks[("a 4-hour English day from text", "en 4 h, all questions")] == (0.91, False)
    assert checks[("a 4-hour English day from text", "en 4 h, as_said (10 questions)")] == (0.99, True)
    assert checks[("a 4-hour English day from text", "en 4 h, reworded (10 questions)")] == (0.83, False)
    assert checks[("an English meeting from audio", "en 0.5 h audio, all questions")] == (0.92, True)
    assert not any("zh" in meeting or "noise" in meeting for _, meeting in checks)
    [l2] = [c for c in targets(results) if "L2" in c["target"]]
    # 4 questions pooled: raw 4/4, from L2 alone 3/4: 25 points apart.
    assert (l2["value"], l2["met"], l2["raw_retrieval"], l2["l2_answer"]) == (25.0, False, 1.0, 0.75)
