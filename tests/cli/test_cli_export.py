"""`meetmem export`: minutes, subtitles and JSON of a meeting, checked with independent parsers; and a
meeting's audio kept with `ingest --audio`, apart from its transcript: on both stores (the audio in files beside
SQLite, in rows of PostgreSQL)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import srt
import webvtt

from meetmem.store.backends import audio_store_for, open_log

BACKENDS = ("sqlite", "postgres")
MEETING = "launch"
DEMO_AUDIO = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"


def _open(db: Any) -> Any:
    """The log behind a CLI store (`cli_store`): a SQLite file, or a PostgreSQL database (its `url`)."""
    return open_log(getattr(db, "url", db), upgrade=False)


@pytest.fixture(scope="module")
def launch_db(meetmem_cli, sample_meeting_path: Path, cli_store) -> Path:
    db = cli_store("export")
    result = meetmem_cli("ingest", MEETING, str(sample_meeting_path), "--audio", str(DEMO_AUDIO), "--json", db=db)
    assert result.returncode == 0, result.stderr
    out = result.json()
    assert out["new"] == 52
    assert out["audio"]["sha256"] == hashlib.sha256(DEMO_AUDIO.read_bytes()).hexdigest()
    return db


def _export(meetmem_cli, db: Path, fmt: str) -> str:
    result = meetmem_cli("export", MEETING, "--format", fmt, db=db)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_srt_parses_and_matches_the_segments(meetmem_cli, launch_db: Path, sample_meeting_path: Path) -> None:
    text = _export(meetmem_cli, launch_db, "srt")
    cues = list(srt.parse(text, ignore_errors=False))
    rows = [json.loads(line) for line in sample_meeting_path.read_text().splitlines() if line.strip()]
    assert len(cues) == len(rows) == 52
    for cue, row in zip(cues, rows, strict=True):
        assert cue.start.total_seconds() == pytest.approx(row["start"], abs=0.001)
        assert cue.end.total_seconds() == pytest.approx(row["end"], abs=0.001)
        assert cue.content == f"{row['speaker']}: {row['text']}"
    assert [c.index for c in cues] == list(range(1, 53))


def test_webvtt_parses_with_voices(meetmem_cli, launch_db: Path, sample_meeting_path: Path, tmp_path: Path) -> None:
    text = _export(meetmem_cli, launch_db, "vtt")
    assert text.startswith("WEBVTT\n\n")
    captions = webvtt.from_string(text)
    rows = [json.loads(line) for line in sample_meeting_path.read_text().splitlines() if line.strip()]
    assert len(captions) == 52
    for caption, row in zip(captions, rows, strict=True):
        assert caption.start_in_seconds == int(row["start"])
        assert caption.text == row["text"]
        assert caption.voice == row["speaker"]
        # Every cue ends after it starts (WebVTT requires it) and cue times never go backwards.
        assert caption.end_in_seconds >= caption.start_in_seconds


def test_markdown_minutes_hold_the_ledger_with_times(meetmem_cli, launch_db: Path) -> None:
    md = _export(meetmem_cli, launch_db, "md")
    ledger = meetmem_cli("ledger", MEETING, "--json", db=launch_db).json()
    lines = md.splitlines()
    assert lines[0] == f"# {MEETING}"
    assert "- **Participants:** Alice, Bob, Dana, Chen Wei" in lines or any(
        line.startswith("- **Participants:** ") and all(p in line for p in ("Alice", "Bob", "Dana", "Chen Wei"))
        for line in lines)
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Summary", "## Decisions", "## To do", "## Open questions", "## Facts"]
    # Every todo is a table row with its owner, due date and time; every decision a line with its time.
    todo_rows = [line for line in lines if line.startswith("| [")]
    assert len(todo_rows) == len(ledger["todos"]) > 0
    for item, row in zip(ledger["todos"], todo_rows, strict=True):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert re.fullmatch(r"\[\d\d:\d\d\]", cells[0])
        assert cells[1] == (item["owner"] or "—")
        if item["due"]:
            assert item["due"] in cells[3]
    decisions = md.split("## Decisions")[1].split("## To do")[0]
    assert len(re.findall(r"^- \[\d\d:\d\d\] ", decisions, re.M)) == len(ledger["decisions"]) > 0


def test_json_export_has_segments_summary_and_ledger(meetmem_cli, launch_db: Path) -> None:
    doc = json.loads(_export(meetmem_cli, launch_db, "json"))
    listing = meetmem_cli("segments", MEETING, "--json", db=launch_db).json()
    assert [s["segment_id"] for s in doc["segments"]] == [s["segment_id"] for s in listing]
    assert doc["summary"]["l2"] and doc["ledger"]["todos"]
    ledger = meetmem_cli("ledger", MEETING, "--json", db=launch_db).json()
    kinds = ("decisions", "todos", "open_questions", "facts", "glossary")
    assert {k: doc["ledger"][k] for k in kinds} == {k: ledger[k] for k in kinds}
    assert doc["status"] == "closed" and doc["duration"] == pytest.approx(listing[-1]["end"])


def test_corrections_are_kept_in_json_and_replace_in_subtitles(run_cli, jsonl_writer, tmp_path: Path) -> None:
    first = jsonl_writer(tmp_path / "a.jsonl", [{"start": 0, "end": 2, "speaker": "A", "text": "we ship on May 3"},
                                                {"start": 3, "end": 5, "speaker": "B", "text": "noted --> ok"}])
    assert run_cli("ingest", "fix", str(first)).returncode == 0
    listing = run_cli("segments", "fix", "--json").json()
    wrong = listing[0]["segment_id"]
    second = jsonl_writer(tmp_path / "b.jsonl", [{"start": 0, "end": 2, "speaker": "A", "text": "we ship on May 13",
                                                  "supersedes": wrong}])
    assert run_cli("ingest", "fix", str(second)).returncode == 0
    doc = json.loads(run_cli("export", "fix", "--format", "json").stdout)
    by_id = {s["segment_id"]: s for s in doc["segments"]}
    assert by_id[wrong]["superseded_by"] is not None and by_id[wrong]["text"] == "we ship on May 3"
    cues = list(srt.parse(run_cli("export", "fix", "--format", "srt").stdout))
    assert [c.content for c in cues] == ["A: we ship on May 13", "B: noted -> ok"]
    vtt = webvtt.from_string(run_cli("export", "fix", "--format", "vtt").stdout)
    assert [c.text for c in vtt] == ["we ship on May 13", "noted -> ok"]


def test_export_errors_name_the_problem(run_cli) -> None:
    result = run_cli("export", "nothing-here", "--format", "md")
    assert result.returncode == 1 and "no meeting 'nothing-here'" in result.stderr
    result = run_cli("export", "x", "--format", "docx")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_ingest_audio_keeps_it_apart_from_the_log(meetmem_cli, launch_db: Path, sample_meeting_path: Path,
                                                  tmp_path: Path) -> None:
    with _open(launch_db) as log:
        audio = audio_store_for(log)
        chunks = audio.chunks(MEETING)
        assert log.verify(MEETING).ok
        assert len(chunks) == 1 and chunks[0].codec == "vorbis"
        assert chunks[0].duration == pytest.approx(252, abs=3)
        assert audio.read_bytes(chunks[0]) == DEMO_AUDIO.read_bytes()
    # Other audio for a meeting that has some is refused, naming the way out.
    from meetmem.edge.recording import OggOpusWriter

    other = tmp_path / "other.ogg"
    with OggOpusWriter(other) as writer:
        writer.write_silence(1.0)
    result = meetmem_cli("ingest", MEETING, str(sample_meeting_path), "--audio", str(other), db=launch_db)
    assert result.returncode == 1 and f"meetmem audio delete {MEETING}" in result.stderr


def test_bad_audio_stores_nothing(meetmem_cli, sample_meeting_path: Path, tmp_path: Path, cli_store) -> None:
    db = cli_store("bad")
    junk = tmp_path / "junk.wav"
    junk.write_bytes(b"RIFF\x10\x00\x00\x00WAVEnot really audio at all")
    result = meetmem_cli("ingest", "bad", str(sample_meeting_path), "--audio", str(junk), db=db)
    assert result.returncode == 1 and "junk.wav" in result.stderr
    with _open(db) as log:
        assert not log.has_meeting("bad")


def test_audio_delete_leaves_the_chain_intact(meetmem_cli, sample_meeting_path: Path, cli_store) -> None:
    db = cli_store("del")
    assert meetmem_cli("ingest", "m", str(sample_meeting_path), "--audio", str(DEMO_AUDIO), db=db).returncode == 0
    with _open(db) as log:
        before = [s.hash for s in log.chain("m")]
        path = audio_store_for(log).chunks("m")[0].path  # the file beside SQLite; None: a row of PostgreSQL
    assert path is None or path.exists()
    result = meetmem_cli("audio", "delete", "m", "--json", db=db)
    assert result.returncode == 0, result.stderr
    assert result.json() == {"meeting_id": "m", "deleted_chunks": 1}
    assert path is None or not path.exists()
    with _open(db) as log:
        assert [s.hash for s in log.chain("m")] == before
        assert audio_store_for(log).chunks("m") == []
    assert meetmem_cli("verify", "m", db=db).returncode == 0
