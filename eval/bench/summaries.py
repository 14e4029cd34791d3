"""`meetmem bench summaries`: traceability, drift and cost of the layered summaries and the ledger.

For each length (`--hours`, default 1 and 4), a seeded meeting with planted facts (`planted_meeting`) is
written to a fresh database twice: once whole and closed, once in batches as a live meeting. Then:

* traceability: the share of L1 lines, L2 lines and ledger items whose cited segment ids all resolve to
  stored segments of the meeting (with the counts).
* drift: for each planted fact, whether its values (owner, task, due date, amount, event date and time)
  are in its stored segment (`raw`), and for each layer (`l1`, `l2`, `ledger`, and the `rolling`
  baseline) whether the layer keeps the fact (a line, or a ledger item other than a glossary entry, cites
  its segment) and, of the kept ones, whether every value appears in those lines exactly as planted.
  The baseline is a rolling summary:
  summary_{k+1} = the extractive summarizer over (summary_k's lines + the next ~5 minutes of segments),
  keeping 8 lines, the way a summary is "updated" when it is remade from itself.
* cost: embedding and indexing of the closed meeting (separately), `MeetingDigester.update` on it with
  its `.timings` breakdown; the live meeting appended in batches of 20 segments with an index catch-up
  and an `update` after each batch (as the server's background workers do), per-update percentiles;
  whether the live meeting's final digest equals the closed meeting's.
* ask: latency of `Answerer.ask` (digests from the digester's `stored`) over ~20 verbatim questions about
  planted facts: idle; while a live copy of the meeting streams in (a batch every 0.2 s, appended and
  indexed) without summaries, as the control; while it streams in and the server's
  own background summarizer (`cloud.indexer.BackgroundIndexer`, resting `SUMMARY_PAUSE_S` between jobs)
  keeps its digest current, which is the server's situation; and, as a worst case no server produces,
  while another thread runs `MeetingDigester.rebuild()` without rest.

Keys of the JSON: benchmark, machine, code, config, results (one object per length: hours, segments,
segments_per_hour, planted_facts, sections, traceability, drift, cost, ask, wall_s), wall_s. Prints one
JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..harness import SharedVectorEmbedder, checkout, hours_arg, latency, machine_info, progress_note
from .ask_under_load import ASK_QUESTIONS, LIVE_BATCH, ask_latency, ask_questions
from .planted_meeting import DEVICE, PlantedFact, PlantedMeeting, append_range, generate_meeting
from .search_timing import timed_build

DEFAULT_HOURS = (1.0, 4.0)
DEFAULT_SEED = 7
ROLLING_CHUNK_S = 300.0
ROLLING_LINES = 8
ASK_ROUNDS = 2
#: Ledger kinds that can hold a planted fact (a glossary entry names a person or term, not a fact).
FACT_KINDS = ("todo", "fact", "decision", "open_question")


# ------------------------------------------------------------------------------------------------------
# Traceability and drift.
# ------------------------------------------------------------------------------------------------------


def traceability(digest: Any, stored: set[str]) -> dict[str, Any]:
    """Per layer: how many lines or items there are and how many cite only stored segments of the meeting."""
    cites = {
        "l1_lines": [line.source.segment_ids for s in digest.sections for line in s.lines],
        "l2_lines": [line.source.segment_ids for line in digest.l2],
        "ledger_items": [item.source.segment_ids for item in digest.ledger],
    }
    out: dict[str, Any] = {}
    for name, groups in cites.items():
        resolved = sum(1 for ids in groups if ids and all(i in stored for i in ids))
        out[name] = {"count": len(groups), "resolved": resolved,
                     "share": round(resolved / len(groups), 4) if groups else None}
    return out


def _ledger_text(item: Any) -> str:
    return " | ".join(v for v in (item.text, item.owner, item.task, item.due, item.what, item.value) if v)


def kept_facts(facts: Sequence[PlantedFact], fact_ids: Sequence[str],
               pieces: Sequence[tuple[str, tuple[str, ...]]]) -> dict[str, Any]:
    """How many facts a layer keeps (a piece cites the fact's segment) and how many of those word for word.

    Args:
        pieces: the layer's lines or items as (text, cited segment ids).
    """
    kept, verbatim, anywhere = Counter(), Counter(), 0
    altered: list[dict[str, Any]] = []
    everything = "\n".join(text for text, _ in pieces)
    for fact, sid in zip(facts, fact_ids, strict=True):
        if all(v in everything for v in fact.values.values()):
            anywhere += 1
        citing = "\n".join(text for text, ids in pieces if sid in ids)
        if not citing:
            continue
        kept[fact.kind] += 1
        if all(v in citing for v in fact.values.values()):
            verbatim[fact.kind] += 1
        elif len(altered) < 3:
            altered.append({"planted": fact.values, "lines": citing})
    n_kept, n_verbatim = sum(kept.values()), sum(verbatim.values())
    return {
        "facts": len(facts),
        "kept": n_kept,
        "kept_share": round(n_kept / len(facts), 4) if facts else None,
        "kept_by_kind": dict(sorted(kept.items())),
        "verbatim": n_verbatim,
        "verbatim_share_of_kept": round(n_verbatim / n_kept, 4) if n_kept else None,
        "values_anywhere_in_layer": anywhere,
        "examples_not_verbatim": altered,
    }


def rolling_summary(segments: Sequence[Any], *, chunk_s: float = ROLLING_CHUNK_S,
                    lines: int = ROLLING_LINES) -> tuple[list[Any], int]:
    """The baseline: a summary remade from itself plus the next chunk, with the same extractive summarizer.

    The previous summary's lines become pseudo-segments (the cited segment with the line's text), so its
    lines keep citing the segment they came from. Returns the final lines and the number of steps.
    """
    from meetmem.store.records import Section
    from meetmem.summarizers.extractive import ExtractiveOptions, ExtractiveSummarizer

    summarizer = ExtractiveSummarizer(ExtractiveOptions(l1_lines=lines))
    by_id = {s.segment_id: s for s in segments}
    chunks: dict[int, list[Any]] = {}
    origin = segments[0].start if segments else 0.0
    for segment in segments:
        chunks.setdefault(int((segment.start - origin) // chunk_s), []).append(segment)
    summary: list[Any] = []
    for step, key in enumerate(sorted(chunks)):
        carried = [replace(by_id[line.source.segment_ids[0]], text=line.text) for line in summary]
        members = carried + chunks[key]
        section = Section(step, members[0].start, members[-1].end, tuple(s.segment_id for s in members), "length")
        summary = list(summarizer.summarize_section(section, members).lines)
    return summary, len(chunks)


def drift(digest: Any, meeting: PlantedMeeting, fact_ids: Sequence[str], segments: Sequence[Any]) -> dict[str, Any]:
    """Planted values in the raw log, in L1, L2 and the ledger, and in the rolling baseline."""
    facts = meeting.facts
    text_of = {s.segment_id: s.text for s in segments}
    log_text = "\n".join(text_of.values())
    in_segment = sum(all(v in text_of.get(sid, "") for v in f.values.values()) for f, sid in zip(facts, fact_ids,
                                                                                                    strict=True))
    in_log = sum(all(v in log_text for v in f.values.values()) for f in facts)
    t0 = time.perf_counter()
    rolling, steps = rolling_summary(segments)
    rolling_s = time.perf_counter() - t0
    n = len(facts) or 1
    return {
        "raw": {"facts": len(facts), "in_own_segment": in_segment, "in_own_segment_share": round(in_segment / n, 4),
                "in_log": in_log, "in_log_share": round(in_log / n, 4)},
        "l1": kept_facts(facts, fact_ids, [(ln.text, ln.source.segment_ids) for s in digest.sections
                                           for ln in s.lines]),
        "l2": kept_facts(facts, fact_ids, [(ln.text, ln.source.segment_ids) for ln in digest.l2]),
        "ledger": kept_facts(facts, fact_ids, [(_ledger_text(i), i.source.segment_ids) for i in digest.ledger
                                               if i.kind in FACT_KINDS]),
        "rolling": {
            **kept_facts(facts, fact_ids, [(ln.text, ln.source.segment_ids) for ln in rolling]),
            "chunk_s": ROLLING_CHUNK_S, "lines": ROLLING_LINES, "steps": steps, "build_s": round(rolling_s, 3),
        },
    }


def _digest_shape(digest: Any) -> tuple[Any, ...]:
    """A digest without its segment ids (they name the meeting): sections' times, L1, L2 and ledger texts."""
    return (
        tuple((s.section.start, s.section.end, s.section.closed_by, tuple(ln.text for ln in s.lines))
              for s in digest.sections),
        tuple(ln.text for ln in digest.l2),
        tuple((i.kind, i.text, i.status) for i in digest.ledger),
    )


# ------------------------------------------------------------------------------------------------------
# Cost and ask latency.
# ------------------------------------------------------------------------------------------------------


def _rounded(timings: dict[str, float]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in timings.items()}


def live_run(log: Any, search: Any, digester: Any, meeting: PlantedMeeting, meeting_id: str,
             tenant: str, batch: int) -> tuple[dict[str, Any], Any]:
    """Append the meeting in batches, catching the index up and updating the digest after each one."""
    catch_up: list[float] = []
    updates: list[float] = []
    parts: Counter[str] = Counter()
    for lo in range(0, len(meeting), batch):
        append_range(log, meeting_id, tenant, meeting, lo, min(lo + batch, len(meeting)))
        t0 = time.perf_counter()
        search.meeting_index(meeting_id, tenant=tenant)
        t1 = time.perf_counter()
        digester.update(meeting_id, tenant=tenant)
        updates.append(time.perf_counter() - t1)
        catch_up.append(t1 - t0)
        parts.update(digester.timings)
    log.close_meeting(meeting_id, tenant=tenant)
    t0 = time.perf_counter()
    final = digester.update(meeting_id, tenant=tenant)
    final_s = time.perf_counter() - t0
    return {
        "batch_segments": batch,
        "updates": len(updates),
        "update_total_s": round(sum(updates), 3),
        "update": latency(updates),
        "update_breakdown_total_s": _rounded({k: parts[k] for k in ("sections_s", "l1_s", "l2_s", "ledger_s")}),
        "last_update_s": round(updates[-1], 4) if updates else None,
        "index_catch_up_total_s": round(sum(catch_up), 3),
        "index_catch_up": latency(catch_up),
        "closing_update_s": round(final_s, 4),
        "closing_update_breakdown_s": _rounded(digester.timings),
    }, final


# ------------------------------------------------------------------------------------------------------
# One length.
# ------------------------------------------------------------------------------------------------------


def run_hours(ctx: Any, hours: float, seed: int, routes: Any, path: Path, *, batch: int = LIVE_BATCH,
              rounds: int = ASK_ROUNDS) -> dict[str, Any]:
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.store.records import segment_id_for
    from meetmem.summarizers.digest import MeetingDigester
    from meetmem.summarizers.extractive import ExtractiveSummarizer

    started = time.perf_counter()
    tenant = ctx.tenant
    meeting = generate_meeting(hours, seed)
    closed_id, live_id = f"bench-summaries-{hours:g}h-closed", f"bench-summaries-{hours:g}h-live"
    fact_ids = [segment_id_for(tenant, closed_id, DEVICE, f.index) for f in meeting.facts]
    embedder = routes.default if routes is not None else None
    label = f"[{hours:g} h]"
    result: dict[str, Any] = {
        "hours": hours,
        "segments": len(meeting),
        "segments_per_hour": round(len(meeting) / hours),
        "speakers": len(set(meeting.speakers)),
        "topic_blocks": len(meeting.topics),
        "planted_facts": {"total": len(meeting.facts), "by_kind": dict(sorted(Counter(f.kind for f in
                                                                                      meeting.facts).items()))},
    }
    with TranscriptLog(path) as log:
        for lo in range(0, len(meeting), 50):
            append_range(log, closed_id, tenant, meeting, lo, min(lo + 50, len(meeting)))
        log.close_meeting(closed_id, tenant=tenant)
        progress_note(ctx, f"{label} {len(meeting)} segments, {len(meeting.facts)} planted facts; "
                           "embedding and indexing ...")
        search = TranscriptSearch(log, routes)
        if embedder is not None:
            embedder.reuse = False
            model_s0, texts0 = embedder.model_seconds, embedder.texts_embedded
        build = timed_build(search, closed_id, tenant)
        cost: dict[str, Any] = {
            "embed_s": build["vectors_s"] if embedder is not None else None,
            "index_s": round(build["total_s"] - build["vectors_s"], 4),
            "index_build_breakdown_s": build,
            "embedding": None if embedder is None else {
                "model": embedder.name, "texts_embedded": embedder.texts_embedded - texts0,
                "model_s": round(embedder.model_seconds - model_s0, 3)},
        }
        progress_note(ctx, f"{label} digesting the closed meeting ...")
        digester = MeetingDigester(log, search, ExtractiveSummarizer())
        t0 = time.perf_counter()
        digest = digester.update(closed_id, tenant=tenant)
        cost["digest_closed"] = {"update_s": round(time.perf_counter() - t0, 4),
                                 "breakdown_s": _rounded(digester.timings)}
        segments = log.segments(closed_id, tenant=tenant)
        stored = {s.segment_id for s in segments}
        result["sections"] = {"count": len(digest.sections),
                              "closed_by": dict(Counter(s.section.closed_by for s in digest.sections)),
                              "mean_minutes": round(sum(s.section.end - s.section.start for s in digest.sections)
                                                    / 60 / max(len(digest.sections), 1), 1),
                              "l1_lines": sum(len(s.lines) for s in digest.sections), "l2_lines": len(digest.l2),
                              "ledger_items": len(digest.ledger)}
        result["traceability"] = traceability(digest, stored)
        result["drift"] = drift(digest, meeting, fact_ids, segments)

        progress_note(ctx, f"{label} live meeting: update after every {batch} segments ...")
        if embedder is not None:
            embedder.reuse = True
        cost["live"], live_final = live_run(log, search, digester, meeting, live_id, tenant, batch)
        cost["live"]["final_digest_equals_closed"] = _digest_shape(live_final) == _digest_shape(digest)
        if embedder is not None:
            cost["live"]["vectors"] = "reused from the closed copy (same texts): catch-up is indexing only"
        result["cost"] = cost

        progress_note(ctx, f"{label} ask latency, idle and during digest rebuilds ...")
        questions = ask_questions(meeting.facts, ASK_QUESTIONS)
        result["ask"] = ask_latency(log, search, digester, closed_id, tenant, questions, rounds, meeting)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


# ------------------------------------------------------------------------------------------------------
# The command.
# ------------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace, ctx: Any) -> int:
    from meetmem.store.index.embedder_routes import EmbedderRoutes, embedder_routes

    wall0 = time.perf_counter()
    info = machine_info()
    head, modified = checkout(["summarizers", "store", "answers", "eval/bench/summaries.py",
                               "eval/bench/planted_meeting.py"])
    s = ctx.settings
    routes = embedder_routes(s.embedder, s.embedder_zh, threads=s.threads)
    if routes is not None:
        routes = EmbedderRoutes(SharedVectorEmbedder(routes.default, reuse=False), routes.by_lang)
        progress_note(ctx, f"loading the {s.embedder} embedding model ...")
        t0 = time.perf_counter()
        routes.default.encode_query("warm up")
        info["embedder_load_s"] = round(time.perf_counter() - t0, 2)
    results = []
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-summaries-") as tmp:
        for hours in args.hours:
            results.append(run_hours(ctx, hours, args.seed, routes, Path(tmp) / f"summaries-{hours:g}h.db",
                                     batch=args.batch, rounds=args.rounds))
            progress_note(ctx, f"[{hours:g} h] done in {results[-1]['wall_s']:.1f}s")
    report = {
        "benchmark": "summaries",
        "machine": info,
        "code": {"git_head": head, "modified_files": modified},
        "config": {
            "hours": args.hours, "seed": args.seed, "embedder": s.embedder, "embedder_zh": s.embedder_zh,
            "threads": s.threads, "summarizer": "extractive", "live_batch": args.batch, "ask_rounds": args.rounds,
            "rolling_baseline": f"extractive over previous {ROLLING_LINES} lines + next {ROLLING_CHUNK_S:g} s",
            "timing": "wall clock (time.perf_counter); percentiles nearest-rank",
        },
        "results": results,
        "wall_s": round(time.perf_counter() - wall0, 1),
    }
    sys.stdout.write(json.dumps(report, indent=None if args.json else 2) + "\n")
    sys.stdout.flush()
    return 0


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "summaries", parents=[common], help="traceability, drift and cost of summaries and the ledger",
        description="On a generated meeting with planted facts (owners, due dates, amounts, event times): do "
                    "L1, L2 and ledger citations resolve, do planted values survive word for word (against a "
                    "rolling-summary baseline), what do embedding, digesting and live updates cost, and does "
                    "digesting slow questions down. One JSON object on stdout; progress on stderr. Uses a "
                    "temporary database.",
    )
    p.add_argument("--hours", type=hours_arg, default=list(DEFAULT_HOURS), metavar="H[,H...]",
                   help="meeting lengths in hours (default: 1,4)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"seed of the meetings (default: {DEFAULT_SEED})")
    p.add_argument("--batch", type=int, default=LIVE_BATCH,
                   help=f"segments per append in the live run (default: {LIVE_BATCH})")
    p.add_argument("--rounds", type=int, default=ASK_ROUNDS,
                   help=f"times each question is asked per condition (default: {ASK_ROUNDS})")
    p.set_defaults(func=run)
