"""The capture's degradation steps: what a live capture gives up, in order, when speech ends faster than the
recogniser transcribes it. Audio is never dropped: the backlog goes into packed calls."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .asr import ASR
    from .capture_options import CaptureStatus
    from .language import LanguagePolicy
    from .partial_passes import PartialPasses
    from .vad import Utterance

log = logging.getLogger(__name__)


def step_when_behind(backlog: list[Utterance], ended: bool, status: CaptureStatus, languages: LanguagePolicy,
                     asr: ASR, captions: PartialPasses | None) -> None:
    """Record how far the recogniser is behind and take the next degradation step when it is.

    Two or more utterances waiting at once (the end of the input aside) means speech ends faster than
    it is transcribed. The steps, in order, each taken once and reported in `status.degradations`: the
    language is no longer detected again (one encoder pass less per call), then beam search falls back
    to greedy decoding (when it was wider), then partial captions step down: their smaller model when
    one was given, else half as many passes, and none alongside a final any more.
    """
    waiting_s = sum(u.duration for u in backlog)
    status.backlog_max = max(status.backlog_max, len(backlog))
    status.backlog_max_s = round(max(status.backlog_max_s, waiting_s), 3)
    if len(backlog) < 2 or ended:
        return
    at = round(backlog[0].start, 3)
    if languages.freeze():
        status.degradations.append({"step": "language fixed", "language": languages.language,
                                    "at_s": at, "backlog": len(backlog)})
        log.info("behind by %d utterances: keeping %s without detecting the language again", len(backlog),
                 languages.language)
        return
    greedy = getattr(asr, "use_greedy", None)
    if greedy is not None and greedy():
        status.degradations.append({"step": "beam 1", "at_s": at, "backlog": len(backlog)})
        log.info("behind by %d utterances: greedy decoding from now on", len(backlog))
        return
    stepped = captions.step_down() if captions is not None else None
    if stepped is not None:
        status.degradations.append({"step": "partials: " + stepped, "at_s": at, "backlog": len(backlog)})
        log.info("behind by %d utterances: partial captions %s, only between finals", len(backlog), stepped)
