"""The partial captions' side of a live capture: passes of a `PartialCaption` on the utterance in progress, on
a thread of their own, beside the finals' thread.

`CaptureAgent` owns one `PartialPasses` when partial captions are on. Its reader thread hands it the utterance
in progress (`heard`), which wakes the passes; the finals' thread publishes in a `FinalsProgress` when it is
transcribing and how far the finals have reached. A pass never holds the finals' thread: with the finals' own
model (one call at a time) it starts only while no final is being transcribed, and a final waits for at most
the pass in flight; with a model loaded apart, or one loaded for two calls at once, passes run alongside the
finals.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(slots=True)
class FinalsProgress:
    """Where the finals' thread is, as the partial passes read it (that thread alone writes it).

    Attributes:
        until: VAD samples: the end of the latest utterance handed to the recogniser (a pass on audio before
            it would caption speech whose final is already coming). Written through `hand_over`.
        busy: transcribing, or about to, a final or a speculative one.
        handing: held while `until` moves, and while a partial caption is delivered: a caption checked against
            `until` under it is delivered before the final that supersedes it, or not at all.
    """

    until: int = 0
    busy: bool = False
    handing: threading.Lock = dataclasses.field(default_factory=threading.Lock)

    def hand_over(self, until: int) -> None:
        """The finals' thread hands the recogniser the utterances up to `until` (VAD samples)."""
        with self.handing:
            self.until = until


class PartialPasses:
    """Partial-caption passes for one live capture.

    Args:
        caption: the policy, with its recogniser.
        finals_asr: the finals' recogniser: passes run alongside the finals unless the caption's recogniser
            is that same loaded model with one call at a time.
        finals: the finals' thread's progress.
        status: the capture's status, where passes are counted.
        languages: the finals' language policy (a caption with no language of its own takes the detected one).
        on_partial: called with each caption that confirmed new words (times in meeting seconds).
    """

    def __init__(self, caption: PartialCaption, finals_asr: ASR, finals: FinalsProgress, status: CaptureStatus,
                 languages: LanguagePolicy, on_partial: Callable[[Partial], None] | None) -> None:
        self.caption = caption
        self.finals = finals
        self.status = status
        self.languages = languages
        self.on_partial = on_partial
        # The utterance in progress (the reader's): its first sample, its audio, its trailing silence (ms).
        self.speaking: tuple[int, np.ndarray, int] | None = None
        self.alongside = getattr(caption.asr, "parallel_calls", 1) > 1 or not finals_asr.shares_model(caption.asr)
        self._rest_until = 0.0  # monotonic time before which no pass starts (PARTIAL_DUTY)
        self._heard_more = threading.Event()

    def heard(self, speaking: tuple[int, np.ndarray, int] | None) -> None:
        """The reader's word: the utterance in progress now (None in a pause). Wakes the passes."""
        self.speaking = speaking  # one reference swap, read by the passes' thread
        self._heard_more.set()

    def step_down(self) -> str | None:
        """The capture's last degradation step (`PartialCaption.step_down`); from then on no pass runs
        alongside a final. Returns what was done (None: it had been done already)."""
        stepped = self.caption.step_down()
        if stepped is not None:
            self.alongside = False
        return stepped

    def start(self, offset: float) -> Callable[[], None]:
        """Start the passes' thread; returns what stops it and waits for the pass in flight."""
        stop = threading.Event()
        thread = threading.Thread(target=self._loop, args=(offset, stop), name="meetmem-partial-passes", daemon=True)
        thread.start()

        def stopped() -> None:
            stop.set()
            self._heard_more.set()
            thread.join()

        return stopped

    def _loop(self, offset: float, stop: threading.Event) -> None:
        """Passes as audio comes, until `stop`. A pass that raises is logged and counted; the capture goes on
        (the final segment still comes)."""
        while not stop.is_set():
            self._heard_more.wait(timeout=0.1)
            self._heard_more.clear()
            rest = self._rest_until - time.monotonic()
            if rest > 0:
                stop.wait(rest)
                continue
            try:
                self.one_pass(offset)
            except Exception:
                self.status.partial_errors += 1
                log.warning("a partial-caption pass failed", exc_info=True)

    def one_pass(self, offset: float) -> None:
        """One pass on the utterance in progress, when one is due."""
        speaking = self.speaking
        if speaking is None or speaking[0] < self.finals.until:
            return
        if time.monotonic() < self._rest_until or speaking[2] >= PARTIAL_QUIET_MS:
            return
        alongside = self.finals.busy
        if alongside and not self.alongside:
            return  # one call at a time: the final first
        start, audio, _ = speaking
        caption = self.caption
        if caption.language is None and self.languages.language is not None:
            caption.language = self.languages.language  # the finals' detected language
        caption.insert_audio_chunk(start, audio)
        began = time.perf_counter()
        partial = caption.process_iter()
        if partial is None:
            return
        took = time.perf_counter() - began
        self.status.partial_passes += 1
        self.status.partial_passes_alongside += alongside
        self.status.partial_time += took
        # Until the first words are confirmed, the pass that may confirm them follows at once (on the first two
        # passes of an utterance: a third means Whisper's guesses differ, and the rest applies again).
        if partial.text or caption.utterance_passes > 2:
            self._rest_until = time.monotonic() + took * (1 / PARTIAL_DUTY - 1)
        if partial.new_words and self.on_partial is not None:
            with self.finals.handing:
                if start < self.finals.until:
                    # The utterance ended during the pass and its final is coming, or has come: a caption now
                    # would show the partial words again after the final had replaced them.
                    self.status.partials_superseded += 1
                    return
                self.on_partial(dataclasses.replace(partial, start=round(offset + partial.start, 3),
                                                    heard_until=round(offset + partial.heard_until, 3)))
