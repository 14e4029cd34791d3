"""The capture agent on real speech and the real base weights: packing utterances into one Whisper window
keeps every utterance's own times and words, and a resumed capture skips exactly what was stored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.edge import audio
from meetmem.edge.agent import CaptureAgent, CaptureOptions
from meetmem.edge.capture_options import REFUSED_KEPT
from meetmem.edge.outbox import Outbox

pytestmark = pytest.mark.model

SENTENCES = (
    "Priya will send the budget of 4,500 dollars by March 12th.",
    "The supplier wants the final order by Friday morning.",
    "We decided to use the aluminium casing for the first batch.",
    "Let's meet again next Tuesday at ten.",
)


@pytest.fixture(scope="module")
def four_sentences(make_speech: Callable[..., Any], join_speech: Callable[..., Any]) -> Any:
    return join_speech([make_speech(text) for text in SENTENCES], gap=1.2, name="four_sentences")


def _capture(asr: Any, path: Path, outbox_path: Path, pack: float) -> list[Any]:
    with Outbox(outbox_path) as outbox:
        agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id="m", language="en", glossary=("Priya",),
                                                         pack_seconds=pack))
        status = agent.run(audio.read_file(path), source="file:test")
        assert status.segments == len(outbox.pending(100))
        return outbox.pending(100)


def test_packed_utterances_keep_their_own_times_and_words(base_asr: Any, four_sentences: Any, tmp_path: Path) -> None:
    one_by_one = _capture(base_asr, four_sentences.path, tmp_path / "a.db", pack=0)
    packed = _capture(base_asr, four_sentences.path, tmp_path / "b.db", pack=24)
    assert len(one_by_one) == len(packed) == len(SENTENCES)
    for single, joint, (start, end) in zip(one_by_one, packed, four_sentences.spans, strict=True):
        assert (single.start, single.end) == (joint.start, joint.end)  # the VAD's times, not Whisper's
        assert abs(joint.start - start) < 0.5 and abs(joint.end - end) < 0.6
        words, other = set(joint.text.lower().split()), set(single.text.lower().split())
        assert len(words & other) >= 0.6 * len(words | other), (joint.text, single.text)
    assert "4,500" in packed[0].text and "Priya" in packed[0].text
    assert "casing" in packed[2].text.lower()


def test_a_resumed_capture_skips_what_was_stored(base_asr: Any, four_sentences: Any, tmp_path: Path) -> None:
    with Outbox(tmp_path / "o.db") as outbox:
        agent = CaptureAgent(base_asr, outbox, CaptureOptions(meeting_id="m", language="en", pack_seconds=0))
        # The first run stops (as if killed) after the first chunk holding the end of sentence two.
        cut = int(four_sentences.spans[1][1] * 16000) + 16000
        agent.run([four_sentences.samples[:cut]], source="file:x")
        first = [s.start for s in outbox.pending(100)]
        agent.run(audio.read_file(four_sentences.path), source="file:x")
        starts = [s.start for s in outbox.pending(100)]
    assert starts[: len(first)] == first and len(starts) == len(SENTENCES)
    assert starts == sorted(starts)


def test_live_capture_packs_a_backlog_and_keeps_what_came_before_a_failure(base_asr: Any, four_sentences: Any,
                                                                           tmp_path: Path) -> None:
    from meetmem.edge.errors import AudioError

    second = int(16000 * 0.5)

    def chunks_then_failure() -> Any:
        samples = four_sentences.samples
        for i in range(0, len(samples), second):
            yield samples[i : i + second]
        raise AudioError("mic", "the device was unplugged")

    with Outbox(tmp_path / "o.db") as outbox:
        agent = CaptureAgent(base_asr, outbox, CaptureOptions(meeting_id="m", language="en"))
        # Audio arrives far faster than Whisper runs, as after a stall: the utterances queue up.
        with pytest.raises(AudioError, match="unplugged"):
            agent.run(chunks_then_failure(), source="live:mic", live=True)
        stored = outbox.pending(100)
        assert len(stored) == len(SENTENCES)  # every utterance that ended before the failure is kept
        for segment, (start, end) in zip(stored, four_sentences.spans, strict=True):
            assert abs(segment.start - start) < 0.5 and abs(segment.end - end) < 0.6
        assert "casing" in stored[2].text.lower()
        # A restarted live capture continues the meeting's clock instead of starting again at zero.
        assert outbox.progress("m", "live:mic") >= stored[-1].end


class _Windows:
    """A real recogniser that notes, for each call, whether the capture asked for Whisper's whole window."""

    def __init__(self, asr: Any) -> None:
        self._asr, self.asked = asr, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._asr, name)

    def transcribe(self, samples: np.ndarray, **kwargs: Any) -> Any:
        self.asked.append(kwargs.get("whole_window", False))
        return self._asr.transcribe(samples, **kwargs)


def test_live_finals_are_encoded_over_the_whole_window_and_a_file_over_the_short_context(
        base_asr: Any, four_sentences: Any, tmp_path: Path) -> None:
    """A live call holds one utterance, which the short audio context files use costs words, so live input
    keeps Whisper's whole window (`CaptureOptions.live_whole_window`); a file's calls use the short one."""
    half = int(16000 * 0.5)
    chunks = [four_sentences.samples[i:i + half] for i in range(0, len(four_sentences.samples), half)]
    runs = [(False, True, False), (True, True, True), (True, False, False)]  # live, option, whole window asked
    for n, (live, option, whole) in enumerate(runs):
        asr = _Windows(base_asr)
        with Outbox(tmp_path / f"{n}.db") as outbox:
            agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id="m", language="en", pack_seconds=0,
                                                             live_whole_window=option))
            agent.run(iter(chunks), source="live:mic" if live else "file:x", live=live)
            stored = outbox.pending(100)
        assert asr.asked and set(asr.asked) == {whole}, (live, option, asr.asked)
        assert len(stored) == len(SENTENCES) and "casing" in stored[2].text.lower(), [s.text for s in stored]


def test_live_partial_captions_come_while_speaking_and_are_never_stored(tiny_asr: Any,
                                                                       make_speech: Callable[..., Any],
                                                                       tmp_path: Path) -> None:
    from meetmem.edge.partials import AUDIO_CONTEXT_S, PartialCaption, PartialOptions

    speech = make_speech("We decided to use the aluminium casing for the first batch of the prototypes, and "
                         "the steel one for the second batch.")
    step = 1600  # 0.1 s chunks at speaking pace, as a microphone delivers them
    chunks = [speech.samples[i : i + step] for i in range(0, len(speech.samples), step)]
    chunks += [np.zeros(step, dtype=np.int16)] * 10  # the pause that ends the utterance
    events: list[tuple[str, Any]] = []
    with Outbox(tmp_path / "o.db") as outbox:
        agent = CaptureAgent(tiny_asr, outbox, CaptureOptions(meeting_id="m", language="en"),
                             on_segment=lambda s: events.append(("final", s)),
                             # as `edge run --partials` sets them up: a 15 s audio context
                             partials=PartialCaption(tiny_asr.with_options(audio_context_s=AUDIO_CONTEXT_S),
                                                     PartialOptions(cadence_s=0.4), language="en"),
                             on_partial=lambda p: events.append(("partial", p)))
        status = agent.run(audio.paced(chunks), source="live:mic", live=True)
        stored = outbox.pending(100)
    assert [kind for kind, _ in events][-1] == "final" and len(stored) == 1  # partials are never stored
    partials = [p for kind, p in events if kind == "partial"]
    assert partials and status.partial_passes >= len(partials)
    assert all(abs(p.start - stored[0].start) < 0.01 for p in partials)
    assert partials[0].heard_until < stored[0].end  # shown before the utterance ended (how soon: the bench)
    for before, after in zip(partials, partials[1:], strict=False):
        assert after.text.startswith(before.text)
    assert "casing" in stored[0].text.lower()


def test_no_partial_pass_starts_once_the_speaker_has_paused(tiny_asr: Any, make_speech: Callable[..., Any],
                                                             tmp_path: Path) -> None:
    """A pass in the pause before the utterance ends would hold its final back: none starts after 240 ms of
    quiet; while the speaker is still talking one does."""
    from meetmem.edge.partial_passes import PARTIAL_QUIET_MS
    from meetmem.edge.partials import AUDIO_CONTEXT_S, PartialCaption, PartialOptions

    speech = make_speech("The supplier wants the final order by Friday morning.")
    with Outbox(tmp_path / "o.db") as outbox:
        agent = CaptureAgent(tiny_asr, outbox, CaptureOptions(meeting_id="m", language="en"),
                             partials=PartialCaption(tiny_asr.with_options(audio_context_s=AUDIO_CONTEXT_S),
                                                     PartialOptions(cadence_s=0.4), language="en"))
        assert agent.captions is not None
        agent.captions.heard((0, speech.samples, PARTIAL_QUIET_MS))  # what the reader thread publishes
        agent.captions.one_pass(0.0)
        assert agent.status.partial_passes == 0
        agent.captions.heard((0, speech.samples, PARTIAL_QUIET_MS - 30))
        agent.captions.one_pass(0.0)
        assert agent.status.partial_passes == 1


def test_a_caption_whose_utterance_ends_during_its_pass_never_follows_the_final(tiny_asr: Any,
                                                                               make_speech: Callable[..., Any],
                                                                               tmp_path: Path) -> None:
    """The HUD must never show partial words again after the final replaced them: a pass whose utterance is
    handed to the finals' recogniser while it runs keeps its caption to itself, and counts it."""
    from meetmem.edge.partials import AUDIO_CONTEXT_S, PartialCaption, PartialOptions

    speech = make_speech("The supplier wants the final order by Friday morning, and the invoice next week.")
    shown: list[Any] = []
    with Outbox(tmp_path / "o.db") as outbox:
        agent = CaptureAgent(tiny_asr, outbox, CaptureOptions(meeting_id="m", language="en"),
                             partials=PartialCaption(tiny_asr.with_options(audio_context_s=AUDIO_CONTEXT_S),
                                                     PartialOptions(cadence_s=0.4), language="en"),
                             on_partial=shown.append)
        captions = agent.captions
        assert captions is not None
        third = len(speech.samples) // 3
        for heard in (third, 2 * third):  # two passes agree on the first words: shown
            captions.heard((0, speech.samples[:heard], 0))
            captions._rest_until = 0.0
            captions.one_pass(0.0)
        assert shown and captions.caption.utterance_passes == 2
        real_pass = captions.caption.process_iter
        kept: list[Any] = []

        def utterance_ends_meanwhile() -> Any:
            kept.append(real_pass())
            agent._finals.hand_over(len(speech.samples))  # what the finals' thread does when the VAD closes it
            return kept[-1]

        captions.caption.process_iter = utterance_ends_meanwhile  # type: ignore[method-assign]
        captions.heard((0, speech.samples, 0))
        captions._rest_until = 0.0
        captions.one_pass(0.0)
    assert agent.status.partial_passes == 3 and kept[0].new_words > 0  # words that would have been shown
    assert len(shown) == 1 and agent.status.partials_superseded == 1


def test_falling_behind_takes_the_degradation_steps_in_order_and_reports_them(tmp_path: Path) -> None:
    from meetmem.edge.asr import ASROptions, WhisperASR
    from meetmem.edge.vad import Utterance

    asr = WhisperASR(ASROptions(model="tiny.en", beam_size=3))
    second = np.zeros(16000, dtype=np.float32)
    waiting = [Utterance(0, 16000, second), Utterance(32000, 48000, second)]
    with Outbox(tmp_path / "o.db") as outbox:
        agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id="m"))
        agent._note_backlog(waiting[:1], ended=False)  # one utterance waiting: keeping up
        agent.languages.observe(None, "en", 0.0, -0.2)
        for _ in range(3):
            agent._note_backlog(waiting, ended=False)
    assert [d["step"] for d in agent.status.degradations] == ["language fixed", "beam 1"]
    assert asr.options.beam_size == 1 and agent.languages.language_for(1e6) == "en"
    assert agent.status.backlog_max == 2 and agent.status.backlog_max_s == 2.0


def test_the_last_degradation_step_makes_partial_captions_cheaper_and_reports_it(tiny_asr: Any,
                                                                                 tmp_path: Path) -> None:
    """After the language is fixed (and the beam is already 1), partials step down: to their smaller model when
    one was given, else half as many passes; either way none alongside a final any more."""
    from meetmem.edge.asr import ASROptions, WhisperASR
    from meetmem.edge.partials import PartialCaption, PartialOptions
    from meetmem.edge.vad import Utterance

    second = np.zeros(16000, dtype=np.float32)
    waiting = [Utterance(0, 16000, second), Utterance(32000, 48000, second)]
    two_calls = WhisperASR(ASROptions(model="tiny.en", cpu_threads=1, workers=2))
    for smaller, step in ((None, "partials: half as often"), (tiny_asr, "partials: smaller model")):
        caption = PartialCaption(two_calls, PartialOptions(cadence_s=0.4, first_cadence_s=0.2), smaller=smaller)
        with Outbox(tmp_path / f"{step}.db") as outbox:
            agent = CaptureAgent(two_calls, outbox, CaptureOptions(meeting_id="m"), partials=caption)
            assert agent.captions is not None and agent.captions.alongside
            agent.languages.observe(None, "en", 0.0, -0.2)
            for _ in range(3):
                agent._note_backlog(waiting, ended=False)
        assert [d["step"] for d in agent.status.degradations] == ["language fixed", step]
        assert agent.status.degradations[-1]["backlog"] == 2 and not agent.captions.alongside
        if smaller is None:
            assert caption.asr is two_calls
            assert (caption.options.cadence_s, caption.options.first_cadence_s) == (0.8, 0.4)
        else:
            assert caption.asr is tiny_asr and caption.options.cadence_s == 0.4


def test_partials_take_turns_with_the_finals_only_on_the_finals_own_model(tiny_asr: Any, tmp_path: Path) -> None:
    """Passes by the finals' own model (one call at a time) wait for a final; passes by a model loaded apart
    have threads of their own and run alongside."""
    from meetmem.edge.asr import ASROptions, WhisperASR
    from meetmem.edge.partials import PartialCaption

    apart = WhisperASR(ASROptions(model="tiny.en", cpu_threads=1))
    for n, (by, alongside) in enumerate(((apart, True), (tiny_asr.with_options(audio_context_s=15.0), False),
                                         (tiny_asr, False))):
        with Outbox(tmp_path / f"{n}.db") as outbox:
            agent = CaptureAgent(tiny_asr, outbox, CaptureOptions(meeting_id="m"), partials=PartialCaption(by))
            assert agent.captions is not None and agent.captions.alongside is alongside, n


def _live_capture(asr: Any, samples: np.ndarray, outbox_path: Path, **options: Any) -> tuple[Any, list[Any]]:
    step = 1600  # 0.1 s chunks at speaking pace, as a microphone delivers them
    chunks = [samples[i : i + step] for i in range(0, len(samples), step)]
    with Outbox(outbox_path) as outbox:
        agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id="m", language="en", **options))
        status = agent.run(audio.paced(chunks), source="live:mic", live=True)
        return status, outbox.pending(100)


def test_a_final_transcribed_during_its_closing_pause_is_the_one_stored(tiny_asr: Any, make_speech: Callable[..., Any],
                                                                       tmp_path: Path) -> None:
    """Speculative finals: each utterance is transcribed once its pause has lasted 270 ms and stored with those
    words when the VAD closes it at 600 ms; a 0.5 s breath inside a sentence is speculated on but does not
    split it. The segments are the ones the capture stores without speculation, word for word."""
    first = make_speech("We decided to use the aluminium casing")
    rest = make_speech("for the first batch of the prototypes.")
    last = make_speech("The supplier wants the final order by Friday morning.")
    def trimmed(speech: Any) -> np.ndarray:  # espeak-ng pads each clip with silence of its own
        return speech.samples[int(speech.bounds[0] * 16000):int(speech.bounds[1] * 16000)]

    def silence(seconds: float) -> np.ndarray:
        return np.zeros(int(seconds * 16000), dtype=np.int16)

    samples = np.concatenate([silence(0.5), trimmed(first), silence(0.5), trimmed(rest), silence(1.0),
                              trimmed(last), silence(1.0)])
    status, stored = _live_capture(tiny_asr, samples, tmp_path / "a.db")
    plain_status, plain = _live_capture(tiny_asr, samples, tmp_path / "b.db", speculate_after_ms=None)
    assert [(s.start, s.end, s.text) for s in stored] == [(s.start, s.end, s.text) for s in plain]
    assert len(stored) == 2 and "decided" in stored[0].text.lower() and "prototype" in stored[0].text.lower()
    assert status.speculations_used == 2 and status.speculations == 3  # the breath's speculation went unused
    assert plain_status.speculations == 0
    assert status.recogniser_calls == 3 and plain_status.recogniser_calls == 2


class _Held:
    """A real recogniser whose first call waits (deadline 60 s) until `until` is set again: a final held long
    enough for the next utterance to be under way, as on a slow board."""

    def __init__(self, asr: Any, until: Any) -> None:
        self._asr, self._until, self.waited = asr, until, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._asr, name)

    def transcribe(self, samples: np.ndarray, **kwargs: Any) -> Any:
        if self.waited is None:
            self._until.clear()  # only a pass that begins from now on counts
            self.waited = self._until.wait(timeout=60.0)
        return self._asr.transcribe(samples, **kwargs)


class _Noted:
    """A real recogniser that says when a call begins."""

    def __init__(self, asr: Any, began: Any) -> None:
        self._asr, self._began = asr, began

    def __getattr__(self, name: str) -> Any:
        return getattr(self._asr, name)

    def transcribe(self, samples: np.ndarray, **kwargs: Any) -> Any:
        self._began.set()
        return self._asr.transcribe(samples, **kwargs)


@pytest.mark.parametrize("partials_by", ["the finals' model, loaded for two calls", "a model loaded apart"])
def test_partial_passes_run_alongside_a_final_and_leave_the_finals_words_alone(make_speech: Callable[..., Any],
                                                                              tmp_path: Path, partials_by: str) -> None:
    """With the finals' model loaded for two calls at once, or partials by a model loaded apart (tiny.en beside
    base), partial passes on the next utterance run while a final is being transcribed (the final is held
    until one begins: with one call at a time none could), the stored segments are word for word those of a
    capture without partials, and every caption extends the one before with words two passes agreed on."""
    import threading

    from meetmem.edge.asr import ASROptions, WhisperASR
    from meetmem.edge.partials import AUDIO_CONTEXT_S, PartialCaption, PartialOptions

    def trimmed(speech: Any) -> np.ndarray:
        return speech.samples[int(speech.bounds[0] * 16000):int(speech.bounds[1] * 16000)]

    def silence(seconds: float) -> np.ndarray:
        return np.zeros(int(seconds * 16000), dtype=np.int16)

    samples = np.concatenate([silence(0.3), trimmed(make_speech("The supplier wants the final order by Friday.")),
                              silence(0.8), trimmed(make_speech("We decided to use the aluminium casing for the "
                                                                "first batch of the prototypes.")), silence(1.0)])
    if partials_by == "a model loaded apart":
        asr = WhisperASR(ASROptions(model="tiny.en", cpu_threads=1))
        by = WhisperASR(ASROptions(model="tiny.en", cpu_threads=1, audio_context_s=AUDIO_CONTEXT_S))
    else:
        asr = WhisperASR(ASROptions(model="tiny.en", cpu_threads=1, workers=2))
        by = asr.with_options(audio_context_s=AUDIO_CONTEXT_S)
    began = threading.Event()
    held = _Held(asr, began)
    caption = PartialCaption(_Noted(by, began), PartialOptions(cadence_s=0.4), language="en")
    captions: list[Any] = []
    step = 1600
    chunks = [samples[i : i + step] for i in range(0, len(samples), step)]
    with Outbox(tmp_path / "a.db") as outbox:
        agent = CaptureAgent(held, outbox, CaptureOptions(meeting_id="m", language="en"), partials=caption,
                             on_partial=captions.append)
        status = agent.run(audio.paced(chunks), source="live:mic", live=True)
        stored = outbox.pending(100)
    assert held.waited, "no partial pass began while the first final was being transcribed"
    assert status.partial_passes_alongside >= 1 and status.partial_errors == 0
    _, plain = _live_capture(asr, samples, tmp_path / "b.db")
    assert [(s.start, s.end, s.text) for s in stored] == [(s.start, s.end, s.text) for s in plain]
    assert len(stored) == 2 and "casing" in stored[1].text.lower()
    assert captions and all(p.new_words > 0 for p in captions)
    for before, after in zip(captions, captions[1:], strict=False):
        if after.start == before.start:
            assert after.text.split()[: len(before.text.split())] == before.text.split()

#: Three sentences, each spoken in two breaths: 0.22 s inside a sentence, 0.3 s between sentences.
LONG_TALK = (("Priya will send the revised budget to the supplier", "before the meeting, and Bob will copy Dana."),
             ("The supplier wants the final order for the aluminium casing", "before the morning meeting on Friday."),
             ("Chen Wei will finish the drop tests on the steel hinge", "before the review next month."))


def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?\"'").lower() for w in text.split() if w.strip(".,;:!?\"'")]


def test_live_speech_cut_in_pieces_keeps_every_word_once_in_order(base_asr: Any, make_speech: Callable[..., Any],
                                                                  tmp_path: Path) -> None:
    """Talk with no pause long enough to end an utterance is cut live at short pauses once it has run
    `live_cut_after_s`, some cuts inside a sentence: the pieces are contiguous in time, and the words across
    each cut come once, in order, as when the whole stretch is transcribed in one piece."""
    cutting = CaptureOptions(meeting_id="m", live_cut_after_s=12.0)  # live input is cut; a file never is
    assert cutting.vad_for(True).cut_after_s == 12.0 and cutting.vad_for(False).cut_after_s is None
    by_default = CaptureOptions(meeting_id="m").vad_for(True)
    assert (by_default.cut_after_s, by_default.cut_pause_ms) == (15.0, 300)
    assert (by_default.sentence_after_s, by_default.sentence_pause_ms) == (12.0, 120)
    assert CaptureOptions(meeting_id="m").vad_for(False).sentence_after_s is None  # a file: never
    assert CaptureOptions(meeting_id="m", live_cut_after_s=None).vad_for(True).cut_after_s is None
    parts: list[np.ndarray] = [np.zeros(8000, dtype=np.int16)]
    breaths: list[tuple[float, bool]] = []  # where each breath starts, and whether it is inside a sentence
    for sentence in LONG_TALK:
        for n, phrase in enumerate(sentence):
            clip = make_speech(phrase)
            parts.append(clip.samples[int(clip.bounds[0] * 16000):int(clip.bounds[1] * 16000)])
            breaths.append((sum(len(p) for p in parts) / 16000, n + 1 < len(sentence)))
            parts.append(np.zeros(int((0.22 if n + 1 < len(sentence) else 0.3) * 16000), dtype=np.int16))
    samples = np.concatenate([*parts, np.zeros(16000, dtype=np.int16)])
    chunks = [samples[i : i + 1600] for i in range(0, len(samples), 1600)]

    def capture(outbox_path: Path, cut: float | None) -> list[Any]:
        with Outbox(outbox_path) as outbox:
            # Unpaced and never packed: every piece is transcribed alone, as it is when the recogniser keeps up.
            # Cut at the 0.22 s breaths inside sentences too (a 120 ms pause), to try the seams hardest.
            options = CaptureOptions(meeting_id="m", language="en", pack_seconds=0, live_cut_after_s=cut,
                                     live_cut_pause_ms=120, live_sentence_after_s=None)
            CaptureAgent(base_asr, outbox, options).run(chunks, source="live:mic", live=True)
            return outbox.pending(100)

    pieces = capture(tmp_path / "cut.db", 2.0)
    whole = capture(tmp_path / "whole.db", None)
    assert len(whole) == 1 and len(pieces) >= 3
    for piece, following in zip(pieces, pieces[1:], strict=False):
        assert following.start == piece.end  # contiguous: no audio between the pieces
    assert pieces[0].start == whole[0].start and abs(pieces[-1].end - whole[0].end) <= 0.2
    # Where each cut fell: in a breath (never in a word), and at least one inside a sentence.
    at_breath = [next(j for j, (at, _) in enumerate(breaths) if at - 0.05 <= p.end <= at + 0.3) for p in pieces[:-1]]
    assert any(breaths[j][1] for j in at_breath), [(p.start, p.end, p.text) for p in pieces]
    # The words on either side of each cut: the last distinctive word (five letters or more) said before it
    # ends the piece before, the first said after it is in the next piece, never more often than said.
    phrases = [[w for w in _words(phrase) if len(w) >= 5] for sentence in LONG_TALK for phrase in sentence]
    said = [w for phrase in phrases for w in phrase]
    texts = [_words(p.text) for p in pieces]
    everything = [w for text in texts for w in text]
    for k, j in enumerate(at_breath):
        before, after = phrases[j][-1], phrases[j + 1][0]
        assert before in texts[k] and after in texts[k + 1], (before, after, [p.text for p in pieces])
        assert everything.count(before) <= said.count(before) and everything.count(after) <= said.count(after)
    # And no word twice or out of order across the talk: the distinctive words heard, in the order said.
    heard = [w for w in everything if w in said]
    assert len(heard) >= 0.75 * len(said) and all(heard.count(w) <= said.count(w) for w in heard)
    assert heard == [w for w in said if w in heard], (heard, said)
    assert len(heard) >= len([w for w in _words(whole[0].text) if w in said]) - 2  # about as many as in one piece


def test_live_speech_is_cut_where_its_words_end_a_sentence(base_asr: Any, make_speech: Callable[..., Any],
                                                          tmp_path: Path) -> None:
    """Sentences that follow each other within 0.25 s, at speaking pace: no pause is long enough to end an
    utterance or to cut it at `live_cut_pause_ms`. Past `live_sentence_after_s`, each short pause is
    transcribed, and the utterance is cut there when those words end a sentence: the pieces are contiguous,
    each cut piece is stored with the words decoded before the cut (no second transcription), and every word
    comes once, in order."""
    from meetmem.edge.agent import ends_sentence

    assert ends_sentence("We ship on Friday.") and ends_sentence("Who has the quote? ") and ends_sentence("好。")
    assert not ends_sentence("We ship on") and not ends_sentence("and then...") and not ends_sentence("Well,")
    parts: list[np.ndarray] = [np.zeros(8000, dtype=np.int16)]
    for sentence in LONG_TALK:
        for phrase in sentence:
            clip = make_speech(phrase)
            parts += [clip.samples[int(clip.bounds[0] * 16000):int(clip.bounds[1] * 16000)],
                      np.zeros(int(0.25 * 16000), dtype=np.int16)]
    samples = np.concatenate([*parts, np.zeros(16000, dtype=np.int16)])
    step = 1600  # 0.1 s chunks at speaking pace, as a microphone delivers them
    chunks = [samples[i : i + step] for i in range(0, len(samples), step)]
    with Outbox(tmp_path / "o.db") as outbox:
        options = CaptureOptions(meeting_id="m", language="en", pack_seconds=0, live_cut_after_s=None,
                                 live_sentence_after_s=3.0)
        status = CaptureAgent(base_asr, outbox, options).run(audio.paced(chunks), source="live:mic", live=True)
        pieces = outbox.pending(100)
    texts = [p.text for p in pieces]
    assert status.sentence_cuts >= 2 and len(pieces) == status.sentence_cuts + 1, texts
    assert status.speculations_used >= status.sentence_cuts  # each cut piece: the words decoded before the cut
    # A place offered is decoded or passed over for a newer one; a decoded place is cut (unless the VAD moved on
    # first) or refused.
    assert status.sentence_places >= status.sentence_places_decoded \
        >= status.sentence_cuts + status.sentence_places_refused
    assert len(status.sentence_places_refused_latest) == min(status.sentence_places_refused, REFUSED_KEPT)
    assert all(not ends_sentence(r["words"]) for r in status.sentence_places_refused_latest)
    for piece, following in zip(pieces, pieces[1:], strict=False):
        assert following.start == piece.end  # contiguous: no audio between the pieces
        assert piece.end - piece.start >= 3.0 and ends_sentence(piece.raw_text), texts
    said = [w for sentence in LONG_TALK for phrase in sentence for w in _words(phrase) if len(w) >= 5]
    heard = [w for text in texts for w in _words(text) if w in said]
    assert len(heard) >= 0.75 * len(said) and all(heard.count(w) <= said.count(w) for w in heard)
    assert heard == [w for w in said if w in heard], (heard, said)
