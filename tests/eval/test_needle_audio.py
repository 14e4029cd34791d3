"""The audio path of the needle evaluation: the spoken forms, the alignment of planted rows onto recognised
segments (pure, on hand-made rows), the rendering with espeak-ng, and one run of the real edge pipeline."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest

from meetmem.eval.needles.audio import (
    AUDIO_FILE,
    REFERENCE_NAME,
    align,
    evaluate_audio,
    loosely,
    render,
    said,
    values_survived,
    word_errors,
)
from meetmem.eval.needles.records import Needle, NeedleMeeting, NeedleQuestion


def row(start: float, end: float, text: str, speaker: str | None = "Ana") -> dict[str, Any]:
    return {"start": start, "end": end, "speaker": speaker, "text": text, "lang": "en"}


def seg(start: float, end: float, text: str) -> dict[str, Any]:
    return {"start": start, "end": end, "text": text, "lang": "en"}


def needle(index: int, value: str, kind: str = "money", corrects: int | None = None) -> Needle:
    return Needle(kind, "en", index, f"it is {value}", {"amount": value},
                  (NeedleQuestion(f"what about {index}?", value),), corrects)


#: Planted rows 0..7 at their rendered times.
ROWS = (
    row(0.5, 2.0, "Good morning everyone."),
    row(2.4, 4.0, "The casing quote is $4,100."),  # corrected by row 5
    row(5.0, 9.0, "The lens fee came in at $7,250, and we agreed on it."),  # split in two by the VAD
    row(10.0, 11.0, "Mm-hmm."),
    row(11.4, 13.0, "The strap deposit is $2,390."),  # a distractor, merged with row 3's segment
    row(14.0, 16.0, "Correction on the casing quote: it's $4,600, not $4,100."),
    row(17.0, 18.5, "The hinge invoice is $9,015."),  # dropped: nothing recognised there
    row(19.5, 21.0, "Thanks, bye."),
)
PLANTED = NeedleMeeting("en", 7, 0.01, ROWS, (needle(2, "$7,250"), needle(5, "$4,600", "correction", corrects=1),
                                               needle(6, "$9,015")), distractors=(4, 0))
#: The recognised segments, deliberately out of order: rows 0 and 1 merged, row 2 cut at 7.0 s, rows 3 and 4
#: merged, row 6 missing.
RECOGNISED = (
    seg(13.8, 16.2, "Correction on the casing quote, it's $4,600, not $4,100."),
    seg(0.3, 4.2, "Good morning everyone. The casing quote is $4,100."),
    seg(4.8, 7.0, "The lens fee came in at"),
    seg(7.0, 9.2, "$7,250 and we agreed on it."),
    seg(9.8, 13.2, "Mm-hmm. The strap deposit is $2,390."),
    seg(19.3, 21.2, "Thanks, bye."),
)


@pytest.fixture(scope="module")
def aligned() -> NeedleMeeting:
    return align(PLANTED, RECOGNISED)


def test_aligned_segments_are_the_recognised_ones_in_time_order(aligned: NeedleMeeting) -> None:
    starts = [s["start"] for s in aligned.segments]
    assert starts == sorted(starts) and len(aligned.segments) == len(RECOGNISED)
    assert aligned.notes["source"] == "audio"
    from meetmem.store.interchange import validate_segment

    for i, segment in enumerate(aligned.segments):  # no speaker: the edge does not diarise
        validate_segment(segment, i)


def test_a_needle_cut_in_two_points_at_both_halves(aligned: NeedleMeeting) -> None:
    split = aligned.needles[0]
    assert split.segment_index == 1  # 4.8-7.0 overlaps 2.0 s of the row, 7.0-9.2 overlaps 2.0 s: the first wins
    assert split.segments == (1, 2)


def test_a_correction_and_the_row_it_corrects_map_to_their_segments(aligned: NeedleMeeting) -> None:
    correction = aligned.needles[1]
    assert correction.segment_index == 4 and correction.also == ()
    assert correction.corrects == 0  # the corrected row was merged with row 0 into the first segment


def test_a_dropped_needle_points_at_the_nearest_segment_and_is_counted_lost(aligned: NeedleMeeting) -> None:
    lost = aligned.needles[2]
    assert lost.segment_index == 4  # 16.2 is 0.8 s before the row, 19.3 is 0.8 s after: the earlier one
    assert "$9,015" not in aligned.segments[lost.segment_index]["text"]
    notes = aligned.notes["alignment"]
    assert notes["lost_needles"] == 1 and notes["lost_needle_rows"] == [6] and notes["lost_rows"] == 1
    assert notes["split_needles"] == 1


def test_distractors_are_remapped_and_none_lands_on_a_needle(aligned: NeedleMeeting) -> None:
    assert aligned.distractors == (0, 3)  # rows 0 and 4, by their largest overlap
    mains = {n.segment_index for n in aligned.needles}
    merged = align(PLANTED, RECOGNISED[:2] + (seg(4.8, 13.2, "everything from 5 to 13 s"),) + RECOGNISED[5:])
    assert merged.distractors == (0,)  # row 4 ran into the needle's segment: left out
    assert merged.notes["alignment"]["distractors_left_out"] == 1
    assert not mains.intersection(aligned.distractors)


def test_a_merged_correction_is_left_out() -> None:
    together = align(PLANTED, (seg(0.3, 16.2, "all of it"), seg(19.3, 21.2, "Thanks, bye.")))
    assert together.needles[1].corrects is None
    assert together.notes["alignment"]["corrections_left_out"] == 1


def test_nothing_recognised_is_an_error() -> None:
    with pytest.raises(ValueError, match="nothing was recognised"):
        align(PLANTED, ())


def test_aligned_meeting_round_trips(aligned: NeedleMeeting, tmp_path: Path) -> None:
    aligned.write(tmp_path, "aligned")
    again = NeedleMeeting.read(tmp_path, "aligned")
    assert again.needles == aligned.needles and again.distractors == aligned.distractors


def test_values_survive_when_their_segments_hold_them_verbatim(aligned: NeedleMeeting) -> None:
    assert values_survived(aligned) == [True, True, False]
    heard = dataclasses.replace(aligned, segments=tuple({**s, "text": s["text"].replace("$7,250", "7,250 dollars")}
                                                        for s in aligned.segments))
    assert values_survived(heard) == [False, True, False]
    assert values_survived(heard, loose=True) == [True, True, False]


@pytest.mark.parametrize(("expected", "heard", "found"), [
    ("$93,830", "the premium, 93,830 dollars.", True),
    ("12:25 pm", "for April 11th, 1225pm.", True),
    ("6:05 pm", "September 19th at 6.05pm", True),
    ("11:35 am", "at 11.35 a.m. sharp", True),
    ("June 23rd", "on June 23, 11", True),
    ("4,721", "4,700 and 21 units", False),
    ("6:05 pm", "at 6:50 pm", False),
])
def test_loosely_folds_how_whisper_writes_values_but_not_the_values(expected: str, heard: str,
                                                                    found: bool) -> None:
    assert (loosely(expected) in loosely(heard)) is found


def test_word_errors_pool_islands_and_count_lost_rows_as_deletions() -> None:
    reference = (row(0.0, 2.0, "the casing quote"), row(2.5, 3.0, "is fine"), row(10.0, 11.0, "lost words"))
    recognised = (seg(0.0, 3.1, "the casing quote is fine"), seg(5.0, 6.0, "phantom"))
    assert word_errors(reference, recognised) == {"errors": 3, "ref_tokens": 7, "rate": round(3 / 7, 4)}
    assert word_errors(reference[:2], (seg(0.0, 3.1, "The casing quote, is fine."),))["errors"] == 0


@pytest.mark.parametrize(("text", "spoken"), [
    ("It's $4,250 all in.", "It's 4,250 dollars all in."),
    ("We meet at 6:05 pm.", "We meet at 6 oh 5 p.m.."),
    ("September 19th, 10:00 am", "September 19th, 10 a.m."),
    ("at 11:45 AM sharp", "at 11 45 a.m. sharp"),
    ("it's 7,312, not 2,357.", "it's 7,312, not 2,357."),
])
def test_values_are_said_as_a_person_says_them(text: str, spoken: str) -> None:
    assert said(text) == spoken


def _require_tools() -> None:
    missing = [tool for tool in ("espeak-ng", "sox") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)} (apt-get install espeak-ng sox)")


def test_render_places_rows_on_the_audio_timeline(tmp_path: Path) -> None:
    _require_tools()
    from meetmem.edge.audio import decode_file

    rows = (row(0.0, 1.0, "Good morning, Bob."), row(1.0, 2.0, "The hinge invoice is $9,015.", "Bob"),
            row(2.0, 3.0, "The review is at 6:05 pm.", "Cleo"))
    meeting = NeedleMeeting("en", 7, 0.001, rows, (needle(1, "$9,015"),), distractors=(2,))
    rendered = render(meeting, tmp_path, seed=3)
    times = [(r["start"], r["end"]) for r in rendered.meeting.segments]
    assert all(start < end for start, end in times)
    assert all(a[1] < b[0] for a, b in zip(times, times[1:], strict=False))  # a pause between rows
    assert [r["text"] for r in rendered.meeting.segments] == [r["text"] for r in rows]
    assert rendered.meeting.needles == meeting.needles and rendered.meeting.distractors == (2,)
    assert len(set(rendered.voices.values())) == 3
    seconds = len(decode_file(tmp_path / AUDIO_FILE)) / 16000
    assert seconds == pytest.approx(rendered.audio_s, abs=0.05)
    assert seconds == pytest.approx(times[-1][1] + 0.5, abs=0.05)  # the last row's end, then the tail
    assert NeedleMeeting.read(tmp_path, REFERENCE_NAME).segments == rendered.meeting.segments


def test_chinese_audio_is_refused_with_a_reason(tmp_path: Path) -> None:
    meeting = NeedleMeeting("zh", 7, 0.001, ({**row(0.0, 1.0, "大家好"), "lang": "zh"},), ())
    with pytest.raises(ValueError, match="English only"):
        render(meeting, tmp_path)


@pytest.mark.model
def test_needle_recall_from_audio_on_a_two_minute_meeting(embedder: Any, tmp_path: Path) -> None:
    """The issue's audio path end to end: a 2-minute generated meeting with 8 needles, spoken by espeak-ng,
    recognised by the real edge pipeline with Whisper tiny.en, then asked about. Measured: recall@5 12/14
    (two reworded questions whose subject Whisper misheard), WER 0.21, 150 s of audio, about 20 s on two
    busy cores. The bound leaves room for one more miss: the questions' wording is the generator's."""
    _require_tools()
    from meetmem.eval.needles.generator import generate
    from meetmem.store.index.embedder_routes import EmbedderRoutes

    meeting = generate(2 / 60, lang="en", seed=7, needles_per_hour=240)
    result = evaluate_audio(meeting, tmp_path, routes=EmbedderRoutes(embedder), model="tiny.en", k=5)
    audio = result["audio"]
    assert result["meeting"]["source"] == "audio" and result["meeting"]["needles"] == len(meeting.needles)
    assert audio["model"] == "tiny.en" and audio["audio_s"] > 100 and audio["rtf"] > 0
    assert audio["wer"]["rate"] < 0.5, audio["wer"]
    assert audio["needles_lost"] <= 1
    recall = result["methods"]["meetmem"]["recall_at_k"]
    assert recall >= 0.75, result["misses"]
