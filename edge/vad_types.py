"""What the VAD segmenter is told (`VADOptions`) and what it emits (`Utterance`), and the audio it takes
(`to_int16`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SAMPLE_RATE = 16000


@dataclass(frozen=True, slots=True)
class VADOptions:
    """How the segmenter decides where utterances begin and end (all durations in milliseconds unless
    named `_s`).

    Attributes:
        aggressiveness: webrtcvad's mode, 0 (keeps the most audio as speech) to 3 (the strictest).
        frame_ms: webrtcvad frame length: 10, 20 or 30.
        padding_ms: audio kept before the first voiced frame (pre-roll).
        hangover_ms: audio kept after the last voiced frame; at most `min_silence_ms`.
        min_silence_ms: unvoiced audio that ends an utterance.
        max_utterance_s: an utterance is cut at this length (Whisper's window is 30 s).
        cut_after_s: once an utterance's speech has lasted this long, a pause of `cut_pause_ms` followed by
            more speech cuts it (at its hangover, or in a short pause's middle); None: never (a file:
            packing makes long utterances cheap; live input: `CaptureOptions.live_cut_after_s`).
        cut_pause_ms: the pause that cuts an utterance past `cut_after_s`.
        sentence_after_s: once an utterance's speech has lasted this long, a pause of `sentence_pause_ms`
            followed by more speech is offered as a place to cut (`sentence_candidate`, `cut_at`); None: never.
        sentence_pause_ms: the pause offered past `sentence_after_s`.
        min_utterance_ms: utterances whose voiced span is shorter are dropped.
        onset_window_ms, onset_ratio: speech starts when this share of the frames in the window is voiced.
        target_rms, max_gain: what webrtcvad hears is amplified (up to `max_gain`; 1 turns it off) so the
            recent loud frames reach `target_rms` (int16 units): a distant speaker or a low microphone gain
            at -65 dBFS is otherwise not speech to it, and every word of it would be lost. Only the
            decision uses the gain; utterances keep the audio as it came.
    """

    aggressiveness: int = 2
    frame_ms: int = 30
    padding_ms: int = 200
    hangover_ms: int = 200
    min_silence_ms: int = 600
    max_utterance_s: float = 20.0
    cut_after_s: float | None = None
    cut_pause_ms: int = 120
    sentence_after_s: float | None = None
    sentence_pause_ms: int = 120
    min_utterance_ms: int = 200
    onset_window_ms: int = 150
    onset_ratio: float = 0.6
    target_rms: float = 2000.0
    max_gain: float = 32.0

    def __post_init__(self) -> None:
        if self.aggressiveness not in (0, 1, 2, 3):
            raise ValueError(f"aggressiveness must be 0..3, not {self.aggressiveness}")
        if self.frame_ms not in (10, 20, 30):
            raise ValueError(f"frame_ms must be 10, 20 or 30 (webrtcvad's frame lengths), not {self.frame_ms}")
        if self.hangover_ms > self.min_silence_ms:
            raise ValueError("hangover_ms must not exceed min_silence_ms")
        if self.max_utterance_s * 1000 < 2 * self.min_silence_ms:
            raise ValueError("max_utterance_s is too short for min_silence_ms")
        if self.cut_after_s is not None and not 0 < self.cut_after_s < self.max_utterance_s:
            raise ValueError(f"cut_after_s must be positive and below max_utterance_s, not {self.cut_after_s}")
        if not self.frame_ms <= self.cut_pause_ms <= self.min_silence_ms:
            raise ValueError(f"cut_pause_ms must lie between frame_ms and min_silence_ms, not {self.cut_pause_ms}")
        if self.sentence_after_s is not None and not 0 < self.sentence_after_s < self.max_utterance_s:
            raise ValueError(f"sentence_after_s must be positive and below max_utterance_s, not "
                             f"{self.sentence_after_s}")
        if not self.frame_ms <= self.sentence_pause_ms <= self.min_silence_ms:
            raise ValueError(f"sentence_pause_ms must lie between frame_ms and min_silence_ms, not "
                             f"{self.sentence_pause_ms}")
        if not 0 < self.onset_ratio <= 1:
            raise ValueError("onset_ratio must be in (0, 1]")
        if self.max_gain < 1 or self.target_rms <= 0:
            raise ValueError("max_gain must be at least 1 and target_rms positive")
        if min(self.padding_ms, self.hangover_ms, self.min_utterance_ms, self.onset_window_ms) < 0:
            raise ValueError("durations must not be negative")


@dataclass(frozen=True, slots=True, eq=False)
class Utterance:
    """One stretch of speech: its audio (float32 in [-1, 1), 16 kHz mono) and where it lies.

    Attributes:
        start_sample, end_sample: sample indices from the meeting's start (end exclusive).
        wall_clock_anchor: the wall-clock time (Unix seconds) of sample 0, when the caller gave one.
        forced: True when the utterance was cut at `max_utterance_s` rather than ended by a pause.
    """

    start_sample: int
    end_sample: int
    audio: np.ndarray = field(repr=False)
    wall_clock_anchor: float | None = None
    forced: bool = False
    sample_rate: int = SAMPLE_RATE

    @property
    def start(self) -> float:
        """Seconds from the meeting's start."""
        return self.start_sample / self.sample_rate

    @property
    def end(self) -> float:
        return self.end_sample / self.sample_rate

    @property
    def duration(self) -> float:
        return (self.end_sample - self.start_sample) / self.sample_rate

    @property
    def wall_clock_start(self) -> float | None:
        """Wall-clock time of the utterance's first sample: the anchor plus `start`."""
        return None if self.wall_clock_anchor is None else self.wall_clock_anchor + self.start

    @property
    def wall_clock_end(self) -> float | None:
        return None if self.wall_clock_anchor is None else self.wall_clock_anchor + self.end


def to_int16(audio: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    """Audio as an int16 array: little-endian PCM bytes, int16 as is, float in [-1, 1] scaled."""
    if isinstance(audio, bytes | bytearray | memoryview):
        raw = bytes(audio)
        if len(raw) % 2:
            raise ValueError("16-bit PCM needs an even number of bytes")
        return np.frombuffer(raw, dtype="<i2").astype(np.int16, copy=False)
    array = np.asarray(audio)
    if array.ndim != 1:
        raise ValueError(f"expected mono audio (one dimension), got shape {array.shape}")
    if array.dtype == np.int16:
        return array
    if np.issubdtype(array.dtype, np.floating):
        return (np.clip(array, -1.0, 32767 / 32768) * 32768).astype(np.int16)
    raise ValueError(f"unsupported sample type {array.dtype}")
