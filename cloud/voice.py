"""Spoken questions on the cloud: the uploaded audio is decoded and transcribed by the edge's own stages
(`meetmem.edge.audio`, `meetmem.edge.asr`): the same recogniser, the same hallucination guard.

The recogniser belongs to the `edge` extra. A cloud without it still serves everything else; a spoken
question then gets a 503 that says what to install.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from typing import Any

from meetmem.store.errors import InvalidSegment, StoreError

log = logging.getLogger(__name__)

SAMPLE_RATE = 16000


class VoiceUnavailable(StoreError):
    """No speech recogniser on this cloud (the `edge` extra is missing, or its model failed to load)."""


class VoiceQuestions:
    """Transcribes spoken questions with Whisper, loaded once (`load`) and used one call at a time.

    Args:
        model: `base`, `tiny.en`, a model folder, or `none` to refuse spoken questions.
        threads: CPU threads for the recogniser.
        cache_dir: where the base model's parts are joined (default: the user's cache directory).
    """

    def __init__(self, model: str = "base", *, threads: int = 1, cache_dir: str | None = None) -> None:
        self.model = model
        self.threads = threads
        self.cache_dir = cache_dir
        self._asr: Any = None
        self._problem: str | None = None if model != "none" else "spoken questions are turned off (voice_model=none)"
        self._lock = threading.Lock()

    def load(self) -> None:
        """Load the recogniser (the service's loader thread calls this at start-up)."""
        if self.model == "none" or self._asr is not None:
            return
        try:
            from meetmem.edge.asr import ASROptions, WhisperASR
            from meetmem.edge.errors import EdgeError
        except ImportError as exc:
            self._problem = f"the speech recogniser is not installed ({exc.name}): pip install 'meetmem[edge]'"
            log.warning("spoken questions are unavailable: %s", self._problem)
            return
        try:
            self._asr = WhisperASR(ASROptions(model=self.model, cpu_threads=self.threads, cache_dir=self.cache_dir))
        except EdgeError as exc:
            self._problem = str(exc)
            log.warning("spoken questions are unavailable: %s", exc)

    def transcribe(self, data: bytes, *, filename: str, sample_rate: int | None = None,
                   language: str | None = None) -> str:
        """The question's text. Raw PCM (16-bit mono) when `sample_rate` is given, else a WAV/FLAC/Ogg file.

        Raises:
            VoiceUnavailable: no recogniser here.
            InvalidSegment: the audio cannot be decoded, or holds no speech (a 422 for the caller).
        """
        if self._asr is None:
            raise VoiceUnavailable(self._problem or "the speech recogniser is still loading; retry shortly")
        from meetmem.edge.errors import AudioError
        from meetmem.edge.transcript_text import join_pieces

        try:
            samples = _pcm(data, sample_rate) if sample_rate is not None else _decode(data, filename)
        except AudioError as exc:
            raise InvalidSegment(f"file: {exc.problem}") from None
        if len(samples) < SAMPLE_RATE // 4:
            raise InvalidSegment("file: the audio is shorter than a quarter of a second; record the whole question")
        with self._lock:
            pieces = self._asr.transcribe(samples, language=language)
        text = join_pieces(pieces)
        if not text:
            raise InvalidSegment("file: no speech was recognised in the audio")
        return text


def _pcm(data: bytes, sample_rate: int) -> Any:
    import numpy as np

    if not 4000 <= sample_rate <= 192000:
        raise InvalidSegment(f"sample_rate must be between 4000 and 192000 Hz, got {sample_rate}")
    if len(data) % 2:
        raise InvalidSegment("file: raw PCM must be 16-bit samples (an even number of bytes)")
    samples = np.frombuffer(data, dtype="<i2")
    if sample_rate != SAMPLE_RATE and len(samples):
        samples = _resample(samples, sample_rate)
    return samples.astype(np.float32) / 32768.0


def _resample(samples: Any, rate: int) -> Any:
    """16-bit mono PCM to 16 kHz with FFmpeg's resampler (PyAV), which filters before it decimates."""
    import av
    import numpy as np

    frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples, dtype=np.int16).reshape(1, -1), format="s16",
                                       layout="mono")
    frame.sample_rate = rate
    resampler = av.AudioResampler(format="s16", layout="mono", rate=SAMPLE_RATE)
    frames = resampler.resample(frame) + resampler.resample(None)
    return np.concatenate([f.to_ndarray().reshape(-1) for f in frames]) if frames else np.zeros(0, np.int16)


def _decode(data: bytes, filename: str) -> Any:
    from meetmem.edge.audio import decode_file
    from meetmem.edge.errors import AudioError

    if not data:
        raise AudioError(filename, "the file is empty")
    suffix = os.path.splitext(filename)[1][:10] if filename else ""
    with tempfile.NamedTemporaryFile(suffix=suffix) as handle:
        handle.write(data)
        handle.flush()
        return decode_file(handle.name)
