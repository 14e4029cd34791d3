"""False starts: the cut-off start of the next word is dropped ("rem remote" -> "remote"), nothing else.

Table-driven, with AMI's own forms (no hyphen, "Custome Customers"; with one, "rem- remote"), the words that
begin a longer word and stay ("the there", "use user"), and the invariants as properties: a digit, a
negation or a glossary name is never removed, and only a word that begins the next one ever goes.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meetmem.edge.cleaning import ENGLISH_NEGATIONS, FillerCleaner, clean

DROPPED = [
    ("Custome Customers and users don't like the way remote controls look.",
     "Customers and users don't like the way remote controls look."),
    ("Press the rem remote twice.", "Press the remote twice."),
    ("Press the rem- remote twice.", "Press the remote twice."),
    ("Press the REM remote twice.", "Press the remote twice."),
    ("We want a rub rubber casing.", "We want a rubber casing."),
    ("Rub rubber is cheaper.", "Rubber is cheaper."),  # the capital passes on at a sentence's start
    ("It is fine. Rub rubber is cheaper.", "It is fine. Rubber is cheaper."),
    ("tha that's the one", "that's the one"),
    ("wha what do you think?", "what do you think?"),
    ("the butto button buttons are small", "the buttons are small"),  # a chain of them
    ("Rem remo remote control.", "Remote control."),
    ("infra infrared signals", "infrared signals"),
    ("nev never again", "never again"),  # a cut-off negation goes; the negation itself stays
    ("don don't do it", "don't do it"),
    ("it costs fif fifty euros", "it costs fifty euros"),
    ("Um, the pro product is, uh, late.", "The product is late."),
    ("I- I agree.", "I agree."),
]

KEPT = [
    # a whole word that begins the next one is a word of its own
    "the there is a problem",
    "we use user testing",
    "for forty euros",
    "they they're late",
    "that that's it",
    "you you'd better",
    "may maybe",
    "with within a week",
    "some something else",
    "every everything",
    "should shouldn't we",
    "was wasn't it",
    # too short to tell from a word
    "in inside",
    "to today",
    "us use",
    "an answer",
    # number words and negations are never dropped
    "six sixty units",
    "ten tenth floor",
    "not nothing",
    "no nobody",
    # only before a space: a comma or a dash joined to the next word is the speaker's own
    "rem, remote",
    "pro-product",
    # not a prefix, or the same word (repeats have their own rule)
    "remote remains",
    "Customers customers",
]


@pytest.mark.parametrize(("raw", "expected"), DROPPED)
def test_false_starts_are_dropped(raw: str, expected: str) -> None:
    assert clean(raw).text == expected


@pytest.mark.parametrize("raw", KEPT)
def test_words_that_are_no_false_start_stay(raw: str) -> None:
    cleaned = clean(raw).text
    if raw == "Customers customers":
        assert cleaned == "Customers"  # the repeat rule's doing, not a false start
    else:
        assert cleaned == raw


@pytest.mark.parametrize(("raw", "glossary", "expected"), [
    ("Ask Rem remote support.", ["Rem"], "Ask Rem remote support."),
    ("The Quor Quorvix casing.", ["Quor"], "The Quor Quorvix casing."),
    ("The Quor Quorvix casing.", ["Quorvix"], "The Quor Quorvix casing."),
    ("The Quor Quorvix casing.", [], "The Quorvix casing."),
])
def test_glossary_names_are_never_a_false_start(raw: str, glossary: list[str], expected: str) -> None:
    assert FillerCleaner(glossary).clean(raw).text == expected


# --- invariants ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*")
STARTS = ["rem", "Custome", "pro", "tha", "butto", "fif", "nev", "six", "the", "use", "not", "don"]
WORDS = ["remote", "Customers", "product", "that's", "button", "fifty", "never", "sixty", "there", "user",
         "nothing", "don't", "5", "$4,500", "12th", "no", "never", "we", "ship", "it", "um"]
PIECES = STARTS + WORDS + [",", ".", "-", "?"]


def _negations(text: str) -> Counter[str]:
    words = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    return Counter(w for w in words if w in ENGLISH_NEGATIONS or w.endswith("n't"))


utterances = st.lists(st.sampled_from(PIECES), min_size=1, max_size=12).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(text=utterances)
def test_no_digit_or_negation_is_ever_removed(text: str) -> None:
    cleaned = clean(text).text
    assert Counter(c for c in cleaned if c.isdigit()) == Counter(c for c in text if c.isdigit())
    assert not _negations(text) - _negations(cleaned)


@settings(max_examples=300, deadline=None)
@given(text=utterances)
def test_only_fillers_repeats_and_starts_of_kept_words_go(text: str) -> None:
    """Cleaning invents no word, and each word it drops is a filler, a repeat or the start of a kept word."""
    words = Counter(w.lower() for w in _WORD.findall(text))
    kept = Counter(w.lower() for w in _WORD.findall(clean(text).text))
    assert not kept - words, text
    for word in words - kept:
        assert word == "um" or any(k.startswith(word) for k in kept), (text, word)


@settings(max_examples=200, deadline=None)
@given(text=utterances)
def test_cleaning_twice_changes_nothing_more(text: str) -> None:
    once = clean(text).text
    assert clean(once).text == once
