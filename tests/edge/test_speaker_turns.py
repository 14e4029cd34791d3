"""A speaker change inside one utterance, on real espeak-ng voices, the real voice-encoder weights and real
Whisper: two people answering each other with less than the VAD's pause between them become two segments
with their own labels, times and words, before the outbox; one person's utterance stays whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.edge import speaker_turns, speakers
from meetmem.edge.agent import CaptureAgent, CaptureOptions
from meetmem.edge.outbox import Outbox
from meetmem.edge.vad import segment
from meetmem.edge.voice_encoder import VoiceEncoder, raised_level

pytestmark = pytest.mark.model

FIRST = "We decided to use the aluminium casing for the first batch of glasses."
SECOND = "The budget for the pilot is forty thousand euros, with a review in March."
THIRD = "Please send the quote to the supplier before Friday, and check the battery numbers again."
OPTIONS = speakers.SpeakerOptions(threshold=0.88, wearer_threshold=0.88)
GAP = 0.3  # under the VAD's closing pause: one utterance


@pytest.fixture(scope="module")
def encoder() -> VoiceEncoder:
    return VoiceEncoder()


def _utterance(conversation: Any) -> Any:
    found = segment(conversation.samples.astype(np.float32) / 32768.0)
    assert len(found) == 1, "the VAD should join turns this close into one utterance"
    return found[0]


def _known(encoder: VoiceEncoder, make_speech: Callable[..., Any], *voices: str) -> speakers.SpeakerTracker:
    """A tracker that has heard each voice once before (a meeting under way), as S1, S2, ..."""
    tracker = speakers.SpeakerTracker(encoder, OPTIONS)
    for voice in voices:
        tracker.label(make_speech(THIRD, voice=voice).samples.astype(np.float32) / 32768.0)
    return tracker


def test_a_change_inside_an_utterance_is_cut_in_the_pause(encoder: VoiceEncoder,
                                                           make_speech: Callable[..., Any],
                                                           join_speech: Callable[..., Any]) -> None:
    talk = join_speech([make_speech(FIRST, voice="en-us"), make_speech(SECOND, voice="en+f2")], gap=GAP,
                       name="two_in_one")
    utterance = _utterance(talk)
    tracker = _known(encoder, make_speech, "en-us", "en+f2")
    turns = tracker.turns(utterance.audio)
    assert len(turns) == 2, [(t.start, t.end) for t in turns]
    cut = utterance.start + turns[0].end / 16000
    first_end, second_start = talk.spans[0][1], talk.spans[1][0]
    assert first_end - 0.05 <= cut <= second_start + 0.05, (cut, first_end, second_start)
    assert turns[0].start == 0 and turns[1].end == len(utterance.audio) and turns[0].end == turns[1].start
    assert [tracker.assign(t.embedding, 3.0) for t in turns] == ["S1", "S2"]
    # Never cut: no threshold, or too little audio for 1.6 s of speech on either side.
    assert len(speaker_turns.speaker_turns(encoder, utterance.audio, None)) == 1
    assert len(speaker_turns.speaker_turns(encoder, utterance.audio[:3 * 16000], 0.99)) == 1


def test_one_voice_stays_one_turn(encoder: VoiceEncoder, make_speech: Callable[..., Any],
                                  join_speech: Callable[..., Any]) -> None:
    talk = join_speech([make_speech(FIRST, voice="en-us"), make_speech(SECOND, voice="en-us")], gap=GAP,
                       name="one_voice")
    utterance = _utterance(talk)
    for tracker in (speakers.SpeakerTracker(encoder, OPTIONS), _known(encoder, make_speech, "en-us", "en+f2")):
        turns = tracker.turns(utterance.audio)
        assert [(t.start, t.end) for t in turns] == [(0, len(utterance.audio))]
        assert tracker.assign(turns[0].embedding, utterance.duration) == "S1"


LONG = ("So the plan is simple, we ship the pilot in March, we review the numbers in April, and then, if the "
        "battery holds, we order the second batch.")


def test_three_voices_in_one_utterance_are_cut_twice(encoder: VoiceEncoder,
                                                     make_speech: Callable[..., Any],
                                                     join_speech: Callable[..., Any]) -> None:
    talk = join_speech([make_speech(FIRST, voice="en-us"), make_speech(SECOND, voice="en+f2"),
                        make_speech(FIRST, voice="en+f4")], gap=GAP, name="three_in_one")
    utterance = _utterance(talk)
    tracker = _known(encoder, make_speech, "en-us", "en+f2", "en+f4")
    turns = tracker.turns(utterance.audio)
    assert len(turns) == 3, [(t.start, t.end) for t in turns]
    for turn, (end, start) in zip(turns, zip([s[1] for s in talk.spans], [s[0] for s in talk.spans[1:]],
                                             strict=False), strict=False):
        cut = utterance.start + turn.end / 16000
        assert end - 0.05 <= cut <= start + 0.05, (cut, end, start)
    assert [t.start for t in turns[1:]] == [t.end for t in turns[:-1]] and turns[-1].end == len(utterance.audio)
    assert [tracker.assign(t.embedding, 3.0) for t in turns] == ["S1", "S2", "S3"]
    # The single cut of before: at most two turns.
    assert len(speaker_turns.speaker_turns(encoder, utterance.audio, 0.8, max_turns=2)) == 2


def test_one_speakers_long_sentence_with_pauses_is_not_cut(encoder: VoiceEncoder,
                                                           make_speech: Callable[..., Any],
                                                           join_speech: Callable[..., Any]) -> None:
    for voice in ("en-us", "en+f2"):
        utterance = _utterance(join_speech([make_speech(LONG, voice=voice)], name=f"long_{voice}"))
        assert len(speaker_turns.pauses(raised_level(utterance.audio))) >= 4  # places it could be cut
        assert len(speaker_turns.speaker_turns(encoder, utterance.audio, speaker_turns.CHANGE_THRESHOLD)) == 1
        for tracker in (speakers.SpeakerTracker(encoder, OPTIONS), _known(encoder, make_speech, voice, "en+f4")):
            assert [(t.start, t.end) for t in tracker.turns(utterance.audio)] == [(0, len(utterance.audio))]


def test_pieces_embedded_in_one_batch_match_one_at_a_time(encoder: VoiceEncoder,
                                                         make_speech: Callable[..., Any]) -> None:
    first = make_speech(FIRST, voice="en-us").samples.astype(np.float32) / 32768.0
    second = make_speech(SECOND, voice="en+f2").samples.astype(np.float32) / 32768.0
    together = encoder.embed_many([first, second, first[:16000]])
    assert np.allclose(together[0], encoder.embed(first), atol=1e-5)
    assert np.allclose(together[1], encoder.embed(second), atol=1e-5)
    assert np.allclose(together[2], encoder.embed(first[:16000]), atol=1e-5)  # padded, as embed pads
    # A short piece repeated to fill a partial ends on its voice: closer to the rest of that voice.
    short = encoder.embed_many([first[:12000]], repeat_short=True)[0]
    assert float(short @ together[0]) > float(short @ together[1])


def test_the_agent_stores_two_segments_with_their_own_labels_and_words(
        tiny_asr: Any, encoder: VoiceEncoder, make_speech: Callable[..., Any],
        join_speech: Callable[..., Any], tmp_path: Path) -> None:
    # Both speak once (apart), then answer each other with 0.3 s between them: one utterance for the VAD.
    first = join_speech([make_speech(FIRST, voice="en-us"), make_speech(SECOND, voice="en+f2")], gap=1.2,
                        name="apart")
    then = join_speech([make_speech(THIRD, voice="en-us"), make_speech(FIRST, voice="en+f2")], gap=GAP,
                       lead=1.0, name="together")
    offset = len(first.samples) / 16000
    spans = [*first.spans, *((a + offset, b + offset) for a, b in then.spans)]

    def capture(tracker: speakers.SpeakerTracker | None, name: str) -> tuple[list[Any], Any]:
        with Outbox(tmp_path / f"{name}.db") as outbox:
            agent = CaptureAgent(tiny_asr, outbox, CaptureOptions(meeting_id="m", language="en"), speakers=tracker)
            status = agent.run(iter([first.samples, then.samples]), source=f"file:{name}")
            return outbox.pending(100), status

    whole, _ = capture(None, "plain")
    assert len(whole) == 3  # without voices, the VAD's last utterance is one segment
    stored, status = capture(speakers.SpeakerTracker(encoder, OPTIONS), "voices")
    assert [s.speaker for s in stored] == ["S1", "S2", "S1", "S2"], [(s.speaker, s.text) for s in stored]
    assert status.speaker_turns_split == 1
    # A word of each sentence that tiny.en hears on every CPU (with VNNI int8 kernels it hears "budget" as "moment").
    for seg, (start, end), key in zip(stored, spans, ("alumin", "pilot", "supplier", "alumin"), strict=True):
        assert seg.start <= start + 0.1 and seg.end >= end - 0.1, (seg.start, seg.end, start, end)
        assert key in seg.text.lower(), seg.text
    assert "supplier" not in stored[3].text.lower() and "alumin" not in stored[2].text.lower()
    # The two turns share the utterance, one after the other, from its start to its end.
    assert stored[2].end == stored[3].start
    assert stored[2].start == whole[2].start and stored[3].end == whole[2].end


def test_edge_run_cuts_at_the_encoder_modules_default() -> None:
    from meetmem.cli import edge_commands

    assert edge_commands.CHANGE_THRESHOLD == speaker_turns.CHANGE_THRESHOLD
    assert speakers.SpeakerOptions().change_threshold == speaker_turns.CHANGE_THRESHOLD
