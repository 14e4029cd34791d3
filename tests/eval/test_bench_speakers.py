"""`bench speakers`' parts: turn order, cutting real utterances, labelling and scoring; one generated meeting
with real espeak-ng speech and the real encoder (model)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from meetmem.eval.bench import speaker_meetings as meetings
from meetmem.eval.bench import speaker_scoring as scoring
from meetmem.eval.bench.speaker_meetings import SR


def test_turns_alternate_and_long_utterances_are_cut() -> None:
    pool = {"a": [np.zeros(10, np.int16)] * 5, "b": [np.zeros(10, np.int16)] * 5, "c": [np.zeros(10, np.int16)]}
    order = [who for who, _ in meetings.order_turns(pool, random.Random(1))]
    assert sorted(order) == ["a"] * 5 + ["b"] * 5 + ["c"]
    assert all(x != y for x, y in zip(order, order[1:], strict=False))
    speech = (np.random.default_rng(0).normal(0, 3000, 11 * SR)).astype(np.int16)
    speech[int(2.5 * SR):int(2.6 * SR)] = 0
    pieces = meetings.cut_turns(speech)
    assert sum(len(p) for p in pieces) == len(speech)
    assert all(len(p) <= 4 * SR for p in pieces) and abs(len(pieces[0]) - int(2.55 * SR)) < 0.05 * SR


def test_labels_and_scores_from_embeddings() -> None:
    a, b = np.eye(256, dtype=np.float32)[0], np.eye(256, dtype=np.float32)[1]
    meeting = meetings.Meeting("m", np.zeros(16000 * 10, np.int16),
                            [(0.0, 2.0, "A"), (3.0, 5.0, "B"), (6.0, 8.0, "A")], "test")
    embedded = scoring.Embedded(meeting, [(0.0, 2.0), (3.0, 5.0), (6.0, 8.0)], [a, b, a], 0.0)
    assert [t[2] for t in scoring.label(embedded, 0.8)] == ["S1", "S2", "S1"]
    row = scoring.score(embedded, 0.8)
    assert row["der"] == 0.0 and row["count_right"] and row["labels"] == 2
    # Everyone as one voice (a threshold no pair reaches... inverted: all join S1).
    merged = scoring.score(embedded, -1.0)
    assert merged["labels"] == 1 and merged["der"] > 0.3


def test_candidate_turns_stand_only_where_the_labels_differ() -> None:
    from meetmem.edge.speaker_turns import SpeakerTurn

    eye = np.eye(256, dtype=np.float32)
    a, b, a2 = eye[0], eye[1], (eye[0] + 0.05 * eye[2]) / np.linalg.norm(eye[0] + 0.05 * eye[2])
    sr = 16000
    meeting = meetings.Meeting("m", np.zeros(sr * 20, np.int16),
                            [(0.0, 2.0, "A"), (3.0, 5.0, "B"), (6.0, 8.0, "A"), (8.0, 10.0, "B"), (11.0, 15.0, "A")],
                            "test")
    turns = [(0.0, [SpeakerTurn(0, 2 * sr, a)]), (3.0, [SpeakerTurn(0, 2 * sr, b)]),
             (6.0, [SpeakerTurn(0, 2 * sr, a), SpeakerTurn(2 * sr, 4 * sr, b)]),  # A then B: cut stands
             (11.0, [SpeakerTurn(0, 2 * sr, a), SpeakerTurn(2 * sr, 4 * sr, a2)])]  # A twice: joined again
    embedded = scoring.Embedded(meeting, [], [], 0.0, turns)
    labelled = scoring.label(embedded, 0.8)
    assert labelled == [(0.0, 2.0, "S1"), (3.0, 5.0, "S2"), (6.0, 8.0, "S1"), (8.0, 10.0, "S2"), (11.0, 15.0, "S1")]
    assert scoring.score(embedded, 0.8)["der"] == 0.0


@pytest.mark.model
def test_one_generated_meeting_end_to_end(tmp_path: Path) -> None:
    if not (shutil.which("espeak-ng") and shutil.which("sox")):
        pytest.skip("needs espeak-ng and sox")
    from meetmem.edge.voice_encoder import VoiceEncoder

    meeting = meetings.generated_meetings(1, 19, tmp_path)[0]  # 2 speakers, 18 turns
    assert meeting.name.endswith("2spk") and len(meeting.reference) == 18
    ends = [t[1] for t in meeting.reference]
    assert ends == sorted(ends) and ends[-1] < meeting.seconds
    encoder = VoiceEncoder()
    oracle = scoring.score(scoring.embed_meeting(meeting, encoder, oracle=True), 0.88)
    assert oracle["der"] < 0.15 and oracle["labels"] >= oracle["speakers"], oracle
    edge = scoring.score(scoring.embed_meeting(meeting, encoder), 0.88)
    assert edge["utterances"] <= len(meeting.reference) and edge["der"] < 0.5, edge
    cut = scoring.score(scoring.embed_meeting(meeting, encoder, change_threshold=0.8), 0.88)
    assert edge["utterances"] <= cut["utterances"] <= len(meeting.reference) and cut["der"] < 0.5, cut


def test_cuts_are_scored_against_the_references_changes_of_speaker() -> None:
    reference = [(0.0, 2.0, "A"), (2.3, 3.0, "B"), (3.2, 6.0, "A"), (5.8, 7.0, "B"), (8.0, 12.0, "B")]
    assert scoring.changes(reference) == [(2.0, 2.3), (3.0, 3.2), (5.8, 6.0)]  # gaps, and an overlap
    spans = [(0.0, 7.0), (8.0, 12.0)]  # the VAD's utterances: one holds every change, one is B alone
    stats = scoring.cut_stats(reference, spans, [2.4, 4.6, 10.0])
    assert stats == {"cuts": 3, "false_cuts": 2, "changes_inside_utterances": 3, "changes_found": 1,
                     "one_voice_utterances": 1, "one_voice_utterances_cut": 1}
    assert scoring.cut_stats(reference, spans, [])["changes_found"] == 0


def test_recordings_with_rttm_references(tmp_path: Path) -> None:
    import wave

    samples = (np.random.default_rng(1).normal(0, 2000, 3 * SR)).astype("<i2")
    with wave.open(str(tmp_path / "call.wav"), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(SR)
        writer.writeframes(samples.tobytes())
    (tmp_path / "call.rttm").write_text("SPEAKER call 1 1.500 0.700 <NA> <NA> b <NA> <NA>\n"
                                        "SPEAKER call 1 0.200 1.000 <NA> <NA> a <NA> <NA>\n")
    (meeting,) = meetings.rttm_meetings(tmp_path)
    assert meeting.name == "rttm-call" and meeting.kind == "recorded" and len(meeting.samples) == 3 * SR
    assert [(round(a, 3), round(b, 3), w) for a, b, w in meeting.reference] == [(0.2, 1.2, "a"), (1.5, 2.2, "b")]
    (tmp_path / "bad.rttm").write_text("SPEAKER bad 1 x 0.7 <NA> <NA> b\n")
    with pytest.raises(ValueError, match="bad.rttm:1"):
        meetings.read_rttm(tmp_path / "bad.rttm")
    with pytest.raises(FileNotFoundError, match="NAME.rttm"):
        meetings.rttm_meetings(tmp_path / "nothing")


def test_real_speech_is_cut_into_short_and_long_pieces() -> None:
    rng = np.random.default_rng(2)
    speech = rng.normal(0, 3000, 20 * SR).astype(np.int16)
    for at in range(SR, 20 * SR, SR // 2):  # a quiet 50 ms every half second
        speech[at:at + 800] = 0
    pieces = meetings.conversation_pieces(speech, random.Random(3))
    assert sum(len(p) for p in pieces) == len(speech) and len(pieces) >= 6
    assert min(len(p) for p in pieces) >= 0.5 * SR and any(len(p) < 1.6 * SR for p in pieces)
    padded = np.concatenate([np.zeros(3200, np.int16), speech[:SR], np.zeros(1600, np.int16)])
    assert meetings.speech_span(padded) == (3200, 3200 + SR)


def test_a_turn_too_short_to_start_a_voice_is_joined_to_the_voice_it_would_get() -> None:
    from meetmem.edge.speaker_turns import SpeakerTurn
    from meetmem.edge.speakers import SpeakerOptions, SpeakerTracker

    eye = np.eye(256, dtype=np.float32)
    a, b = eye[0], eye[1]
    near_a = (eye[0] + 1.2 * eye[3]) / np.linalg.norm(eye[0] + 1.2 * eye[3])  # 0.64 alike: no known voice
    sr = 16000
    tracker = SpeakerTracker(encoder=None, options=SpeakerOptions(threshold=0.75))  # type: ignore[arg-type]
    tracker.assign(a, 3.0)
    tracker.assign(b, 3.0)
    assert tracker.peek(near_a) is None and tracker.peek(near_a, 0.8) == "S1" and tracker.peek(near_a, 2.0) is None
    # 0.8 s would join S1, the voice before it: the cut is undone, not kept as a split of one voice.
    short = tracker.merge_same([SpeakerTurn(0, 3 * sr, a), SpeakerTurn(3 * sr, int(3.8 * sr), near_a)])
    assert [(t.start, t.end) for t in short] == [(0, int(3.8 * sr))]
    # 2 s is trusted: it would start a voice, and is unlike the side before it (0.64 < 0.7), so it stays cut.
    long = tracker.merge_same([SpeakerTurn(0, 3 * sr, a), SpeakerTurn(3 * sr, 5 * sr, near_a)])
    assert [(t.start, t.end) for t in long] == [(0, 3 * sr), (3 * sr, 5 * sr)]
    # A short answer between two known voices keeps its own turn: A, B, A.
    three = tracker.merge_same([SpeakerTurn(0, 3 * sr, a), SpeakerTurn(3 * sr, int(3.9 * sr), b),
                                SpeakerTurn(int(3.9 * sr), 6 * sr, a)])
    assert len(three) == 3
