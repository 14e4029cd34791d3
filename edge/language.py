"""Which language Whisper is told for the next utterance: detected per speaker, or once a minute, not per call.

faster-whisper detects the language with an encoder pass of its own before the one that decodes, so
detecting on every call costs a multilingual model nearly twice the time per utterance (base on 2 threads:
RTF 0.142 detected per call against 0.112 with `en` fixed, docs/BENCHMARKS.md). People in a meeting rarely
change language mid-minute, so `LanguagePolicy` detects once, then tells Whisper that language until
`redetect_s` seconds of meeting time have passed, when it detects again. An utterance decoded with the
remembered language that comes out with a very low confidence (someone switched language: Whisper told
`en` on Mandarin writes a poor English rendering) makes the next call detect again at once.

With speaker labels (the capture labels each turn before it is recognised), the language is kept per
speaker: a turn whose speaker has no language yet (or whose language is older than `redetect_s`, or in doubt)
is detected, and a known speaker keeps theirs, so a meeting where one person speaks Mandarin and the others
English is decoded in each speaker's language without detecting on every call. `groups` tells the capture
which turns share a Whisper call (one per language), so that a call never spans two languages or a speaker
still to be detected. Without labels, the meeting-wide once-a-minute rule applies.

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
        per_speaker: with speaker labels, keep a language per speaker (False: the meeting-wide rule even when
            turns are labelled, as before speakers were told apart).
    """

    redetect_s: float = 60.0
    doubt_logprob: float = -1.0
    per_speaker: bool = True

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
        # Per speaker label: (language, meeting seconds of its detection; None: in doubt, detect again).
        self.speakers: dict[str, tuple[str, float | None]] = {}

    def language_for(self, at: float, speaker: str | None = None) -> str | None:
        """The language to give Whisper for an utterance starting `at` seconds into the meeting, spoken by
        `speaker` (None: no speaker labels, the meeting-wide rule)."""
        if self.fixed is not None:
            return self.fixed
        if speaker is None or not self.options.per_speaker:
            return self._fresh(self.language, self.detected_at, at)
        known = self.speakers.get(speaker)
        if known is None:  # a speaker not heard yet: detected, unless detection is frozen under load
            return self.language if self.frozen else None
        return self._fresh(*known, at)

    def _fresh(self, language: str | None, detected_at: float | None, at: float) -> str | None:
        if language is None:
            return None
        if self.frozen:
            return language
        if detected_at is None:
            return None
        return language if at - detected_at < self.options.redetect_s else None

    def observe(self, asked: str | None, heard: str | None, at: float, avg_logprob: float | None,
                speaker: str | None = None) -> None:
        """What Whisper did with the language it was given (`asked`, None: it detected `heard`) for an
        utterance of `speaker` (None: unlabelled)."""
        if self.fixed is not None or heard is None:
            return
        if asked is None:
            self.language, self.detected_at = heard, at  # the meeting's latest (partial captions, unlabelled)
            self.detections += 1
            if speaker is not None and self.options.per_speaker:
                self.speakers[speaker] = (heard, at)
        elif avg_logprob is not None and avg_logprob < self.options.doubt_logprob and not self.frozen:
            # Unsure in the remembered language: detect again next time.
            if speaker is None or not self.options.per_speaker:
                self.detected_at = None
            else:
                self.speakers[speaker] = (self.speakers.get(speaker, (asked, None))[0], None)

    def groups(self, speakers: list[str | None], starts: list[float]) -> list[list[int]]:
        """Which of consecutive utterances (their speakers' labels, their start times) share one Whisper call:
        lists of indices, each in time order. Utterances whose speakers' language is known share a call per
        language; a speaker whose language is to be detected gets a call of their own, so the detection hears
        them. Without labels, or with the language fixed: one call for all."""
        if not speakers:
            return []
        if self.fixed is not None or not self.options.per_speaker or all(s is None for s in speakers):
            return [list(range(len(speakers)))]
        groups: dict[tuple[str, str | None], list[int]] = {}
        for index, (speaker, at) in enumerate(zip(speakers, starts, strict=True)):
            language = self.language_for(at, speaker)
            key = ("language", language) if language is not None else ("speaker", speaker)
            groups.setdefault(key, []).append(index)
        return list(groups.values())

    def freeze(self) -> bool:
        """Stop re-detecting (under load); True when this changed anything."""
        if self.frozen or self.fixed is not None or self.language is None:
            return False
        self.frozen = True
        return True
