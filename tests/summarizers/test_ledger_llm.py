"""The LLM ledger pass over real loopback HTTP: the real client against a scripted chat server.

Every item the model proposes is vetted against the segments it cites; the rules' ledger is never changed,
only added to.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes.chat_server import ErrorReply, ScriptedChatServer

from meetmem.store.log import TranscriptLog
from meetmem.store.records import LedgerItem, Segment, SegmentInput, Source
from meetmem.summarizers.backends import make_digest_parts
from meetmem.summarizers.digest import MeetingDigester
from meetmem.summarizers.errors import SummarizerError
from meetmem.summarizers.extractive import ExtractiveSummarizer
from meetmem.summarizers.ledger import IncrementalLedger, extract_ledger, item_id
from meetmem.summarizers.ledger_learned import LearnedLedger
from meetmem.summarizers.ledger_llm import LEDGER_INSTRUCTIONS, LLMLedger
from meetmem.summarizers.llm.chat import OpenAIChat
from meetmem.summarizers.summary_llm import LLMSummarizer

MEETING_DATE = dt.date(2025, 3, 3)  # a Monday

EN_TEXTS = [
    "Okay so the vendor quote came in at forty thousand dollars for the whole year.",
    "The vendor contract goes to legal by Wednesday, and Zhang San sends it.",
    "We still need to decide whether the pilot runs in March or April.",
    "Carol, could you look into the hosting costs? Sure, I can get that done by Friday.",
    "Let's go with the annual plan then.",
]
ZH_TEXTS = [
    "好，我们看一下供应商的报价，一年是两万元。",
    "合同由张三负责，周五之前发给法务。",
    "试点是三月还是四月还没定。",
    "李四你看一下服务器的费用，下周三给大家。",
    "那就这么定了，用年付方案。",
]


def make_segments(texts: Sequence[str], *, prefix: str = "s", speakers: Sequence[str] = ("Alice", "Bob")
                  ) -> list[Segment]:
    """Segments 30 s apart from 0:05, speakers taking turns."""
    return [
        Segment(f"{prefix}_{i}", "t", "m1", "dev", i, 30.0 * i + 5, 30.0 * i + 20, text,
                speakers[i % len(speakers)], None, None, None, None, "2025-03-03T09:00:00Z", i, "0" * 64, "f" * 64)
        for i, text in enumerate(texts)
    ]


def item(kind: str, text: str, cite: Any, **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "text": text, "owner": None, "task": None, "due": None, "what": None, "value": None,
            "cite": cite, **fields}


def reply(*items: dict[str, Any]) -> str:
    return json.dumps({"items": list(items)}, ensure_ascii=False)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def run() -> Iterator[Any]:
    """Run the LLM pass over `texts` against a scripted server; returns (items, notes, rules, server, segments)."""
    opened: list[OpenAIChat] = []

    def go(script: Any, texts: Sequence[str] = EN_TEXTS, **options: Any) -> tuple[Any, ...]:
        segments = make_segments(texts)
        rules = extract_ledger(segments, meeting_date=MEETING_DATE)
        with ScriptedChatServer(script) as server:
            chat = OpenAIChat(server.url, "test-model")
            opened.append(chat)
            items, notes = LLMLedger(chat, **options).extract(segments, meeting_date=MEETING_DATE, rules=rules)
        return items, notes, rules, server, segments

    yield go
    for chat in opened:
        chat.close()


def llm_items(items: Sequence[LedgerItem]) -> list[LedgerItem]:
    return [it for it in items if it.origin == "llm"]


def rules_kept(items: Sequence[LedgerItem], rules: Sequence[LedgerItem]) -> bool:
    """The rules' items are all there, unchanged and in their order."""
    return [it for it in items if it.origin == "rules"] == list(rules)


# -- kept ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("texts", "draft", "owner", "due", "due_date", "segment"), [
    (EN_TEXTS, item("todo", "Zhang San sends the vendor contract to legal by Wednesday.", [2], owner="Zhang San",
                    task="send the vendor contract to legal", due="Wednesday", due_date="2031-01-01"),
     "Zhang San", "Wednesday", "2025-03-05", 1),
    (ZH_TEXTS, item("todo", "李四看一下服务器的费用，下周三给大家。", [4], owner="李四", task="看一下服务器的费用",
                    due="下周三", due_date="2031-01-01"),
     "李四", "下周三", "2025-03-12", 3),
], ids=["en", "zh"])
def test_valid_todo_is_kept_with_due_date_resolved_by_us(
        run: Any, texts: list[str], draft: dict[str, Any], owner: str, due: str, due_date: str, segment: int) -> None:
    items, notes, rules, server, segments = run([reply(draft)], texts)
    assert notes == []
    assert rules_kept(items, rules)
    [kept] = llm_items(items)
    cited = segments[segment]
    assert (kept.kind, kept.owner, kept.due, kept.status) == ("todo", owner, due, "current")
    assert kept.due_date == due_date  # resolved from "due"; the model's own due_date is ignored
    assert kept.source == Source(cited.start, cited.end, (cited.segment_id,))
    assert kept.id == item_id("todo", (cited.segment_id,), draft["text"])
    assert kept.public()["origin"] == "llm"
    assert [it.source.start for it in items] == sorted(it.source.start for it in items)
    assert len(server.requests) == 1


def test_the_speaker_may_own_a_todo_and_a_fact_keeps_what_and_value(run: Any) -> None:
    texts = ["Fine, the hosting costs are on me, done by Friday.", "The new office has twelve desks and one kitchen."]
    script = [reply(
        item("todo", "Alice does the hosting costs by Friday.", [1], owner="Alice", task="the hosting costs",
             due="by Friday"),
        item("fact", "The new office has twelve desks.", [2], what="desks", value=12),
        item("todo", "The hosting costs are done by Friday.", [1], owner="Bob", task="the hosting costs"),
    )]
    items, notes, rules, _, segments = run(script, texts)
    assert rules == [] and len(notes) == 1
    assert "item 3" in notes[0] and "owner states 'Bob'" in notes[0]
    todo, fact = items
    assert (todo.owner, todo.task, todo.due, todo.due_date) == ("Alice", "the hosting costs", "by Friday", "2025-03-07")
    assert (fact.kind, fact.what, fact.value, fact.owner, fact.due) == ("fact", "desks", "12", None, None)
    assert fact.id == item_id("fact", ("s_1",), "The new office has twelve desks.\n12")


def test_code_fence_around_the_json_is_tolerated(run: Any) -> None:
    fenced = "Here you go:\n```json\n" + reply(item("decision", "Zhang San owns the vendor contract.", [2])) + "\n```"
    items, notes, rules, _, _ = run([fenced])
    assert notes == [] and rules_kept(items, rules)
    assert [it.text for it in llm_items(items)] == ["Zhang San owns the vendor contract."]


# -- rejected, each with a note --------------------------------------------------------------------------


@pytest.mark.parametrize(("texts", "draft", "words"), [
    (EN_TEXTS, item("fact", "The vendor quote is fifty thousand dollars a year.", [1], what="vendor quote",
                    value="fifty thousand dollars"), ["states 'fifty thousand'"]),
    (EN_TEXTS, item("todo", "Zhang San sends the contract to legal.", [2], owner="Zhang San", task="send it",
                    due="Thursday"), ["due states 'Thursday'"]),
    (EN_TEXTS, item("todo", "Zhang San sends the contract to legal.", [2], owner="Dmitri", task="send it"),
     ["owner states 'Dmitri'"]),
    (EN_TEXTS, item("todo", "Alice owns the contract.", [2], owner="Alice"), ["rejected: states 'Alice'"]),
    (EN_TEXTS, item("decision", "Zhang San owns the forty thousand dollar contract.", [2]),
     ["states 'forty thousand'"]),  # the number is in segment 1, which it does not cite
    (EN_TEXTS, item("todo", "The contract goes to legal by Wednesday.", [2], owner="legal",
                    task="send the contract", due="Wednesday"), ["names owner 'legal', who is neither a name"]),
    (EN_TEXTS, item("todo", "The contract goes to legal by Wednesday.", [2], owner="Alice",
                    task="send the contract", due="Wednesday"), ["owner states 'Alice'"]),
    (ZH_TEXTS, item("fact", "供应商报价一年三万元。", [1], what="报价", value="三万元"), ["states '三万'"]),
    (ZH_TEXTS, item("todo", "张三负责合同，周四之前发给法务。", [2], owner="张三", task="发给法务", due="周四之前"),
     ["states '周四'"]),
    (ZH_TEXTS, item("todo", "王五负责合同。", [2], owner="王五", task="负责合同"), ["states '王五'"]),
], ids=["en-number", "en-date", "en-owner-name", "en-name-in-text", "en-other-segment", "en-owner-not-a-name",
        "en-owner-not-the-speaker",
        "zh-number", "zh-date", "zh-name"])
def test_a_claim_the_cited_segments_do_not_hold_is_rejected_with_a_note(
        run: Any, texts: list[str], draft: dict[str, Any], words: list[str], caplog: pytest.LogCaptureFixture) -> None:
    good = item("decision", "年付方案定了。" if texts is ZH_TEXTS else "The annual plan was chosen.", [5])
    with caplog.at_level(logging.WARNING, logger="meetmem.summarizers.ledger_llm"):
        items, notes, rules, _, _ = run([reply(draft, good)], texts)
    assert len(notes) == 1, notes
    assert notes[0].startswith("llm ledger item 1 of chunk 00:05-02:20 rejected: ")
    for word in words:
        assert word in notes[0], notes[0]
    assert any(notes[0] in record.getMessage() for record in caplog.records)
    assert rules_kept(items, rules)
    # the rejected item is gone; the good one of the same reply is judged on its own (here a duplicate)
    assert all(it.text != draft["text"] for it in items)


@pytest.mark.parametrize(("cite", "words"), [
    ([9], "cites [9] but it was given 5 numbered segments"),
    ([0], "cites [0] but it was given 5 numbered segments"),
    ([], "cites no segment"),
    (["two"], "cites 'two', not a segment number"),
])
def test_cite_out_of_range_or_missing_is_rejected(run: Any, cite: Any, words: str) -> None:
    items, notes, rules, _, _ = run([reply(item("decision", "Zhang San owns the vendor contract.", cite))])
    assert items == rules
    assert len(notes) == 1 and words in notes[0], notes


def test_cite_beyond_the_chunk_is_rejected_even_when_the_meeting_has_that_segment(run: Any) -> None:
    # two segments a chunk: segment [3] of the meeting is [1] of the second chunk, never [3] of the first
    def script(request: Any) -> str:
        return reply(item("decision", "We go with the annual plan.", [3]))

    items, notes, rules, server, _ = run(script, chunk_words=30)
    assert len(server.requests) == 3
    assert items == rules
    assert [n.split(" rejected: ")[1] for n in notes] == [
        "cites [3] but it was given 2 numbered segments",
        "cites [3] but it was given 2 numbered segments",
        "cites [3] but it was given 1 numbered segments",
    ]


@pytest.mark.parametrize(("draft", "words"), [
    (item("glossary", "Zhang San", [2]), "has kind 'glossary'"),
    (item("todo", "", [2]), "has no text"),
    (item("todo", "Zhang San sends it.", [2], owner=["Zhang San"]), "has owner [\"Zhang San\"], not a string"),
    ("Zhang San sends it", "not an object"),
])
def test_malformed_items_are_rejected_one_by_one(run: Any, draft: Any, words: str) -> None:
    good = item("todo", "Zhang San sends the vendor contract to legal by Wednesday.", [2], owner="Zhang San",
                task="send the vendor contract to legal", due="Wednesday")
    items, notes, rules, _, _ = run([reply(draft, good)])
    assert len(notes) == 1 and words in notes[0], notes
    assert [it.text for it in llm_items(items)] == [good["text"]]
    assert rules_kept(items, rules)


@pytest.mark.parametrize("answer", ["Sorry, I cannot help with that.", '{"lines": []}', "{not json}"])
def test_a_reply_that_is_not_the_asked_json_drops_that_chunk_with_a_note(run: Any, answer: str) -> None:
    items, notes, rules, _, _ = run([answer])
    assert items == rules
    assert len(notes) == 1 and notes[0].startswith("llm ledger chunk 00:05-02:20 rejected: the reply"), notes


# -- merged with the rules -------------------------------------------------------------------------------


@pytest.mark.parametrize(("texts", "draft"), [
    (EN_TEXTS, item("todo", "Carol looks into the hosting costs by Friday.", [4], owner="Carol",
                    task="look into the hosting costs", due="Friday")),
    (ZH_TEXTS, item("todo", "张三负责合同，周五之前发给法务。", [2], owner="张三", task="发给法务", due="周五之前")),
    (ZH_TEXTS, item("fact", "供应商报价一年两万元。", [1, 3], what="报价", value="两万元")),
], ids=["en-todo", "zh-todo", "zh-fact-overlapping-cite"])
def test_a_duplicate_of_a_rules_item_is_not_added(run: Any, texts: list[str], draft: dict[str, Any]) -> None:
    rules = extract_ledger(make_segments(texts), meeting_date=MEETING_DATE)
    assert any(it.kind == draft["kind"] for it in rules)
    items, notes, rules, _, _ = run([reply(draft, draft)], texts)
    assert notes == []
    assert items == rules


def test_rules_order_and_supersession_survive_the_merge(run: Any) -> None:
    texts = ["I'll send the review notes by Wednesday.", "The printer in room four keeps jamming again.",
             "The review notes moved to Friday.", "Who orders the new toner?"]
    script = [reply(item("fact", "The printer in room four keeps jamming.", [2], what="printer in room four",
                         value="keeps jamming"),
                    item("decision", "The review notes now go out on Friday.", [3]))]
    items, notes, rules, _, _ = run(script, texts)
    assert notes == []
    old, new = [it for it in rules if it.kind == "todo"]
    assert (old.status, old.superseded_by, new.status) == ("superseded", new.id, "current")
    assert rules_kept(items, rules)
    added = llm_items(items)
    assert [it.kind for it in added] == ["fact", "decision"]
    # each added item sits after every rules item that starts before it
    for it in added:
        at = items.index(it)
        assert all(r.source.start <= it.source.start for r in items[:at] if r.origin == "rules")
        assert all(r.source.start > it.source.start for r in items[at:] if r.origin == "rules")


# -- chat failures ---------------------------------------------------------------------------------------


def test_a_chat_error_leaves_the_rules_ledger(run: Any, caplog: pytest.LogCaptureFixture) -> None:
    good = reply(item("decision", "We go with the annual plan.", [1]))
    with caplog.at_level(logging.WARNING, logger="meetmem.summarizers.ledger_llm"):
        items, notes, rules, server, _ = run([good, ErrorReply(503, "overloaded")], chunk_words=30)
    assert items == rules
    assert len(notes) == 1 and notes[0].startswith("llm ledger not used: the llm call failed: "), notes
    assert "503" in notes[0] or "overloaded" in notes[0]
    assert len(server.requests) == 2  # it stops at the first failure
    assert any("keeping the rules' ledger" in record.getMessage() for record in caplog.records)


def test_an_unreachable_server_leaves_the_rules_ledger_through_the_digester_callable() -> None:
    segments = make_segments(ZH_TEXTS)
    with OpenAIChat(f"http://127.0.0.1:{closed_port()}/v1", "test-model", timeout=5) as chat:
        ledger = LLMLedger(chat)
        items = ledger(segments, meeting_date=MEETING_DATE)
    assert items == extract_ledger(segments, meeting_date=MEETING_DATE)
    assert len(ledger.last_notes) == 1 and "cannot connect" in ledger.last_notes[0]


# -- the prompt ------------------------------------------------------------------------------------------


def test_system_message_is_identical_across_chunks_and_calls_and_holds_no_transcript() -> None:
    with ScriptedChatServer(lambda request: reply()) as server, OpenAIChat(server.url, "test-model") as chat:
        ledger = LLMLedger(chat, chunk_words=30)
        en = make_segments(EN_TEXTS)
        zh = make_segments(ZH_TEXTS, prefix="z")
        ledger(en, meeting_date=MEETING_DATE)
        ledger(zh, meeting_date=dt.date(2026, 7, 1))
    requests = [r.json["messages"] for r in server.requests]
    assert len(requests) >= 4
    for messages in requests:
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[0]["content"] == LEDGER_INSTRUCTIONS
    system = requests[0][0]["content"]
    assert not any(s.text[:12] in system for s in [*en, *zh])
    for date in (MEETING_DATE, dt.date(2026, 7, 1), dt.date.today()):
        assert date.isoformat() not in system and str(date.year) not in system
    # each segment appears exactly once, in the last message of one request, numbered from [1] per chunk
    users = [messages[-1]["content"] for messages in requests]
    for segment in [*en, *zh]:
        assert sum(segment.text in user for user in users) == 1
    assert all(user.startswith("[1] (") for user in users)
    assert users[0].splitlines()[0] == f"[1] (00:05, Alice) {EN_TEXTS[0]}"


def test_chunks_hold_whole_consecutive_segments_within_the_word_budget() -> None:
    with ScriptedChatServer(lambda request: reply()) as server, OpenAIChat(server.url, "test-model") as chat:
        segments = make_segments(EN_TEXTS * 4 + ZH_TEXTS * 4)
        LLMLedger(chat, chunk_words=60)(segments, meeting_date=MEETING_DATE)
    users = [r.json["messages"][-1]["content"] for r in server.requests]
    lines = [line for user in users for line in user.splitlines()]
    assert [line.split(") ", 1)[1] for line in lines] == [s.text for s in segments]
    for user in users:
        words = sum(len(line.split(") ", 1)[1].split()) if line.isascii() else 0 for line in user.splitlines())
        assert words <= 60


def test_a_live_meeting_asks_again_only_for_its_last_chunk() -> None:
    with ScriptedChatServer(lambda request: reply()) as server, OpenAIChat(server.url, "test-model") as chat:
        ledger = LLMLedger(chat, chunk_words=30)
        segments = make_segments(EN_TEXTS)
        ledger(segments[:4], meeting_date=MEETING_DATE)
        first = len(server.requests)
        ledger(segments[:4], meeting_date=MEETING_DATE)
        assert len(server.requests) == first  # nothing changed: nothing asked
        ledger(segments, meeting_date=MEETING_DATE)
        assert len(server.requests) == first + 1


# -- wiring ----------------------------------------------------------------------------------------------


def test_make_digest_parts_pairs_the_ledger_with_the_summarizer() -> None:
    summarizer, ledger = make_digest_parts("extractive")
    assert isinstance(summarizer, ExtractiveSummarizer) and isinstance(ledger, LearnedLedger)
    assert ledger.mode == "combined"
    summarizer, ledger = make_digest_parts("extractive", ledger="rules")
    assert isinstance(ledger, IncrementalLedger)
    with pytest.raises(SummarizerError, match="unknown ledger 'neural'"):
        make_digest_parts("extractive", ledger="neural")
    summarizer, ledger = make_digest_parts("llm", llm_url="http://127.0.0.1:9/v1", llm_model="m")
    assert isinstance(summarizer, LLMSummarizer) and isinstance(ledger, LLMLedger)
    assert ledger.chat is summarizer.chat


def test_the_digester_stores_the_llm_items(tmp_path: Path) -> None:
    def script(request: Any) -> str:
        system = request["messages"][0]["content"]
        if system != LEDGER_INSTRUCTIONS:
            return json.dumps({"lines": []})  # the summarizer's requests: rejected, extractive fallback
        return reply(item("todo", "Zhang San sends the vendor contract to legal by Wednesday.", [2],
                          owner="Zhang San", task="send the vendor contract to legal", due="Wednesday"))

    inputs = [SegmentInput(i, 30.0 * i + 5, 30.0 * i + 20, text, "Alice") for i, text in enumerate(EN_TEXTS)]
    with ScriptedChatServer(script) as server, TranscriptLog(tmp_path / "log.db") as log:
        summarizer, ledger = make_digest_parts("llm", llm_url=server.url, llm_model="test-model")
        log.append("m", "dev", inputs)
        log.close_meeting("m")
        digest = MeetingDigester(log, None, summarizer, extract_ledger=ledger).update("m")
        ledger.chat.close()
    todos = digest.ledger_public()["todos"]
    added = [t for t in todos if t["origin"] == "llm"]
    assert len(added) == 1 and added[0]["owner"] == "Zhang San" and added[0]["due"] == "Wednesday"
    stored = {s.segment_id for s in log_segments(tmp_path)}
    assert set(added[0]["source"]["segment_ids"]) <= stored


def log_segments(tmp_path: Path) -> list[Segment]:
    with TranscriptLog(tmp_path / "log.db") as log:
        return log.segments("m")
