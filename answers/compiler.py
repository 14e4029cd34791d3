"""The context compiler: the prompt for a question, compiled from the log each time, never accumulated.

Most of a model call's cost and latency is its prompt, and a cached prompt prefix costs about a tenth of
a fresh one, but only when it is byte-identical. So the prompt is laid out stable-first, always the same
way from the same inputs:

1. instructions, glossary and the meeting's metadata (no clock time, nothing that changes per question);
2. the ledger, pinned;
3. L2, then the L1 summaries (these only grow between questions);
   then the earlier rounds of the ask session, oldest first (they only grow too, until compacted);
4. the retrieved verbatim segments and the most recent minutes;
5. the question.

Every block comes with its token count and the reason it is there (the manifest, CONTRACT `explain`);
what does not fit is named by a one-line stub with its time range, readable again through the
`expand(start, end)` tool. A long session is compacted cheapest step first (`fit_history`).

Pure: fed records, returns records; the caller reads the log and talks to the model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from meetmem.store.records import LedgerItem, SectionSummary, Segment, SummaryLine
from meetmem.store.timecode import format_time as clock

from .tokens import count_tokens

INSTRUCTIONS = """You answer questions about one meeting from its transcript.
Rules:
- Use only the transcript lines, ledger and summaries given here. Each transcript line starts with a handle like [#12].
- Cite the handle of every line your answer rests on, in square brackets, e.g. "The quote is due March 12th [#12]."
- Quote names, numbers and dates exactly as the transcript has them.
- If the answer is not in what you were given, call expand(start, end) with the seconds of the part of the meeting
  you need (omitted parts are named with their times), or say that the transcript does not say.
- Answer in the language of the question, in at most three sentences."""

LAYER_NAMES = {1: "stable", 2: "ledger", 3: "summaries", 4: "evidence", 5: "question"}
#: Tokens set aside for the question when the history's share is worked out.
QUESTION_ALLOWANCE = 64


@dataclass(frozen=True, slots=True)
class CompilerOptions:
    """The prompt's token budget and how it is shared.

    Args:
        budget: tokens the whole prompt may take (estimated, times `calibration`).
        ledger_tokens: at most this much ledger; the oldest current items go first beyond it.
        summary_tokens: at most this much L2 + L1; the oldest L1s go first beyond it.
        retrieved_tokens: at most this much retrieved text; the lowest ranked go first beyond it.
        recent_tokens: at most this much of the newest segments (a live meeting's last minutes).
        max_block_tokens: an earlier round's evidence larger than this is cut to its head and tail.
        keep_turns: the last rounds kept whole when earlier rounds' evidence is cleared.
        low_water: when the history outgrows its share it is compacted down to this fraction of it, so the
            cut moves seldom and the prompts between moves share their whole prefix.
        calibration: API-reported tokens per estimated token (1.0 until the API has said).
    """

    budget: int = 4000
    ledger_tokens: int = 900
    summary_tokens: int = 700
    retrieved_tokens: int = 700
    recent_tokens: int = 300
    max_block_tokens: int = 400
    keep_turns: int = 2
    low_water: float = 0.3
    calibration: float = 1.0


@dataclass(frozen=True, slots=True)
class Block:
    """One block of a compiled prompt: where it sits, what it says, what it costs and why it is there."""

    layer: int
    name: str
    text: str
    tokens: int
    reason: str
    role: str = "system"

    def public(self) -> dict[str, object]:
        return {"block": self.name, "tokens": self.tokens, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Evidence:
    """One retrieved or recent segment, with why it was chosen (`retrieved: bm25 #2 + dense #1`, `recent`)."""

    segment: Segment
    reason: str


@dataclass(frozen=True, slots=True)
class MeetingContext:
    """What stays the same between questions about a meeting (unless the meeting itself grows)."""

    meeting_id: str
    speakers: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    glossary: tuple[str, ...] = ()
    ledger: tuple[LedgerItem, ...] = ()
    l2: tuple[SummaryLine, ...] = ()
    l1: tuple[SectionSummary, ...] = ()
    handles: Mapping[str, int] = field(default_factory=dict)  # segment id -> chain position (the [#n] handle)


@dataclass(frozen=True, slots=True)
class Turn:
    """An earlier round of the ask session: its question, the evidence its prompt showed (exactly the lines
    shown, so the next prompt repeats that prompt byte for byte), its answer."""

    question: str
    answer: str
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class CompiledPrompt:
    """The blocks in prompt order, and the segments the prompt shows (handle -> segment id)."""

    blocks: tuple[Block, ...]
    shown: Mapping[int, str]
    budget: int

    @property
    def tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    def manifest(self) -> list[dict[str, object]]:
        return [b.public() for b in self.blocks]

    def system_parts(self) -> list[tuple[int, str]]:
        """The system message as (layer, text) parts, so a client can mark cache breakpoints between them."""
        parts: list[tuple[int, str]] = []
        for block in self.blocks:
            if block.role == "system" and block.text:
                if parts and parts[-1][0] == block.layer:
                    parts[-1] = (block.layer, parts[-1][1] + "\n" + block.text)
                else:
                    parts.append((block.layer, block.text))
        return parts

    def messages(self) -> list[dict[str, str]]:
        """Chat messages: one system message (layers 1-3), the session's rounds, then evidence + question."""
        out: list[dict[str, str]] = [{"role": "system", "content": "\n\n".join(t for _, t in self.system_parts())}]
        pending: list[str] = []
        for block in self.blocks:
            if block.role == "system" or not block.text:
                continue
            if block.role == "assistant":
                if pending:
                    out.append({"role": "user", "content": "\n".join(pending)})
                    pending = []
                out.append({"role": "assistant", "content": block.text})
            else:
                pending.append(block.text)
        if pending:
            # Joined the same way whether the round is the current one or an earlier one in the history,
            # so the previous prompt is a byte-exact prefix of the next.
            out.append({"role": "user", "content": "\n".join(pending)})
        return out


# -- rendering --------------------------------------------------------------------------------------------
def segment_line(segment: Segment, handle: int) -> str:
    who = f" {segment.speaker}" if segment.speaker else ""
    return f"[#{handle} {clock(segment.start)}{who}] {segment.text}"


def _tokens(text: str, options: CompilerOptions) -> int:
    return math.ceil(count_tokens(text) * options.calibration) if text else 0


def _ledger_line(item: LedgerItem) -> str:
    when = clock(item.source.start)
    if item.kind == "todo":
        due = f" (due {item.due}" + (f" = {item.due_date}" if item.due_date else "") + ")" if item.due else ""
        return f"- todo [{when}] {item.owner or 'unassigned'}: {item.task or item.text}{due}"
    if item.kind == "fact":
        return f"- fact [{when}] {item.what}: {item.value}"
    return f"- {item.kind.replace('_', ' ')} [{when}] {item.text}"


def _stub(what: str, start: float, end: float) -> str:
    return f"[omitted: {what} {clock(start)}-{clock(end)}; expand({start:.1f}, {end:.1f}) reads it]"


def stable_blocks(meeting: MeetingContext, options: CompilerOptions) -> list[Block]:
    """Layers 1-3: instructions, glossary, metadata; the ledger; L2 and the L1s. The same for every
    question about an unchanged meeting, so their bytes are the cached prefix."""
    blocks = [Block(1, "instructions", INSTRUCTIONS, _tokens(INSTRUCTIONS, options), "pinned")]
    if meeting.glossary:
        text = "Glossary (spell these as written): " + ", ".join(meeting.glossary)
        blocks.append(Block(1, "glossary", text, _tokens(text, options), "pinned"))
    meta = f"Meeting: {meeting.meeting_id}"
    if meeting.speakers:
        meta += f"; speakers: {', '.join(meeting.speakers)}"
    if meeting.languages:
        meta += f"; languages: {', '.join(meeting.languages)}"
    blocks.append(Block(1, "meeting metadata", meta, _tokens(meta, options), "pinned"))
    blocks.extend(_ledger_blocks(meeting.ledger, options))
    blocks.extend(_summary_blocks(meeting, options))
    return blocks


def _ledger_blocks(ledger: Sequence[LedgerItem], options: CompilerOptions) -> list[Block]:
    """The current items, newest kept when the ledger is over its share; superseded ones by reason only."""
    blocks: list[Block] = []
    current = [i for i in ledger if i.status == "current" and i.kind != "glossary"]
    lines = [_ledger_line(i) for i in current]
    costs = [_tokens(line, options) for line in lines]
    header = "Ledger (decisions, todos, open questions, facts; times are when they were said):"
    budget = options.ledger_tokens - _tokens(header, options)
    keep_from = len(lines)
    used = 0
    while keep_from > 0 and used + costs[keep_from - 1] <= budget:
        keep_from -= 1
        used += costs[keep_from]
    if keep_from:
        dropped = current[:keep_from]
        text = _stub(f"{keep_from} older ledger items", dropped[0].source.start, dropped[-1].source.end)
        blocks.append(Block(2, f"ledger: {keep_from} oldest items", text, _tokens(text, options),
                            "budget: dropped, oldest first"))
    if keep_from < len(lines):
        text = header + "\n" + "\n".join(lines[keep_from:])
        blocks.append(Block(2, f"ledger ({len(lines) - keep_from} current items)", text, _tokens(text, options),
                            "pinned"))
    for item in ledger:
        if item.status == "superseded":
            blocks.append(Block(2, f"ledger item {item.id}", "", 0, f"superseded_by:{item.superseded_by}"))
    return blocks


def _summary_blocks(meeting: MeetingContext, options: CompilerOptions) -> list[Block]:
    blocks: list[Block] = []
    budget = options.summary_tokens
    if meeting.l2:
        text = "Summary of the meeting so far:\n" + "\n".join(f"- [{clock(s.source.start)}] {s.text}"
                                                               for s in meeting.l2)
        cost = _tokens(text, options)
        blocks.append(Block(3, "summary L2", text, cost, "pinned"))
        budget -= cost
    rendered = [("\n".join([f"Section {clock(s.section.start)}-{clock(s.section.end)}:"]
                           + [f"- {line.text}" for line in s.lines]), s) for s in meeting.l1]
    costs = [_tokens(text, options) for text, _ in rendered]
    keep_from = len(rendered)
    used = 0
    while keep_from > 0 and used + costs[keep_from - 1] <= budget:
        keep_from -= 1
        used += costs[keep_from]
    if keep_from:
        first, last = rendered[0][1].section, rendered[keep_from - 1][1].section
        text = _stub(f"{keep_from} older section summaries", first.start, last.end)
        blocks.append(Block(3, f"L1: {keep_from} oldest sections", text, _tokens(text, options),
                            "budget: dropped, oldest first"))
    for (text, summary), cost in zip(rendered[keep_from:], costs[keep_from:], strict=True):
        s = summary.section
        blocks.append(Block(3, f"L1 [{clock(s.start)}-{clock(s.end)}]", text, cost, "pinned"))
    return blocks


def evidence_blocks(meeting: MeetingContext, retrieved: Sequence[Evidence], recent: Sequence[Evidence],
                    options: CompilerOptions, *, layer: int = 4, role: str = "user",
                    above: frozenset[int] = frozenset()) -> list[Block]:
    """The retrieved segments (best first, within their share) and the newest ones, as handled lines.
    A segment whose line the session's history already shows word for word (`above`: handles) is not
    repeated: the model reads it there, and the prompt stays shorter and more of it cached."""
    blocks: list[Block] = []
    seen: set[str] = set()
    for pool, share, what in ((retrieved, options.retrieved_tokens, "retrieved"),
                              (recent, options.recent_tokens, "recent")):
        used = 0
        for rank, item in enumerate(pool, start=1):
            s = item.segment
            if s.segment_id in seen:
                continue
            seen.add(s.segment_id)
            handle = meeting.handles.get(s.segment_id, s.chain_pos)
            name = f"segment #{handle} [{clock(s.start)}]"
            if handle in above:
                blocks.append(Block(layer, name, "", 0, f"{item.reason}; shown above in the history"))
                continue
            line = segment_line(s, handle)
            cost = _tokens(line, options)
            if used + cost > share:
                blocks.append(Block(layer, name, "", 0, f"budget: dropped, {what} #{rank}"))
                continue
            used += cost
            blocks.append(Block(layer, name, line, cost, item.reason, role))
    return blocks


# -- the session's earlier rounds -------------------------------------------------------------------------
def _turn_blocks(meeting: MeetingContext, turn: Turn, number: int, options: CompilerOptions, *,
                 evidence: str) -> list[Block]:
    """A round as blocks: its evidence (`whole`, `shrunk` to head and tail, or `cleared`), question, answer."""
    blocks: list[Block] = []
    if turn.evidence:
        lines = [segment_line(e.segment, meeting.handles.get(e.segment.segment_id, e.segment.chain_pos))
                 for e in turn.evidence]
        start = min(e.segment.start for e in turn.evidence)
        end = max(e.segment.end for e in turn.evidence)
        text = "\n".join(lines)
        reason = f"history: turn {number}"
        if evidence == "shrunk":
            head, tail = lines[:2], lines[-1:]
            if len(lines) > 3:
                text = "\n".join([*head, _stub(f"{len(lines) - 3} lines of turn {number}'s evidence", start, end),
                                  *tail])
                reason = "compacted: head and tail"
        elif evidence == "cleared":
            text = _stub(f"turn {number}'s evidence", start, end)
            reason = "compacted: cleared, expand() reads it"
        blocks.append(Block(3, f"turn {number} evidence", text, _tokens(text, options), reason, "user"))
    q = f"Question: {turn.question}"
    blocks.append(Block(3, f"turn {number} question", q, _tokens(q, options), f"history: turn {number}", "user"))
    blocks.append(Block(3, f"turn {number} answer", turn.answer, _tokens(turn.answer, options),
                        f"history: turn {number}", "assistant"))
    return blocks


def _summarized_turns(turns: Sequence[tuple[int, Turn]], options: CompilerOptions) -> Block:
    lines = []
    for number, turn in turns:
        first = turn.answer.split("\n", 1)[0]
        lines.append(f"- turn {number}: {turn.question} -> {first[:160]}")
    text = "Earlier questions in this session (summarized):\n" + "\n".join(lines)
    return Block(3, f"turns {turns[0][0]}-{turns[-1][0]} summarized", text, _tokens(text, options),
                 "compacted: summarized older rounds", "user")


@dataclass
class _Compaction:
    """Where a session's history stands: rounds before `first` dropped, oversized evidence of rounds up to
    `shrunk` cut to head and tail, evidence of rounds up to `cleared` cleared, and whether what is left is
    folded into one summary block."""

    first: int = 1
    shrunk: int = 0
    cleared: int = 0
    summarized: int = 0


def _priced(meeting: MeetingContext, history: Sequence[Turn],
            options: CompilerOptions) -> dict[str, list[int]]:
    """Each round's cost whole, shrunk (oversized evidence to head and tail; else as whole) and with its
    evidence cleared: rendered once per round, so fitting the history is linear in its length."""
    costs: dict[str, list[int]] = {"whole": [], "shrunk": [], "cleared": []}
    for number, turn in enumerate(history, start=1):
        size = _tokens("\n".join(e.segment.text for e in turn.evidence), options)
        for mode in costs:
            if mode == "shrunk" and size <= options.max_block_tokens:
                costs[mode].append(costs["whole"][-1])
                continue
            costs[mode].append(sum(b.tokens for b in _turn_blocks(meeting, turn, number, options, evidence=mode)))
    return costs


def _mode(state: _Compaction, number: int) -> str:
    if number <= state.cleared:
        return "cleared"
    return "shrunk" if number <= state.shrunk else "whole"


def _replay(costs: dict[str, list[int]], budget: int, options: CompilerOptions) -> _Compaction:
    """Replay the session round by round: whenever the history outgrows `budget`, compact it down to
    `low_water` of it, cheapest step first (clear earlier rounds' evidence, keeping the last `keep_turns`
    whole; then drop the oldest rounds whole; then summarize what is left but the last round). Between
    those moments the history only grows at its end, so each prompt starts with the previous one; and since
    the state is replayed from the rounds alone, the same session always compiles to the same prompt."""
    state = _Compaction()
    low = int(budget * options.low_water)

    def cost(upto: int) -> int:
        return sum(costs[_mode(state, i)][i - 1] for i in range(state.first, upto + 1))

    for n in range(1, len(costs["whole"]) + 1):
        if state.summarized:
            state = _Compaction(first=n)  # a summary is a last resort; the rounds after it start afresh
        if cost(n) <= budget:
            continue
        older = n - options.keep_turns
        state.shrunk = max(state.shrunk, older)
        if cost(n) <= low:
            continue
        state.cleared = max(state.cleared, older)
        if cost(n) <= low:
            continue
        while state.first < n and cost(n) > low:
            state.first += 1
        for tier in ("shrunk", "cleared"):  # the last rounds alone are too big: they give way too
            if cost(n) > budget:
                setattr(state, tier, n)
        if cost(n) > budget:
            state.summarized = n
    return state


def fit_history(meeting: MeetingContext, history: Sequence[Turn], budget: int,
                options: CompilerOptions) -> tuple[list[Block], list[str]]:
    """The session's earlier rounds within `budget` tokens, compacted cheapest step first.

    1. shrink an oversized round's evidence to its head and tail (expand() reads the rest);
    2. clear the evidence of all but the last `keep_turns` rounds (those two only when still over `low_water`);
    3. drop the oldest rounds whole (a question with its answer, never half of one);
    4. only if still over: summarize the rounds left into one block.
    Compaction happens only when the history outgrows its budget, and then goes down to `low_water` of it
    (`_replay`), so most questions append to an unchanged prefix. Returns the blocks and the steps in
    effect, in order.
    """
    if not history:
        return [], []
    costs = _priced(meeting, history, options)
    state = _replay(costs, budget, options)
    blocks: list[Block] = []
    if state.first > 1:
        text = f"[omitted: turns 1-{state.first - 1} of this session]"
        blocks.append(Block(3, f"turns 1-{state.first - 1}", text, _tokens(text, options),
                            "budget: dropped, oldest first", "user"))
    rounds = list(enumerate(history, start=1))[state.first - 1:]
    if state.summarized:
        blocks.append(_summarized_turns(rounds, options))
    else:
        for number, turn in rounds:
            blocks.extend(_turn_blocks(meeting, turn, number, options, evidence=_mode(state, number)))
    steps = []
    if any(b.reason == "compacted: head and tail" for b in blocks):
        steps.append("shrink")
    if state.cleared >= state.first:
        steps.append("clear")
    if state.first > 1:
        steps.append("drop")
    if state.summarized:
        steps.append("summarize")
    return blocks, steps


def compile_prompt(
    meeting: MeetingContext,
    question: str,
    *,
    retrieved: Sequence[Evidence] = (),
    recent: Sequence[Evidence] = (),
    history: Sequence[Turn] = (),
    options: CompilerOptions | None = None,
) -> tuple[CompiledPrompt, list[str]]:
    """Compile the prompt for `question`; returns it and the compaction steps its history needed."""
    options = options or CompilerOptions()
    stable = stable_blocks(meeting, options)
    q = f"Question: {question}"
    tail = [Block(5, "question", q, _tokens(q, options), "question", "user")]
    # The history's share is the budget less the stable layers and the evidence's and question's full
    # shares, not what this question's evidence happens to take: a share that moved with each question
    # would move the compaction cut with it, and with the cut the cached prefix.
    reserve = options.retrieved_tokens + (options.recent_tokens if recent else 0) + QUESTION_ALLOWANCE
    share = max(0, options.budget - sum(b.tokens for b in stable) - reserve)
    turns, steps = fit_history(meeting, history, share, options)
    evidence = evidence_blocks(meeting, retrieved, recent, options, above=_shown_handles(turns))
    over = sum(b.tokens for b in stable + turns + evidence + tail) - options.budget
    if over > 0 and history:  # an unusually long question: this one prompt gives up more history
        turns, steps = fit_history(meeting, history, max(0, share - over), options)
        evidence = evidence_blocks(meeting, retrieved, recent, options, above=_shown_handles(turns))
    blocks = tuple(stable + turns + evidence + tail)
    shown: dict[int, str] = {}
    for item in [*retrieved, *recent, *(e for t in history for e in t.evidence)]:
        handle = meeting.handles.get(item.segment.segment_id, item.segment.chain_pos)
        shown.setdefault(handle, item.segment.segment_id)
    return CompiledPrompt(blocks, shown, options.budget), steps


_LINE_HANDLE_RE = re.compile(r"^\[#(\d+) ", re.MULTILINE)


def _shown_handles(blocks: Sequence[Block]) -> frozenset[int]:
    """The handles of the transcript lines the history blocks show word for word."""
    return frozenset(int(m.group(1)) for b in blocks if b.role == "user" for m in _LINE_HANDLE_RE.finditer(b.text))


def shrink_options(options: CompilerOptions, limit: int | None) -> CompilerOptions:
    """Options for the one retry after the API said the prompt was too long: 80% of its stated limit
    (or of our own budget when it stated none), and every share cut in proportion."""
    target = int(0.8 * (limit if limit else options.budget))
    if target >= options.budget:
        target = int(options.budget * 0.8)
    scale = target / options.budget
    return replace(options, budget=target, ledger_tokens=int(options.ledger_tokens * scale),
                   summary_tokens=int(options.summary_tokens * scale),
                   retrieved_tokens=int(options.retrieved_tokens * scale),
                   recent_tokens=int(options.recent_tokens * scale), keep_turns=1)


def prefix_reuse(previous: list[dict[str, str]], current: list[dict[str, str]]) -> float:
    """Share of the current prompt's characters that repeat the previous prompt's exact prefix
    (what a provider's prompt cache can reuse)."""
    a = "\x00".join(m["role"] + "\x01" + m["content"] for m in previous)
    b = "\x00".join(m["role"] + "\x01" + m["content"] for m in current)
    if not b:
        return 0.0
    n = 0
    limit = min(len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    return n / len(b)
