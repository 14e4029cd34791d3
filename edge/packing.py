"""Packing: several utterances recognised in one Whisper call, each recognised piece given back to its own.

Whisper encodes a whole 30 s window whatever it holds, so one short utterance per call costs several times
more than a window of several. A file read as fast as it decodes, and a live backlog, are therefore packed:
the utterances back to back with `PACK_GAP` of silence between them. Each recognised piece goes to the
utterance it overlaps most; utterances a piece straddles (Whisper ran two together across the pause) are
stored as one, unless that one would span a place between speaker turns a segment must not
(`spans_a_turn_boundary`): then each is recognised alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from .asr import TranscriptPiece
from .vad import SAMPLE_RATE, Utterance

log = logging.getLogger(__name__)

#: Silence put between packed utterances (as long as the VAD's default pause), and how far a recognised
#: piece may reach into a second utterance before the pack is transcribed utterance by utterance instead.
PACK_GAP = 0.6
PACK_STRADDLE = 0.3


def pack_size(utterances: list[Utterance], seconds: float) -> int:
    """How many of the first utterances fit one pack of `seconds` (at least one)."""
    take = 1
    while take < len(utterances) and sum(u.duration + PACK_GAP for u in utterances[: take + 1]) <= seconds:
        take += 1
    return take


def packed_seconds(utterances: list[Utterance]) -> float:
    """The length of a pack holding these utterances, with the gaps after each."""
    return sum(u.duration + PACK_GAP for u in utterances)


def spans_a_turn_boundary(members: Sequence[Utterance], turns: Sequence[Utterance]) -> bool:
    """Whether utterances Whisper ran together in one call span a place between speaker turns, so they may
    not be stored as one segment (its words and label would mix two turns'): two of them touch (the turn
    cutter cut them apart where the voice changed, or the VAD at its length limit: one speaker's utterances
    otherwise have a pause between them), or a turn of the flush outside this call lies between them (another
    language's turn, recognised in a call of its own).

    Args:
        members: consecutive utterances of one call, in order.
        turns: all the speaker turns of the flush the call was taken from, in order (its own among them).
    """
    if any(a.end_sample == b.start_sample for a, b in zip(members, members[1:], strict=False)):
        return True
    mine = {id(u) for u in members}
    start, end = members[0].start_sample, members[-1].end_sample
    return any(id(u) not in mine and start <= u.start_sample and u.end_sample <= end for u in turns)


def transcribe_packed(utterances: list[Utterance], recognise: Callable[[np.ndarray, float], list[TranscriptPiece]],
                      *, turns: Sequence[Utterance] | None = None,
                      ) -> tuple[list[tuple[Utterance, list[TranscriptPiece] | None]], int]:
    """One Whisper call for several utterances; each recognised piece goes to the utterance it overlaps.

    Args:
        utterances: in order, none overlapping.
        recognise: the recogniser call, given the packed audio and the meeting time of its first sample
            (the language policy's clock); piece times are the packed audio's.
        turns: with speaker labels, every speaker turn of the flush `utterances` were taken from (they may be
            some of them, not always adjacent: one call per language); None: no speaker turns, any utterances
            Whisper ran together are stored as one.

    Returns:
        The groups to store, in order, each with its pieces: an utterance, or utterances a piece straddles
        joined from the first one's start to the last one's end (transcribing them again alone would cost a
        whole Whisper window each, and no utterance's words end up with another's times). Where such a join
        would span a place between `turns` (`spans_a_turn_boundary`), each of its utterances instead, with
        None for pieces: to be recognised alone. And how many utterances are stored joined to the one before.
    """
    gap = np.zeros(int(PACK_GAP * SAMPLE_RATE), dtype=np.float32)
    parts: list[np.ndarray] = []
    spans: list[tuple[float, float]] = []
    at = 0.0
    for utterance in utterances:
        if parts:
            parts.append(gap)
            at += PACK_GAP
        spans.append((at, at + utterance.duration))
        parts.append(np.asarray(utterance.audio, dtype=np.float32))
        at += utterance.duration
    pieces = recognise(np.concatenate(parts), utterances[0].start)
    assigned: list[list[TranscriptPiece]] = [[] for _ in utterances]
    joined = [False] * len(utterances)  # joined[i]: utterance i is stored with utterance i - 1
    for piece in pieces:
        overlaps = [max(0.0, min(piece.end, end) - max(piece.start, start)) for start, end in spans]
        reached = [i for i, overlap in enumerate(overlaps) if overlap > PACK_STRADDLE]
        for i in range(min(reached, default=0) + 1, max(reached, default=0) + 1):
            joined[i] = True
        if any(overlaps):
            target = max(range(len(spans)), key=lambda i: overlaps[i])
        else:  # a piece timed inside a pause: the nearest utterance
            middle = (piece.start + piece.end) / 2
            target = min(range(len(spans)), key=lambda i: abs((spans[i][0] + spans[i][1]) / 2 - middle))
        assigned[target].append(piece)
    groups: list[tuple[list[Utterance], list[TranscriptPiece]]] = []
    for utterance, bucket, with_previous in zip(utterances, assigned, joined, strict=True):
        if with_previous and groups:
            groups[-1][0].append(utterance)
            groups[-1][1].extend(bucket)
        else:
            groups.append(([utterance], list(bucket)))
    # Piece times stay the packed call's: a segment's times are its utterances' (the VAD's, sample-exact).
    found: list[tuple[Utterance, list[TranscriptPiece] | None]] = []
    merged = 0
    for members, bucket in groups:
        if len(members) == 1:
            found.append((members[0], sorted(bucket, key=lambda p: p.start)))
        elif turns is not None and spans_a_turn_boundary(members, turns):
            found.extend((member, None) for member in members)
        else:
            found.append((joined_utterance(members), sorted(bucket, key=lambda p: p.start)))
            merged += len(members) - 1
    if merged:
        log.debug("%d of %d packed utterances ran together; stored with the one before", merged, len(spans))
    return found, merged


def joined_utterance(utterances: list[Utterance]) -> Utterance:
    """Consecutive utterances as one, from the first one's start to the last one's end (its audio, the
    utterances' own back to back, is kept for the speaker label: the packed call already recognised it)."""
    first, last = utterances[0], utterances[-1]
    return Utterance(first.start_sample, last.end_sample, np.concatenate([u.audio for u in utterances]),
                     first.wall_clock_anchor, last.forced, first.sample_rate)
