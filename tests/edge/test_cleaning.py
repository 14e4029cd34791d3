"""Filler cleaning: table-driven in English and Chinese, and the invariants as properties.

Invariants: a digit or a negation present in the input is never removed (not even as a repeat), and an
utterance with any real word in it never comes out empty.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meetmem.edge.cleaning import CHINESE_NEGATIONS, ENGLISH_NEGATIONS, CleanedText, FillerCleaner, clean

ENGLISH = [
    # fillers, and the commas and capital letter they leave behind
    ("Um, we ship on Monday.", "We ship on Monday."),
    ("uh we ship on Monday", "we ship on Monday"),
    ("We, um, ship on Monday.", "We ship on Monday."),
    ("We ship, uh, on Monday.", "We ship on Monday."),
    ("We ship on Monday, um.", "We ship on Monday."),
    ("We ship um on Monday.", "We ship on Monday."),
    ("Erm, the quote is late. Er, the supplier knows.", "The quote is late. The supplier knows."),
    ("Hmm... the quote is late.", "The quote is late."),
    ("Um, uh, we ship.", "We ship."),
    ("You know, the quote is late.", "The quote is late."),
    ("The quote, you know, is late.", "The quote is late."),
    ("The quote is late, you know.", "The quote is late."),
    # stutters and repeats
    ("I I I think we should ship.", "I think we should ship."),
    ("I, I think so.", "I think so."),
    ("The the supplier is late.", "The supplier is late."),
    ("We should we should ship it.", "We should ship it."),
    ("Send it to the sup- supplier.", "Send it to the supplier."),
    ("I- I agree.", "I agree."),
    ("Um, I I think, uh, we ship.", "I think we ship."),
    # negations are never removed and never collapsed
    ("No, um, we don't ship on Friday.", "No, we don't ship on Friday."),
    ("No no no, not on Friday.", "No no no, not on Friday."),
    ("We never never ship late.", "We never never ship late."),
    ("Um, not yet.", "Not yet."),
    # numbers, money, dates are never altered, not even repeated
    ("The budget is $4,500, um, by March 12th.", "The budget is $4,500 by March 12th."),
    ("It costs 5 5 dollars.", "It costs 5 5 dollars."),
    ("The code is five five one.", "The code is five five one."),
    ("Um -5 degrees at 10:30.", "-5 degrees at 10:30."),
    ("The gap is 5 mm.", "The gap is 5 mm."),
    # things that look like fillers but are not
    ("Do you know the deadline?", "Do you know the deadline?"),
    ("You know the deadline.", "You know the deadline."),
    ("It's late, you know?", "It's late, you know?"),
    ("As you know, the budget is fixed.", "As you know, the budget is fixed."),
    ("I like the casing, like the old one.", "I like the casing, like the old one."),
    ("Uh-huh, sounds good.", "Uh-huh, sounds good."),
    ("I know that that is wrong.", "I know that that is wrong."),
    ("He had had enough.", "He had had enough."),
    ("Bye bye.", "Bye bye."),
    ("Um, iPhone sales are up.", "iPhone sales are up."),
    ("Take him to the ER, um, now.", "Take him to the ER now."),
    # nothing but fillers
    ("Um.", ""),
    ("Uh, um, er...", ""),
]

CHINESE = [
    ("嗯，我们下周三发布。", "我们下周三发布。"),
    ("我们，呃，下周三发布。", "我们，下周三发布。"),
    ("我们嗯下周三发布。", "我们下周三发布。"),
    ("好的，嗯。", "好的。"),
    ("不是，呃，我们的问题。", "不是，我们的问题。"),
    ("啊，我们开始吧。", "我们开始吧。"),
    ("那个，预算是四千五百元。", "预算是四千五百元。"),
    ("我们，那个，下周开会。", "我们，下周开会。"),
    ("就是，这个方案不行。", "这个方案不行。"),
    ("就是说，我们要延期。", "我们要延期。"),
    ("我们我们下周发布。", "我们下周发布。"),
    ("我我我觉得可以。", "我觉得可以。"),
    ("那个那个项目延期了。", "那个项目延期了。"),
    ("对对对，没问题。", "对，没问题。"),
    ("我们的我们的预算不够。", "我们的预算不够。"),
    # meaningful uses stay
    ("我要那个，不要这个。", "我要那个，不要这个。"),
    ("这就是问题。", "这就是问题。"),
    ("是啊，好的。", "是啊，好的。"),
    ("谢谢谢谢", "谢谢"),
    ("我们研究研究这个方案。", "我们研究研究这个方案。"),
    ("看看再说。", "看看再说。"),
    # negations and numbers are never collapsed
    ("不不不，不是这样。", "不不不，不是这样。"),
    ("没有没有，别担心。", "没有没有，别担心。"),
    ("一个一个来。", "一个一个来。"),
    ("三月十二日，嗯，交付。", "三月十二日，交付。"),
    ("预算是4500元，嗯，3月12日前。", "预算是4500元，3月12日前。"),
    ("嗯嗯。", ""),
]


@pytest.mark.parametrize(("raw", "expected"), ENGLISH)
def test_english(raw: str, expected: str) -> None:
    assert clean(raw).text == expected


@pytest.mark.parametrize(("raw", "expected"), CHINESE)
def test_chinese(raw: str, expected: str) -> None:
    assert clean(raw).text == expected


@pytest.mark.parametrize(("raw", "glossary", "expected"), [
    ("Um, Er is our new product, er, Er Er.", ["Er"], "Er is our new product, er, Er Er."),
    ("Ask Priya Priya about it.", ["Priya"], "Ask Priya Priya about it."),
    ("Ask Priya Priya about it.", [], "Ask Priya about it."),
    ("嗯，那个那个是产品名。", ["那个那个"], "那个那个是产品名。"),
    ("呃，请联系嗯哼科技。", ["嗯哼科技"], "请联系嗯哼科技。"),
    ("Um, the TS-204 TS-204 casing.", ["TS-204"], "The TS-204 TS-204 casing."),
])
def test_glossary_names_are_never_touched(raw: str, glossary: list[str], expected: str) -> None:
    assert FillerCleaner(glossary).clean(raw).text == expected


def test_raw_text_is_kept_beside_the_clean_text() -> None:
    result = FillerCleaner(["Priya"]).clean("Um, Priya will send it.")
    assert result == CleanedText(text="Priya will send it.", raw_text="Um, Priya will send it.")
    assert result.changed
    untouched = clean("We ship on Monday.")
    assert untouched.text == untouched.raw_text and not untouched.changed


def test_mixed_chinese_and_english() -> None:
    assert clean("嗯，我们用 Quorvix 的 the the 新版本。").text == "我们用 Quorvix 的 the 新版本。"


# --- invariants ----------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")


def _digits(text: str) -> Counter[str]:
    return Counter(c for c in text if c.isdigit())


def _negations(text: str) -> Counter[str]:
    english = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    words = [w for w in english if w in ENGLISH_NEGATIONS or w.endswith("n't")]
    return Counter(words + [c for c in text if c in CHINESE_NEGATIONS])


FILLERS = ["um", "Um", "uh", "Uh", "er", "erm", "hmm", "you know", "嗯", "呃", "啊", "那个", "就是"]
CONTENT = ["we", "ship", "the", "budget", "Priya", "March", "12th", "$4,500", "5", "I", "think", "我们", "发布",
           "预算", "下周", "三月", "元", "项目", "好"]
NEGATIONS = ["not", "no", "never", "don't", "can't", "nothing", "不", "没", "别", "未", "没有"]
PUNCTUATION = [",", ".", "?", "!", "，", "。", "...", "-", "、"]
SEPARATORS = ["", " ", " ", ", "]

token_lists = st.lists(st.sampled_from(FILLERS + CONTENT + NEGATIONS + PUNCTUATION), min_size=1, max_size=14)


def _join(tokens: list[str], separators: list[str]) -> str:
    out = tokens[0]
    for token, separator in zip(tokens[1:], separators, strict=False):
        out += separator + token
    return out


spoken = st.tuples(token_lists, st.lists(st.sampled_from(SEPARATORS), min_size=14, max_size=14))
utterances = spoken.map(lambda pair: _join(*pair))
glossaries = st.lists(st.sampled_from(["Priya", "Er", "那个", "TS-204", "um"]), max_size=2)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(utterances, st.text(max_size=60)), glossary=glossaries)
def test_cleaning_never_removes_a_digit_or_a_negation(text: str, glossary: list[str]) -> None:
    cleaned = FillerCleaner(glossary).clean(text).text
    assert _digits(cleaned) == _digits(text)
    assert not _negations(text) - _negations(cleaned)  # every negation is still there, as often


@settings(max_examples=300, deadline=None)
@given(pair=spoken)
def test_cleaning_never_empties_a_text_with_real_words(pair: tuple[list[str], list[str]]) -> None:
    tokens, separators = pair
    if any(token in CONTENT or token in NEGATIONS for token in tokens):
        assert clean(_join(tokens, separators)).text.strip()


@settings(max_examples=300, deadline=None)
@given(text=utterances)
def test_cleaning_twice_changes_nothing_more(text: str) -> None:
    once = clean(text).text
    assert clean(once).text == once
