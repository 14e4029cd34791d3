"""The partial captions' side of a live capture (`CaptureAgent` mixes this in): passes of a `PartialCaption`
on the utterance in progress, on a thread of their own, beside the finals' thread.

The reader thread publishes the utterance in progress (`_speaking`) and wakes the passes (`_heard_more`); the
finals' thread says when it is transcribing (`_finals_busy`) and how far the finals have reached
(`_final_until`). A pass never holds the finals' thread: with the finals' own model (one call at a time) it
starts only while no final is being transcribed, and a final waits for at most the pass in flight; with a
model loaded apart, or one loaded for two calls at once, passes run alongside the finals.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .asr import ASR
from .partials import Partial, PartialCaption

if TYPE_CHECKING:
    from .capture_options import CaptureStatus
    from .language import LanguagePolicy

log = logging.getLogger(__name__)

#: At most this share of the recogniser's time goes to partial captions once an utterance's first words are
#: shown: after a pass of d seconds the next waits d * (1 / PARTIAL_DUTY - 1) seconds, so on a slow or busy
#: board the partials thin out instead of holding back the finals behind them. Before that, the pass that
#: may confirm the first words (two passes must agree) follows at once: one more pass per utterance at most.
PARTIAL_DUTY = 0.5
#: No partial pass starts once the speaker has paused this long: the utterance is likely to end within the
#: VAD's `min_silence_ms`, its final is then due, and a pass started now would only hold it back.
PARTIAL_QUIET_MS = 240


class PartialPasses:
    """Partial-caption passes for a capture (a mixin of `CaptureAgent`, which owns the state they read)."""

    status: CaptureStatus
    languages: LanguagePolicy
    _final_until: int
    _finals_busy: bool

    def _init_partial_passes(self, asr: ASR, partials: PartialCaption | None,
                             on_partial: Callable[[Partial], None] | None) -> None:
        self.partials = partials
        self.on_partial = on_partial
        # The utterance in progress (reader thread's): its first sample, its audio, its trailing silence (ms).
        self._speaking: tuple[int, np.ndarray, int] | None = None
        self._partial_rest_until = 0.0  # monotonic time before which no partial pass starts (PARTIAL_DUTY)
        self._heard_more = threading.Event()  # the reader's word to the partials' thread: new audio
        # Passes alongside the finals: the partials' recogniser is a model loaded apart from the finals' (a
        # smaller one, on threads of its own), or runs two calls at once; off after the step down.
        self._partials_alongside = partials is not None and (
            getattr(partials.asr, "parallel_calls", 1) > 1 or not asr.shares_model(partials.asr))

    def _start_partials(self, offset: float) -> tuple[threading.Thread, threading.Event] | None:
        """The partial captions' thread (`_partial_loop`), started; None without partial captions."""
        if self.partials is None:
            return None
        stop = threading.Event()
        thread = threading.Thread(target=self._partial_loop, args=(offset, stop), name="meetmem-partial-passes",
                                  daemon=True)
        thread.start()
        return thread, stop

    def _partial_loop(self, offset: float, stop: threading.Event) -> None:
        """Partial passes as audio comes, until `stop`. A pass that raises is logged and counted; the capture
        goes on (the final segment still comes)."""
        while not stop.is_set():
            self._heard_more.wait(timeout=0.1)
            self._heard_more.clear()
            rest = self._partial_rest_until - time.monotonic()
            if rest > 0:
                stop.wait(rest)
                continue
            try:
                self._partial_pass(offset)
            except Exception:
                self.status.partial_errors += 1
                log.warning("a partial-caption pass failed", exc_info=True)

    def _partial_pass(self, offset: float) -> None:
        """One partial-caption pass on the utterance in progress, when one is due."""
        speaking = self._speaking
        if self.partials is None or speaking is None or speaking[0] < self._final_until:
            return
        if time.monotonic() < self._partial_rest_until or speaking[2] >= PARTIAL_QUIET_MS:
            return
        alongside = self._finals_busy
        if alongside and not self._partials_alongside:
            return  # one call at a time: the final first
        start, audio, _ = speaking
        if self.partials.language is None and self.languages.language is not None:
            self.partials.language = self.languages.language  # the finals' detected language
        self.partials.insert_audio_chunk(start, audio)
        began = time.perf_counter()
        partial = self.partials.process_iter()
        if partial is None:
            return
        took = time.perf_counter() - began
        self.status.partial_passes += 1
        self.status.partial_passes_alongside += alongside
        self.status.partial_time += took
        # Until the first words are confirmed, the pass that may confirm them follows at once (on the first two
        # passes of an utterance: a third means Whisper's guesses differ, and the rest applies again).
        if partial.text or self.partials.utterance_passes > 2:
            self._partial_rest_until = time.monotonic() + took * (1 / PARTIAL_DUTY - 1)
        if partial.new_words and self.on_partial is not None:
            self.on_partial(dataclasses.replace(partial, start=round(offset + partial.start, 3),
                                                heard_until=round(offset + partial.heard_until, 3)))
