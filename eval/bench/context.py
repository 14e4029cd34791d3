"""`meetmem bench context`: what the context compiler's prompts cost, how much of them a prompt cache reuses,
and whether the evidence they show holds the answer (issue 6, "Answers from a language model through a
context compiler").

For each length (`--hours`, default 1, 4 and 8), a seeded meeting with planted facts (`planted_meeting`) is
written closed to a fresh database, embedded and indexed, and digested (extractive summarizer, rule
ledger). Then one ask session runs over its planted-fact questions in meeting order, each question a
round: the prompt is compiled with `PromptSources.compile` (digest from the digester's `stored`, the way
the server reads it), the extractive `Answerer` answers the same question, and the round goes into the
session's history as a `compiler.Turn` (the question, the extractive answer's text as the model's short
answer, the retrieved segments the prompt showed). The whole session is passed every time; the compiler
compacts it. No language model is called. Per length:

* tokens: prompt tokens per question (`CompiledPrompt.tokens`, the compiler's own estimate) against
  stuffing the whole transcript (`count_tokens` of every segment rendered one per line the way the
  compiler renders a segment), the share, and whether the whole transcript fits a 128k window;
* prefix reuse: `prefix_reuse` of each prompt's messages against the previous question's, and the
  compaction steps the history needed (counted per step);
* needle recall@5: the planted fact's segment among the first 5 retrieved segments the prompt shows (rank
  order, budget-dropped ones skipped: what the model can cite), against the first 5 citations of the
  extractive answer; over every question and over the questions only one planted fact answers;
* compile time: wall time of `PromptSources.compile` per question, with its search (query embedding
  included, and that alone) and digest read split out; the rest is reading the meeting's metadata and the
  pure compiler; `compile_prompt` is also timed alone on the same inputs, with and without the history.

Keys of the JSON: benchmark, machine, code, config, targets, results (one object per length: hours,
segments, planted_facts, questions, build, full_transcript, prompt_tokens, prefix_reuse, compaction,
needle_recall_at_5, compile, extractive_ask, wall_s), wall_s. Prints one JSON object on stdout; progress
goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ..harness import Stopwatch, checkout, hours_arg, latency, machine_info, patched, progress_note
from .planted_meeting import DEVICE, PlantedMeeting, append_range, generate_meeting
from .search_timing import timed_build
from .summaries import DEFAULT_SEED

DEFAULT_HOURS = (1.0, 4.0, 8.0)
DEFAULT_BUDGET = 4000
WINDOW = 128_000
PART_HOURS = 4.0
RECALL_AT = 5
#: The issue's targets; `targets_met` in each result says which hold.
TARGET_TOKENS = 4000
TARGET_SHARE_4H = 0.07
TARGET_REUSE = 0.9
TARGET_COMPILE_P95_MS = 50.0
_HANDLE_RE = re.compile(r"\[#(\d+) ")
_NAME_HANDLE_RE = re.compile(r"segment #(\d+) ")


def long_meeting(hours: float, seed: int) -> PlantedMeeting:
    """`generate_meeting`, in parts of at most `PART_HOURS` back to back beyond that length.

    The generator says each date once per meeting and has 336 of them, which lasts about five hours; a
    longer day is its 4-hour parts one after another (seeds `seed`, `seed + 1000`, ...). Across parts a
    date or a question can repeat, which is why recall is also reported over the questions only one
    planted fact answers.
    """
    if hours <= PART_HOURS:
        return generate_meeting(hours, seed)
    out = PlantedMeeting()
    done, part = 0.0, 0
    while done < hours - 1e-9:
        length = min(PART_HOURS, hours - done)
        piece = generate_meeting(length, seed + 1000 * part)
        shift, base = (out.ends[-1] + 1.0 if out.ends else 0.0), len(out)
        out.texts += piece.texts
        out.speakers += piece.speakers
        out.starts += [round(t + shift, 2) for t in piece.starts]
        out.ends += [round(t + shift, 2) for t in piece.ends]
        out.topics += [(name, round(a + shift, 2), round(b + shift, 2)) for name, a, b in piece.topics]
        out.facts += [replace(f, index=f.index + base) for f in piece.facts]
        done += length
        part += 1
    return out


def _nearest_rank(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-p * len(ordered) // 100))))
    return ordered[rank - 1]


def spread(values: Sequence[float], digits: int = 1) -> dict[str, Any]:
    """n, p50, p95 and max (nearest-rank) of plain numbers (tokens), rounded."""
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50": round(statistics.median(values), digits),
            "p95": round(_nearest_rank(values, 95), digits), "max": round(max(values), digits)}


def shown_evidence(compiled: Any, *, above: bool = False) -> list[Any]:
    """The retrieved segments the prompt shows, in rank order (the ones dropped for the budget left out),
    as the `Evidence` a later round's history carries; with `above`, also those left out of the evidence
    because the session's history already shows them (they are in the prompt all the same)."""
    from meetmem.answers.compiler import Evidence

    prompt = compiled.prompt
    by_id = {h.segment.segment_id: h.segment for h in compiled.hits}
    out = []
    for block in prompt.blocks:
        if block.layer != 4 or block.reason == "recent":
            continue
        if block.text:
            handle = _HANDLE_RE.match(block.text)
        elif above and block.reason.endswith("shown above in the history"):
            handle = _NAME_HANDLE_RE.match(block.name)
        else:
            continue
        segment = by_id.get(prompt.shown.get(int(handle.group(1)), "")) if handle else None
        if segment is not None:
            out.append(Evidence(segment, block.reason))
    return out


def _share(count: int, total: int) -> float | None:
    return round(count / total, 3) if total else None


def ask_session(log: Any, search: Any, digester: Any, meeting_id: str, tenant: str, meeting: Any,
                fact_ids: Sequence[str], options: Any) -> dict[str, Any]:
    """One session over the planted questions in meeting order: tokens, reuse, compaction, recall, timing."""
    from meetmem.answers.compiler import Evidence, Turn, compile_prompt, prefix_reuse
    from meetmem.answers.pipeline import Answerer
    from meetmem.answers.prompting import PromptSources, hit_reason

    digest_sw = Stopwatch()
    sources = PromptSources(search, digest_sw.wrap(digester.stored), stamp=digester.stamp)
    answerer = Answerer(search, digests=digester.stored)
    facts = meeting.facts
    asked = Counter(f.question for f in facts)
    for fact in facts[:3]:  # warm-up (first touches of the index and the model), not counted
        sources.compile(meeting_id, fact.question, tenant=tenant, options=options)
        answerer.ask(meeting_id, fact.question, tenant=tenant)

    history: list[Any] = []
    tokens: list[int] = []
    over_budget = 0
    reuse: list[float] = []
    steps: Counter[str] = Counter()
    compacted = 0
    walls: list[float] = []
    search_s: list[float] = []
    query_s: list[float] = []
    digest_s: list[float] = []
    ask_walls: list[float] = []
    hits = {"compiled": [0, 0], "extractive": [0, 0]}  # [all questions, unique questions]
    by_kind: dict[str, Counter[str]] = {"compiled": Counter(), "extractive": Counter()}
    in_shown = 0
    pure_s: list[float] = []
    pure_no_history_s: list[float] = []
    previous: list[dict[str, str]] | None = None
    last: Any = None
    search_sw, query_sw = Stopwatch(), Stopwatch()
    with patched(search, "encode_query", query_sw.wrap(search.encode_query)), \
            patched(search, "search", search_sw.wrap(search.search)):
        for fact, sid in zip(facts, fact_ids, strict=True):
            marks = (search_sw.seconds, query_sw.seconds, digest_sw.seconds)
            t0 = time.perf_counter()
            compiled = sources.compile(meeting_id, fact.question, tenant=tenant, history=tuple(history),
                                       options=options)
            walls.append(time.perf_counter() - t0)
            search_s.append(search_sw.seconds - marks[0])
            query_s.append(query_sw.seconds - marks[1])
            digest_s.append(digest_sw.seconds - marks[2])

            prompt = compiled.prompt
            tokens.append(prompt.tokens)
            over_budget += prompt.tokens > options.budget
            messages = prompt.messages()
            if previous is not None:
                reuse.append(prefix_reuse(previous, messages))
            previous = messages
            steps.update(compiled.steps)
            compacted += bool(compiled.steps)
            last = prompt

            evidence = shown_evidence(compiled)
            in_prompt = shown_evidence(compiled, above=True)
            unique = asked[fact.question] == 1
            if sid in [e.segment.segment_id for e in in_prompt[:RECALL_AT]]:
                hits["compiled"][0] += 1
                hits["compiled"][1] += unique
                by_kind["compiled"][fact.kind] += 1
            in_shown += sid in [e.segment.segment_id for e in in_prompt]

            # The pure compiler alone on the same inputs, with and without the session's history.
            context, _ = sources.meeting(meeting_id, tenant=tenant)
            retrieved = [Evidence(h.segment, hit_reason(h)) for h in compiled.hits]
            t0 = time.perf_counter()
            again, _ = compile_prompt(context, fact.question, retrieved=retrieved, history=tuple(history),
                                      options=options)
            pure_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            compile_prompt(context, fact.question, retrieved=retrieved, options=options)
            pure_no_history_s.append(time.perf_counter() - t0)
            if again.tokens != prompt.tokens:
                raise RuntimeError("compile_prompt on the same inputs gave another prompt")

            t0 = time.perf_counter()
            answer = answerer.ask(meeting_id, fact.question, tenant=tenant)
            ask_walls.append(time.perf_counter() - t0)
            if sid in [c.segment_id for c in answer.citations[:RECALL_AT]]:
                hits["extractive"][0] += 1
                hits["extractive"][1] += unique
                by_kind["extractive"][fact.kind] += 1
            history.append(Turn(fact.question, answer.answer, tuple(evidence)))

    n, n_unique = len(facts), sum(1 for f in facts if asked[f.question] == 1)
    kinds = Counter(f.kind for f in facts)
    by_part: Counter[str] = Counter()
    if last is not None:
        from meetmem.answers.compiler import LAYER_NAMES

        for block in last.blocks:
            by_part["history" if block.name.startswith("turn") else LAYER_NAMES[block.layer]] += block.tokens
    compile_stats = latency(walls)
    return {
        "questions": {"total": n, "unique": n_unique, "history_turns_at_last": len(history) - 1},
        "prompt_tokens": {**spread(tokens, 0), "mean": round(statistics.fmean(tokens), 1) if tokens else None,
                          "over_budget": over_budget, "last_prompt_by_part": dict(by_part)},
        "prefix_reuse": {"n": len(reuse), "mean": round(statistics.fmean(reuse), 4) if reuse else None,
                         "p10": round(_nearest_rank(reuse, 10), 4) if reuse else None,
                         "min": round(min(reuse), 4) if reuse else None,
                         f"share_ge_{TARGET_REUSE}": _share(sum(r >= TARGET_REUSE for r in reuse), len(reuse))},
        "compaction": {"questions_compacted": compacted, "steps": dict(sorted(steps.items()))},
        "needle_recall_at_5": {
            path: {"all": _share(h[0], n), "unique_questions": _share(h[1], n_unique),
                   "by_kind": {k: _share(by_kind[path][k], kinds[k]) for k in sorted(kinds)}}
            for path, h in hits.items()
        } | {"compiled_within_all_shown_retrieved": _share(in_shown, n)},
        "compile": {**compile_stats, "search": latency(search_s), "query_embedding": latency(query_s),
                    "digest_read": latency(digest_s),
                    "rest": latency([w - s - d for w, s, d in zip(walls, search_s, digest_s, strict=True)]),
                    "compile_prompt_alone": latency(pure_s),
                    "compile_prompt_without_history": latency(pure_no_history_s)},
        "extractive_ask": latency(ask_walls),
    }


def run_hours(ctx: Any, hours: float, seed: int, routes: Any, path: Path, options: Any) -> dict[str, Any]:
    from meetmem.answers.compiler import segment_line
    from meetmem.answers.tokens import count_tokens
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.store.records import segment_id_for
    from meetmem.summarizers.digest import MeetingDigester
    from meetmem.summarizers.extractive import ExtractiveSummarizer

    started = time.perf_counter()
    tenant = ctx.tenant
    meeting = long_meeting(hours, seed)
    meeting_id = f"bench-context-{hours:g}h"
    fact_ids = [segment_id_for(tenant, meeting_id, DEVICE, f.index) for f in meeting.facts]
    label = f"[{hours:g} h]"
    result: dict[str, Any] = {"hours": hours, "segments": len(meeting), "planted_facts": len(meeting.facts)}
    with TranscriptLog(path) as log:
        for lo in range(0, len(meeting), 50):
            append_range(log, meeting_id, tenant, meeting, lo, min(lo + 50, len(meeting)))
        log.close_meeting(meeting_id, tenant=tenant)
        progress_note(ctx, f"{label} {len(meeting)} segments, {len(meeting.facts)} planted facts; "
                           "embedding and indexing ...")
        search = TranscriptSearch(log, routes)
        build = timed_build(search, meeting_id, tenant)
        progress_note(ctx, f"{label} digesting ...")
        digester = MeetingDigester(log, search, ExtractiveSummarizer())
        t0 = time.perf_counter()
        digest = digester.update(meeting_id, tenant=tenant)
        result["build"] = {"index_s": build["total_s"], "embed_s": build["vectors_s"],
                           "digest_s": round(time.perf_counter() - t0, 3), "sections": len(digest.sections),
                           "l2_lines": len(digest.l2), "ledger_items": len(digest.ledger)}
        segments = log.segments(meeting_id, tenant=tenant)
        full = count_tokens("\n".join(segment_line(s, s.chain_pos) for s in segments))
        result["full_transcript"] = {"tokens": full, "fits_128k": full <= WINDOW}

        progress_note(ctx, f"{label} ask session over {len(meeting.facts)} questions ...")
        session = ask_session(log, search, digester, meeting_id, tenant, meeting, fact_ids, options)
    tokens = session["prompt_tokens"]
    tokens["p50_share_of_full"] = round(tokens["p50"] / full, 4) if full else None
    tokens["max_share_of_full"] = round(tokens["max"] / full, 4) if full else None
    result.update(session)
    recall = session["needle_recall_at_5"]
    result["targets_met"] = {
        f"max_tokens_le_{TARGET_TOKENS}": tokens["max"] <= TARGET_TOKENS,
        f"max_share_le_{TARGET_SHARE_4H}": tokens["max_share_of_full"] is not None
        and tokens["max_share_of_full"] <= TARGET_SHARE_4H,
        f"prefix_reuse_mean_ge_{TARGET_REUSE}": (session["prefix_reuse"]["mean"] or 0.0) >= TARGET_REUSE,
        "recall_compiled_ge_extractive": (recall["compiled"]["all"] or 0.0) >= (recall["extractive"]["all"] or 0.0),
        f"compile_p95_le_{TARGET_COMPILE_P95_MS:g}_ms": session["compile"].get("p95_ms", float("inf"))
        <= TARGET_COMPILE_P95_MS,
    }
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def run(args: argparse.Namespace, ctx: Any) -> int:
    from meetmem.answers.compiler import CompilerOptions
    from meetmem.store.index.embedder_routes import embedder_routes

    wall0 = time.perf_counter()
    info = machine_info()
    head, modified = checkout(["answers/compiler.py", "answers/prompting.py", "answers/extractive.py",
                               "answers/tokens.py", "summarizers", "store", "eval/bench/context.py",
                               "eval/bench/planted_meeting.py"])
    s = ctx.settings
    routes = embedder_routes(s.embedder, s.embedder_zh, threads=s.threads)
    if routes is not None:
        progress_note(ctx, f"loading the {s.embedder} embedding model ...")
        t0 = time.perf_counter()
        routes.default.encode_query("warm up")
        info["embedder_load_s"] = round(time.perf_counter() - t0, 2)
    options = CompilerOptions(budget=args.budget)
    results = []
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-context-") as tmp:
        for hours in args.hours:
            results.append(run_hours(ctx, hours, args.seed, routes, Path(tmp) / f"context-{hours:g}h.db", options))
            progress_note(ctx, f"[{hours:g} h] done in {results[-1]['wall_s']:.1f}s")
    report = {
        "benchmark": "context",
        "machine": info,
        "code": {"git_head": head, "modified_files": modified},
        "config": {
            "hours": args.hours, "seed": args.seed, "embedder": s.embedder, "embedder_zh": s.embedder_zh,
            "threads": s.threads, "summarizer": "extractive", "digests": "MeetingDigester.stored",
            "compiler_options": asdict(options),
            "history": "every earlier round (question, extractive answer text, shown retrieved segments)",
            "full_transcript": "count_tokens of every segment as the compiler renders it, one per line",
            "recall": f"fact segment among the first {RECALL_AT} shown retrieved segments (compiled) or "
                      f"citations (extractive)",
            "timing": "wall clock (time.perf_counter) around PromptSources.compile; percentiles nearest-rank",
        },
        "targets": {"prompt_tokens_max": TARGET_TOKENS, "share_of_full_at_4h": TARGET_SHARE_4H,
                    "prefix_reuse_mean": TARGET_REUSE, "recall": "compiled >= extractive",
                    "compile_p95_ms": TARGET_COMPILE_P95_MS},
        "results": results,
        "wall_s": round(time.perf_counter() - wall0, 1),
    }
    sys.stdout.write(json.dumps(report, indent=None if args.json else 2) + "\n")
    sys.stdout.flush()
    return 0


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "context", parents=[common], help="prompt tokens, prefix reuse, recall and compile time of compiled prompts",
        description="On a generated meeting with planted facts, one ask session over its questions: tokens of "
                    "each compiled prompt against the whole transcript, how much of each prompt repeats the "
                    "previous one's prefix (what a prompt cache reuses), whether the planted fact's segment is "
                    "among the first 5 shown (against the extractive answer's citations), and compile time. "
                    "No language model is called. One JSON object on stdout; progress on stderr. Uses a "
                    "temporary database.",
    )
    p.add_argument("--hours", type=hours_arg, default=list(DEFAULT_HOURS), metavar="H[,H...]",
                   help="meeting lengths in hours (default: 1,4,8)")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help=f"the compiler's prompt budget in tokens (default: {DEFAULT_BUDGET})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the meetings (default: {DEFAULT_SEED})")
    p.set_defaults(func=run)
