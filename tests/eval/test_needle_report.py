"""`meetmem eval report`: one generated meeting evaluated with BM25 alone, written as JSON, Markdown and PNGs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from meetmem.eval.needle_report import PLOTS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_eval_report_writes_json_markdown_and_plots(tmp_path: Path, run_cli: Any) -> None:
    out = tmp_path / "report"
    result = run_cli("eval", "report", "--out", str(out), "--hours", "0.1", "--langs", "en", "--seed", "7",
                     "--k", "5", "--noisy-hours", "0.1", "--audio-hours", "0", db=None)
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

    text = (out / "report.md").read_text(encoding="utf-8")
    assert "| method | en 0.1 h | en 0.1 h noise 0.1 |" in text
    assert "as_said" in text and "answered l2_answer" in text and "todo recall" in text
    methods = [row["method"] for row in one["by_method"]]
    assert "meetmem" in methods and "dense" not in methods  # no model, no dense row
    for method in methods:
        assert f"| {method} |" in text
    assert "exact answers" in text and "prefix reuse" in text and "ask p95 ms" in text

    for name in PLOTS:
        data = (out / f"{name}.png").read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000
        assert f"({name}.png)" in text


def test_eval_report_refuses_bad_lengths_and_languages(tmp_path: Path, run_cli: Any) -> None:
    for flag, value in (("--hours", "0,1"), ("--hours", "half"), ("--langs", "fr")):
        result = run_cli("eval", "report", "--out", str(tmp_path / "r"), flag, value, db=None)
        assert result.returncode == 2 and flag in result.stderr
    assert not (tmp_path / "r").exists()
