"""Packing's one rule for utterances Whisper runs together in one call, on the packing functions alone (no
model: the recogniser's answer is the input): they are stored as one segment unless that segment would span a
place between speaker turns (a voice change, or another call's turn between them); then each is recognised
alone. Without speaker turns any run-together utterances are stored as one."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from meetmem.edge.asr import TranscriptPiece
from meetmem.edge.packing import PACK_GAP, spans_a_turn_boundary, transcribe_packed
from meetmem.edge.vad import SAMPLE_RATE, Utterance


def _utterance(start_s: float, end_s: float) -> Utterance:
    start, end = int(start_s * SAMPLE_RATE), int(end_s * SAMPLE_RATE)
    return Utterance(start, end, np.full(end - start, 0.1, dtype=np.float32))


def _piece(start: float, end: float, text: str) -> TranscriptPiece:
    return TranscriptPiece(start, end, text, -0.2, 0.01, "en")


#: A flush of four turns, 1 s each: A and B touch (the turn cutter cut one utterance where the voice
#: changed), then a pause, C, a pause, D.
A, B, C, D = _utterance(0.0, 1.0), _utterance(1.0, 2.0), _utterance(3.0, 4.0), _utterance(5.0, 6.0)
FLUSH = (A, B, C, D)
#: In any call of two 1 s utterances, the second starts at 1.6 s of the packed audio: a piece from 0.5 s to
#: 2.0 s reaches 0.4 s into it (more than `PACK_STRADDLE`): Whisper ran the two together.
STRADDLING = (_piece(0.5, 2.0, "one sentence across both"),)
APART = (_piece(0.1, 0.9, "first"), _piece(1.7, 2.5, "second"))


def _pack(call: Sequence[Utterance], pieces: Sequence[TranscriptPiece], turns: Sequence[Utterance] | None,
          ) -> tuple[list[tuple[tuple[int, int], tuple[str, ...] | None]], int]:
    heard: list[tuple[int, float]] = []

    def recognise(audio: np.ndarray, at: float) -> list[TranscriptPiece]:
        heard.append((len(audio), at))
        return list(pieces)

    found, merged = transcribe_packed(list(call), recognise, turns=turns)
    # One call: the utterances back to back with a gap between each two, timed from the first one's start.
    assert heard == [(sum(len(u.audio) for u in call) + (len(call) - 1) * int(PACK_GAP * SAMPLE_RATE), call[0].start)]
    # Every utterance of the call is stored exactly once, in time order, and every piece with one of them.
    spans = [(u.start_sample, u.end_sample) for u, _ in found]
    assert spans == sorted(spans)
    assert [u for u in call if not any(s <= u.start_sample and u.end_sample <= e for s, e in spans)] == []
    kept = [p for _, bucket in found if bucket is not None for p in bucket]
    assert len(kept) in (0, len(pieces))
    return [((u.start_sample, u.end_sample), None if bucket is None else tuple(p.text for p in bucket))
            for u, bucket in found], merged


def _s(u: Utterance) -> tuple[int, int]:
    return u.start_sample, u.end_sample


@pytest.mark.parametrize(("call", "turns", "expected"), [
    # No speaker turns: what Whisper ran together is stored as one, touching (a VAD cut at its length limit) or not.
    ((A, B), None, [((A.start_sample, B.end_sample), ("one sentence across both",))]),
    ((C, D), None, [((C.start_sample, D.end_sample), ("one sentence across both",))]),
    # Turns of one cut (a voice change between them): each recognised alone.
    ((A, B), FLUSH, [(_s(A), None), (_s(B), None)]),
    # Another call's turn between them (C, in a language of its own, between B and D): each alone.
    ((B, D), FLUSH, [(_s(B), None), (_s(D), None)]),
    ((A, D), FLUSH, [(_s(A), None), (_s(D), None)]),
    # A pause between them holding nothing of the flush: stored as one (turns of the flush elsewhere).
    ((C, D), FLUSH, [((C.start_sample, D.end_sample), ("one sentence across both",))]),
    ((A, C), (A, C, D), [((A.start_sample, C.end_sample), ("one sentence across both",))]),
])
def test_run_together_utterances_are_one_segment_unless_it_would_span_a_turn_boundary(
        call: tuple[Utterance, ...], turns: Sequence[Utterance] | None,
        expected: list[tuple[tuple[int, int], tuple[str, ...] | None]]) -> None:
    # Counted as merged only when stored as one: not when each is recognised alone after all.
    merged = 0 if any(bucket is None for _, bucket in expected) else 1
    assert _pack(call, STRADDLING, turns) == (expected, merged)


@pytest.mark.parametrize("turns", [None, FLUSH])
@pytest.mark.parametrize("call", [(A, B), (B, D), (C, D)])
def test_utterances_whisper_kept_apart_keep_their_own_pieces(call: tuple[Utterance, ...],
                                                             turns: Sequence[Utterance] | None) -> None:
    assert _pack(call, APART, turns) == ([(_s(call[0]), ("first",)), (_s(call[1]), ("second",))], 0)


def test_a_turn_boundary_is_a_touch_or_another_turn_inside_the_span() -> None:
    assert spans_a_turn_boundary([A, B], [A, B])  # a voice change
    assert spans_a_turn_boundary([B, C, D], FLUSH) is False  # pauses only, nothing else inside
    assert spans_a_turn_boundary([A, B, C], [A, B, C])
    assert spans_a_turn_boundary([B, D], FLUSH)  # C lies between them
    assert spans_a_turn_boundary([B, D], [B, D]) is False
    assert spans_a_turn_boundary([C, D], FLUSH) is False  # A and B lie before the span
