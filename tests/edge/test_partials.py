"""Partial captions: LocalAgreement-2 on the real tiny.en weights and real speech. Confirmed words only ever
grow, the first ones are shown while the sentence is still being spoken, and they agree with the final."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from meetmem.edge.partials import PartialCaption, PartialOptions, agreed_prefix

SENTENCE = "We decided to use the aluminium casing for the first batch of the prototypes."


@pytest.mark.parametrize(("previous", "current", "agreed"), [
    ([], ["we"], 0),
    (["We", "decided"], ["we", "decided,", "to"], 2),  # case and punctuation do not count
    (["We", "decide"], ["We", "decided", "to"], 1),
    (["the", "aluminium"], ["a", "aluminium"], 0),
])
def test_agreed_prefix(previous: list[str], current: list[str], agreed: int) -> None:
    assert agreed_prefix(previous, current) == agreed


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="cadence_s"):
        PartialOptions(cadence_s=0)
    with pytest.raises(ValueError, match="first_cadence_s"):
        PartialOptions(first_cadence_s=0)


@pytest.mark.model
def test_the_second_pass_comes_sooner_until_the_first_words_are_confirmed(tiny_asr: Any,
                                                                          make_speech: Callable[..., Any]) -> None:
    """The first words need two passes that agree: the second follows the first after `first_cadence_s` of new
    audio, the later ones after `cadence_s`."""
    speech = make_speech(SENTENCE)
    start = int(speech.bounds[0] * 16000)
    caption = PartialCaption(tiny_asr, PartialOptions(cadence_s=0.4, first_cadence_s=0.2, min_audio_s=0.5),
                             language="en")
    heard = start + 8000  # 0.5 s of speech
    caption.insert_audio_chunk(0, speech.samples[:heard])
    assert caption.due and caption.process_iter() is not None
    heard += 3200  # 0.2 s more
    caption.insert_audio_chunk(0, speech.samples[:heard])
    assert caption.due  # nothing confirmed yet: the sooner cadence
    partial = caption.process_iter()
    while partial is not None and not partial.text:  # until two passes agree on the first words
        heard += 6400
        assert heard < len(speech.samples), "no words confirmed over the whole sentence"
        caption.insert_audio_chunk(0, speech.samples[:heard])
        partial = caption.process_iter()
    assert partial is not None and partial.text
    caption.insert_audio_chunk(0, speech.samples[:heard + 3200])
    assert not caption.due  # words confirmed: 0.2 s is no longer enough
    caption.insert_audio_chunk(0, speech.samples[:heard + 6400])
    assert caption.due


@pytest.mark.model
def test_confirmed_words_grow_while_speaking_and_match_the_final(tiny_asr: Any,
                                                                 make_speech: Callable[..., Any]) -> None:
    speech = make_speech(SENTENCE)
    caption = PartialCaption(tiny_asr, PartialOptions(cadence_s=0.4), language="en")
    step = 1600  # 0.1 s, as a microphone delivers
    shown: list[tuple[float, str]] = []
    start = int(speech.bounds[0] * 16000)
    for end in range(start + step, len(speech.samples) + step, step):
        caption.insert_audio_chunk(start, speech.samples[start:end])
        partial = caption.process_iter()
        if partial is not None and partial.new_words:
            assert partial.start == start / 16000
            shown.append((partial.heard_until, partial.text))
    assert shown, "no words were ever confirmed"
    texts = [text for _, text in shown]
    for before, after in zip(texts, texts[1:], strict=False):
        assert after.startswith(before)  # never taken back
    assert shown[0][0] < speech.bounds[1] - 1.0  # the first words came while the sentence went on
    final = " ".join(p.text for p in tiny_asr.transcribe(speech.samples[start:], language="en")).split()
    assert agreed_prefix(texts[-1].split(), final) >= 0.7 * len(texts[-1].split())
    caption.finish()
    assert caption.process_iter() is None  # nothing left of the finished utterance
