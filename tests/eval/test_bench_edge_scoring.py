"""The scoring of `meetmem bench edge`: WER/CER by Levenshtein on normalised tokens, the meeting's glossary."""

from __future__ import annotations

import pytest

from meetmem.eval.harness import (
    edit_distance,
    error_rate,
    meeting_glossary,
    normalise,
    pooled,
    spoken_end,
    term_hits,
    tokens,
)


@pytest.mark.parametrize(("reference", "hypothesis", "distance"), [
    ([], [], 0),
    (["a", "b", "c"], ["a", "b", "c"], 0),
    (["a", "b", "c"], [], 3),  # three deletions
    ([], ["x", "y"], 2),  # two insertions
    (["a", "b", "c"], ["a", "x", "c"], 1),  # one substitution
    (["a", "b", "c"], ["b", "c", "d"], 2),  # a deleted at the start, d inserted at the end
    (list("kitten"), list("sitting"), 3),
])
def test_edit_distance(reference: list[str], hypothesis: list[str], distance: int) -> None:
    assert edit_distance(reference, hypothesis) == distance
    assert edit_distance(hypothesis, reference) == distance


@pytest.mark.parametrize(("text", "expected"), [
    ("Okay, I think everyone's here.", "okay i think everyones here"),
    ("The supplier quoted $4,250 for the tooling.", "the supplier quoted 4250 for the tooling"),
    ("Friday at 10:30 — TS-204!", "friday at 10 30 ts 204"),
    ("ＦＵＬＬ width", "full width"),
    ("桥下垂直净空 15 米。", "桥下垂直净空 15 米"),
])
def test_normalise(text: str, expected: str) -> None:
    assert normalise(text) == expected


@pytest.mark.parametrize(("reference", "hypothesis", "unit", "errors", "ref_tokens"), [
    ("Good morning Bob, Chen Wei, Dana.", "good morning bob chen wei dana", "word", 0, 6),
    ("Good morning Bob, Chen Wei, Dana.", "Good morning, Bob. Chenway, Dana.", "word", 2, 6),
    ("ask not what your country can do for you", "ask what your country can do for you", "word", 1, 9),
    ("广州市房地产中介协会分析", "广州市房地产中介协会分析。", "char", 0, 12),
    ("广州市房地产中介协会分析", "广州市房地产中界协会", "char", 3, 12),
    ("我们明天 发货", "我们明天发货", "char", 0, 6),
])
def test_error_rate(reference: str, hypothesis: str, unit: str, errors: int, ref_tokens: int) -> None:
    score = error_rate(reference, hypothesis, unit)
    assert (score["errors"], score["ref_tokens"]) == (errors, ref_tokens)
    assert score["rate"] == round(errors / ref_tokens, 4)


def test_error_rate_of_an_empty_reference_is_none_and_pooling_weighs_by_length() -> None:
    assert error_rate("", "anything")["rate"] is None
    with pytest.raises(ValueError):
        tokens("text", "syllable")
    assert pooled([{"errors": 1, "ref_tokens": 10}, {"errors": 9, "ref_tokens": 10}])["rate"] == 0.5
    assert pooled([{"errors": 1, "ref_tokens": 90}, {"errors": 9, "ref_tokens": 10}])["rate"] == 0.1


def test_meeting_glossary_is_speakers_and_product_codes() -> None:
    segments = [
        {"speaker": "Alice", "text": "Chen Wei, where are we?"},
        {"speaker": "Chen Wei", "text": "We have the TS-204 board and the older TS-180. Not the TS 99."},
        {"speaker": "Alice", "text": "Then TS-204 it is, by March 12th."},
    ]
    assert meeting_glossary(segments) == ["Alice", "Chen Wei", "TS-204", "TS-180"]


def test_term_hits_counts_occurrences_clipped_per_term() -> None:
    reference = "the TS-204 board and the TS-180; TS-204 again, Chen Wei"
    assert term_hits(reference, "the TS204 board and the TS-180, TS-204, Chen way", ["TS-204", "TS-180", "Chen Wei"]) \
        == {"found": 2, "occurrences": 4, "rate": 0.5}
    assert term_hits(reference, "ts-204 ts-204 ts-204", ["TS-204"])["found"] == 2
    assert term_hits("TS-204 TS-204 TS-204", "TS-204 TS-204 TS-204", ["TS-204"])["found"] == 3


REFERENCE = [(0.5, 5.62), (6.73, 11.09), (11.5, 13.61), (19.48, 26.98)]


@pytest.mark.parametrize(("start", "end", "expected"), [
    (0.3, 5.9, 5.62),  # the VAD's end is its hangover after the speech
    (0.3, 5.4, 5.62),  # ... or a little before the reference's end (a quiet last consonant)
    (6.5, 13.9, 13.61),  # two utterances merged across a short pause: the later end
    (6.5, 24.0, None),  # cut inside an utterance: the speech went on after the cut
    (20.0, 24.0, None),
])
def test_spoken_end(start: float, end: float, expected: float | None) -> None:
    assert spoken_end(start, end, REFERENCE) == expected


def test_the_default_meeting_is_package_data_not_a_source_tree_path() -> None:
    """`meetmem bench edge` without --audio/--reference reads the sample meeting from the installed package
    (importlib.resources), so a wheel install finds it too."""
    from pathlib import Path

    import meetmem
    from meetmem.eval.bench.edge import demo_file

    package = Path(meetmem.__file__).resolve().parent
    for name in ("sample_meeting.ogg", "sample_meeting.jsonl"):
        path = demo_file(name)
        assert path.is_file() and path.resolve().is_relative_to(package / "demo_data")


def test_first_partial_words_split_into_the_audio_heard_and_the_wait_for_the_pass() -> None:
    """First words after spoken = the audio the agreeing pass had heard past the word (the policy's share) plus
    the time from that audio to the caption (the recogniser's share); later words count in `every` only."""
    from meetmem.eval.bench.edge_latency import partial_figures

    reference = [{"start": 0.0, "end": 2.0, "text": "alpha beta"}]  # words done at 1.0 and 2.0 s
    partials = [{"at": 2.5, "start": 0.0, "heard_until": 1.8, "text": "alpha", "new_words": 1},
                {"at": 3.0, "start": 0.0, "heard_until": 2.6, "text": "alpha beta", "new_words": 1}]
    figures = partial_figures(partials, reference)
    assert figures["first"]["n"] == 1 and figures["first"]["p50_ms"] == pytest.approx(1500)
    assert figures["first_heard_after_spoken"]["p50_ms"] == pytest.approx(800)
    assert figures["first_shown_after_heard"]["p50_ms"] == pytest.approx(700)
    assert figures["every"]["n"] == 2


def test_a_word_counts_when_it_was_first_shown_even_by_the_caption_before_a_cut() -> None:
    """The VAD cut an utterance at its length limit: the caption of the piece before had shown the words past
    the cut, so the next caption's first word counts from then, not from when the new caption shows it again;
    and each word counts once in `every`."""
    from meetmem.eval.bench.edge_latency import partial_figures

    reference = [{"start": 0.0, "end": 4.0, "text": "alpha beta gamma delta"}]  # done at 1, 2, 3 and 4 s
    partials = [{"at": 3.4, "start": 0.0, "heard_until": 3.3, "text": "alpha beta gamma", "new_words": 3},
                # cut at 2.0 s: the next piece's caption starts at "gamma", which was shown at 3.4 s
                {"at": 4.6, "start": 2.0, "heard_until": 4.5, "text": "gamma delta", "new_words": 2}]
    figures = partial_figures(partials, reference)
    assert figures["first"]["n"] == 2
    assert figures["first"]["max_ms"] == pytest.approx(2400)  # alpha: 3.4 - 1.0; gamma: 3.4 - 3.0
    assert figures["first"]["mean_ms"] == pytest.approx(1400)
    assert figures["every"]["n"] == 4  # delta once, at 4.6 s
    assert figures["every"]["max_ms"] == pytest.approx(2400)
