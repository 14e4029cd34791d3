"""Speech recognition: the `ASR` protocol the pipeline uses, and `WhisperASR` on faster-whisper.

`WhisperASR` runs a Whisper model in CTranslate2 int8 on the CPU, loaded by local path (`models`), never
from a hub. The meeting's glossary (names, products) goes in as hotwords, which fixes the spelling of
names the model has never heard. Whisper invents text on silence and noise, so every piece passes a guard
before it is returned: the no-speech / log-probability rule of Whisper's own decoder, and a list of the
phrases it is known to invent, compared after normalisation. Chinese output is converted to Simplified
characters (Whisper often writes Traditional ones).

faster-whisper (and OpenCC for Chinese) are imported inside the constructor: importing this module costs
nothing, and a missing package raises `ModelUnavailable` naming the extra to install.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import threading
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .errors import ModelUnavailable, TranscriptionError
from .models import whisper_model_dir

logger = logging.getLogger(__name__)

SAMPLE_RATE = 16000

#: Phrases Whisper produces from silence, music and noise (it learnt them from subtitle credits): a piece
#: that is nothing but one of these, once normalised, is dropped whatever its scores.
PHANTOM_PHRASES: tuple[str, ...] = (
    "Thanks for watching!",
    "Thank you for watching.",
    "Thank you for watching!",
    "Thanks for watching, and I'll see you next time.",
    "Please subscribe to my channel.",
    "Don't forget to like and subscribe.",
    "Subtitles by the Amara.org community",
    "Subtitles by Amara.org",
    "Transcription by CastingWords",
    "字幕由Amara.org社群提供",
    "字幕由Amara.org社区提供",
    "请不吝点赞 订阅 转发 打赏支持明镜与点点栏目",
    "请不吝点赞订阅转发打赏支持明镜与点点栏目",
    "明镜需要您的支持 欢迎订阅明镜",
    "谢谢观看",
    "感谢观看",
    "谢谢大家观看",
    "中文字幕",
    "字幕志愿者",
)
#: The encoder's audio context for finals (`ASROptions.audio_context_s`): the speech plus one second, at least
#: 20 s, instead of the 30 s window padded with silence. A file's packs hold about 17 s of speech on average:
#: tiny.en took 12.6 CPU-s instead of 20.8 on the library benchmark's inputs, base 24 instead of 45-52, with
#: the meeting's and the clips' WER no worse (0.201 / 0.095 and 0.177 / 0.106).
FINAL_AUDIO_CONTEXT_S = 20.0
#: Short phrases Whisper invents on near-silence but people also say ("Thank you."): dropped only when the
#: model itself doubts there was speech (`no_speech_prob >= ASROptions.suspect_no_speech`).
SUSPECT_PHRASES: tuple[str, ...] = ("you", "Thank you.", "Thanks.", "Bye.", "谢谢", "嗯", "Okay.")


@dataclass(frozen=True, slots=True)
class TranscriptPiece:
    """One stretch of recognised text with its times (seconds, from the meeting's start when the caller
    gave an offset) and the recogniser's confidence figures."""

    start: float
    end: float
    text: str
    avg_logprob: float
    no_speech_prob: float
    language: str | None


class ASR(Protocol):
    """What the pipeline needs from a speech recogniser."""

    def transcribe(self, audio: np.ndarray, *, offset: float = 0.0, language: str | None = None,
                   glossary: Sequence[str] = (), whole_window: bool = False) -> list[TranscriptPiece]:
        """Recognise 16 kHz mono float32 audio; piece times are `offset` plus seconds into `audio`."""
        ...

    def shares_model(self, other: ASR) -> bool:
        """Whether `other` decodes with this recogniser's loaded model (it is this one, or a copy of it with
        other decoding options): their calls then take turns, so partial captions by it wait for the finals."""
        ...


@dataclass(frozen=True, slots=True)
class ASROptions:
    """How `WhisperASR` loads and decodes.

    Attributes:
        model: `base`, `tiny.en`, or the path of a CTranslate2 Whisper model folder.
        cache_dir: where the base model's parts are joined (default: the user's cache directory).
        cpu_threads: CTranslate2 intra-op threads (1 on a busy Pi-class board, 2 on a free 2-core one).
        beam_size: 1 is greedy decoding (fastest); 5 is Whisper's default.
        language: `en`, `zh`, ... to fix it, or None to detect it per call among `languages`.
        languages: the languages detection may choose from (the meeting's); None allows any.
        glossary_as: how the glossary reaches the decoder: `hotwords` or `prompt` (the initial prompt).
        no_speech_threshold, logprob_threshold: a piece with a higher no-speech probability and a lower
            average log-probability is dropped (Whisper's own silence rule).
        suspect_no_speech: the no-speech probability above which a `SUSPECT_PHRASES` piece is dropped.
        temperatures: decoding temperatures tried in turn when the output looks like a loop or is unsure.
            The default, greedy 0.0 alone, is deterministic (a fallback samples at random) and keeps the
            time per utterance bounded on a small board.
        audio_context_s: encode only the audio heard plus one second, and at least this many seconds, instead
            of Whisper's whole 30 s window padded with silence (None: the whole window, as Whisper was trained;
            whisper.cpp calls this the audio context). The finals' default, `FINAL_AUDIO_CONTEXT_S` (20 s),
            halves the CPU of a file's packed calls (about 17 s of speech each) with the same WER
            (docs/BENCHMARKS.md, issue 19); partial captions use 15 s (`partials.AUDIO_CONTEXT_S`), about
            three times cheaper on a few seconds of speech. Below 15 s Whisper starts to loop.
        workers: calls the model runs at once (CTranslate2's `inter_threads`, faster-whisper's `num_workers`),
            each on `cpu_threads` threads. The replicas share the weights (CTranslate2 loads a model once per
            device); each has its own working buffers. 2 lets partial captions run alongside a final on the
            same loaded model instead of waiting for it; 1 queues concurrent calls.
    """

    model: str = "base"
    cache_dir: str | None = None
    cpu_threads: int = 2
    beam_size: int = 1
    language: str | None = None
    languages: tuple[str, ...] | None = ("en", "zh")
    glossary_as: str = "hotwords"
    no_speech_threshold: float = 0.6
    logprob_threshold: float = -1.0
    suspect_no_speech: float = 0.3
    temperatures: tuple[float, ...] = (0.0,)
    compute_type: str = "int8"
    audio_context_s: float | None = FINAL_AUDIO_CONTEXT_S
    workers: int = 1

    def __post_init__(self) -> None:
        if self.glossary_as not in ("hotwords", "prompt"):
            raise ValueError(f"glossary_as must be 'hotwords' or 'prompt', not {self.glossary_as!r}")
        if self.cpu_threads < 1 or self.beam_size < 1 or self.workers < 1:
            raise ValueError("cpu_threads, beam_size and workers must be at least 1")
        if self.audio_context_s is not None and not 1.0 <= self.audio_context_s <= 30.0:
            raise ValueError(f"audio_context_s must be between 1 and 30 seconds, not {self.audio_context_s:g}")


def normalise_phrase(text: str) -> str:
    """Case-folded, width-folded, without spaces or punctuation: for comparing a recognised piece with the
    phantom lists (Chinese pieces are compared after their conversion to Simplified characters)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(c for c in text if c.isalnum())


_PHANTOMS = frozenset(normalise_phrase(p) for p in PHANTOM_PHRASES)
_SUSPECTS = frozenset(normalise_phrase(p) for p in SUSPECT_PHRASES)


def is_hallucination(piece: TranscriptPiece, options: ASROptions) -> str | None:
    """Why a piece looks invented rather than heard, or None when it passes. Pure: testable on values."""
    key = normalise_phrase(piece.text)
    if not key:
        return "no words"
    if key in _PHANTOMS:
        return "a known phantom phrase"
    if key in _SUSPECTS and piece.no_speech_prob >= options.suspect_no_speech:
        return "a suspect phrase on probable silence"
    if piece.no_speech_prob > options.no_speech_threshold and piece.avg_logprob < options.logprob_threshold:
        return "probable silence"
    return None


class WhisperASR:
    """faster-whisper on the CPU in int8, with the hallucination guard and Simplified Chinese output.

    Args:
        options: the model and decoding options.
        model_dir: a ready model folder, bypassing the name lookup (tests, a custom model).

    Raises:
        ModelUnavailable: faster-whisper, OpenCC or the model's package is not installed.
    """

    def __init__(self, options: ASROptions | None = None, *, model_dir: str | os.PathLike[str] | None = None) -> None:
        self.options = options or ASROptions()
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise ModelUnavailable("faster-whisper", "the speech recogniser is not installed") from exc
        folder = model_dir or whisper_model_dir(self.options.model, cache_dir=self.options.cache_dir)
        try:
            self._model = WhisperModel(os.fspath(folder), device="cpu", compute_type=self.options.compute_type,
                                       cpu_threads=self.options.cpu_threads, num_workers=self.options.workers,
                                       local_files_only=True)
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelUnavailable(self.options.model, f"cannot load the model from {folder} ({exc})") from exc
        self.model_dir = os.fspath(folder)
        self._reuse = _EncoderReuse(self._model)
        self.multilingual = bool(self._model.model.is_multilingual)
        self._to_simplified = None
        if self.multilingual:
            try:
                from opencc import OpenCC
            except ImportError as exc:
                raise ModelUnavailable("opencc", "Chinese conversion (opencc-python-reimplemented) is not "
                                                 "installed") from exc
            self._to_simplified = OpenCC("t2s").convert
        logger.info("loaded Whisper %s from %s (%s, %d thread(s) x %d worker(s), beam %d)", self.options.model,
                    folder, self.options.compute_type, self.options.cpu_threads, self.options.workers,
                    self.options.beam_size)

    def with_options(self, **changes: Any) -> WhisperASR:
        """The same loaded model decoding with other options (`audio_context_s` for partial captions on the
        finals' model): no second copy of the weights. Loading options (`model`, `cpu_threads`, `workers`,
        `compute_type`) belong to the loaded model and cannot change here."""
        fixed = sorted(k for k in ("model", "cache_dir", "cpu_threads", "workers", "compute_type")
                       if k in changes and changes[k] != getattr(self.options, k))
        if fixed:
            raise ValueError(f"{', '.join(fixed)} cannot change on a loaded model: load another WhisperASR")
        clone = copy.copy(self)
        clone.options = dataclasses.replace(self.options, **changes)
        return clone

    @property
    def parallel_calls(self) -> int:
        """How many calls the loaded model runs at once (`ASROptions.workers`)."""
        return self.options.workers

    def shares_model(self, other: ASR) -> bool:
        """Whether `other` decodes with this very loaded model (itself or a `with_options` copy): then one call
        waits for the other unless the model has `workers` to spare. A model loaded apart runs its calls on
        threads of its own."""
        return getattr(other, "_model", None) is self._model

    def use_greedy(self) -> bool:
        """Decode with beam 1 from now on (a step the capture takes when it falls behind); True when the beam
        was wider."""
        if self.options.beam_size == 1:
            return False
        logger.info("beam %d -> 1 (greedy decoding)", self.options.beam_size)
        self.options = dataclasses.replace(self.options, beam_size=1)
        return True

    def detect_language(self, audio: np.ndarray) -> tuple[str, float]:
        """The most probable language of `audio` among `options.languages`, with its probability."""
        if not self.multilingual:
            return "en", 1.0
        samples = _as_float32(audio)
        language, probability, _ = self._detect(self._first_window(samples))
        return language, probability

    def _first_window(self, samples: np.ndarray) -> np.ndarray:
        """The log-mel features of the first window faster-whisper encodes for `samples` (as its
        `generate_segments` cuts and pads them: the same array, so the encoder's output can be reused)."""
        from faster_whisper.audio import pad_or_trim

        features = self._model.feature_extractor(samples)
        frames = min(self._model.feature_extractor.nb_max_frames, features.shape[-1] - 1)
        return pad_or_trim(features[:, :frames])

    def _detect(self, window: np.ndarray) -> tuple[str, float, Any]:
        """The likeliest language among `options.languages` from one encoder pass over `window`, with its
        probability and the encoder's output."""
        encoded = self._model.encode(window)
        ranked = [(token[2:-2], probability) for token, probability in self._model.model.detect_language(encoded)[0]]
        allowed = self.options.languages
        language, probability = next(((lang, prob) for lang, prob in ranked if allowed is None or lang in allowed),
                                     ranked[0])
        if language != ranked[0][0]:
            logger.debug("detected %s (%.2f), not among %s: using %s", ranked[0][0], ranked[0][1], allowed, language)
        return language, probability, encoded

    def transcribe(self, audio: np.ndarray, *, offset: float = 0.0, language: str | None = None,
                   glossary: Sequence[str] = (), whole_window: bool = False) -> list[TranscriptPiece]:
        """Recognise one utterance (16 kHz mono; float32 in [-1, 1) or int16).

        Args:
            offset: added to every piece's times (the utterance's start in the meeting).
            language: overrides `options.language` for this call; None detects it.
            glossary: names and terms to spell right (hotwords or initial prompt).
            whole_window: encode Whisper's whole 30 s window for this call, whatever `audio_context_s` says.

        Returns:
            The pieces that pass the hallucination guard, in order; empty for silence and noise.
        """
        samples = _as_float32(audio)
        if len(samples) < SAMPLE_RATE // 10:
            return []
        language = language or self.options.language
        if not self.multilingual:
            language = "en"
        terms = ", ".join(t.strip() for t in glossary if t and t.strip()) or None
        seconds = None if whole_window else self.options.audio_context_s
        context = None if seconds is None else round(seconds * 100)
        with self._reuse.context(context):
            decoded, info = self._recognise(samples, language, terms)
        pieces: list[TranscriptPiece] = []
        for segment in decoded:
            text = segment.text.strip()
            if info.language == "zh" and self._to_simplified is not None:
                text = self._to_simplified(text)
            piece = TranscriptPiece(start=round(offset + segment.start, 3), end=round(offset + segment.end, 3),
                                    text=text, avg_logprob=segment.avg_logprob,
                                    no_speech_prob=segment.no_speech_prob, language=info.language)
            reason = is_hallucination(piece, self.options)
            if reason:
                logger.info("dropped %r at %.2f s: %s (no_speech %.2f, logprob %.2f)", text, piece.start, reason,
                            piece.no_speech_prob, piece.avg_logprob)
                continue
            pieces.append(piece)
        return pieces

    def _recognise(self, samples: np.ndarray, language: str | None, terms: str | None) -> tuple[list[Any], Any]:
        """faster-whisper's segments and TranscriptionInfo for `samples`, the language detected first when None.

        Detected here, among the meeting's languages, from the encoder's pass over the first window; the
        decode then reuses that pass (`_EncoderReuse`) instead of encoding the window a second time, as
        faster-whisper's own detection would.
        """
        seconds = len(samples) / SAMPLE_RATE
        if language is None:
            try:
                window = self._first_window(samples)
                language, _, encoded = self._detect(window)
            except (RuntimeError, ValueError) as exc:
                raise TranscriptionError(f"Whisper failed to detect the language of {seconds:.2f} s of audio: "
                                         f"{exc}") from exc
            self._reuse.prime(window, encoded)
        segments, info = self._decode(samples, language, terms)
        try:
            return list(segments), info
        except (RuntimeError, ValueError) as exc:
            raise TranscriptionError(f"Whisper failed on {seconds:.2f} s of audio: {exc}") from exc

    def _decode(self, samples: np.ndarray, language: str | None, terms: str | None) -> tuple[Any, Any]:
        """faster-whisper's lazy segment generator and its TranscriptionInfo."""
        options = self.options
        try:
            return self._model.transcribe(
                samples, language=language, task="transcribe", beam_size=options.beam_size,
                temperature=list(options.temperatures), condition_on_previous_text=False, vad_filter=False,
                without_timestamps=False, no_speech_threshold=options.no_speech_threshold,
                log_prob_threshold=options.logprob_threshold,
                hotwords=terms if options.glossary_as == "hotwords" else None,
                initial_prompt=terms if options.glossary_as == "prompt" else None)
        except (RuntimeError, ValueError) as exc:
            raise TranscriptionError(f"Whisper failed on {len(samples) / SAMPLE_RATE:.2f} s of audio: {exc}") from exc


class _EncoderReuse:
    """Stands in for a WhisperModel's `encode` (faster-whisper calls it as self.encode).

    It hands back a primed encoder output once, when faster-whisper asks to encode the very same features
    (the first window of a call whose language was just detected from it); the check is on the features
    themselves, so a stale or mismatched output is never used. Within `context(frames)` it encodes only the
    window's features up to the last frame of audio plus one second, and at least `frames` of them
    (`ASROptions.audio_context_s`). Both the primed output and the context are per thread.
    """

    MARGIN_FRAMES = 100  # one second of features (10 ms each) kept after the audio

    def __init__(self, model: Any) -> None:
        self._encode = model.encode
        self._local = threading.local()  # the primed output and the context, per thread
        self.reused = 0
        model.encode = self  # the instance attribute shadows the method

    def prime(self, features: np.ndarray, encoded: Any) -> None:
        self._local.primed = (features, encoded)

    @contextlib.contextmanager
    def context(self, frames: int | None) -> Iterator[None]:
        self._local.frames = frames
        try:
            yield
        finally:
            self._local.frames = None

    def __call__(self, features: np.ndarray) -> Any:
        primed = getattr(self._local, "primed", None)
        self._local.primed = None
        if primed is not None and primed[0].shape == features.shape and np.array_equal(primed[0], features):
            self.reused += 1
            return primed[1]
        frames = getattr(self._local, "frames", None)
        if frames is not None:
            window = features[0] if features.ndim == 3 else features
            heard = np.flatnonzero(np.any(window != 0, axis=0))  # pad_or_trim pads with zeros
            keep = min(window.shape[-1], max(frames, (int(heard[-1]) + 1 if len(heard) else 0) + self.MARGIN_FRAMES))
            keep += keep % 2  # the encoder's convolution halves the frames
            features = np.ascontiguousarray(window[:, :keep])
        return self._encode(features)


def _as_float32(audio: np.ndarray) -> np.ndarray:
    array = np.asarray(audio)
    if array.dtype == np.int16:
        return array.astype(np.float32) / 32768.0
    return np.ascontiguousarray(array, dtype=np.float32)
