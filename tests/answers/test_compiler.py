"""The context compiler (pure): stable layers first, a reason for every block, stubs for what is left out,
the previous prompt as the next one's exact prefix, and compaction cheapest step first."""

from __future__ import annotations

import pytest

from meetmem.answers.compiler import (
    CompilerOptions,
    Evidence,
    MeetingContext,
    Turn,
    compile_prompt,
    prefix_reuse,
    shrink_options,
)
from meetmem.answers.tokens import count_tokens
from meetmem.store.records import LedgerItem, Section, SectionSummary, Segment, Source, SummaryLine

TEXTS = [
    "Bob will send the revised quote to the supplier by March 12th.",
    "The supplier quoted $4,250 for the tooling.",
    "Dana, can you draft the launch press release by April 2nd?",
    "Then let's go with the TS-204 and order 500 units for the first batch.",
    "我们决定用钢制铰链，由小王负责在下周五之前完成测试。",
] + [f"Filler discussion number {i} about the booth, the colours and the launch party." for i in range(40)]


def seg(i: int) -> Segment:
    return Segment(f"s{i}", "t", "m", "d", i, i * 30.0, i * 30.0 + 20.0, TEXTS[i], "Alice" if i % 2 else "Bob",
                   "en", None, None, None, "", i, "", "")


SEGMENTS = [seg(i) for i in range(len(TEXTS))]


def meeting(*, ledger: tuple[LedgerItem, ...] | None = None, sections: int = 3) -> MeetingContext:
    items = ledger if ledger is not None else (
        LedgerItem("td1", "todo", TEXTS[0], Source.of([SEGMENTS[0]]), owner="Bob",
                   task="send the revised quote to the supplier", due="March 12th", due_date="2027-03-12"),
        LedgerItem("dc1", "decision", TEXTS[3], Source.of([SEGMENTS[3]]), status="superseded", superseded_by="dc2"),
        LedgerItem("dc2", "decision", TEXTS[4], Source.of([SEGMENTS[4]])),
    )
    l1 = tuple(SectionSummary(Section(k, k * 300.0, k * 300.0 + 290, (f"s{k}",), "topic"),
                              (SummaryLine(TEXTS[k], Source.of([SEGMENTS[k]])),)) for k in range(sections))
    return MeetingContext("launch-review", ("Alice", "Bob"), ("en", "zh"), ("TS-204", "Dana"), items,
                          (SummaryLine(TEXTS[3], Source.of([SEGMENTS[3]])),), l1,
                          {s.segment_id: s.chain_pos for s in SEGMENTS})


def evidence(ids: list[int]) -> list[Evidence]:
    return [Evidence(SEGMENTS[i], f"retrieved: bm25 #{n}") for n, i in enumerate(ids, start=1)]


def test_layers_come_stable_first_and_every_block_has_a_reason() -> None:
    prompt, steps = compile_prompt(meeting(), "When is the quote due?", retrieved=evidence([0, 1]),
                                   recent=[Evidence(SEGMENTS[44], "recent")],
                                   history=[Turn("How much is the tooling?", "$4,250 [#1]", tuple(evidence([1])))])
    layers = [b.layer for b in prompt.blocks]
    assert layers == sorted(layers) and layers[0] == 1 and layers[-1] == 5
    assert steps == []
    for block in prompt.blocks:
        assert block.reason
        assert block.tokens == (count_tokens(block.text) if block.text else 0)
    reasons = {b.name: b.reason for b in prompt.blocks}
    assert reasons["ledger item dc1"] == "superseded_by:dc2"
    assert reasons["segment #0 [00:00]"] == "retrieved: bm25 #1" and reasons["segment #44 [22:00]"] == "recent"
    assert prompt.manifest()[-1] == {"block": "question", "tokens": count_tokens("Question: When is the quote due?"),
                                     "reason": "question"}
    # The superseded decision is not in the prompt; the one that replaced it is.
    system = prompt.messages()[0]["content"]
    assert TEXTS[4] in system and TEXTS[3] not in system.split("Summary of the meeting")[0]
    assert prompt.shown[0] == "s0" and prompt.shown[44] == "s44"


def test_the_previous_prompt_is_the_next_prompts_exact_prefix() -> None:
    m = meeting()
    history: list[Turn] = []
    previous = None
    for q, ids in [("When is the quote due?", [0, 1]), ("Who drafts the press release?", [2, 5]),
                   ("Which board?", [3, 6])]:
        prompt, _ = compile_prompt(m, q, retrieved=evidence(ids), history=history)
        messages = prompt.messages()
        if previous is not None:
            flat_prev = [(x["role"], x["content"]) for x in previous]
            flat_now = [(x["role"], x["content"]) for x in messages]
            assert flat_now[: len(flat_prev)] == flat_prev  # byte-identical: a provider's cache reuses it
            assert prefix_reuse(previous, messages) > 0.85
        assert "\n".join(x["content"] for x in messages).count("When is the quote due?") == 1
        previous = messages
        history.append(Turn(q, "answer [#0]", tuple(evidence(ids))))


def test_what_does_not_fit_is_a_stub_naming_its_time_range() -> None:
    opts = CompilerOptions(summary_tokens=60, retrieved_tokens=40)
    prompt, _ = compile_prompt(meeting(sections=3), "q?", retrieved=evidence([0, 1, 2, 3]), options=opts)
    stubs = [b for b in prompt.blocks if b.reason == "budget: dropped, oldest first"]
    assert stubs and "expand(" in stubs[0].text and "omitted" in stubs[0].text
    dropped = [b for b in prompt.blocks if b.reason.startswith("budget: dropped, retrieved")]
    assert dropped and all(b.tokens == 0 and not b.text for b in dropped)
    assert prompt.blocks[-1].name == "question"


def long_session(n: int) -> list[Turn]:
    return [Turn(f"Question {k} about the launch?", f"Answer {k} [#{k}]", tuple(evidence(list(range(5, 30)))))
            for k in range(n)]


@pytest.mark.parametrize(("budget", "expected"), [
    (100_000, []),
    (6_000, ["clear"]),
    (5_500, ["clear", "drop"]),
    (2_000, ["drop"]),
    (1_500, ["shrink", "drop"]),
    (1_000, ["clear", "drop", "summarize"]),
])
def test_a_long_session_is_compacted_cheapest_step_first(budget: int, expected: list[str]) -> None:
    opts = CompilerOptions(budget=budget)
    prompt, steps = compile_prompt(meeting(), "And the booth?", retrieved=evidence([7, 8]), history=long_session(12),
                                   options=opts)
    assert steps == expected
    order = ["shrink", "clear", "drop", "summarize"]
    assert steps == sorted(steps, key=order.index)
    if 1_500 <= budget < 100_000:
        assert prompt.tokens <= budget
    reasons = [b.reason for b in prompt.blocks]
    if "clear" in steps and "summarize" not in steps:
        assert "compacted: cleared, expand() reads it" in reasons
    if "shrink" in steps:
        assert "compacted: head and tail" in reasons
    if "drop" in steps:
        assert "budget: dropped, oldest first" in reasons
        # Never half a round: every question kept has its answer.
        questions = {b.name.split()[1] for b in prompt.blocks if b.name.endswith("question") and b.layer == 3}
        answers = {b.name.split()[1] for b in prompt.blocks if b.name.endswith("answer")}
        assert questions == answers
    if "clear" in steps and "summarize" not in steps:
        # The last rounds keep their evidence while older ones give theirs up.
        last = [b for b in prompt.blocks if b.name == "turn 12 evidence"]
        assert last and last[0].reason != "compacted: cleared, expand() reads it"


def test_compaction_is_seldom_so_most_prompts_extend_the_previous_one() -> None:
    opts = CompilerOptions(budget=3_000)
    history: list[Turn] = []
    previous = None
    extended = moved = 0
    for k in range(30):
        prompt, _ = compile_prompt(meeting(), f"Question {k}?", retrieved=evidence([5 + k % 20, 6 + k % 20]),
                                   history=history, options=opts)
        assert prompt.tokens <= opts.budget
        messages = prompt.messages()
        if previous is not None:
            same = [(m["role"], m["content"]) for m in messages[: len(previous)]] == \
                   [(m["role"], m["content"]) for m in previous]
            extended += same
            moved += not same
        previous = messages
        # A round's evidence is what its prompt showed: a line the history already held is not repeated.
        given = evidence([5 + k % 20, 6 + k % 20])
        shown = {b.name.split()[1] for b in prompt.blocks if b.layer == 4 and b.text}
        history.append(Turn(f"Question {k}?", f"Answer {k} [#{5 + k % 20}]",
                            tuple(e for e in given if f"#{e.segment.chain_pos}" in shown)))
    assert extended >= 3 * moved, (extended, moved)


def test_the_same_session_always_compiles_to_the_same_prompt() -> None:
    history = long_session(12)
    first, _ = compile_prompt(meeting(), "q?", history=history, options=CompilerOptions(budget=3_000))
    again, _ = compile_prompt(meeting(), "q?", history=list(history), options=CompilerOptions(budget=3_000))
    assert first.messages() == again.messages()


def test_when_nothing_else_helps_older_rounds_are_summarized() -> None:
    prompt, steps = compile_prompt(meeting(), "q?", history=long_session(12), options=CompilerOptions(budget=1000))
    assert steps[-1] == "summarize"
    assert any(b.reason == "compacted: summarized older rounds" for b in prompt.blocks)


def test_the_retry_after_prompt_too_long_aims_below_the_stated_limit() -> None:
    small = shrink_options(CompilerOptions(), 2048)
    assert small.budget == int(0.8 * 2048) and small.keep_turns == 1
    assert shrink_options(CompilerOptions(budget=4000), None).budget == 3200


def test_chinese_counts_a_character_as_a_token() -> None:
    assert count_tokens("我们决定用钢制铰链") == 9
    assert count_tokens("we ship on March 3rd") == 5


def test_a_line_the_history_shows_is_not_repeated_in_the_evidence() -> None:
    history = [Turn("When is the quote due?", "March 12th [#0]", tuple(evidence([0, 1])))]
    prompt, _ = compile_prompt(meeting(), "And the tooling?", retrieved=evidence([1, 2]), history=history)
    reasons = {b.name: b.reason for b in prompt.blocks if b.layer == 4}
    assert reasons["segment #1 [00:30]"] == "retrieved: bm25 #1; shown above in the history"
    assert reasons["segment #2 [01:00]"] == "retrieved: bm25 #2"
    last = prompt.messages()[-1]["content"]
    assert TEXTS[1] not in last and TEXTS[2] in last
    history_text = "\n".join(m["content"] for m in prompt.messages()[1:-1])
    assert history_text.count(TEXTS[1]) == 1
    assert prompt.shown[1] == "s1"
