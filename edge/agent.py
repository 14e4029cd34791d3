"""Capture: audio chunks → VAD → ASR → filler cleaning → the outbox. No network here.

Each utterance the VAD closes is transcribed, cleaned and stored in the outbox in one transaction with the
capture position, then the uploader is nudged; capture never waits for the network. A restarted capture of
the same file resumes after the last utterance it stored, so a kill -9 costs at most the utterance in
flight, transcribed again, never a duplicate. A live source (microphone, standard input, a WebSocket
stream) cannot be replayed: a restart continues the meeting's clock from where the previous run stopped.
"""

from __future__ import annotations

import hashlib
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .asr import ASR, TranscriptPiece
from .audio import skip_samples, tee
from .capture_options import CaptureOptions, CaptureStatus
from .cleaning import FillerCleaner
from .degradation import step_when_behind
from .language import LanguagePolicy
from .outbox import Outbox, OutboxSegment
from .packing import pack_size, packed_seconds, transcribe_packed
from .partial_passes import FinalsProgress, PartialPasses
from .partials import Partial, PartialCaption
from .speakers import SpeakerTracker
from .transcript_text import ends_sentence, join_pieces
from .turns import TurnCutter
from .vad import SAMPLE_RATE, Utterance, VADSegmenter

log = logging.getLogger(__name__)


def source_id(input_name: str) -> str:
    """The identity of an input for resuming: a file by the sha256 of its bytes, a live source by name."""
    if input_name in ("-", "mic", "frame"):
        return f"live:{input_name}"
    if input_name == "ws" or input_name.startswith("ws://"):
        return "live:ws"  # a phone's stream, whatever address it is served on
    digest = hashlib.sha256()
    with open(input_name, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"file:{digest.hexdigest()}"


class CaptureAgent:
    """Turns one input's audio into segments in the outbox.

    Args:
        asr: the speech recogniser (`WhisperASR`).
        outbox: the durable outbox.
        options: the meeting and policies.
        on_segment: called after each segment is stored (the uploader's `notify`).
        on_status: called with the running status after each chunk of audio.
        partials: live input only: the partial-caption policy (with its recogniser) run on the utterance in
            progress, on a thread of its own. When its recogniser is a model loaded apart from the finals'
            (tiny.en beside base), or runs two calls at once (`ASROptions.workers`), passes run alongside the
            finals; otherwise (the finals' own model) only while no final is being transcribed. None: no
            partial captions.
        on_partial: called with each partial caption that confirmed new words (times in meeting seconds).
        speakers: labels each segment by its voice (`speakers.SpeakerTracker`); None: every segment gets
            `options.speaker`.
    """

    def __init__(self, asr: ASR, outbox: Outbox, options: CaptureOptions, *,
                 on_segment: Callable[[OutboxSegment], None] | None = None,
                 on_status: Callable[[CaptureStatus], None] | None = None,
                 on_audio: Callable[[np.ndarray, float], None] | None = None,
                 partials: PartialCaption | None = None,
                 on_partial: Callable[[Partial], None] | None = None,
                 speakers: SpeakerTracker | None = None) -> None:
        self.asr = asr
        self.outbox = outbox
        self.options = options
        self.cleaner = FillerCleaner(options.glossary)
        self.on_segment = on_segment
        self.on_status = on_status
        self.on_audio = on_audio  # every block heard, with its start on the meeting's clock (the audio keeper)
        self.status = CaptureStatus()
        self.languages = LanguagePolicy(options.language, options.language_policy)
        self.speakers = speakers
        self.turns = TurnCutter(speakers) if speakers is not None else None
        self._live = False  # this run's input is live (or paced): `CaptureOptions.live_whole_window` applies
        self._finals = FinalsProgress()  # the finals' thread's progress, which the partial passes read
        self.captions = None if partials is None else PartialPasses(partials, asr, self._finals, self.status,
                                                                    self.languages, on_partial)
        # Speculative finals: the reader's current closing candidate and place to cut (start, end samples),
        # the words of those transcribed and not yet stored, and the cuts asked of the reader.
        self._closing: tuple[int, int] | None = None
        self._sentence: tuple[int, int] | None = None
        self._speculated: dict[tuple[int, int], list[TranscriptPiece]] = {}
        self._cuts: queue.SimpleQueue[Utterance] = queue.SimpleQueue()
        self._cut_asked: Utterance | None = None  # the latest cut asked of the reader

    def run(self, chunks: Iterable[np.ndarray], *, source: str, live: bool = False,
            anchor: float | None = None) -> CaptureStatus:
        """Capture until the input ends.

        Args:
            chunks: 16 kHz mono int16 audio.
            source: the input's identity (`source_id`).
            live: a microphone or a stream: a restart continues the clock instead of skipping audio.
            anchor: the wall-clock time (Unix seconds) the first chunk's first sample was spoken, for a
                live or paced input; each segment's end-of-speech to outbox latency is measured from it.
        """
        meeting = self.options.meeting_id
        done_until = self.outbox.progress(meeting, source)
        offset = 0.0 if not live else done_until  # seconds of meeting time before this input's sample 0
        skip = 0 if live else int(round(done_until * SAMPLE_RATE))
        if done_until:
            log.info("resuming %s of meeting %s at %.2f s", source, meeting, done_until)
        status = self.status
        status.resumed_at = status.audio_time = done_until
        vad = VADSegmenter(self.options.vad_for(live or anchor is not None), wall_clock_anchor=anchor)
        base = offset + skip / SAMPLE_RATE
        heard = skip_samples(chunks, skip)
        if self.on_audio is not None:
            heard = tee(heard, base, self.on_audio)
        if live or anchor is not None:
            self._live = True
            self._run_live(heard, vad, base, source)
            status.audio_time = offset + (skip + vad.samples_seen) / SAMPLE_RATE
            self.outbox.record_progress(meeting, source, status.audio_time)
            if self.on_status is not None:
                self.on_status(status)
            return status
        pack = self.options.pack_seconds
        waiting: list[Utterance] = []
        for chunk in heard:
            for utterance in vad.feed(chunk):
                waiting.append(utterance)
                if packed_seconds(waiting) > pack:
                    self._flush(waiting[:-1] if len(waiting) > 1 and pack else waiting, base, source)
                    waiting = waiting[-1:] if len(waiting) > 1 and pack else []
            status.audio_time = offset + (skip + vad.samples_seen) / SAMPLE_RATE
            if self.on_status is not None:
                self.on_status(status)
        waiting.extend(vad.finish())
        while waiting:
            take = pack_size(waiting, pack)
            self._flush(waiting[:take], base, source)
            waiting = waiting[take:]
        status.audio_time = offset + (skip + vad.samples_seen) / SAMPLE_RATE
        self.outbox.record_progress(meeting, source, status.audio_time)
        if self.on_status is not None:
            self.on_status(status)
        return status

    def _run_live(self, chunks: Iterable[np.ndarray], vad: VADSegmenter, offset: float, source: str) -> None:
        """Live input: a reader thread runs the VAD as the audio comes; this thread transcribes.

        Each utterance is transcribed as soon as it ends. When the recogniser is still busy as the next ones
        end (dense talk on a slow board), the backlog goes into one packed call instead of one call each,
        so a queue does not grow by a whole Whisper window per utterance. Once a pause has lasted
        `speculate_after_ms`, the utterance it will close is transcribed before the VAD closes it, and stored
        the moment it does. With partial captions on, the utterance in progress is re-transcribed on a
        thread of its own (`PartialPasses`): this thread never waits for a pass to start; with a recogniser that
        runs one call at a time, a final can wait for the one pass in flight. A place the VAD offers to cut a
        long utterance (`VADSegmenter.sentence_candidate`) is transcribed the same way, and the reader cuts
        there (`VADSegmenter.cut_at`) when this thread finds that its words end a sentence.
        """
        found: queue.Queue[Utterance | _Speculation | BaseException | None] = queue.Queue()
        status = self.status
        start_samples = round(status.audio_time * SAMPLE_RATE) - vad.samples_seen
        speculate = self.options.speculate_after_ms

        def read() -> None:
            offered: tuple[int, int] | None = None
            offered_cut: tuple[int, int] | None = None
            try:
                for chunk in chunks:
                    while not self._cuts.empty():  # before more audio, which might close the utterance
                        piece = vad.cut_at(self._cuts.get_nowait())
                        if piece is not None:
                            self.status.sentence_cuts += 1
                            found.put(piece)
                    for utterance in vad.feed(chunk):
                        found.put(utterance)
                    if self.captions is not None:
                        speaking = vad.in_progress()
                        self.captions.heard(None if speaking is None else (*speaking, vad.trailing_silence_ms))
                    if speculate is not None:
                        candidate = vad.closing_candidate(speculate)
                        self._closing = None if candidate is None else (candidate.start_sample, candidate.end_sample)
                        if candidate is not None and self._closing != offered:
                            offered = self._closing
                            found.put(_Speculation(candidate))
                    place = vad.sentence_candidate()
                    self._sentence = None if place is None else (place.start_sample, place.end_sample)
                    if place is not None and self._sentence != offered_cut:
                        offered_cut = self._sentence
                        status.sentence_places += 1
                        found.put(_Speculation(place, cut=True))
                    status.audio_time = (start_samples + vad.samples_seen) / SAMPLE_RATE
                for utterance in vad.finish():
                    found.put(utterance)
            except BaseException as exc:  # handed to the transcribing thread, which raises it
                found.put(exc)
            finally:
                found.put(None)

        reader = threading.Thread(target=read, name="meetmem-capture", daemon=True)
        reader.start()
        stop_captions = self.captions.start(offset) if self.captions is not None else None
        try:
            self._transcribe_live(found, offset, source)
        finally:
            if stop_captions is not None:
                stop_captions()
        reader.join()

    def _transcribe_live(self, found: queue.Queue[Utterance | _Speculation | BaseException | None], offset: float,
                         source: str) -> None:
        """The finals' side of `_run_live`: what the reader found, transcribed and stored."""
        status = self.status
        ended = False
        pending: _Speculation | None = None  # the newest speculation not yet transcribed
        while not ended:
            self._finals.busy = False
            items: list[Utterance | _Speculation | BaseException | None] = [found.get()]
            self._finals.busy = True
            while True:
                try:
                    items.append(found.get_nowait())
                except queue.Empty:
                    break
            backlog = [item for item in items if isinstance(item, Utterance)]
            pending = next((item for item in reversed(items) if isinstance(item, _Speculation)), pending)
            failure = next((item for item in items if isinstance(item, BaseException)), None)
            ended = any(item is None for item in items)
            self._note_backlog(backlog, ended)
            if backlog:
                self._finals.hand_over(backlog[-1].end_sample)
            while backlog:
                take = 1 if self._speculated_for(backlog[0]) else pack_size(backlog, self.options.pack_seconds)
                self._flush(backlog[:take], offset, source)
                backlog = backlog[take:]
            if self.on_status is not None:
                self.on_status(status)
            if failure is not None:
                raise failure
            if pending is not None and not ended and found.empty():
                candidate, cut, pending = pending.utterance, pending.cut, None
                key = (candidate.start_sample, candidate.end_sample)
                # Still the pause that will close it (the speaker has not gone on), or still a place to cut the
                # utterance in progress, and not closed already, nor about to be cut earlier.
                asked = self._cut_asked
                if candidate.start_sample >= self._finals.until and key == (self._sentence if cut else self._closing) \
                        and (asked is None or candidate.start_sample != asked.start_sample):
                    # A place to cut at a pause of 300 ms or more is the closing candidate offered during it:
                    # its words may be decoded already.
                    pieces = self._speculated.get(key) or self._speculate(candidate, offset)
                    if cut:
                        words = join_pieces(pieces)
                        status.sentence_places_decoded += 1
                        if ends_sentence(words):
                            self._cut_asked = candidate
                            self._cuts.put(candidate)  # the reader cuts there, unless the VAD has moved on
                        else:
                            status.sentence_places_refused += 1
                            status.sentence_places_refused_latest.append(
                                {"at_s": round(offset + candidate.end, 3), "words": words[-40:]})
                            log.debug("no cut at %.2f s: the words go on (%r)", offset + candidate.end, words[-40:])
        self._finals.busy = False

    def _speculate(self, utterance: Utterance, offset: float) -> list[TranscriptPiece]:
        """Transcribe an utterance before the VAD closes or cuts it there (`CaptureOptions.speculate_after_ms`,
        `live_sentence_after_s`); its words are kept until it is stored."""
        start = offset + utterance.start
        log.debug("speculative final of %.2f-%.2f s", start, offset + utterance.end)
        pieces = self._recognise(utterance.audio, start, start)
        self._speculated[(utterance.start_sample, utterance.end_sample)] = pieces
        self.status.speculations += 1
        return pieces

    def _speculated_for(self, utterance: Utterance) -> bool:
        return (utterance.start_sample, utterance.end_sample) in self._speculated

    def _note_backlog(self, backlog: list[Utterance], ended: bool) -> None:
        """Record how far the recogniser is behind and take the next degradation step when it is
        (`degradation.step_when_behind`)."""
        step_when_behind(backlog, ended, self.status, self.languages, self.asr, self.captions)

    def _recognise(self, audio: np.ndarray, at: float, offset: float,
                   speaker: str | None = None) -> list[TranscriptPiece]:
        """One recogniser call, in the language the policy gives for meeting time `at` and the speaker of the
        audio's first turn (None: unlabelled)."""
        asked = self.languages.language_for(at, speaker)
        began = time.perf_counter()
        pieces = self.asr.transcribe(audio, offset=offset, language=asked, glossary=self.options.glossary,
                                     whole_window=self._live and self.options.live_whole_window)
        self.status.transcribe_time += time.perf_counter() - began
        self.status.recogniser_calls += 1
        if asked is None and getattr(self.asr, "multilingual", True):  # an English-only model never detects
            self.status.language_detections += 1
        if pieces:
            self.languages.observe(asked, pieces[0].language, at, float(np.mean([p.avg_logprob for p in pieces])),
                                   speaker)
        return pieces

    def _turn_speaker(self, utterance: Utterance) -> str | None:
        """The label the turn cutter gave an utterance of this flush (None: no speaker labels)."""
        return self.turns.speaker_of(utterance) if self.turns is not None else None

    def _flush(self, utterances: list[Utterance], offset: float, source: str) -> None:
        """Transcribe utterances (packed into one call when there are several) and store them in order."""
        if not utterances:
            return
        if self.turns is not None:
            utterances = self.turns.cut(utterances)
            self.status.speaker_turns_split = self.turns.splits
            # One call per language among the turns: a call never spans two speakers' languages, nor a speaker
            # whose language is to be detected; the segments are stored in time order all the same.
            groups = self.languages.groups([self._turn_speaker(u) for u in utterances],
                                           [offset + u.start for u in utterances])
            if len(groups) > 1:
                recognised = [found for group in groups
                              for found in self._recognise_run([utterances[i] for i in group], utterances, offset)]
                for utterance, pieces in sorted(recognised, key=lambda found: found[0].start_sample):
                    self._store(utterance, offset, source, pieces=pieces)
                return
        for utterance, pieces in self._recognise_run(utterances, utterances, offset):
            self._store(utterance, offset, source, pieces=pieces)

    def _recognise_run(self, run: list[Utterance], flushed: list[Utterance],
                       offset: float) -> list[tuple[Utterance, list[TranscriptPiece] | None]]:
        """The utterances of `run` (in time order, not always adjacent in `flushed`) with their pieces, in one
        packed call; None: recognised alone when stored (one utterance, or turns Whisper ran together where a
        segment may not span: `packing.transcribe_packed`)."""
        if len(run) == 1:
            return [(run[0], None)]
        speaker = self._turn_speaker(run[0])
        found, merged = transcribe_packed(run, lambda audio, at: self._recognise(audio, offset + at, 0.0, speaker),
                                          turns=flushed if self.turns is not None else None)
        self.status.merged += merged
        return found

    def _store(self, utterance: Utterance, offset: float, source: str,
               pieces: list[TranscriptPiece] | None = None) -> None:
        start, end = offset + utterance.start, offset + utterance.end
        if self._speculated:
            held = self._speculated.pop((utterance.start_sample, utterance.end_sample), None)
            if pieces is None and held is not None:
                pieces = held
                self.status.speculations_used += 1
            # What began before this utterance ended can no longer be stored as it was speculated.
            self._speculated = {key: words for key, words in self._speculated.items() if key[0] >= utterance.end_sample}
        if pieces is None:
            pieces = self._recognise(utterance.audio, start, start, self._turn_speaker(utterance))
        cleaned = self.cleaner.clean(join_pieces(pieces))
        if not cleaned.text:
            self.status.dropped += 1
            self.outbox.record_progress(self.options.meeting_id, source, end)
            return
        logprob = float(np.mean([p.avg_logprob for p in pieces]))
        segment = {
            "start": round(start, 3),
            "end": round(end, 3),
            "text": cleaned.text,
            "raw_text": cleaned.raw_text,
            "speaker": self._speaker(utterance),
            "lang": pieces[0].language,
            "confidence": round(min(1.0, max(0.0, math.exp(logprob))), 4),
        }
        stored = self.outbox.put(self.options.meeting_id, segment, source=source, position=end)
        self.status.segments += 1
        if utterance.wall_clock_end is not None:
            self.status.latencies.append(time.time() - utterance.wall_clock_end)
        if self.on_segment is not None:
            self.on_segment(stored)

    def _speaker(self, utterance: Utterance) -> str | None:
        if self.turns is None or utterance.audio.size == 0:
            return self.options.speaker
        return self.turns.label(utterance)


@dataclass(frozen=True, slots=True)
class _Speculation:
    """The reader's word that an utterance is about to close (`VADSegmenter.closing_candidate`), or, with `cut`,
    a place it may be cut (`VADSegmenter.sentence_candidate`)."""

    utterance: Utterance
    cut: bool = False


def default_outbox_path() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("meetmem", appauthor=False)) / "edge-outbox.db"

