"""The rule-based ledger: table-driven English and Chinese cases, supersession chains, invariants, negatives."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest

from meetmem.store.records import LEDGER_KINDS, LedgerItem, Segment
from meetmem.summarizers.ledger import extract_ledger, hotwords

MONDAY = dt.date(2026, 11, 30)


def _segments(lines: Sequence[tuple[str | None, str]]) -> list[Segment]:
    return [Segment(segment_id=f"s{i:03d}", tenant="t", meeting_id="m", device_id="d", seq=i, start=4.0 * i,
                    end=4.0 * i + 3.5, text=text, speaker=speaker, lang=None, raw_text=None, confidence=None,
                    supersedes=None, received_at="", chain_pos=i, prev_hash="", hash="")
            for i, (speaker, text) in enumerate(lines)]


def _ledger(lines: Sequence[tuple[str | None, str]]) -> list[LedgerItem]:
    return extract_ledger(_segments(lines), meeting_date=MONDAY)


def _only(items: list[LedgerItem], kind: str) -> list[LedgerItem]:
    return [it for it in items if it.kind == kind]


DECISIONS = [
    "We decided to go with the aluminium casing.",
    "OK, we agreed on the annual plan for the pilot.",
    "Let's go with the cheaper vendor for the batteries.",
    "We'll go with rubber for the case material.",
    "The decision is to ship the beta without the app.",
    "We're going with a two-week sprint from now on.",
    "我们决定用阿里云。",
    "好，就这么定了。",
    "确定用第二套方案。",
    "最终方案是先做安卓版。",
]


@pytest.mark.parametrize("text", DECISIONS)
def test_decisions(text: str) -> None:
    items = _only(_ledger([("A", text)]), "decision")
    assert [it.text for it in items] == [text]
    assert items[0].source.segment_ids == ("s000",)


TODOS = [
    # (speaker, text, owner, task, due, due_date)
    ("Alice", "Priya will send the deck to Bob by Friday.", "Priya", "send the deck to Bob", "Friday", "2026-12-04"),
    ("Bob", "I'll review the contract by March 12th.", "Bob", "review the contract", "March 12th", "2027-03-12"),
    ("Carol", "Dana, can you book the room for next Tuesday?", "Dana", "book the room", "next Tuesday",
     "2026-12-08"),
    ("Carol", "Can you update the budget sheet by the 15th?", None, "update the budget sheet", "the 15th",
     "2026-12-15"),
    ("Ed", "Action item: finish the security review by end of the month.", None,
     "finish the security review", "end of the month", "2026-11-30"),
    ("Ed", "I'm going to email the vendor tomorrow.", "Ed", "email the vendor", "tomorrow", "2026-12-01"),
    ("Ed", "And you'll be working on the user interface design.", None, "be working on the user interface design",
     None, None),
    ("Ana", "Okay Rahul, please circulate the battery risk list by July 22nd.", "Rahul",
     "circulate the battery risk list", "July 22nd", "2027-07-22"),
    ("Ana", "Before I forget, Mateo will redo the main board packing list by July 31st.", "Mateo",
     "redo the main board packing list", "July 31st", "2027-07-31"),
    ("王", "小王下周五之前把报告发给大家。", "小王", "把报告发给大家", "下周五", "2026-12-11"),
    ("王", "由老李负责联系供应商。", "老李", "联系供应商", None, None),
    ("李", "我来整理会议纪要，明天发出来。", "李", "整理会议纪要，明天发出来", "明天", "2026-12-01"),
    ("李", "小张，你来写测试用例。", "小张", "写测试用例", None, None),
    ("李", "接口文档3月12日之前完成。", None, "接口文档3月12日之前完成", "3月12日", "2027-03-12"),
]


@pytest.mark.parametrize(("speaker", "text", "owner", "task", "due", "due_date"), TODOS, ids=[t[1] for t in TODOS])
def test_todos(speaker: str, text: str, owner: str | None, task: str, due: str | None, due_date: str | None) -> None:
    items = _only(_ledger([(speaker, text)]), "todo")
    assert len(items) == 1, items
    item = items[0]
    assert (item.owner, item.task, item.due, item.due_date) == (owner, task, due, due_date)
    assert item.text == text


OPEN_QUESTIONS = [
    "We still need to figure out the pricing.",
    "The venue is still TBD.",
    "That's an open question for legal.",
    "We haven't decided on the vendor yet.",
    "价格还不确定。",
    "上线时间待定。",
    "供应商还没定。",
]


@pytest.mark.parametrize("text", OPEN_QUESTIONS)
def test_open_questions(text: str) -> None:
    assert [it.text for it in _only(_ledger([("A", text)]), "open_question")] == [text]


@pytest.mark.parametrize(("question", "reply"), [
    ("Who is going to talk to legal about the license?", "I don't know."),
    ("谁来负责跟客户沟通？", "我也不清楚。"),
])
def test_an_unanswered_question_is_open_and_cites_the_non_answer(question: str, reply: str) -> None:
    items = _only(_ledger([("A", question), ("B", reply)]), "open_question")
    assert [(it.text, it.source.segment_ids) for it in items] == [(question, ("s000", "s001"))]


def test_an_answered_question_is_not_open() -> None:
    lines = [("A", "Who is going to talk to legal about the license?"), ("B", "Me, I know their counsel.")]
    assert _only(_ledger(lines), "open_question") == []


FACTS = [
    ("The budget is $40,000 for the pilot.", "The budget", "$40,000"),
    ("Our price is twenty five Euros per unit.", "Our price", "twenty five Euros"),
    ("The launch is on March 3rd.", "The launch", "March 3rd"),
    ("The review is on Friday at 10am.", "The review", "Friday at 10am"),
    ("预算是五万元。", "预算", "五万元"),
    ("首批的产量是200台。", "首批的产量", "200台"),
    ("发布会定在下周五下午3点。", "发布", "下周五下午3点"),
]


@pytest.mark.parametrize(("text", "what", "value"), FACTS)
def test_facts(text: str, what: str, value: str) -> None:
    facts = _only(_ledger([("A", text)]), "fact")
    assert [(f.what, f.value) for f in facts] == [(what, value)]


def test_glossary_and_hotwords() -> None:
    lines = [("Alice", "Project Falcon uses the TS-204 sensor from the API team."),
             ("Bob", "Thanks Priya, I'll ask Dana about it."),
             ("王", "小王说《用户手册》下周发，用的是Kubernetes。")]
    items = _ledger(lines)
    glossary = {(it.text, it.what) for it in _only(items, "glossary")}
    assert {("Falcon", "product"), ("TS-204", "product"), ("API", "term"), ("Priya", "person"),
            ("Dana", "person"), ("小王", "person"), ("用户手册", "product"), ("Kubernetes", "term")} <= glossary
    words = hotwords(items)
    assert len(words) == len(set(words)) and "Falcon" in words and "小王" in words


# -- supersession -----------------------------------------------------------------------------------------------
def _chain(items: list[LedgerItem], kind: str) -> list[tuple[str, str, str | None]]:
    return [(it.text, it.status, it.superseded_by) for it in _only(items, kind)]


def test_owner_change_supersedes_the_todo() -> None:
    items = _ledger([("Alice", "Bob will draft the press release by Friday."), ("Carol", "Actually Priya takes it.")])
    old, new = _only(items, "todo")
    assert (old.status, old.superseded_by) == ("superseded", new.id)
    assert (new.status, new.owner, new.task, new.due) == ("current", "Priya", "draft the press release", "Friday")
    assert new.source.segment_ids == ("s000", "s001")


def test_date_change_supersedes_the_todo_and_a_second_change_chains() -> None:
    items = _ledger([("Alice", "I'll send the review notes by Wednesday."),
                     ("Bob", "The review notes moved to Friday."),
                     ("Alice", "Not Friday, Monday.")])
    todos = _only(items, "todo")
    assert [t.due for t in todos] == ["Wednesday", "Friday", "Monday"]
    assert [t.status for t in todos] == ["superseded", "superseded", "current"]
    assert todos[0].superseded_by == todos[1].id and todos[1].superseded_by == todos[2].id
    assert todos[2].due_date == "2026-12-07"


def test_event_date_change_supersedes_the_fact() -> None:
    items = _ledger([("A", "The launch is on March 3rd."), ("B", "The launch moved to March 10th.")])
    old, new = _only(items, "fact")
    assert (old.value, old.status, old.superseded_by) == ("March 3rd", "superseded", new.id)
    assert (new.what, new.value, new.status) == ("The launch", "March 10th", "current")


def test_a_new_value_for_the_same_thing_supersedes_the_fact() -> None:
    items = _ledger([("A", "The budget is $40,000."), ("B", "OK so the budget is $50,000 now.")])
    assert [(f.value, f.status) for f in _only(items, "fact")] == [("$40,000", "superseded"), ("$50,000", "current")]


def test_chinese_changes() -> None:
    items = _ledger([("王", "小王下周五之前把报告发给大家。"), ("李", "改由老李负责。"),
                     ("王", "评审定在周三下午3点。"), ("李", "评审改到周五。")])
    todos = _only(items, "todo")
    assert [(t.owner, t.status) for t in todos] == [("小王", "superseded"), ("老李", "current")]
    assert todos[1].task == todos[0].task and todos[0].superseded_by == todos[1].id
    facts = _only(items, "fact")
    assert [(f.value, f.status) for f in facts] == [("周三下午3点", "superseded"), ("周五", "current")]


def test_a_changed_decision_is_superseded() -> None:
    items = _ledger([("A", "We decided to go with the aluminium casing."),
                     ("B", "Actually, let's go with the plastic casing instead.")])
    assert _chain(items, "decision") == [
        ("We decided to go with the aluminium casing.", "superseded", _only(items, "decision")[1].id),
        ("Actually, let's go with the plastic casing instead.", "current", None)]


# -- invariants -------------------------------------------------------------------------------------------------
MEETING = [
    ("Alice", "Thanks everyone. Project Falcon is the topic today."),
    ("Bob", "The budget is $40,000 and we need 500 units."),
    ("Alice", "We decided to go with the aluminium casing."),
    ("Carol", "Priya will send the deck to Bob by Friday."),
    ("Bob", "Actually Dana takes it."),
    ("Alice", "The launch is on March 3rd."),
    ("Bob", "The launch moved to March 10th."),
    ("Carol", "We still need to figure out the pricing."),
    ("王", "我们决定用阿里云。预算是五万元。"),
    ("李", "小王下周五之前把报告发给大家。"),
    ("王", "改由老李负责。"),
    ("李", "价格还不确定。"),
]


def _cited_text(item: LedgerItem, by_id: dict[str, Segment]) -> str:
    return " ".join(by_id[sid].text for sid in item.source.segment_ids)


def test_invariants_citations_values_and_order() -> None:
    segments = _segments(MEETING)
    by_id = {s.segment_id: s for s in segments}
    items = extract_ledger(segments, meeting_date=MONDAY)
    assert {it.kind for it in items} == set(LEDGER_KINDS)
    ids = [it.id for it in items]
    assert len(ids) == len(set(ids))
    for item in items:
        assert item.source.segment_ids and set(item.source.segment_ids) <= set(by_id)
        cited = _cited_text(item, by_id)
        assert item.text in cited or all(part in cited for part in item.text.split(" ") if part)
        for value in (item.owner if item.owner not in {s.speaker for s in segments} else None, item.task, item.due,
                      item.value):
            if value is not None:
                assert value in cited, (item, value)
        if item.kind == "glossary":
            assert item.text in cited
        assert item.id.startswith({"decision": "dc_", "todo": "td_", "open_question": "oq_", "fact": "fc_",
                                   "glossary": "gl_"}[item.kind])
        if item.status == "superseded":
            assert item.superseded_by in ids and ids.index(item.superseded_by) > ids.index(item.id)
        else:
            assert item.status == "current" and item.superseded_by is None


def test_rebuild_gives_the_same_items_and_ids() -> None:
    first = extract_ledger(_segments(MEETING), meeting_date=MONDAY)
    second = extract_ledger(_segments(MEETING), meeting_date=MONDAY)
    assert first == second


def test_ids_do_not_depend_on_what_came_before() -> None:
    alone = _only(_ledger(MEETING[2:3]), "decision")[0]
    in_meeting = [it for it in _ledger(MEETING) if it.kind == "decision" and it.text == alone.text][0]
    assert alone.text == in_meeting.text and alone.id != ""  # ids hash the cited segment ids and the text


# -- negatives: ordinary talk gives no decisions, todos or open questions ------------------------------------
NEGATIVES = [
    "I think we could maybe use rubber for the case.",
    "Should we go with the red one?",
    "If we decided to go that way, it would cost more.",
    "You can see the buttons on the slide.",
    "I'll show you the next slide.",
    "You know, remote controls get lost all the time.",
    "What do you think about the colour?",
    "Yeah, that's a good point.",
    "I don't know why people buy those.",
    "Um, so the first thing is the battery.",
    "We talked about the market last time.",
    "People want something fancy.",
    "I'll just go back to the previous slide.",
    "你觉得这个颜色怎么样？",
    "我觉得可以考虑一下塑料外壳。",
    "我们上次讨论过这个问题。",
    "要不要用蓝色？",
    "这个挺好的。",
    "嗯，对，没错。",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_no_false_positives_on_ordinary_talk(text: str) -> None:
    items = _ledger([("A", text), ("B", "Right.")])
    assert [it for it in items if it.kind in ("decision", "todo", "open_question")] == []
