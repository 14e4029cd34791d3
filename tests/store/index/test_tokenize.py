"""The BM25 tokenizer, table-driven in English and Chinese: exact values stay whole, negations stay."""

from __future__ import annotations

import pytest

from meetmem.store.index.tokenize import NEGATIONS, MeetingTokenizer


@pytest.fixture(scope="module")
def tokenize() -> MeetingTokenizer:
    return MeetingTokenizer()


# (text, terms that must be present, terms that must be absent)
WHOLE_VALUES = [
    ("The supplier quoted $4,250 for the tooling", ["4250"], ["4", "250", "$4"]),
    ("It came to 4,250 in total", ["4250"], ["250"]),
    ("about $1,000,000.50 overall", ["1000000.50"], []),
    ("€12 per unit", ["12"], []),
    ("we ship on March 3rd", ["3rd", "3", "march"], []),
    ("due on the 12th", ["12th", "12"], []),
    ("the 21st and the 22nd", ["21st", "22nd"], []),
    ("let's meet at 10:30", ["10:30"], ["10", "30"]),
    ("at 9:05:30 sharp", ["9:05:30"], []),
    ("order the TS-204 board", ["ts-204", "ts", "204"], []),
    ("TS-180 or TS-204?", ["ts-180", "ts-204"], []),
    ("release v2.1.3", ["v2.1.3"], []),
    ("growth of 20% this quarter", ["20%", "20"], []),
    ("a 5k budget", ["5k", "5"], []),
    ("we need 349 units", ["349"], []),
    ("3.5 millimetres", ["3.5"], []),
    ("预算是4250元", ["4250"], []),
    ("截止日期是3月12号", ["3", "12"], []),
    ("下午3:30开会", ["3:30"], []),
    ("型号是TS-204", ["ts-204"], []),
]


@pytest.mark.parametrize(("text", "present", "absent"), WHOLE_VALUES, ids=[t for t, _, _ in WHOLE_VALUES])
def test_numbers_money_dates_times_and_codes_stay_whole(tokenize, text: str, present: list[str],
                                                        absent: list[str]) -> None:
    terms = tokenize(text)
    for term in present:
        assert term in terms, (text, terms)
    for term in absent:
        assert term not in terms, (text, terms)


NEGATED = [
    ("We are not using plastic", "not"),
    ("We will never ship in June", "never"),
    ("I don't agree with that", "don't"),
    ("I DON’T agree", "don't"),
    ("Dana doesn't own it", "doesn't"),
    ("we can't and won't", "can't"),
    ("we cannot", "cannot"),
    ("there is no budget", "no"),
    ("nothing was decided", "nothing"),
    ("isn't that late", "isn't"),
    ("我们不同意这个方案", "不"),
    ("我没去开会", "没"),
    ("我们没有预算", "没有"),
    ("不要发布", "不要"),
    ("这不是最终价格", "不是"),
    ("别买塑料的", "别"),
]


@pytest.mark.parametrize(("text", "negation"), NEGATED, ids=[t for t, _ in NEGATED])
def test_negations_are_never_dropped(tokenize, text: str, negation: str) -> None:
    terms = tokenize(text)
    if negation.isascii():
        assert negation in terms, terms
    else:
        # jieba may keep a negation inside a longer word ("别买"); it must still be in some term.
        assert any(negation in term for term in terms), terms


@pytest.mark.parametrize("word", sorted(NEGATIONS))
def test_every_listed_negation_survives_on_its_own(tokenize, word: str) -> None:
    terms = tokenize(f"well {word} ok")
    assert any(word in term for term in terms), terms


def test_negation_changes_the_terms(tokenize) -> None:
    assert tokenize("we ship in June") != tokenize("we don't ship in June")
    assert tokenize("我们同意") != tokenize("我们不同意")


@pytest.mark.parametrize(("a", "b"), [
    ("Budget", "budget"),
    ("BUDGET", "budget"),
    ("Aluminium Casing", "aluminium casing"),
    ("TS-204", "ts-204"),
    ("ＴＳ－２０４", "TS-204"),  # full-width, as Chinese input methods type it
    ("Straße", "STRASSE"),
])
def test_case_and_width_fold(tokenize, a: str, b: str) -> None:
    assert tokenize(a) == tokenize(b)


@pytest.mark.parametrize(("a", "b"), [
    ("ships", "shipping"),
    ("shipped", "ship"),
    ("decides", "decided"),
])
def test_inflections_share_a_stem(tokenize, a: str, b: str) -> None:
    assert tokenize(a) == tokenize(b)


def test_function_words_are_dropped_but_content_kept(tokenize) -> None:
    assert tokenize("what is the price of the casing") == ["price", "case"]
    assert tokenize("the and of to") == []


CHINESE = [
    ("我们决定用铝合金外壳", ["决定", "铝合金", "外壳"]),
    ("供应商报价四千二百五十美元", ["供应商", "报价", "美元"]),
    ("下周五之前把新报价发给供应商", ["周五", "报价", "供应商"]),
    ("陈伟负责传感器板", ["负责", "传感器"]),
]


@pytest.mark.parametrize(("text", "words"), CHINESE, ids=[t for t, _ in CHINESE])
def test_chinese_is_cut_into_words_by_jieba(tokenize, text: str, words: list[str]) -> None:
    terms = tokenize(text)
    for word in words:
        assert word in terms, terms
    assert "的" not in terms and "我们" not in terms


def test_jieba_search_mode_also_emits_shorter_words(tokenize) -> None:
    terms = tokenize("中华人民共和国")
    assert "中华人民共和国" in terms
    assert "中华" in terms and "共和国" in terms


def test_mixed_english_and_chinese(tokenize) -> None:
    terms = tokenize("Bob说TS-204下周三到，$4,250不含运费")
    for term in ["bob", "ts-204", "4250", "不", "运费"]:
        assert term in terms, terms


def test_the_same_text_always_gives_the_same_terms(tokenize) -> None:
    text = "Okay. So we decided to go with the aluminium casing, not plastic. 我们不用塑料。"
    assert tokenize(text) == tokenize(text) == MeetingTokenizer()(text)


def test_options_turn_off_stopwords_and_stemming() -> None:
    plain = MeetingTokenizer(stopwords=False, stemming=False)
    assert plain("The ships are shipping") == ["the", "ships", "are", "shipping"]


def test_stemming_from_several_threads_at_once_gives_each_word_its_own_stem():
    # The indexer and the digest worker stem at the same time; a stemmer shared between threads mixes up
    # the words it is working on (IndexError inside snowballstemmer, or a wrong stem).
    import random
    import string
    import threading

    from meetmem.store.index import tokenize

    rng = random.Random(7)
    suffixes = ["ing", "ed", "ness", "ations", "ly", "ers"]
    words = [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 12))) + rng.choice(suffixes)
        for _ in range(40_000)
    ]
    tokenize.stem.cache_clear()
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def run(part: int) -> None:
        try:
            results[part] = [tokenize.stem(word) for word in words[part::4]]
        except BaseException as exc:  # noqa: BLE001 - the failure under test is any exception in a thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(part,)) for part in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    tokenize.stem.cache_clear()
    for part in range(4):
        assert results[part] == [tokenize.stem(word) for word in words[part::4]]
