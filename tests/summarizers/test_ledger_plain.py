"""Plain statements belong in the ledger: ownership, recurring duties, negative decisions, event facts (en, zh)."""

from __future__ import annotations

import datetime as dt

import pytest

from meetmem.store.records import LedgerItem, Segment
from meetmem.summarizers.ledger import extract_ledger

MONDAY = dt.date(2027, 3, 1)


def _items(text: str, kind: str, speaker: str = "Ana") -> list[LedgerItem]:
    segment = Segment(segment_id="s0", tenant="t", meeting_id="m", device_id="d", seq=0, start=0.0, end=4.0,
                      text=text, speaker=speaker, lang=None, raw_text=None, confidence=None, supersedes=None,
                      received_at="", chain_pos=0, prev_hash="", hash="")
    return [i for i in extract_ledger([segment], meeting_date=MONDAY) if i.kind == kind]


@pytest.mark.parametrize(("text", "owner", "task", "due", "due_date"), [
    ("Farida owns the vendor onboarding and will send a status note every Thursday.", "Farida",
     "owns the vendor onboarding and will send a status note", "every Thursday", None),
    ("Marco is on the supplier contract.", "Marco", "is on the supplier contract", None, None),
    ("Marco is on it.", "Marco", "is on it", None, None),
    ("Lena takes care of the booth logistics.", "Lena", "takes care of the booth logistics", None, None),
    ("Priya is responsible for the test plan by Friday.", "Priya", "is responsible for the test plan", "Friday",
     "2027-03-05"),
    ("Every Monday Tom sends the weekly report.", "Tom", "sends the weekly report", "Every Monday", None),
    ("I'm taking care of the travel bookings.", "Ana", "taking care of the travel bookings", None, None),
    ("In the meantime, the Industrial Designer over here is gonna work on the look and feel design,",
     "the Industrial Designer", "work on the look and feel design", None, None),
    ("小李负责供应商对接，每周一发周报。", "小李", "供应商对接，每周一发周报", "每周一", None),
    ("每周四小李负责发周报。", "小李", "发周报", "每周四", None),
])
def test_ownership_and_recurring_duties_are_todos(text: str, owner: str, task: str, due: str | None,
                                                  due_date: str | None) -> None:
    todos = _items(text, "todo")
    assert [(t.owner, t.task, t.due, t.due_date) for t in todos] == [(owner, task, due, due_date)]


@pytest.mark.parametrize("text", [
    "We're not going with the matte coating, it shows fingerprints.",
    "We won't be using the gold trim after all.",
    "and we're incorporating voice recognition.",
    "So the case will be double-curved and rubber.",
    "我们决定外壳颜色定为深灰色。",
    "我们不用磨砂涂层了，容易留指纹。",
])
def test_plain_decisions(text: str) -> None:
    assert len(_items(text, "decision")) == 1


@pytest.mark.parametrize("text", [
    "Marco is on the phone right now.",
    "Should the case be rubber?",
    "If we're not going with rubber, what then?",
    "我们是否决定外壳颜色定为深灰色？",
])
def test_what_is_not_a_plain_statement(text: str) -> None:
    assert not _items(text, "decision") and not _items(text, "todo")


@pytest.mark.parametrize(("text", "what", "value"), [
    ("The pilot kicks off in Bilbao on May 5th with thirty users.", "The pilot", "May 5th"),
    ("试点五月五号在上海启动，三十个用户。", "启动", "五月五号"),
])
def test_event_facts(text: str, what: str, value: str) -> None:
    assert (what, value) in [(f.what, f.value) for f in _items(text, "fact")]
