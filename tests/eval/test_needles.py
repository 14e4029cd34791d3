"""The needle meeting generator: seeded, every kind planted at the asked rate, every value said once, noise
that spares the values, questions in other words than the meeting, and files the store can read."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import pytest

from meetmem.eval.needles.generator import generate, zh_number
from meetmem.eval.needles.noise import add_noise
from meetmem.eval.needles.records import NEEDLE_KINDS, NeedleMeeting
from meetmem.store.interchange import read_jsonl

LANGS = ("en", "zh")
AMI = Path(__file__).resolve().parents[3] / "shared" / "data" / "ami"
EN_STOP = frozenset(
    "a an the of to for in on at by is are was were be it its we us our you your they them their what which who "
    "whom when how many much does did do this that there with as from after before now these days".split())


_MEETINGS: dict[tuple[str, float, float], NeedleMeeting] = {}


def meeting(lang: str, hours: float = 1.0, noise: float = 0.0) -> NeedleMeeting:
    key = (lang, hours, noise)
    if key not in _MEETINGS:
        _MEETINGS[key] = generate(hours, lang=lang, noise=noise)
    return _MEETINGS[key]


def _expected_segments(m: NeedleMeeting) -> dict[str, set[int]]:
    """Every expected value and old (corrected) value, with the segments where it may be said."""
    allowed: dict[str, set[int]] = {}
    for n in m.needles:
        for q in n.questions:
            allowed.setdefault(q.expected.casefold(), set()).add(n.segment_index)
        if n.kind == "correction":
            assert n.corrects is not None
            allowed.setdefault(n.values["old"].casefold(), set()).update({n.corrects, n.segment_index})
    return allowed


@pytest.mark.parametrize("lang", LANGS)
def test_same_arguments_give_byte_identical_files(lang: str, tmp_path: Path) -> None:
    first = generate(0.5, lang=lang, seed=11, noise=0.2).write(tmp_path / "a")
    second = generate(0.5, lang=lang, seed=11, noise=0.2).write(tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    other = generate(0.5, lang=lang, seed=12, noise=0.2).write(tmp_path / "c")
    assert other[0].read_bytes() != first[0].read_bytes()


@pytest.mark.parametrize("lang", LANGS)
def test_an_hour_has_every_kind_at_the_asked_rate_and_pace(lang: str) -> None:
    m = meeting(lang)
    kinds = Counter(n.kind for n in m.needles)
    assert set(kinds) == set(NEEDLE_KINDS)
    assert 30 <= len(m.needles) <= 50
    assert len(generate(1.0, lang=lang, needles_per_hour=30).needles) == 30
    assert 800 <= len(m.segments) <= 1050  # ~900 segments an hour
    assert m.distractors
    assert len(set(r["speaker"] for r in m.segments)) >= 4
    starts = [r["start"] for r in m.segments]
    assert starts == sorted(starts) and all(r["end"] >= r["start"] for r in m.segments)
    assert all(r["lang"] == lang for r in m.segments)
    assert 3500 <= m.segments[-1]["end"] <= 3800
    # Topics change every 5 to 15 minutes (the last block is cut by the meeting's end).
    blocks = m.notes["topics"]
    assert len(blocks) >= 4
    assert all(300 <= end - start <= 905 for _, start, end in blocks[:-1])
    assert all(a[0] != b[0] for a, b in zip(blocks, blocks[1:], strict=False))
    for n in m.needles:
        assert 1 <= len(n.questions) <= 2 and n.lang == lang
        assert m.segments[n.segment_index]["text"] == n.text


def test_chinese_meeting_speaks_chinese() -> None:
    m = meeting("zh")
    cjk = re.compile(r"[\u4e00-\u9fff]")
    assert all(cjk.search(r["text"]) for r in m.segments)
    assert all(cjk.search(q.question) for n in m.needles for q in n.questions)
    said = " ".join(r["text"] for r in m.segments)
    assert re.search(r"[一二三四五六七八九十]+月[一二三四五六七八九十]+号|\d+月\d+日", said)
    assert re.search(r"[万千百][一二三四五六七八九]?[千百]?元", said)
    assert re.search(r"周[一二三四五]", said)


def test_short_meeting_works() -> None:
    m = generate(1 / 6, seed=3)
    assert 5 <= len(m.needles) <= 9 and len(m.segments) > 100


@pytest.mark.parametrize("lang", LANGS)
def test_values_are_said_where_the_needle_says(lang: str) -> None:
    m = meeting(lang)
    for n in m.needles:
        text = m.segments[n.segment_index]["text"]
        assert all(v in text for v in n.values.values()), n
        assert all(q.expected in text for q in n.questions), n
        if n.kind == "correction":
            assert n.corrects is not None and n.corrects < n.segment_index
            assert n.values["old"] in m.segments[n.corrects]["text"]
            assert n.values["new"] not in m.segments[n.corrects]["text"]
            assert all(q.expected == n.values["new"] for q in n.questions)
        else:
            assert n.corrects is None


@pytest.mark.parametrize("lang", LANGS)
def test_distractors_never_say_a_needle_value(lang: str) -> None:
    m = meeting(lang)
    needle_segments = {n.segment_index for n in m.needles} | {n.corrects for n in m.needles}
    expected = {q.expected.casefold() for n in m.needles for q in n.questions}
    for index in m.distractors:
        assert index not in needle_segments
        text = m.segments[index]["text"].casefold()
        assert not any(value in text for value in expected), text


@pytest.mark.parametrize("lang", LANGS)
def test_every_value_is_said_once_in_a_working_day(lang: str) -> None:
    m = meeting(lang, hours=8.0)
    assert 8 * 30 <= len(m.needles) <= 8 * 50
    texts = [r["text"].casefold() for r in m.segments]
    for value, allowed in _expected_segments(m).items():
        where = {i for i, t in enumerate(texts) if value in t}
        assert where and where <= allowed, (value, where, allowed)


@pytest.mark.parametrize("lang", LANGS)
def test_questions_are_paraphrases_not_copies(lang: str) -> None:
    """Beyond the key entity (the needle's values and the speakers' names), a question shares at most a
    quarter of its content words (Chinese: character bigrams) with the sentence it asks about."""
    m = meeting(lang)
    drop = tuple(m.notes["speakers"])
    for n in m.needles:
        for q in n.questions:
            ask, said = (_content(t, (*n.values.values(), *drop), lang) for t in (q.question, n.text))
            assert q.question.casefold() not in n.text.casefold()
            assert len(ask & said) <= max(1, len(ask) // 4), (q.question, n.text, ask & said)


def _content(text: str, drop: tuple[str, ...], lang: str) -> set[str]:
    for value in sorted(drop, key=len, reverse=True):
        text = text.replace(value, "|")
    if lang == "zh":
        text = re.sub(r"[^\u4e00-\u9fff]", "|", text)
        return {text[i:i + 2] for i in range(len(text) - 1) if "|" not in text[i:i + 2]}
    return {w for w in re.findall(r"[a-z][a-z'-]+", text.lower()) if w not in EN_STOP}


@pytest.mark.parametrize("lang", LANGS)
def test_noise_disturbs_the_talk_but_never_a_value(lang: str) -> None:
    clean, noisy = meeting(lang), meeting(lang, noise=0.4)
    assert [r["start"] for r in noisy.segments] == [r["start"] for r in clean.segments]
    changed = sum(a["text"] != b["text"] for a, b in zip(clean.segments, noisy.segments, strict=True))
    assert changed > len(clean.segments) // 3
    assert [(n.segment_index, n.values, n.questions) for n in noisy.needles] == \
        [(n.segment_index, n.values, n.questions) for n in clean.needles]
    for n in noisy.needles:
        assert all(v in noisy.segments[n.segment_index]["text"] for v in n.values.values())
        if n.corrects is not None:
            assert n.values["old"] in noisy.segments[n.corrects]["text"]
    assert all(r["text"].strip() for r in noisy.segments)


@pytest.mark.parametrize(("lang", "text", "kept"), [
    ("en", "So the hinge supplier is out, we won't use Kanex for the display driver supplier.", ("Kanex", "$8,150")),
    ("en", "The tooling quote came in at $8,150, and that is it for the tooling quote.", ("$8,150", "tooling quote")),
    ("zh", "说清楚，充电底座组装厂我们不用恒达精密了，他在做的事情也就这样吧。", ("恒达精密", "充电底座组装厂")),
    ("zh", "跟大家同步一下，散热垫认证费一共两万五千元，就是这样的。", ("两万五千元",)),
])
def test_noise_table(lang: str, text: str, kept: tuple[str, ...]) -> None:
    rng = random.Random(5)
    outputs = {add_noise(text, 0.8, rng, lang, kept) for _ in range(20)}
    assert len(outputs) > 1
    for out in outputs:
        assert all(value in out for value in kept if value in text)
    assert add_noise(text, 0.0, rng, lang, kept) == text


@pytest.mark.parametrize(("number", "said"), [
    (2, "二"), (12, "十二"), (20, "二十"), (200, "两百"), (1050, "一千零五十"), (3750, "三千七百五十"),
    (25000, "两万五千"), (128000, "十二万八千"), (10010, "一万零一十"), (30005, "三万零五"),
])
def test_zh_number(number: int, said: str) -> None:
    assert zh_number(number) == said


@pytest.mark.parametrize("lang", LANGS)
def test_written_meeting_is_interchange_and_reads_back(lang: str, tmp_path: Path) -> None:
    m = generate(0.25, lang=lang, noise=0.1)
    transcript, _ = m.write(tmp_path)
    _, segments = read_jsonl(transcript)
    assert [s.text for s in segments] == [r["text"] for r in m.segments]
    assert {s.lang for s in segments} == {lang}
    assert NeedleMeeting.read(tmp_path) == m


def test_bad_arguments_are_refused() -> None:
    for kwargs in ({"lang": "fr"}, {"noise": 1.5}, {"needles_per_hour": 0},
                   {"lang": "zh", "background": Path(".")}):
        with pytest.raises(ValueError):
            generate(0.2, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        generate(0)


@pytest.mark.skipif(not (AMI / "dev").is_dir(), reason="needs ../shared/data/ami")
def test_ami_background_talk(tmp_path: Path) -> None:
    m = generate(0.5, background=AMI, seed=2)
    assert m.notes["background"] == "ami"
    planted = {n.segment_index for n in m.needles} | set(m.distractors) | {n.corrects for n in m.needles}
    background = [r["text"] for i, r in enumerate(m.segments) if i not in planted]
    assert len(set(background)) > len(background) // 2
    texts = [r["text"].casefold() for r in m.segments]
    for value, allowed in _expected_segments(m).items():
        assert {i for i, t in enumerate(texts) if value in t} <= allowed
    read_jsonl(m.write(tmp_path)[0])
