"""The presence check a model's summary line must pass: table-driven, English and Chinese."""

from __future__ import annotations

import pytest

from meetmem.store.records import Segment
from meetmem.summarizers.validation import check_citations, check_line

# (line, cited segment texts): every fact the line states is in the cited text.
ACCEPTED = [
    ("The budget is $40,000.", ["we agreed the budget is forty thousand dollars"]),
    ("The budget is 40,000 dollars.", ["the budget is $40,000, final"]),
    ("Budget approved at $40k.", ["budget approved, forty thousand dollars"]),
    ("Zhang San owns the report.", ["Zhang San will own the report"]),
    ("Alice sends the deck by Wednesday.", ["alice: I'll send the deck Wednesday"]),
    ("Each unit costs 12.50.", ["it's twelve fifty a unit"]),
    ("The call moved to 3:30.", ["let's do three thirty instead"]),
    ("Launch is on March 12.", ["我们3月12号上线"]),
    ("Bob has 3 tickets.", ["bob got three tickets"]),
    ("Shipping moves to Friday.", ["we ship Friday now"]),
    ("We may ship in March.", ["we may ship in March"]),
    ("Review in Q3.", ["let's review it in q3"]),
    ("Tom will call the vendor tomorrow.", ["Tom: I'll call the vendor tomorrow"]),
    ("The team discussed the roadmap.", ["a long talk about what comes next"]),  # states no fact
    ("张三负责报告，周五前完成。", ["报告由张三负责，星期五之前交"]),
    ("预算两万元。", ["预算是20000元"]),
    ("小王下午三点半开会。", ["小王说下午3:30开会"]),
    ("3月12日上线。", ["我们March 12上线"]),
    ("买三张票。", ["买3张票"]),
    ("增长百分之十五。", ["增长了15%"]),
    ("预算一万五。", ["预算15000块"]),
    ("王总下周确认报价。", ["王总说他下周确认一下报价"]),
    ("李经理明天发合同。", ["李经理：合同我明天发"]),
    ("大家讨论了方案。", ["我们聊了一下这个方案"]),
]

# (line, cited segment texts, what the reason names): drift the check catches.
REJECTED = [
    ("The budget is $45,000.", ["the budget is forty thousand dollars"], "45,000"),
    ("The budget is 40,000 euros.", ["the budget is $40,000"], "euros"),
    ("Li Si owns the report.", ["Zhang San will own the report"], "Li"),
    ("The report is owned by Li Si.", ["Zhang San will own the report"], "Li"),
    ("Alice sends the deck by Thursday.", ["alice: I'll send the deck Wednesday"], "Thursday"),
    ("Alice sends the deck this week.", ["alice: I'll send the deck Wednesday"], "this week"),
    ("Launch is on April 12.", ["launch is March 12"], "April"),
    ("The call moved to 4:30.", ["let's do three thirty instead"], "4:30"),
    ("Fifteen people signed up.", ["twelve people signed up"], "Fifteen"),
    ("Tom will call the vendor today.", ["Tom: I'll call the vendor tomorrow"], "today"),
    ("李四负责报告。", ["报告由张三负责"], "李四"),
    ("张三周四前完成。", ["张三说周五之前交"], "周四"),
    ("预算3万元。", ["预算是两万元"], "3万"),
    ("预算两万美元。", ["预算是两万元"], "美元"),
    ("小李下午三点开会。", ["小王说下午3点开会"], "小李"),
    ("下午四点开会。", ["下午3点开会"], "四点"),
    ("明天上线。", ["我们后天上线"], "明天"),
]

# Drift a presence check cannot see: every value the line states is in the cited text, yet it is wrong.
NOT_CAUGHT = [
    ("Li Si pays Zhang San.", ["Zhang San pays Li Si"]),  # roles swapped, both names present
    ("We will ship in May.", ["we will not ship in May"]),  # negation dropped
    ("The deck is due soon.", ["the deck is due Wednesday"]),  # a vaguer word that is not a date
    ("3 servers were ordered.", ["we ordered 5 servers and 3 racks"]),  # a number on the wrong thing
    ("张三会付钱给李四。", ["李四会付钱给张三"]),
]


@pytest.mark.parametrize(("line", "cited"), ACCEPTED)
def test_supported_lines_pass(line: str, cited: list[str]) -> None:
    assert check_line(line, cited) is None


@pytest.mark.parametrize(("line", "cited", "named"), REJECTED)
def test_drift_is_caught_and_named(line: str, cited: list[str], named: str) -> None:
    reason = check_line(line, cited)
    assert reason is not None
    assert named in reason
    assert "which its cited segments do not hold" in reason


@pytest.mark.parametrize(("line", "cited"), NOT_CAUGHT)
def test_what_a_presence_check_cannot_catch(line: str, cited: list[str]) -> None:
    assert check_line(line, cited) is None


def test_a_line_must_cite_something() -> None:
    assert check_line("The budget is set.", []) == "cites no segment"
    assert check_citations([], {"s_1"}) == "cites no segment"


def test_cited_ids_must_be_the_sections() -> None:
    assert check_citations(["s_1", "s_2"], {"s_1", "s_2", "s_3"}) is None
    reason = check_citations(["s_1", "s_9"], {"s_1", "s_2"})
    assert reason is not None and "s_9" in reason


def test_facts_of_every_cited_segment_count_but_only_those() -> None:
    cited = ["Alice owns the budget", "it is 40,000 dollars"]
    assert check_line("Alice owns the $40,000 budget.", cited) is None
    assert check_line("Alice owns the $40,000 budget.", cited[:1]) is not None


def test_a_segment_is_checked_by_its_text_and_its_raw_text() -> None:
    segment = Segment("s_1", "t", "m", "d", 0, 0.0, 2.0, "we ship Friday", "A", "en", "um we ship on Friday uh",
                      None, None, "2025-01-01T00:00:00Z", 0, "0" * 64, "f" * 64)
    assert check_line("Ship on Friday.", [segment]) is None
    assert check_line("Ship on Monday.", [segment]) is not None


def test_full_width_digits_are_digits() -> None:
    assert check_line("预算４００元。", ["预算400元"]) is None
