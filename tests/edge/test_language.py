"""The language policy: detected once, reused for a minute of meeting time, detected again on doubt, frozen
under load, never asked for when the meeting's language is fixed; per speaker when turns are labelled (on
real espeak-ng English and Mandarin voices, the real voice encoder and real Whisper base)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from meetmem.edge.language import LanguageOptions, LanguagePolicy


def test_a_detected_language_is_reused_for_a_minute_then_detected_again() -> None:
    policy = LanguagePolicy(options=LanguageOptions(redetect_s=60.0))
    assert policy.language_for(0.0) is None  # nothing known yet: Whisper detects
    policy.observe(None, "en", 0.0, -0.3)
    assert [policy.language_for(t) for t in (1.0, 30.0, 59.9)] == ["en", "en", "en"]
    assert policy.language_for(60.0) is None
    policy.observe(None, "zh", 60.0, -0.4)
    assert policy.language_for(61.0) == "zh" and policy.detections == 2


def test_an_unsure_decode_in_the_remembered_language_makes_the_next_call_detect() -> None:
    policy = LanguagePolicy()
    policy.observe(None, "en", 0.0, -0.2)
    policy.observe("en", "en", 5.0, -0.4)  # confident: kept
    assert policy.language_for(6.0) == "en"
    policy.observe("en", "en", 7.0, -1.6)  # someone switched language: Whisper was unsure
    assert policy.language_for(8.0) is None


def test_frozen_under_load_it_keeps_the_language_past_the_minute_and_past_doubt() -> None:
    policy = LanguagePolicy()
    assert not policy.freeze()  # nothing to keep yet
    policy.observe(None, "en", 0.0, -0.2)
    assert policy.freeze() and not policy.freeze()
    policy.observe("en", "en", 100.0, -2.0)
    assert policy.language_for(500.0) == "en"


def test_a_fixed_language_is_never_detected() -> None:
    policy = LanguagePolicy("zh")
    policy.observe("zh", "en", 0.0, -3.0)
    assert policy.language_for(0.0) == policy.language_for(1e6) == "zh"
    assert not policy.freeze() and policy.detections == 0


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="redetect_s"):
        LanguageOptions(redetect_s=-1)


def test_each_speaker_keeps_their_own_language_and_a_new_speaker_is_detected() -> None:
    policy = LanguagePolicy(options=LanguageOptions(redetect_s=60.0))
    assert policy.language_for(0.0, "S1") is None
    policy.observe(None, "en", 0.0, -0.3, "S1")
    assert policy.language_for(5.0, "S1") == "en"
    assert policy.language_for(6.0, "S2") is None  # a speaker heard for the first time: detected
    policy.observe(None, "zh", 6.0, -0.4, "S2")
    assert [policy.language_for(10.0, s) for s in ("S1", "S2")] == ["en", "zh"]
    assert policy.language_for(61.0, "S1") is None and policy.language_for(61.0, "S2") == "zh"  # S1's minute is up
    policy.observe("zh", "zh", 20.0, -1.7, "S2")  # unsure in S2's language: S2 detected again, S1 untouched
    assert policy.language_for(21.0, "S2") is None and policy.language_for(21.0, "S1") == "en"
    assert policy.detections == 2 and policy.language == "zh"
    assert policy.language_for(22.0) == "zh"  # unlabelled audio: the meeting's latest detection, for its minute


def test_groups_pack_turns_by_language_and_hear_a_speaker_to_be_detected_alone() -> None:
    policy = LanguagePolicy()
    starts = [0.0, 3.0, 6.0, 9.0, 12.0, 15.0]
    assert policy.groups(["S1", "S1", "S2", "S2", "S1"], starts[:5]) == [[0, 1, 4], [2, 3]]  # nobody known yet
    policy.observe(None, "en", 0.0, -0.2, "S1")
    policy.observe(None, "en", 0.0, -0.2, "S3")
    policy.observe(None, "zh", 0.0, -0.2, "S2")
    assert policy.groups(["S1", "S2", "S3", "S2", "S1", "S4"], starts) == [[0, 2, 4], [1, 3], [5]]
    assert policy.groups([None, None], starts[:2]) == [[0, 1]] and policy.groups([], []) == []
    assert LanguagePolicy("en").groups(["S1", "S2"], starts[:2]) == [[0, 1]]  # fixed: one call


def test_without_per_speaker_languages_labels_change_nothing() -> None:
    policy = LanguagePolicy(options=LanguageOptions(per_speaker=False))
    policy.observe(None, "en", 0.0, -0.2, "S1")
    assert policy.language_for(1.0, "S2") == "en" and policy.groups(["S1", "S2"], [0.0, 1.0]) == [[0, 1]]
    assert policy.speakers == {}


def test_frozen_a_new_speaker_gets_the_meetings_language_instead_of_a_detection() -> None:
    policy = LanguagePolicy()
    policy.observe(None, "zh", 0.0, -0.2, "S1")
    assert policy.freeze()
    assert policy.language_for(500.0, "S1") == policy.language_for(1.0, "S9") == "zh"


ENGLISH = "We decided to use the aluminium casing for the first batch of glasses."
MANDARIN = "我们和工厂谈过了，第一批货下个月十五号可以发出。"
ENGLISH_AGAIN = "Please send the quote to the supplier before Friday, and check the battery numbers."


@pytest.mark.model
def test_a_mandarin_speaker_between_english_ones_is_decoded_in_mandarin(
        base_asr: Any, make_speech: Callable[..., Any], join_speech: Callable[..., Any], tmp_path: Path) -> None:
    """One English voice, a Mandarin voice, the English voice again, 1.2 s apart: one pack of a file. Once a
    minute, the first detection (English) decodes the Mandarin turn too; per speaker, the English speaker's two
    turns share one call and the Mandarin speaker's turn is heard alone, each detected once."""
    from meetmem.edge import speakers, voice_encoder
    from meetmem.edge.agent import CaptureAgent, CaptureOptions
    from meetmem.edge.outbox import Outbox
    from meetmem.eval.bench.bilingual import pinyin

    mandarin = make_speech(pinyin(MANDARIN), voice="cmn-latn-pinyin+f2", speed=130)
    talk = join_speech([make_speech(ENGLISH, voice="en-us+m7"), mandarin, make_speech(ENGLISH_AGAIN, voice="en-us+m7")],
                       gap=1.2, name="bilingual")
    encoder = voice_encoder.VoiceEncoder()

    def capture(per_speaker: bool) -> tuple[list[Any], Any]:
        options = CaptureOptions(meeting_id="m", language_policy=LanguageOptions(per_speaker=per_speaker))
        with Outbox(tmp_path / f"{per_speaker}.db") as outbox:
            agent = CaptureAgent(base_asr, outbox, options, speakers=speakers.SpeakerTracker(encoder))
            status = agent.run(iter([talk.samples]), source=f"file:{per_speaker}")
            return outbox.pending(100), status

    stored, status = capture(per_speaker=True)
    # The turn cutter may cut the Mandarin turn at its comma's pause (both halves then get S2): compare turns.
    turns: list[tuple[str, str, set[str]]] = []  # speaker, text, languages
    for segment in stored:
        if turns and turns[-1][0] == segment.speaker:
            turns[-1] = (segment.speaker, turns[-1][1] + segment.text, turns[-1][2] | {segment.lang})
        else:
            turns.append((segment.speaker, segment.text, {segment.lang}))
    assert [(t[0], t[2]) for t in turns] == [("S1", {"en"}), ("S2", {"zh"}), ("S1", {"en"})], \
        [(s.speaker, s.lang, s.text) for s in stored]
    assert status.language_detections == 2, status  # once per speaker
    assert status.recogniser_calls == 2, status  # the English turns share one call, the Mandarin one its own
    assert "alumin" in turns[0][1].lower() and "supplier" in turns[2][1].lower()
    assert sum(ch in turns[1][1] for ch in "工厂第一批货下个月") >= 4, turns[1][1]  # Mandarin, in characters
    before, status = capture(per_speaker=False)
    assert status.language_detections == 1 and status.recogniser_calls == 1  # one pack, one detection
    assert [s.lang for s in before] == ["en"] * len(before)  # the Mandarin turn stored as English
