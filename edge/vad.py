"""Voice activity detection: a small state machine that cuts 16 kHz mono audio into utterances.

Fed audio in chunks of any size (`insert_audio`), it classifies fixed frames with webrtcvad and returns
the utterances that have ended (`process`), then the last one at the end of the stream (`finish`), as in
whisper_streaming's `insert_audio_chunk / process_iter / finish`. It does no I/O and reads no clock:
every time is computed from the sample count, so an utterance's `start`/`end` are sample-exact seconds
from the meeting's start, and the same audio gives the same utterances whatever the chunk sizes.

An utterance starts when enough of the recent frames are voiced (`onset_window_ms`, `onset_ratio`),
`padding_ms` before its first voiced frame (the pre-roll keeps soft onsets Whisper needs), and ends after
`min_silence_ms` of unvoiced frames, `hangover_ms` after its last voiced frame. One longer than
`max_utterance_s` is cut (at its latest pause when there is one) so recognition latency stays bounded;
one whose speech spans less than `min_utterance_ms` is dropped as a click or a cough.

Live input sets `cut_after_s` (`CaptureOptions.live_cut_after_s`, 15 s by default): once an utterance's
speech has lasted that long, the first pause of at least `cut_pause_ms` after which the speaker goes on cuts
it, where the pause would have ended it had it lasted (its hangover after the last voiced frame) or, in a
pause too short for that, in its middle. A speaker who talks on is transcribed in pieces while still talking,
and only a short tail is left when they stop. The pieces are contiguous (the next one starts at the cut, nothing
falls between them), and a pause that lasts `min_silence_ms` still ends the utterance as before, with its
hangover.

Live input also sets `sentence_after_s` (`CaptureOptions.live_sentence_after_s`): once an utterance's speech
has lasted that long, a shorter pause of at least `sentence_pause_ms` after which the speaker goes on is
offered as a place to cut (`sentence_candidate`: the utterance up to where the cut would fall), and the VAD
cuts there only when asked (`cut_at`), later, while the speech after it is still the utterance in progress.
The caller decides: the edge cuts where Whisper's words for the candidate end a sentence, so speech with no
pause long enough to end an utterance is still transcribed sentence by sentence.
"""

from __future__ import annotations

import logging
from collections import deque

import numpy as np

from .errors import ModelUnavailable
from .vad_types import SAMPLE_RATE, Utterance, VADOptions, to_int16

logger = logging.getLogger(__name__)

__all__ = ["SAMPLE_RATE", "Utterance", "VADOptions", "VADSegmenter", "segment", "to_int16"]


class VADSegmenter:
    """Cuts a 16 kHz mono stream into utterances (see the module docstring).

    Args:
        options: the segmentation policy.
        wall_clock_anchor: the wall-clock time of the stream's first sample, copied onto each utterance.
    """

    def __init__(self, options: VADOptions | None = None, *, wall_clock_anchor: float | None = None) -> None:
        try:
            import webrtcvad
        except ImportError as exc:
            raise ModelUnavailable("webrtcvad", "the voice activity detector is not installed") from exc
        self.options = options or VADOptions()
        self.wall_clock_anchor = wall_clock_anchor
        self._vad = webrtcvad.Vad(self.options.aggressiveness)
        opts = self.options
        self._frame = SAMPLE_RATE * opts.frame_ms // 1000
        self._onset_frames = max(1, round(opts.onset_window_ms / opts.frame_ms))
        self._onset_needed = max(1, round(self._onset_frames * opts.onset_ratio))
        self._padding = SAMPLE_RATE * opts.padding_ms // 1000
        self._hangover = SAMPLE_RATE * opts.hangover_ms // 1000
        self._silence_frames = max(1, round(opts.min_silence_ms / opts.frame_ms))
        self._max_samples = int(opts.max_utterance_s * SAMPLE_RATE)
        self._cut_after = None if opts.cut_after_s is None else int(opts.cut_after_s * SAMPLE_RATE)
        self._cut_pause_frames = max(1, round(opts.cut_pause_ms / opts.frame_ms))
        self._sentence_after = None if opts.sentence_after_s is None else int(opts.sentence_after_s * SAMPLE_RATE)
        self._sentence_pause_frames = max(1, round(opts.sentence_pause_ms / opts.frame_ms))
        self._sentence: Utterance | None = None  # the latest place offered to cut (`sentence_candidate`)
        self._min_voiced = SAMPLE_RATE * opts.min_utterance_ms // 1000
        self._level = 0.0  # recent peak frame RMS, for the VAD's gain
        self._level_decay = 0.5 ** (opts.frame_ms / 5000.0)
        self._pending = np.zeros(0, dtype=np.int16)  # samples not yet a whole frame
        self._frames: deque[np.ndarray] = deque()  # retained whole frames, the first at `_kept_from`
        self._kept_from = 0  # sample index of the first retained frame
        self._classified = 0  # samples classified so far (a multiple of the frame length)
        self._recent: deque[tuple[int, bool]] = deque(maxlen=self._onset_frames)
        self._in_speech = False
        self._start = 0  # the current utterance's first sample
        self._voiced_first = 0  # its first and last voiced sample (end exclusive)
        self._voiced_end = 0
        self._unvoiced_run = 0
        self._pause_at: int | None = None  # latest frame start after a voiced frame: a cut point
        self._previous_end = 0  # an utterance never starts before the previous one ended
        self._continuation = False  # the current utterance goes on from a forced cut

    @property
    def samples_seen(self) -> int:
        """Samples inserted so far."""
        return self._classified + len(self._pending)

    @property
    def audio_time(self) -> float:
        """Seconds of audio inserted so far."""
        return self.samples_seen / SAMPLE_RATE

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    def in_progress(self) -> tuple[int, np.ndarray] | None:
        """The utterance being spoken: its first sample and its classified audio so far (int16), or None in a
        pause (what partial captions re-transcribe)."""
        if not self._in_speech:
            return None
        return self._start, self._slice(self._start, self._classified)

    @property
    def trailing_silence_ms(self) -> int:
        """How long the utterance in progress has been unvoiced at its end (0 while voiced or in a pause
        between utterances): a pause that reaches `min_silence_ms` ends the utterance."""
        return self._unvoiced_run * self.options.frame_ms if self._in_speech else 0

    def closing_candidate(self, after_ms: int) -> Utterance | None:
        """The utterance the VAD will emit if the pause now under way lasts `min_silence_ms`, once it has
        lasted `after_ms`; None while voiced, in a pause between utterances, or too short to be kept.

        The same samples as the utterance `process` returns when the pause does end it, so a recogniser can
        start on it early (a speculative final) and its words be used when that utterance arrives with the
        same `start_sample` and `end_sample`; if the speaker goes on instead, the candidate is simply never
        matched. Pure: nothing in the segmenter changes.
        """
        if not self._in_speech or self._unvoiced_run == 0:
            return None
        if self._unvoiced_run * self.options.frame_ms < after_ms:
            return None
        end = self._voiced_end + self._hangover
        if end > self._classified or end - self._start >= self._max_samples:
            return None  # the hangover is not heard yet, or the length limit will cut elsewhere
        voiced_span = self._voiced_end - self._voiced_first
        if voiced_span <= 0 or (voiced_span < self._min_voiced and not self._continuation):
            return None  # dropped as a click when it ends
        audio = self._slice(self._start, end)
        return Utterance(self._start, end, audio.astype(np.float32) / 32768.0, self.wall_clock_anchor, False)

    def sentence_candidate(self) -> Utterance | None:
        """The latest place offered to cut the utterance in progress (`VADOptions.sentence_after_s`): the
        utterance from its start up to where the cut would fall, in a pause of at least `sentence_pause_ms`
        after which the speaker went on. None when none was offered since the utterance began (or since its
        latest cut). Pure: nothing in the segmenter changes until `cut_at` is called with it."""
        held = self._sentence
        if held is None or not self._in_speech or held.start_sample != self._start:
            return None
        return held

    def cut_at(self, candidate: Utterance) -> Utterance | None:
        """Cut the utterance in progress where `candidate` (from `sentence_candidate`) ends: returns the piece
        before the cut, the very samples of the candidate; the speech after it goes on as the utterance in
        progress. None when the candidate no longer belongs to the utterance in progress (it was closed or
        cut since), and then nothing changes."""
        if not self._in_speech or candidate.start_sample != self._start or \
                not candidate.start_sample < candidate.end_sample <= self._classified:
            return None
        # The speaker went on after the candidate's pause (it is offered only then): the rest is speech.
        return self._emit(candidate.end_sample, forced=True, paused=True)

    def insert_audio(self, audio: bytes | bytearray | memoryview | np.ndarray) -> None:
        """Queue more audio: 16-bit little-endian PCM bytes, or an int16 / float32 array."""
        samples = to_int16(audio)
        if len(samples):
            self._pending = np.concatenate([self._pending, samples])

    def process(self) -> list[Utterance]:
        """Classify every whole frame queued so far; return the utterances that ended."""
        done: list[Utterance] = []
        frame = self._frame
        whole = len(self._pending) // frame * frame
        if not whole:
            return done
        queued, self._pending = self._pending[:whole], self._pending[whole:].copy()
        for offset in range(0, whole, frame):
            samples = queued[offset:offset + frame]
            voiced = self._vad.is_speech(self._gained(samples).tobytes(), SAMPLE_RATE)
            self._frames.append(samples)
            begin = self._classified
            self._classified += frame
            utterance = self._step(begin, voiced)
            if utterance is not None:
                done.append(utterance)
        return done

    def feed(self, audio: bytes | bytearray | memoryview | np.ndarray) -> list[Utterance]:
        """`insert_audio` then `process`."""
        self.insert_audio(audio)
        return self.process()

    def finish(self) -> list[Utterance]:
        """End of stream: classify what is left and close the utterance in progress, if any."""
        done = self.process()
        if self._in_speech:
            end = min(self._voiced_end + self._hangover, self.samples_seen)
            if end - self._start > self._max_samples:  # the unclassified tail took it past the limit
                cut = self._emit(self._start + self._max_samples, forced=True)
                done += [cut] if cut is not None else []
            utterance = self._emit(end, forced=False)
            if utterance is not None:
                done.append(utterance)
        return done

    def _gained(self, samples: np.ndarray) -> np.ndarray:
        """The frame as the VAD hears it: scaled so the recent peak level reaches `target_rms`.

        The level follows a loud frame at once and decays with a half-life of about five seconds, so a
        pause does not turn the gain up onto the room's noise before the next sentence.
        """
        opts = self.options
        rms = float(np.sqrt(np.mean(samples.astype(np.float32) ** 2))) if len(samples) else 0.0
        self._level = max(rms, self._level * self._level_decay)
        if opts.max_gain <= 1 or self._level <= 0:
            return samples
        gain = min(opts.max_gain, max(1.0, opts.target_rms / self._level))
        if gain == 1.0:
            return samples
        return np.clip(samples.astype(np.float32) * gain, -32768, 32767).astype(np.int16)

    def _step(self, begin: int, voiced: bool) -> Utterance | None:
        end = begin + self._frame
        if not self._in_speech:
            self._recent.append((begin, voiced))
            if sum(v for _, v in self._recent) >= self._onset_needed:
                first = min(b for b, v in self._recent if v)
                self._in_speech = True
                self._start = max(first - self._padding, self._previous_end, self._kept_from)
                self._voiced_first = first
                self._voiced_end = max(b for b, v in self._recent if v) + self._frame
                self._unvoiced_run = 0 if voiced else (end - self._voiced_end) // self._frame
                self._pause_at = None
                self._recent.clear()
            else:
                self._trim(end - self._padding - self._onset_frames * self._frame)
            return None
        if voiced:
            speech = self._voiced_end - self._start
            if self._cut_after is not None and self._unvoiced_run >= self._cut_pause_frames and \
                    speech >= self._cut_after:
                # Long enough, and the speaker goes on after a short pause: cut there and then. The speech
                # from there on is the next utterance.
                cut = self._emit(self._cut_point(begin), forced=True, paused=True)
                self._voiced_first, self._voiced_end, self._unvoiced_run = begin, end, 0
                return cut
            if self._sentence_after is not None and self._unvoiced_run >= self._sentence_pause_frames and \
                    speech >= self._sentence_after:
                # A place the caller may cut at, once it knows the words before it end a sentence.
                at = self._cut_point(begin)
                self._sentence = Utterance(self._start, at, self._slice(self._start, at).astype(np.float32) / 32768.0,
                                           self.wall_clock_anchor, False)
            self._voiced_end = end
            self._unvoiced_run = 0
        else:
            if self._unvoiced_run == 0:
                self._pause_at = begin
            self._unvoiced_run += 1
            if self._unvoiced_run >= self._silence_frames:
                return self._emit(min(self._voiced_end + self._hangover, end), forced=False)
        if end - self._start >= self._max_samples:
            if self._unvoiced_run:
                # The limit fell in a pause: end the utterance there, as a long enough pause would have.
                return self._emit(min(self._voiced_end + self._hangover, self._start + self._max_samples),
                                  forced=False)
            # Cut mid-speech: at the latest pause in the second half, else at the limit; the speech goes
            # on as the next utterance.
            cut = self._start + self._max_samples
            if self._pause_at is not None and self._pause_at - self._start >= self._max_samples // 2:
                cut = self._pause_at
            return self._emit(cut, forced=True)
        return None

    def _cut_point(self, begin: int) -> int:
        """Where a pause that ended at sample `begin` (the speaker goes on) is cut: where the pause would have
        ended the utterance (its hangover after the last voiced frame: the very samples of the closing
        candidate, so a speculative final started during the pause is the cut piece's), when that leaves the
        next piece half the pre-roll before the speech goes on; else in the pause's middle."""
        closing = self._voiced_end + self._hangover
        return closing if closing <= begin - self._padding // 2 else self._voiced_end + (begin - self._voiced_end) // 2

    def _emit(self, end: int, *, forced: bool, paused: bool = False) -> Utterance | None:
        start = self._start
        voiced_span = min(self._voiced_end, end) - self._voiced_first
        audio = self._slice(start, end)
        continuation = self._continuation
        if forced:
            # Still in speech: the rest continues as the next utterance, from the cut.
            self._start = end
            self._voiced_first = end
            self._pause_at = None
        else:
            self._in_speech = False
            self._unvoiced_run = 0
        self._continuation = forced
        self._previous_end = end
        self._trim(end)
        # A short burst is dropped as a click, but never the tail of speech that was cut at the limit.
        too_short = voiced_span <= 0 or (voiced_span < self._min_voiced and not continuation)
        if too_short and not forced:
            logger.debug("dropped a %.2f s burst at %.2f s", voiced_span / SAMPLE_RATE, start / SAMPLE_RATE)
            return None
        return Utterance(start, end, audio.astype(np.float32) / 32768.0, self.wall_clock_anchor, forced and not paused)

    def _slice(self, start: int, end: int) -> np.ndarray:
        """Samples [start, end) from the retained frames (and the pending tail at the stream's end)."""
        parts = [*self._frames, self._pending]
        joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int16)
        return joined[start - self._kept_from:end - self._kept_from]

    def _trim(self, keep_from: int) -> None:
        """Forget retained frames that lie wholly before `keep_from`."""
        while self._frames and self._kept_from + self._frame <= keep_from:
            self._frames.popleft()
            self._kept_from += self._frame


def segment(audio: bytes | np.ndarray, options: VADOptions | None = None, *,
            wall_clock_anchor: float | None = None) -> list[Utterance]:
    """All utterances of a whole recording in one call (a voice question, a test)."""
    segmenter = VADSegmenter(options, wall_clock_anchor=wall_clock_anchor)
    segmenter.insert_audio(audio)
    return segmenter.finish()
