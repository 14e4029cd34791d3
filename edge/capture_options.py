"""What a capture run is told (`CaptureOptions`: the meeting and the live policies) and what it reports
(`CaptureStatus`)."""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from dataclasses import dataclass, field

from .language import LanguageOptions
from .vad import VADOptions

#: Live input: once a pause has lasted this long, the utterance it will close is transcribed already (a
#: speculative final), while the VAD waits out the rest of its `min_silence_ms` (600 ms) before closing it.
#: When the pause does close it, the segment is stored the moment the VAD emits it, its words already
#: decoded; when the speaker goes on instead, the speculation is dropped. The segmentation, and so the
#: words of every final, stay exactly what the 600 ms rule gives (no sentence split at a short breath);
#: only the waiting overlaps. 270 ms is past the 240 ms after which no partial pass starts.
SPECULATE_AFTER_MS = 270
#: `CaptureStatus.sentence_places_refused_latest` keeps this many of the latest refused places.
REFUSED_KEPT = 20
#: Live input: an utterance whose speech has lasted this long is cut at its next pause of `LIVE_CUT_PAUSE_MS`
#: after which the speaker goes on (`CaptureOptions.live_cut_after_s`).
LIVE_CUT_AFTER_S = 15.0
LIVE_CUT_PAUSE_MS = 300
#: Live input: once an utterance's speech has lasted this long, a pause of `LIVE_SENTENCE_PAUSE_MS` after which
#: the speaker goes on is transcribed as a place to cut, and cut there when its words end a sentence
#: (`CaptureOptions.live_sentence_after_s`).
LIVE_SENTENCE_AFTER_S = 12.0
LIVE_SENTENCE_PAUSE_MS = 120


@dataclass(frozen=True, slots=True)
class CaptureOptions:
    """What a capture run knows about its meeting.

    Args:
        meeting_id: the meeting the segments belong to.
        language: `en`, `zh`, or None to detect it (once a minute: `language_policy`).
        glossary: names and terms: ASR hotwords, and protected from filler cleaning.
        speaker: the speaker label to give every segment (None: unknown).
        vad: the utterance segmentation policy.
        pack_seconds: a file read as fast as it decodes is transcribed in windows of up to this much speech
            (several utterances with a pause between them, one Whisper call): Whisper encodes a whole 30 s
            window whatever it holds, so one short utterance per call costs several times more (0: never
            pack). Live input is transcribed as each utterance ends; only a backlog (utterances that ended
            while the recogniser was busy) is packed.
        language_policy: how often a detected language is detected again.
        speculate_after_ms: live input: transcribe an utterance once its closing pause has lasted this long,
            before the VAD closes it (`SPECULATE_AFTER_MS`); None: only once closed.
        live_whole_window: live input: its finals are encoded over Whisper's whole 30 s window, not the shorter
            audio context a file's packs use (`asr.FINAL_AUDIO_CONTEXT_S`). A live call holds one utterance,
            and on those the 20 s context cost words: each utterance of the sample meeting and the 9 English
            clips transcribed alone (base, beam 1), WER 0.210 / 0.116 against 0.198 / 0.113 with the whole
            window, for 45 % less CPU (docs/BENCHMARKS.md, "Issue 19: the finals' audio context on live input").
        live_cut_after_s: live input: `VADOptions.cut_after_s`: once an utterance's speech has lasted this
            long, its next pause of `live_cut_pause_ms` that the speaker talks on after cuts it, there and
            then. Without it, a stretch with no pause long enough to end it is cut only when it reaches
            `VADOptions.max_utterance_s` (20 s), back at its latest pause: the speech before that pause was
            done seconds earlier (up to 3.2 s on the sample meeting), and its final waited that long. At 15 s
            and 300 ms the cuts fall where the length limit would have put them on the sample meeting and the
            English clips, so every utterance's words are the same (each utterance alone, base: WER 0.198 /
            0.113 either way), but each cut is made when its pause happens (docs/BENCHMARKS.md, "Issue 19:
            partials alongside the finals, and live cuts on by default"). Shorter pauses cost words (any
            under 250 ms: clips 0.116; 12 s at 120 ms: 0.200 / 0.116), yet only they cut speech whose
            sentences follow each other within 0.25 s. None: live input is segmented as a file is.
        live_cut_pause_ms: live input: `VADOptions.cut_pause_ms`, the pause that cuts past `live_cut_after_s`.
        live_sentence_after_s: live input: `VADOptions.sentence_after_s`: once an utterance's speech has lasted
            this long, each pause of `live_sentence_pause_ms` that the speaker talks on after is transcribed
            (the utterance up to it, a speculative final), and the utterance is cut there when those words
            end a sentence (`ends_sentence`: Whisper put a full stop, question or exclamation mark there), the
            piece stored with them. Speech whose sentences follow each other within 0.25 s has no pause long
            enough for `live_cut_pause_ms`, and was cut only at the length limit, its finals seconds late. Where
            Whisper heard the words go on (no end mark), the pause is not cut. None: off.
        live_sentence_pause_ms: live input: `VADOptions.sentence_pause_ms`.
    """

    meeting_id: str
    language: str | None = None
    glossary: tuple[str, ...] = ()
    speaker: str | None = None
    vad: VADOptions = field(default_factory=VADOptions)
    pack_seconds: float = 24.0
    language_policy: LanguageOptions = field(default_factory=LanguageOptions)
    speculate_after_ms: int | None = SPECULATE_AFTER_MS
    live_cut_after_s: float | None = LIVE_CUT_AFTER_S
    live_cut_pause_ms: int = LIVE_CUT_PAUSE_MS
    live_sentence_after_s: float | None = LIVE_SENTENCE_AFTER_S
    live_sentence_pause_ms: int = LIVE_SENTENCE_PAUSE_MS
    live_whole_window: bool = True

    def vad_for(self, live: bool) -> VADOptions:
        """The segmentation for this input: live input is cut at pauses once long when `live_cut_after_s`
        is set; a file is segmented as `vad` says (and so is live input whose `vad` sets a cut of its own)."""
        vad = self.vad
        if not live:
            return vad
        if self.live_cut_after_s is not None and vad.cut_after_s is None:
            vad = dataclasses.replace(vad, cut_after_s=self._below_limit(self.live_cut_after_s),
                                      cut_pause_ms=self._pause(self.live_cut_pause_ms))
        if self.live_sentence_after_s is not None and vad.sentence_after_s is None:
            vad = dataclasses.replace(vad, sentence_after_s=self._below_limit(self.live_sentence_after_s),
                                      sentence_pause_ms=self._pause(self.live_sentence_pause_ms))
        return vad

    def _below_limit(self, seconds: float) -> float:
        return seconds if seconds < self.vad.max_utterance_s else self.vad.max_utterance_s / 2

    def _pause(self, ms: int) -> int:
        return min(max(ms, self.vad.frame_ms), self.vad.min_silence_ms)


@dataclass
class CaptureStatus:
    """Running figures of a capture (what the status line shows)."""

    audio_time: float = 0.0  # seconds of input consumed (from the meeting's start)
    segments: int = 0
    dropped: int = 0  # utterances that held nothing but fillers, silence or phantom phrases
    transcribe_time: float = 0.0  # seconds spent in the recogniser
    started: float = field(default_factory=time.monotonic)
    resumed_at: float = 0.0
    latencies: list[float] = field(default_factory=list)  # end of speech -> in the outbox (seconds, live only)
    recogniser_calls: int = 0
    language_detections: int = 0  # calls in which Whisper detected the language
    merged: int = 0  # utterances stored joined to the one before, as Whisper ran them together in a packed call
    backlog_max: int = 0  # most utterances waiting for the recogniser at once (live only)
    backlog_max_s: float = 0.0  # and their seconds of speech
    degradations: list[dict[str, object]] = field(default_factory=list)  # steps taken under load, in order
    partial_passes: int = 0  # partial-caption passes run (live only)
    partial_time: float = 0.0  # seconds spent in them
    partial_passes_alongside: int = 0  # of which began while a final was being transcribed
    partial_errors: int = 0  # passes that raised (logged; a failed pass never stops the capture)
    partials_superseded: int = 0  # captions not shown: their utterance's final was due before they were
    speaker_turns_split: int = 0  # utterances cut in two (or more) where the voice changed inside them
    speculations: int = 0  # live: utterances transcribed before the VAD closed them (speculative finals)
    speculations_used: int = 0  # of which the VAD then closed exactly there, their words stored as decoded
    sentence_cuts: int = 0  # live: utterances cut at a short pause where their words ended a sentence
    sentence_places: int = 0  # live: places to cut a long utterance the VAD offered (`live_sentence_after_s`)
    sentence_places_decoded: int = 0  # of which transcribed (the rest were passed over for a newer place first)
    sentence_places_refused: int = 0  # of the decoded, not cut, as their words went on
    #: The latest refused places (at most `REFUSED_KEPT`, so an hours-long meeting keeps no growing list): where
    #: (meeting seconds) and the last words heard.
    sentence_places_refused_latest: deque[dict[str, object]] = field(
        default_factory=lambda: deque(maxlen=REFUSED_KEPT))

    @property
    def real_time_factor(self) -> float:
        """Recogniser seconds per second of audio processed in this run."""
        span = self.audio_time - self.resumed_at
        return self.transcribe_time / span if span > 0 else 0.0
