"""Answers written by a language model over a compiled context, and kept only when their citations hold.

The model gets a prompt compiled from the log (`prompting.PromptSources`): the ledger, the summaries, the
session's earlier rounds and the segments retrieved for the question (for a routed question, the route's
own evidence: the stretch of a time question, a speaker's turns, the reasons around a choice, with how the
question was read), each transcript line with a handle (`[#12]`). It may ask to read more with
`expand(start, end)` (an OpenAI tool call, or the call written on a line of plain text), served verbatim
from the log. Its answer must cite the handles it rests on, and each cited handle must be a line the
prompt (or an expand) showed, of this meeting; any words it puts in quotes must be in the lines it cites.
An answer that fails any of that is not shown: the route's extractive draft is, with a note saying why.
So the words a user reads as quoted are always the transcript's.

Failures (the API down, invalid answers) count towards a circuit breaker: after a few in a row the model is
left alone for a while and questions are answered extractively at once instead of after a timeout.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from meetmem.store.records import Segment
from meetmem.store.timecode import format_time
from meetmem.summarizers.errors import ChatError, SummarizerError
from meetmem.summarizers.llm.chat import ChatModel, ChatReply, PromptTooLong

from .compiler import CompiledPrompt, CompilerOptions, Evidence, Turn, shrink_options
from .pipeline import Answerer
from .prompting import Compiled, PromptSources
from .records import Written
from .sessions import AskSession
from .tokens import count_tokens

if TYPE_CHECKING:
    from meetmem.settings import Settings
    from meetmem.store.index.search import TranscriptSearch

    from .plan import Plan

__all__ = ["AskSession", "CircuitBreaker", "LLMAnswerer", "ModelWriter", "make_answerer", "options_for_budget"]

log = logging.getLogger(__name__)

_FALLBACK = "; this is the transcript's own answer.)"
NOTE_UNKNOWN_HANDLE = "(The model's answer cited lines the transcript does not hold" + _FALLBACK
NOTE_BAD_QUOTE = "(The model's answer cited text the transcript does not hold" + _FALLBACK
NOTE_NO_CITATION = "(The model's answer cited no line of the transcript" + _FALLBACK
NOTE_STILL_EXPANDING = "(The model asked to read more of the meeting than it may" + _FALLBACK
NOTE_FAILED = "(The language model could not answer" + _FALLBACK
NOTE_PAUSED = "(The language model is paused after {n} failed answers in a row" + _FALLBACK

#: `[#12]`, `[#3, #5]`, `[#12 01:03 Bob]` (the form the prompt's lines use): a group of handles.
_HANDLE_GROUP_RE = re.compile(r"\[(#\d+[^\[\]\n]{0,80})\]")
_HANDLE_RE = re.compile(r"#(\d+)")
#: A transcript line of the prompt starts with its handle.
_LINE_HANDLE_RE = re.compile(r"^\[#(\d+)[ \]]", re.MULTILINE)
_NUMBER = r"(-?\d+(?:\.\d+)?)\s*s?"
_EXPAND_RE = re.compile(rf"\bexpand\(\s*(?:start\s*=\s*)?{_NUMBER}\s*,\s*(?:end\s*=\s*)?{_NUMBER}\s*\)")
_QUOTE_RE = re.compile(r'"([^"\n]+)"|“([^”\n]+)”|「([^」\n]+)」')
_QUOTE_EDGES = " \t.,;:!?…。，；：！？、'‘’"


class CircuitBreaker:
    """Stops calling a failing model: open after `threshold` failures in a row, for `cooldown` seconds.

    After the cool-down one question tries the model again (half-open); a success closes the breaker, a
    failure opens it for another cool-down.
    """

    def __init__(self, threshold: int = 3, cooldown: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 ) -> None:
        self.threshold = max(1, threshold)
        self.cooldown = cooldown
        self.clock = clock
        self.failures = 0
        self._opened_at: float | None = None
        self._lock = threading.Lock()

    def allows(self) -> bool:
        """Whether the next question may call the model."""
        with self._lock:
            if self.failures < self.threshold or self._opened_at is None:
                return True
            return self.clock() - self._opened_at >= self.cooldown

    def record(self, ok: bool) -> None:
        with self._lock:
            if ok:
                self.failures = 0
                self._opened_at = None
                return
            self.failures += 1
            if self.failures >= self.threshold:
                self._opened_at = self.clock()


@dataclass
class _Exchange:
    """One question's conversation with the model: the prompt, the messages sent, what it read and said."""

    compiled: Compiled
    options: CompilerOptions
    messages: list[dict[str, Any]]
    reply: ChatReply
    compacted: bool = False
    expanded: list[tuple[float, float, list[Segment]]] = field(default_factory=list)
    asking: bool = False  # the last reply still asked to expand


@dataclass(frozen=True, slots=True)
class _Verdict:
    citations: tuple[Segment, ...] = ()
    handles: dict[int, Segment] = field(default_factory=dict)
    note: str | None = None  # why the answer was rejected; None when it holds
    detail: str = ""


class ModelWriter:
    """Writes answers with a chat model over the compiled context; the route's extractive draft whenever it
    cannot (a rejected answer, a failure, an open breaker), with a note saying why.

    Args:
        sources: compiles each question's prompt from the log and serves `expand`.
        chat: the model (`OpenAIChat`, `OpenAIToolChat`, `AnthropicChat`, ...).
        options: the prompt's budget and shares (`calibration` is kept by this class).
        max_expands: how many `expand` calls one question may make.
        breaker_threshold: failures in a row after which the model is left alone for `cooldown` seconds.
        cooldown: seconds the breaker stays open.
        clock: monotonic seconds (injectable for the breaker's tests).
    """

    def __init__(
        self,
        sources: PromptSources,
        chat: ChatModel,
        options: CompilerOptions | None = None,
        *,
        max_expands: int = 2,
        breaker_threshold: int = 3,
        cooldown: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sources = sources
        self.log = sources.log
        self.chat = chat
        self.options = options or CompilerOptions()
        self.max_expands = max(0, max_expands)
        self.breaker = CircuitBreaker(breaker_threshold, cooldown, clock)
        self._reported = 0.0
        self._estimated = 0.0
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the chat client's connections (when it has any)."""
        close = getattr(self.chat, "close", None)
        if callable(close):
            close()

    # -- token calibration ------------------------------------------------------------------------------
    @property
    def calibration(self) -> float:
        """API-reported prompt tokens per estimated token, over every prompt so far (1.0 before any)."""
        with self._lock:
            if self._estimated <= 0:
                return 1.0
            return min(4.0, max(0.25, self._reported / self._estimated))

    def _calibrate(self, prompt: CompiledPrompt, options: CompilerOptions, reply: ChatReply) -> None:
        if reply.prompt_tokens is None or reply.prompt_tokens <= 0 or prompt.tokens <= 0:
            return
        with self._lock:
            self._reported += reply.prompt_tokens
            self._estimated += prompt.tokens / options.calibration

    # -- writing --------------------------------------------------------------------------------------
    def write(self, meeting_id: str, question: str, plan: Plan, draft: Written, *, tenant: str,
              session: AskSession | None = None) -> Written:
        """The model's answer over the plan's evidence; with a `session`, its earlier rounds are the prompt's
        history and this round is added to it. Citations are verbatim stored segments, first cited first."""
        if session is None:
            return self._write(meeting_id, question, plan, draft, tenant, None)
        with session.lock:
            return self._write(meeting_id, question, plan, draft, tenant, session)

    def _write(self, meeting_id: str, question: str, plan: Plan, draft: Written, tenant: str,
               session: AskSession | None) -> Written:
        if not self.breaker.allows():
            note = NOTE_PAUSED.format(n=self.breaker.failures)
            written = _fallback(draft, note, "circuit breaker open")
            if session is not None:
                session.add(Turn(question, written.text))
            return written
        history = session.turns if session is not None else ()
        try:
            exchange = self._exchange(meeting_id, question, tenant, history, _route_evidence(plan, draft))
        except ChatError as exc:
            self.breaker.record(False)
            log.warning("the language model could not answer a question about %r: %s", meeting_id, exc)
            written = _fallback(draft, NOTE_FAILED, f"failed: {type(exc).__name__}")
            if session is not None:
                session.add(Turn(question, written.text))
            return written
        verdict = self._verify(meeting_id, tenant, exchange)
        self.breaker.record(verdict.note is None)
        shown = self._shown_evidence(exchange.compiled)
        if verdict.note is not None:
            log.warning("rejected the model's answer about %r: %s", meeting_id, verdict.detail)
            written = _fallback(draft, verdict.note, f"rejected: {verdict.detail}")
            if session is not None:
                session.add(Turn(question, written.text, shown))
            return written
        if session is not None:
            session.add(Turn(question, exchange.reply.text.strip(), shown))
        return self._written(plan, exchange, verdict)

    def _exchange(self, meeting_id: str, question: str, tenant: str, history: Sequence[Turn],
                  evidence: _RouteEvidence | None) -> _Exchange:
        """Compile, ask, and serve the model's expand calls; one compacted retry if the prompt is too long.
        `evidence`: a routed plan's own evidence, in place of the search's hits for the question."""
        options = replace(self.options, calibration=self.calibration)

        def compile_with(options: CompilerOptions) -> Compiled:
            if evidence is None:
                return self.sources.compile(meeting_id, question, tenant=tenant, history=history, options=options)
            return self.sources.compile(meeting_id, question, tenant=tenant, history=history, options=options,
                                        retrieved=evidence.retrieved, note=evidence.note)

        compiled = compile_with(options)
        compacted = False
        try:
            reply = self._complete(compiled.prompt, compiled.prompt.messages())
        except PromptTooLong as exc:
            log.info("prompt too long for the model (limit %s): compiling a smaller one", exc.limit)
            options = shrink_options(options, exc.limit)
            compiled = compile_with(options)
            compacted = True
            reply = self._complete(compiled.prompt, compiled.prompt.messages())
        self._calibrate(compiled.prompt, options, reply)
        exchange = _Exchange(compiled, options, list(compiled.prompt.messages()), reply, compacted)
        left = self.max_expands
        while True:
            calls = _expand_calls(exchange.reply)
            exchange.asking = bool(calls)
            if not calls or left <= 0:
                return exchange
            left -= self._serve_expands(meeting_id, tenant, exchange, calls, left)
            exchange.reply = self._complete(compiled.prompt, exchange.messages)

    def _serve_expands(self, meeting_id: str, tenant: str, exchange: _Exchange,
                       calls: list[tuple[str | None, float, float]], left: int) -> int:
        """Read the asked-for stretches from the log and append them to the conversation; returns how many
        expand calls were served."""
        served = 0
        results: list[tuple[str | None, str]] = []
        for call_id, start, end in calls:
            if served >= left:
                results.append((call_id, "[no more expand() calls: answer from what you have]"))
                continue
            text, ids = self.sources.expand(meeting_id, start, end, tenant=tenant)
            stored = self.log.get(ids)
            exchange.expanded.append((start, end, [stored[i] for i in ids if i in stored]))
            results.append((call_id, text))
            served += 1
        reply = exchange.reply
        tool_calls = getattr(reply, "tool_calls", ())
        if tool_calls:
            exchange.messages.append({"role": "assistant", "content": reply.text or None, "tool_calls": [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in tool_calls]})
            answered = dict(results)
            for c in tool_calls:
                exchange.messages.append({"role": "tool", "tool_call_id": c.id,
                                          "content": answered.get(c.id, f"[no tool named {c.name!r}]")})
            exchange.messages.append({"role": "user", "content": "Now answer the question, citing the handles."})
        else:
            exchange.messages.append({"role": "assistant", "content": reply.text})
            body = "\n\n".join(f"expand({start:.1f}, {end:.1f}) returned:\n{text}"
                               for (_, start, end), (_, text) in zip(calls, results, strict=True))
            exchange.messages.append({"role": "user",
                                      "content": body + "\n\nNow answer the question, citing the handles."})
        return served

    def _complete(self, prompt: CompiledPrompt, messages: list[dict[str, Any]]) -> ChatReply:
        if getattr(self.chat, "takes_system_parts", False):
            return self.chat.complete(messages, system_parts=prompt.system_parts())  # type: ignore[call-arg]
        return self.chat.complete(messages)

    # -- checking ---------------------------------------------------------------------------------------
    def _verify(self, meeting_id: str, tenant: str, exchange: _Exchange) -> _Verdict:
        """Every cited handle is a line shown to the model, of this meeting; every quote is in what it cites."""
        text = exchange.reply.text
        cited = cited_handles(text)
        if not cited:
            if exchange.asking:
                return _Verdict(note=NOTE_STILL_EXPANDING, detail="still asking to expand")
            return _Verdict(note=NOTE_NO_CITATION, detail="no citation")
        citable = self._citable(exchange)
        unknown = [h for h in cited if h not in citable]
        if unknown:
            return _Verdict(note=NOTE_UNKNOWN_HANDLE, detail=f"unknown handles {unknown}")
        stored = self.log.get(citable[h] for h in cited)
        segments: dict[int, Segment] = {}
        for handle in cited:
            segment = stored.get(citable[handle])
            if segment is None or segment.meeting_id != meeting_id or segment.tenant != tenant:
                return _Verdict(note=NOTE_UNKNOWN_HANDLE, detail=f"handle #{handle} is not of this meeting")
            segments[handle] = segment
        held = _normalise(" ".join(s.text for s in segments.values()))
        for quote in quotes(text):
            if _normalise(quote) not in held:
                return _Verdict(note=NOTE_BAD_QUOTE, detail=f"quote not in the cited lines: {quote[:80]!r}")
        return _Verdict(tuple(segments.values()), segments)

    def _citable(self, exchange: _Exchange) -> dict[int, str]:
        """Handle -> segment id of every transcript line the model was shown (prompt or expand)."""
        prompt = exchange.compiled.prompt
        visible = {int(h) for m in exchange.messages if m.get("role") != "system"
                   for h in _LINE_HANDLE_RE.findall(str(m.get("content") or ""))}
        citable = {h: sid for h, sid in prompt.shown.items() if h in visible}
        for _, _, segments in exchange.expanded:
            for s in segments:
                citable.setdefault(s.chain_pos, s.segment_id)
        return citable

    @staticmethod
    def _shown_evidence(compiled: Compiled) -> tuple[Evidence, ...]:
        """The question's evidence that made it into the prompt (not dropped for budget), in prompt order:
        what the session's next prompts show again as this round's evidence, byte for byte."""
        visible = {int(h) for b in compiled.prompt.blocks if b.layer == 4 and b.text
                   for h in _LINE_HANDLE_RE.findall(b.text)}
        handle_of = {sid: h for h, sid in compiled.prompt.shown.items()}
        out: list[Evidence] = []
        seen: set[str] = set()
        for e in compiled.evidence:
            sid = e.segment.segment_id
            if sid not in seen and handle_of.get(sid) in visible:
                seen.add(sid)
                out.append(e)
        return tuple(out)

    # -- the answer -----------------------------------------------------------------------------------
    def _written(self, plan: Plan, exchange: _Exchange, verdict: _Verdict) -> Written:
        segments = list(dict.fromkeys(verdict.citations))
        times = {handle: format_time(s.start) for handle, s in verdict.handles.items()}
        text = _HANDLE_GROUP_RE.sub(
            lambda m: "[" + ", ".join(times.get(int(h), "?") for h in _HANDLE_RE.findall(m.group(1))) + "]",
            exchange.reply.text.strip())
        blocks: list[tuple[str, int, str]] = []
        if exchange.compacted:
            blocks.append(("prompt", 0, f"compacted after prompt too long: budget {exchange.options.budget}"))
        blocks.extend((b.name, b.tokens, b.reason) for b in exchange.compiled.prompt.blocks)
        for start, end, expanded in exchange.expanded:
            for s in expanded:
                blocks.append((f"segment #{s.chain_pos} [{format_time(s.start)}]", count_tokens(s.text),
                               f"expand({start:.1f}, {end:.1f})"))
        reasons = {s.segment_id: "cited by the model's answer" for s in segments}
        return Written(plan.kind, text, tuple(segments), reasons, tuple(blocks), prompt=True)


@dataclass(frozen=True, slots=True)
class _RouteEvidence:
    retrieved: tuple[Evidence, ...]
    note: str


def _route_evidence(plan: Plan, draft: Written) -> _RouteEvidence | None:
    """A routed plan's evidence for the prompt (the stretch of a time question, a speaker's turns, the
    reasons around a choice, the matching ledger items' segments), with the plan's reason as a note; None
    for a verbatim or overview question, whose prompt retrieves for the question itself."""
    if plan.route in ("verbatim", "overview"):
        return None
    segments = draft.evidence or draft.cited
    if not segments:
        return None
    retrieved = tuple(Evidence(s, draft.reasons.get(s.segment_id, f"route {plan.route}")) for s in segments)
    return _RouteEvidence(retrieved, f"How this question was read: {plan.reason}.")


def _fallback(draft: Written, note: str, why: str) -> Written:
    """The route's extractive draft, with the note saying why it is not the model's."""
    return replace(draft, text=f"{draft.text}\n{note}", blocks=(*draft.blocks, ("language model", 0, why)))


# -- reading the model's reply ------------------------------------------------------------------------------
def cited_handles(text: str) -> list[int]:
    """The handles an answer cites (`[#12]`, `[#3, #5]`), in order of first citation."""
    handles = [int(h) for group in _HANDLE_GROUP_RE.findall(text) for h in _HANDLE_RE.findall(group)]
    return list(dict.fromkeys(handles))


def quotes(text: str) -> list[str]:
    """What an answer puts in quotation marks (straight, curly or corner), edges' punctuation trimmed."""
    found = []
    for match in _QUOTE_RE.finditer(text):
        quote = next(g for g in match.groups() if g is not None).strip(_QUOTE_EDGES)
        if quote:
            found.append(quote)
    return found


def _normalise(text: str) -> str:
    return " ".join(text.replace("’", "'").replace("‘", "'").casefold().split())


def _expand_calls(reply: ChatReply) -> list[tuple[str | None, float, float]]:
    """(call id or None, start, end) of each expand the reply asks for: tool calls, else lines of text that
    call it in an otherwise uncited reply (an answer that cites is an answer, whatever else it says)."""
    calls: list[tuple[str | None, float, float]] = []
    tool_calls = getattr(reply, "tool_calls", ()) or ()
    for call in tool_calls:
        if call.name != "expand":
            continue  # answered as an unknown tool
        try:
            calls.append((call.id, float(call.arguments["start"]), float(call.arguments["end"])))
        except (KeyError, TypeError, ValueError):
            calls.append((call.id, 0.0, 0.0))
    if tool_calls or cited_handles(reply.text):
        return calls
    return [(None, float(a), float(b)) for a, b in _EXPAND_RE.findall(reply.text)]


# -- building from settings ---------------------------------------------------------------------------------
ANSWERERS = ("extractive", "llm")
PROVIDERS = ("openai", "anthropic")


def options_for_budget(budget: int) -> CompilerOptions:
    """Compiler options for a prompt budget, every share scaled from the defaults (made for 4000 tokens)."""
    base = CompilerOptions()
    scale = budget / base.budget
    return replace(base, budget=budget, ledger_tokens=int(base.ledger_tokens * scale),
                   summary_tokens=int(base.summary_tokens * scale),
                   retrieved_tokens=int(base.retrieved_tokens * scale),
                   recent_tokens=int(base.recent_tokens * scale))


def check_settings(settings: Settings) -> None:
    """Raise `SummarizerError` naming the setting when the answerer the settings choose cannot be built."""
    if settings.answerer not in ANSWERERS:
        raise SummarizerError(f"unknown MEETMEM_ANSWERER {settings.answerer!r}: choose one of {', '.join(ANSWERERS)}")
    if settings.answerer == "llm":
        _check_model_settings(settings)


def _check_model_settings(settings: Settings) -> None:
    provider = settings.llm_provider
    if provider not in PROVIDERS:
        raise SummarizerError(f"unknown MEETMEM_LLM_PROVIDER {provider!r}: choose one of {', '.join(PROVIDERS)}")
    if not settings.llm_model:
        raise SummarizerError("MEETMEM_ANSWERER=llm needs MEETMEM_LLM_MODEL (the model name the API knows)")
    if provider == "anthropic" and not settings.llm_api_key:
        raise SummarizerError("MEETMEM_LLM_PROVIDER=anthropic needs MEETMEM_LLM_API_KEY (sent as x-api-key)")
    if provider == "openai" and not settings.llm_url:
        raise SummarizerError("MEETMEM_ANSWERER=llm needs MEETMEM_LLM_URL (an OpenAI-compatible base URL such as "
                              "http://127.0.0.1:8080/v1)")


def make_chat(settings: Settings) -> ChatModel:
    """The chat model the settings name for answers (`llm_provider`, `llm_url`, `llm_model`, ...).

    Raises:
        SummarizerError: an unknown provider, or a setting the provider needs is missing (named).
    """
    _check_model_settings(settings)
    assert settings.llm_model is not None
    if settings.llm_provider == "anthropic":
        from meetmem.summarizers.llm.anthropic_chat import ANTHROPIC_URL, AnthropicChat

        return AnthropicChat(settings.llm_url or ANTHROPIC_URL, settings.llm_model, settings.llm_api_key,
                             timeout=settings.llm_timeout)
    assert settings.llm_url is not None
    if settings.llm_tools:
        from meetmem.summarizers.llm.chat_tools import OpenAIToolChat

        return OpenAIToolChat(settings.llm_url, settings.llm_model, api_key=settings.llm_api_key,
                              timeout=settings.llm_timeout, max_tokens=512, system_role=settings.llm_system_role)
    from meetmem.summarizers.llm.chat import OpenAIChat

    return OpenAIChat(settings.llm_url, settings.llm_model, api_key=settings.llm_api_key,
                      timeout=settings.llm_timeout, max_tokens=512, system_role=settings.llm_system_role)


class LLMAnswerer(Answerer):
    """An `Answerer` whose writer is a chat model (`ModelWriter`); the same flow, the same `ask`.

    Args:
        sources: compiles each question's prompt from the log and serves `expand`.
        chat: the model.
        fallback: the extractive answerer whose search, digests and routes this one shares.
        options, **kwargs: the `ModelWriter`'s.
    """

    def __init__(self, sources: PromptSources, chat: ChatModel, fallback: Answerer,
                 options: CompilerOptions | None = None, **kwargs: Any) -> None:
        super().__init__(fallback.search, digests=fallback.digests, route_questions=fallback.route_questions,
                         writer=ModelWriter(sources, chat, options, **kwargs))
        self.verbatim = fallback.verbatim
        self.routes = fallback.routes
        self.model = cast(ModelWriter, self.writer)
        self.sources = sources

    @property
    def breaker(self) -> CircuitBreaker:
        return self.model.breaker

    @property
    def calibration(self) -> float:
        return self.model.calibration

    @property
    def chat(self) -> ChatModel:
        return self.model.chat

    @chat.setter
    def chat(self, chat: ChatModel) -> None:
        self.model.chat = chat


def make_answerer(settings: Settings, search: TranscriptSearch, digests: Callable[..., Any], *,
                  stamp: Callable[..., Any] | None = None) -> Answerer:
    """The answerer the settings choose: extractive, or with a model as its writer.
    `stamp(meeting_id, tenant=...)` identifies the stored digest, so prompts reuse it until it changes."""
    check_settings(settings)
    extractive = Answerer(search, digests=digests)
    if settings.answerer != "llm":
        return extractive
    return LLMAnswerer(PromptSources(search, digests, stamp=stamp), make_chat(settings), extractive,
                       options_for_budget(settings.answer_budget))
