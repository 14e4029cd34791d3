"""Partial captions: the utterance in progress re-transcribed on a short cadence, shown word by word once two
passes agree on it.

The policy is LocalAgreement-2 (Macháček, Dabre and Bojar, "Turning Whisper into Real-Time Transcription
System", 2023; whisper_streaming): each pass transcribes the utterance from its start to the newest audio;
the longest common prefix of the last two passes is confirmed, and confirmed words are never taken back
(a pass is compared from where the confirmed words end in it: `resume_at`).
Whisper's guess at the word being spoken changes from pass to pass; a word two passes agree on rarely does.
The final segment (the whole utterance, transcribed once the VAD closes it) replaces the partials: they are
never stored.

`PartialCaption` is a small state machine in whisper_streaming's shape (`insert_audio_chunk /
process_iter / finish`): fed audio, it returns `Partial` values; it reads no clock and does no I/O. The
recogniser is the `ASR` seam (on a small board, a smaller model than the finals' one).
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .asr import ASR

SAMPLE_RATE = 16000
#: The audio context of a partial pass (`ASROptions.audio_context_s`): the encoder hears the utterance so far
#: plus a second, at least 15 s, instead of a 30 s window that is mostly padding: a pass over a few seconds
#: costs about a third. The final segment, which replaces the partials, is decoded with the whole window.
AUDIO_CONTEXT_S = 15.0


def partial_model_threads(finals_threads: int) -> int:
    """CPU threads for a partial-caption model loaded apart from the finals' (tiny.en beside base): one fewer
    than the finals', at least one. Its passes run alongside the finals, which keep their own threads."""
    return max(1, finals_threads - 1)


@dataclass(frozen=True, slots=True)
class PartialOptions:
    """When a pass runs.

    Attributes:
        cadence_s: seconds of new audio between two passes.
        first_cadence_s: the same until the utterance's first words are confirmed: the first words need two
            passes that agree, so the second follows the first sooner (they come at 0.5 and 0.7 s of the
            utterance instead of 0.5 and 0.9 s).
        min_audio_s: no pass on an utterance shorter than this (Whisper guesses on a syllable).
        max_audio_s: the pass hears at most the utterance's last this many seconds (the VAD cuts at 20 s).
    """

    cadence_s: float = 0.4
    first_cadence_s: float = 0.2
    min_audio_s: float = 0.5
    max_audio_s: float = 20.0

    def __post_init__(self) -> None:
        if self.cadence_s <= 0 or self.first_cadence_s <= 0 or self.min_audio_s < 0 or self.max_audio_s <= 0:
            raise ValueError("cadence_s, first_cadence_s and max_audio_s must be positive, min_audio_s not negative")


@dataclass(frozen=True, slots=True)
class Partial:
    """The caption of the utterance in progress.

    Attributes:
        start: the utterance's start, seconds from the meeting's start.
        heard_until: the end of the audio the latest pass heard (meeting seconds).
        text: the confirmed words (what the HUD shows).
        tentative: the latest pass's words after them, not yet confirmed.
        new_words: how many words this pass confirmed (0: nothing new to show).
    """

    start: float
    heard_until: float
    text: str
    tentative: str
    new_words: int

    def public(self) -> dict[str, object]:
        return {"start": round(self.start, 3), "heard_until": round(self.heard_until, 3), "text": self.text}


def _key(word: str) -> str:
    """A word as passes are compared: case-folded, width-folded, punctuation stripped."""
    return "".join(c for c in unicodedata.normalize("NFKC", word).casefold() if c.isalnum())


def agreed_prefix(previous: Sequence[str], current: Sequence[str]) -> int:
    """How many leading words two passes share (compared by `_key`). Pure."""
    n = 0
    for a, b in zip(previous, current, strict=False):
        if _key(a) != _key(b):
            break
        n += 1
    return n


def resume_at(confirmed: Sequence[str], words: Sequence[str], reach: int = 2) -> int:
    """Where the words after the confirmed ones begin in a new pass. Pure.

    Usually right after them (the pass repeats them); when the pass words them differently ("you" for
    "your", a word split in two), after the word that matches the last confirmed one within `reach` words of
    that position, else at the same position.
    """
    n = len(confirmed)
    if n == 0 or agreed_prefix(confirmed, words) == n:
        return min(n, len(words))
    last = _key(confirmed[-1])
    near = [j for j in range(max(1, n - reach), min(len(words), n + reach) + 1) if _key(words[j - 1]) == last]
    return min(near, key=lambda j: abs(j - n)) if near else min(n, len(words))


class PartialCaption:
    """LocalAgreement-2 over the utterance in progress (see the module docstring).

    Args:
        asr: the recogniser for the passes.
        options: the cadence.
        language: the language to decode in (None: the recogniser detects it).
        glossary: names and terms to spell right.
        smaller: a smaller recogniser to step down to when the finals fall behind (`step_down`); None: the
            step down makes passes half as frequent instead (a second model costs memory the edge may not
            have: tiny.en beside base peaks above the 450 MB budget).
    """

    def __init__(self, asr: ASR, options: PartialOptions | None = None, *, language: str | None = None,
                 glossary: Sequence[str] = (), smaller: ASR | None = None) -> None:
        self.asr = asr
        self.options = options or PartialOptions()
        self.language = language
        self.glossary = tuple(glossary)
        self.smaller = smaller
        self.stepped_down: str | None = None
        self.passes = 0
        self._reset(0)

    def step_down(self) -> str | None:
        """Cheaper passes from now on, as the capture's last degradation step when finals fall behind: the
        smaller recogniser when there is one, else the cadences doubled. Returns what was done (None: it
        had been done already)."""
        if self.stepped_down is not None:
            return None
        if self.smaller is not None:
            self.asr, self.smaller = self.smaller, None
            self.stepped_down = "smaller model"
        else:
            self.options = dataclasses.replace(self.options, cadence_s=2 * self.options.cadence_s,
                                               first_cadence_s=2 * self.options.first_cadence_s)
            self.stepped_down = "half as often"
        return self.stepped_down

    def _reset(self, start_sample: int) -> None:
        self._start = start_sample
        self._audio = np.zeros(0, dtype=np.float32)
        self._heard = 0  # samples of the utterance the last pass heard
        self.utterance_passes = 0  # passes on this utterance so far
        self._previous: list[str] = []  # the last pass's words after the confirmed ones
        self._confirmed: list[str] = []

    @property
    def start_sample(self) -> int:
        return self._start

    @property
    def due(self) -> bool:
        """Enough new audio for another pass."""
        opts = self.options
        cadence = opts.cadence_s if self._confirmed else min(opts.cadence_s, opts.first_cadence_s)
        return (len(self._audio) >= opts.min_audio_s * SAMPLE_RATE
                and len(self._audio) - self._heard >= cadence * SAMPLE_RATE)

    def insert_audio_chunk(self, start_sample: int, audio: np.ndarray) -> None:
        """The utterance in progress so far: it starts at `start_sample` (meeting samples) and `audio` is all
        of it (float32 or int16). Another start begins a new caption."""
        if start_sample != self._start:
            self._reset(start_sample)
        samples = np.asarray(audio)
        if samples.dtype == np.int16:
            samples = samples.astype(np.float32) / 32768.0
        self._audio = np.ascontiguousarray(samples, dtype=np.float32)

    def process_iter(self) -> Partial | None:
        """One pass when one is due; the caption with the words it confirmed (None: no pass was due)."""
        if not self.due:
            return None
        keep = int(self.options.max_audio_s * SAMPLE_RATE)
        audio = self._audio[-keep:]
        self._heard = len(self._audio)
        pieces = self.asr.transcribe(audio, language=self.language, glossary=self.glossary)
        self.passes += 1
        self.utterance_passes += 1
        words = " ".join(p.text.strip() for p in pieces).split()
        continuation = words[resume_at(self._confirmed, words):]
        agreed = agreed_prefix(self._previous, continuation)
        self._confirmed = self._confirmed + continuation[:agreed]
        self._previous = continuation[agreed:]
        return Partial(self._start / SAMPLE_RATE, (self._start + self._heard) / SAMPLE_RATE,
                       " ".join(self._confirmed), " ".join(self._previous), agreed)

    def finish(self) -> None:
        """The utterance ended (its final segment replaces the caption): start afresh."""
        self._reset(self._start)
