"""Where the voice changes inside one utterance: the pauses it may change in, and the search for the turns.

The VAD cuts at pauses, not at a change of voice: people who answer each other with less than its closing
pause between them arrive as one utterance. `speaker_turns` finds the turns in it with the voice encoder
(`voice_encoder.VoiceEncoder`); the tracker (`speakers.SpeakerTracker.turns`) labels them, and the capture's
turn cutter (`turns.TurnCutter`) recognises each as an utterance of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .voice_encoder import HOP, PARTIAL_FRAMES, SAMPLE_RATE, VoiceEncoder, raised_level

#: Where a new voice may start: the middle of a pause, 10 ms frames at least `PAUSE_DB` below the
#: utterance's loud frames (its 95th percentile) for at least `PAUSE_MIN_S` (a gap between two words).
PAUSE_DB = 25.0
PAUSE_MIN_S = 0.05
#: The longest pauses of a stretch tried as the change (all sides embedded in one batch).
CHANGE_CANDIDATES = 6
#: A side of a cut holding one of the encoder's 1.6 s partial utterances is compared at `change_threshold`.
MIN_TURN_SAMPLES = PARTIAL_FRAMES * HOP
#: A shorter side ("yes." "no, Tuesday.") down to this long is compared at `short_change_threshold`.
MIN_SHORT_TURN_SAMPLES = int(0.6 * SAMPLE_RATE)
#: The default `SpeakerOptions.change_threshold` (tuned with `meetmem bench speakers`).
CHANGE_THRESHOLD = 0.8
#: The default `SpeakerOptions.short_change_threshold`.
SHORT_CHANGE_THRESHOLD = 0.45
#: The most turns one utterance is cut into.
MAX_TURNS = 8


@dataclass(frozen=True, eq=False)
class SpeakerTurn:
    """One voice's stretch of an utterance: samples `[start, end)` of its audio, and its embedding."""

    start: int
    end: int
    embedding: np.ndarray


def speaker_turns(encoder: VoiceEncoder, audio: np.ndarray, change_threshold: float | None,
                  short_change_threshold: float | None = SHORT_CHANGE_THRESHOLD, *,
                  max_turns: int = MAX_TURNS, candidates: int = CHANGE_CANDIDATES) -> list[SpeakerTurn]:
    """An utterance's audio as the turns of the voices in it, in order (one turn when nobody took over).

    People who answer each other with less than the VAD's closing pause between them arrive as one
    utterance, which one label would cover. A new voice starts in a pause (`pauses`). The utterance is cut
    greedily, again and again: in a stretch, the `candidates` longest pauses with enough speech on either
    side are tried, the audio before and after each embedded as an utterance of its own (all in one batch,
    `VoiceEncoder.embed_many`); the pair furthest below its threshold is where the stretch is cut, and each
    side is searched again the same way, so a third voice, or a short answer between two long turns, gets
    its own turn. Sides holding a 1.6 s partial are compared at `change_threshold`; a side of 0.6 to
    1.6 s, repeated to fill a partial, at the lower `short_change_threshold` (two short pieces of one
    voice are less alike than two long ones). Comparing sliding 1.6 s partials' means instead put the cut
    up to a second off on espeak-ng voices: the mean of a few partials of one voice varies nearly as much
    as two voices differ.

    Args:
        encoder: the voice encoder.
        audio: one utterance, 16 kHz mono float32.
        change_threshold: the cosine between two sides of 1.6 s or more below which the voice changed; None
            never cuts.
        short_change_threshold: the same for a side shorter than 1.6 s; None: no side shorter than 1.6 s.
        max_turns: the most turns returned (2: one cut at most).
        candidates: pauses tried per stretch.
    """
    audio = np.asarray(audio, dtype=np.float32)
    n = len(audio)
    shortest = MIN_TURN_SAMPLES if short_change_threshold is None else MIN_SHORT_TURN_SAMPLES
    if change_threshold is None or max_turns < 2 or n < 2 * shortest:
        return [SpeakerTurn(0, n, encoder.embed(audio))]
    cuts = sorted(((length, middle * HOP) for length, middle in pauses(raised_level(audio))), reverse=True)
    done: list[SpeakerTurn] = []
    todo: list[tuple[int, int, np.ndarray | None]] = [(0, n, None)]
    while todo:
        lo, hi, embedding = todo.pop()
        tried = [] if len(done) + len(todo) + 1 >= max_turns else [
            cut for _, cut in cuts
            if min(cut - lo, hi - cut) >= shortest][:candidates]
        if not tried:
            done.append(SpeakerTurn(lo, hi, embedding if embedding is not None else encoder.embed(audio[lo:hi])))
            continue
        sides = encoder.embed_many([piece for cut in tried for piece in (audio[lo:cut], audio[cut:hi])],
                                   repeat_short=True)
        best: tuple[float, int, np.ndarray, np.ndarray] | None = None
        for i, cut in enumerate(tried):
            left, right = sides[2 * i], sides[2 * i + 1]
            long_sides = min(cut - lo, hi - cut) >= MIN_TURN_SAMPLES
            below = (change_threshold if long_sides else short_change_threshold) - float(left @ right)  # type: ignore[operator]
            if below > 0 and (best is None or below > best[0]):
                best = (below, cut, left, right)
        if best is None:
            done.append(SpeakerTurn(lo, hi, embedding if embedding is not None else encoder.embed(audio[lo:hi])))
            continue
        _, cut, left, right = best
        todo.extend([(cut, hi, right), (lo, cut, left)])  # the earlier stretch is searched first
    return sorted(done, key=lambda t: t.start)


def pauses(wav: np.ndarray) -> list[tuple[int, int]]:
    """The pauses in an utterance as (length, middle) in 10 ms frames: runs of at least `PAUSE_MIN_S` of
    frames `PAUSE_DB` below its loud frames."""
    frames = len(wav) // HOP
    if frames < 2:
        return []
    energy = (wav[:frames * HOP].astype(np.float64) ** 2).reshape(frames, HOP).mean(axis=1)
    quiet = energy <= np.percentile(energy, 95) * 10 ** (-PAUSE_DB / 10)
    out: list[tuple[int, int]] = []
    run_start = None
    for i, still in enumerate([*quiet, False]):
        if still and run_start is None:
            run_start = i
        elif not still and run_start is not None:
            if (i - run_start) * HOP >= PAUSE_MIN_S * SAMPLE_RATE:
                out.append((i - run_start, (run_start + i) // 2))
            run_start = None
    return out
