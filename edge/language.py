"""Which language Whisper is told for the next utterance: detected once a minute, not on every call.

faster-whisper detects the language with an encoder pass of its own before the one that decodes, so
detecting on every call costs a multilingual model nearly twice the time per utterance (base on 2 threads:
RTF 0.142 detected per call against 0.112 with `en` fixed, docs/BENCHMARKS.md). People in a meeting rarely
change language mid-minute, so `LanguagePolicy` detects once, then tells Whisper that language until
`redetect_s` seconds of meeting time have passed, when it detects again. An utterance decoded with the
remembered language that comes out with a very low confidence (someone switched language: Whisper told
`en` on Mandarin writes a poor English rendering) makes the next call detect again at once.

Under load (`freeze`) it stops detecting altogether and keeps the language it has: the first step the
capture takes when utterances queue up. A pure state machine: no clock of its own, times are the meeting's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LanguageOptions:
    """When to detect the language again.

    Attributes:
        redetect_s: seconds of meeting time a detected language is reused for.
        doubt_logprob: an utterance decoded with the remembered language whose mean log-probability is below
            this makes the next call detect again (Whisper's own "unsure" rule is -1.0).
    """

    redetect_s: float = 60.0
    doubt_logprob: float = -1.0

    def __post_init__(self) -> None:
        if self.redetect_s < 0:
            raise ValueError("redetect_s must not be negative")


class LanguagePolicy:
    """The language to decode the next utterance in (None: let Whisper detect it).

    Args:
        fixed: a language the meeting is known to be in (`--language en`): never detected.
        options: the re-detection policy.
    """

    def __init__(self, fixed: str | None = None, options: LanguageOptions | None = None) -> None:
        self.fixed = fixed
        self.options = options or LanguageOptions()
        self.language: str | None = fixed
        self.detected_at: float | None = None  # meeting seconds of the last detection
        self.detections = 0
        self.frozen = False

    def language_for(self, at: float) -> str | None:
        """The language to give Whisper for an utterance starting `at` seconds into the meeting."""
        if self.fixed is not None:
            return self.fixed
        if self.language is None or self.detected_at is None:
            return None
        if self.frozen or at - self.detected_at < self.options.redetect_s:
            return self.language
        return None

    def observe(self, asked: str | None, heard: str | None, at: float, avg_logprob: float | None) -> None:
        """What Whisper did with the language it was given (`asked`, None: it detected `heard`)."""
        if self.fixed is not None or heard is None:
            return
        if asked is None:
            self.language, self.detected_at = heard, at
            self.detections += 1
        elif avg_logprob is not None and avg_logprob < self.options.doubt_logprob and not self.frozen:
            self.detected_at = None  # unsure in the remembered language: detect again next time

    def freeze(self) -> bool:
        """Stop re-detecting (under load); True when this changed anything."""
        if self.frozen or self.fixed is not None or self.language is None:
            return False
        self.frozen = True
        return True
