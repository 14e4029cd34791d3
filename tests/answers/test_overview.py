"""Overview answers from a digest (pure: no server): what is asked for, whose todos, about what, citing
the items' segments; and no answer (so retrieval takes over) when the digest holds nothing for it."""

from __future__ import annotations

import pytest

from meetmem.answers.answer_types import question_kind
from meetmem.answers.overview import overview_answer, overview_focus
from meetmem.store.records import LedgerItem, MeetingDigest, Segment, Source, SummaryLine


def seg(i: int, text: str, speaker: str = "Alice") -> Segment:
    return Segment(f"s{i}", "t", "m", "d", i, i * 10.0, i * 10.0 + 5, text, speaker, "en", None, None, None, "", i,
                   "", "")


SEGMENTS = {s.segment_id: s for s in [
    seg(0, "So we decided to go with the aluminium casing."),
    seg(1, "Bob will send the revised quote to the supplier by March 12th."),
    seg(2, "Dana, can you draft the launch press release by April 2nd?"),
    seg(3, "On pricing, let's go with $349 for the base model."),
    seg(4, "Actually let's go with $329 for the base model."),
    seg(5, "Who signs off on the budget is still open."),
]}


def item(kind: str, i: int, **fields: object) -> LedgerItem:
    s = SEGMENTS[f"s{i}"]
    return LedgerItem(f"{kind[:2]}{i}", kind, s.text, Source.of([s]), **fields)  # type: ignore[arg-type]


LEDGER = (
    item("decision", 0),
    item("todo", 1, owner="Bob", task="send the revised quote to the supplier", due="March 12th",
         due_date="2027-03-12"),
    item("todo", 2, owner="Dana", task="draft the launch press release", due="April 2nd"),
    item("decision", 3, status="superseded", superseded_by="de4"),
    item("decision", 4),
    item("open_question", 5),
)
DIGEST = MeetingDigest("m", (), (SummaryLine(SEGMENTS["s0"].text, Source.of([SEGMENTS["s0"]])),), LEDGER, 5, True)


def lookup(ids: list[str]) -> dict[str, Segment]:
    return {i: SEGMENTS[i] for i in ids if i in SEGMENTS}


@pytest.mark.parametrize(("question", "focus"), [
    ("What did we decide?", ["decision"]),
    ("What's pending?", ["todo"]),
    ("Any open questions?", ["open_question"]),
    ("What did we decide and what are the action items?", ["decision", "todo"]),
    ("Give me a summary", []),
    ("我们做了哪些决定？", ["decision"]),
    ("有哪些待办？", ["todo"]),
])
def test_focus(question: str, focus: list[str]) -> None:
    assert question_kind(question) == "overview"
    assert overview_focus(question) == focus


def test_decisions_are_the_current_ones_and_say_what_they_changed() -> None:
    text, cited, blocks = overview_answer("What did we decide?", DIGEST, lookup)  # type: ignore[misc]
    assert "$329" in text and "$349" not in text
    assert "changed what was said at 00:30" in text
    assert [s.segment_id for s in cited] == ["s0", "s4"]
    assert blocks[0][0].startswith("ledger: decisions") and blocks[0][2] == "pinned"


def test_a_named_owner_gets_their_own_todos() -> None:
    text, cited, _ = overview_answer("What does Dana owe?", DIGEST, lookup)  # type: ignore[misc]
    assert "press release" in text and "Bob" not in text and [s.segment_id for s in cited] == ["s2"]


def test_a_subject_narrows_the_items() -> None:
    text, _, _ = overview_answer("What did we decide about the casing?", DIGEST, lookup)  # type: ignore[misc]
    assert "aluminium casing" in text and "$329" not in text


def test_the_gist_is_l2_then_decisions() -> None:
    text, cited, _ = overview_answer("What was this meeting about?", DIGEST, lookup)  # type: ignore[misc]
    assert text.startswith("In short:") and "Decisions:" in text and cited[0].segment_id == "s0"


@pytest.mark.parametrize("digest", [None, MeetingDigest("m", (), (), (), -1, False)])
def test_nothing_to_answer_from_falls_back(digest: MeetingDigest | None) -> None:
    assert overview_answer("What did we decide?", digest, lookup) is None
    assert overview_answer("Summarize the meeting", digest, lookup) is None
