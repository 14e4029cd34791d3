"""`meetmem eval run`: needle recall of meetmem's answers against the usual baselines, side by side.

A needle meeting (`needle_types.NeedleMeeting`: segments plus planted facts, each with questions worded
unlike the meeting and the value a right answer contains) is ingested into a fresh SQLite log (one device,
seq = row index), closed, indexed (hybrid when the routes hold a model, else BM25) and digested (extractive
summarizer, rule ledger). Then every question is put to every method on the same data in one process:

* `meetmem`: `Answerer.ask`. recall@k = the needle's segment among the first k citations; exact answer =
  the answer text contains the expected value (case and whitespace folded; Chinese compared without
  spaces); ask latency. The compiled prompt of one ask session over all questions in order
  (`PromptSources.compile`, budget 4000, each round in the history as an ask session holds it): tokens per
  question and prefix reuse; `meetmem_prompt` recall = the needle's segment among the first k retrieved
  segments the prompt shows.
* `bm25`, `dense`: one retriever alone, `search(mode=...)`; recall@k of its first k hits; tokens = the
  question and those k segments.
* `sliding_window`: the last N tokens of the transcript (N = the budget) at the end of the meeting;
  recall = the needle's segment is inside.
* `rolling_summary`: the extractive summary remade from itself every 5 minutes;
  recall = the expected value is in the final summary.
* `full_transcript`: the whole transcript and the question; recall = the needle's segment is within the
  last 128k tokens (all of them when the transcript fits).
* drift per layer: the share of questions whose expected value appears in the text of meetmem's first k
  citations (`raw_retrieval`), in any L1 line (`l1`), in any L2 line (`l2`), and anywhere in the stored
  transcript (`raw_log`, the ceiling); and the same questions answered from one layer alone
  (`layer_answers`: the value in the first k lines the product's search finds among the L1 or L2 lines),
  with raw retrieval against the L2 answer on the questions whose value L2 keeps (`on_kept`).
* ledger: todo precision and recall (a ledger todo matches a todo needle when its cited segments include
  the needle's segment) and traceability of L1, L2 and ledger citations.

Keys of `evaluate`'s result: meeting, config, build, methods, drift, ledger, by_kind, by_lang, by_wording
(questions naming the subject as said or reworded), by_method, misses (meetmem's questions not recalled
or not answered exactly, the first 20 shown), wall_s.
`meetmem eval run --json` prints it with machine and code added.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from ..harness import latency
from .baselines import (
    LONG_WINDOW,
    final_rolling_summary,
    full_transcript_tokens,
    retrieved_prompt_tokens,
    segment_tokens,
    sliding_window,
)
from .layer_answers import LayerAnswers
from .records import NeedleMeeting
from .scoring import (
    LAYER_ANSWERS,
    LAYERS,
    METHODS,
    QuestionOutcome,
    groups,
    holds,
    kept_comparison,
    kind_order,
    ledger_todos,
    mean,
    recall,
    share,
)

DEFAULT_K = 5
DEFAULT_BUDGET = 4000
DEVICE = "needle-eval"
MEETING_ID = "needle-meeting"
MISSES_SHOWN = 20
def ingest(log: Any, meeting: NeedleMeeting, *, meeting_id: str = MEETING_ID, tenant: str | None = None,
           batch: int = 500) -> list[str]:
    """Append the meeting's rows from one device (seq = row index), close it; the segment id of each row."""
    from meetmem.store.interchange import validate_segment
    from meetmem.store.log import DEFAULT_TENANT
    from meetmem.store.records import segment_id_for

    tenant = tenant or DEFAULT_TENANT
    items = [validate_segment(row, i) for i, row in enumerate(meeting.segments)]
    for lo in range(0, len(items), batch):
        chunk = items[lo:lo + batch]
        result = log.append(meeting_id, DEVICE, chunk, tenant=tenant)
        if result.new != len(chunk):
            raise RuntimeError(f"the log stored {result.new} of {len(chunk)} segments of {meeting_id}")
    log.close_meeting(meeting_id, tenant=tenant)
    return [segment_id_for(tenant, meeting_id, DEVICE, i) for i in range(len(items))]


#: A prompt's segment line (`[#12 03:04 Ana] ...`) and a block named for a segment shown above in the history.
_HANDLE_RE = re.compile(r"\[#(\d+) ")
_NAME_HANDLE_RE = re.compile(r"segment #(\d+) ")


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


def traceability(digest: Any, stored: set[str]) -> dict[str, Any]:
    """Per layer: how many lines or items there are and how many cite only stored segments of the meeting."""
    cites = {
        "l1_lines": [line.source.segment_ids for s in digest.sections for line in s.lines],
        "l2_lines": [line.source.segment_ids for line in digest.l2],
        "ledger_items": [item.source.segment_ids for item in digest.ledger],
    }
    out: dict[str, Any] = {}
    for name, cited in cites.items():
        resolved = sum(1 for ids in cited if ids and all(i in stored for i in ids))
        out[name] = {"count": len(cited), "resolved": resolved,
                     "share": round(resolved / len(cited), 4) if cited else None}
    return out


def evaluate(meeting: NeedleMeeting, *, db_path: str | Path, routes: Any, k: int = DEFAULT_K,
             budget: int = DEFAULT_BUDGET, progress: Callable[[str], None] | None = None,
             on_question: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Every needle question put to meetmem and to each baseline on one fresh copy of the meeting.

    Args:
        meeting: the needle meeting.
        db_path: a database file that does not exist yet (the meeting is ingested into it).
        routes: the embedder routes (`embedder_routes(...)`), or None for BM25 alone (no `dense` row).
        k: how many citations or hits count for recall.
        budget: the compiled prompt's token budget, also the sliding window's size.
        progress: called with a line of progress for a person, if given.
        on_question: called with (questions done, questions in all) after each question, for a progress bar.

    Returns:
        The figures; see the module docstring for the keys.
    """
    from meetmem.answers.compiler import CompilerOptions, Turn, prefix_reuse
    from meetmem.answers.pipeline import Answerer
    from meetmem.answers.prompting import PromptSources
    from meetmem.answers.tokens import count_tokens
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import DEFAULT_TENANT, TranscriptLog
    from meetmem.summarizers.digest import MeetingDigester
    from meetmem.summarizers.extractive import ExtractiveSummarizer

    say = progress or (lambda _message: None)
    db_path = Path(db_path)
    if db_path.exists():
        raise FileExistsError(f"{db_path} exists; the evaluation needs a fresh database")
    started = time.perf_counter()
    tenant = DEFAULT_TENANT
    meeting_id = MEETING_ID
    questions = [(n, q) for n in meeting.needles for q in n.questions]
    for needle in meeting.needles:
        outside = [i for i in needle.segments if not 0 <= i < len(meeting.segments)]
        if outside:
            raise ValueError(f"a {needle.kind} needle points at segment {outside[0]}, "
                             f"outside the meeting's {len(meeting.segments)}")
    rows = [QuestionOutcome(n, q.question, q.expected, q.reworded) for n, q in questions]
    build: dict[str, float] = {}
    with TranscriptLog(db_path) as log, ExitStack() as closing:
        t0 = time.perf_counter()
        ids = ingest(log, meeting, meeting_id=meeting_id, tenant=tenant)
        build["ingest_s"] = round(time.perf_counter() - t0, 3)
        position = {sid: i for i, sid in enumerate(ids)}
        say(f"{len(ids)} segments, {len(meeting.needles)} needles, {len(rows)} questions; indexing ...")
        search = TranscriptSearch(log, routes)
        t0 = time.perf_counter()
        search.meeting_index(meeting_id, tenant=tenant)
        build["index_s"] = round(time.perf_counter() - t0, 3)
        say("digesting ...")
        digester = MeetingDigester(log, search, ExtractiveSummarizer())
        t0 = time.perf_counter()
        digest = digester.update(meeting_id, tenant=tenant)
        build["digest_s"] = round(time.perf_counter() - t0, 3)
        segments = log.segments(meeting_id, tenant=tenant)
        stored = {s.segment_id for s in segments}
        text_of = {s.segment_id: s.text for s in segments}

        # Baselines that do not depend on the question.
        costs = segment_tokens(segments)
        full = full_transcript_tokens(segments, costs=costs)
        window = sliding_window(segments, budget, costs=costs)
        long_window = sliding_window(segments, LONG_WINDOW, costs=costs)
        t0 = time.perf_counter()
        rolling = final_rolling_summary(segments)
        build["rolling_summary_s"] = round(time.perf_counter() - t0, 3)
        l1_text = "\n".join(line.text for s in digest.sections for line in s.lines)
        l2_text = "\n".join(line.text for line in digest.l2)
        log_text = "\n".join(text_of.values())

        t0 = time.perf_counter()
        layer_answers = closing.enter_context(LayerAnswers(
            digest, db_path.with_name(db_path.stem + "-layers.db"), routes, lang=meeting.lang))
        build["layer_index_s"] = round(time.perf_counter() - t0, 3)
        answerer = Answerer(search, digests=digester.stored)
        sources = PromptSources(search, digester.stored, stamp=digester.stamp)
        options = CompilerOptions(budget=budget)
        for row in rows[:2]:  # warm-up (first touches of the index and the model), not counted
            answerer.ask(meeting_id, row.question, tenant=tenant)
            sources.compile(meeting_id, row.question, tenant=tenant, options=options)

        say(f"asking {len(rows)} questions ...")
        ask_walls: list[float] = []
        reuse: list[float] = []
        history: list[Any] = []
        previous: list[dict[str, str]] | None = None
        over_budget = 0
        dense_ok = routes is not None
        for done, row in enumerate(rows, start=1):
            targets = {ids[i] for i in row.needle.segments}
            lang = row.needle.lang
            q_tokens = count_tokens(row.question)

            t0 = time.perf_counter()
            answer = answerer.ask(meeting_id, row.question, tenant=tenant)
            ask_walls.append(time.perf_counter() - t0)
            cited = [c.segment_id for c in answer.citations[:k]]
            row.hit["meetmem"] = not targets.isdisjoint(cited)
            row.exact = holds(answer.answer, row.expected, lang)
            row.answer = answer.answer
            row.cited = tuple(position.get(c, -1) for c in cited)
            row.first = row.cited[0] if row.cited else -1
            row.hit["raw_retrieval"] = any(holds(text_of.get(c, ""), row.expected, lang) for c in cited)

            compiled = sources.compile(meeting_id, row.question, tenant=tenant, history=tuple(history),
                                       options=options)
            prompt = compiled.prompt
            row.tokens["meetmem"] = row.tokens["meetmem_prompt"] = prompt.tokens
            over_budget += prompt.tokens > budget
            messages = prompt.messages()
            if previous is not None:
                reuse.append(prefix_reuse(previous, messages))
            previous = messages
            shown = [e.segment.segment_id for e in shown_evidence(compiled, above=True)[:k]]
            row.hit["meetmem_prompt"] = not targets.isdisjoint(shown)
            history.append(Turn(row.question, answer.answer, tuple(shown_evidence(compiled))))

            for mode in ("bm25", "dense"):
                if mode == "dense" and not dense_ok:
                    row.hit[mode] = None
                    continue
                hits = search.search(meeting_id, row.question, tenant=tenant, k=k, mode=mode)
                row.hit[mode] = not targets.isdisjoint(h.segment.segment_id for h in hits)
                row.tokens[mode] = retrieved_prompt_tokens(hits, row.question)

            row.hit["sliding_window"] = not targets.isdisjoint(window.segment_ids)
            row.tokens["sliding_window"] = window.tokens + q_tokens
            row.hit["rolling_summary"] = holds(rolling.text, row.expected, lang)
            row.tokens["rolling_summary"] = rolling.tokens + q_tokens
            row.hit["full_transcript"] = not targets.isdisjoint(long_window.segment_ids)
            row.tokens["full_transcript"] = full + q_tokens
            row.hit["l1"] = holds(l1_text, row.expected, lang)
            row.hit["l2"] = holds(l2_text, row.expected, lang)
            row.hit["raw_log"] = holds(log_text, row.expected, lang)
            for layer in ("l1", "l2"):
                lines = layer_answers.answer(layer, row.question, k)
                row.hit[f"{layer}_answer"] = holds("\n".join(line.text for line in lines), row.expected, lang)
            if on_question is not None:
                on_question(done, len(rows))
            elif done % 10 == 0 or done == len(rows):
                say(f"questions: {done}/{len(rows)}")

        methods_run = [m for m in METHODS if m != "dense" or dense_ok]
        prompt_tokens = [r.tokens["meetmem"] for r in rows]
        methods: dict[str, Any] = {
            "meetmem": {
                "recall_at_k": recall(rows, "meetmem"),
                "exact_answer_rate": share(sum(r.exact for r in rows), len(rows)),
                "prompt_tokens": {"mean": mean(prompt_tokens),
                                  "p50": statistics.median(prompt_tokens) if prompt_tokens else None,
                                  "max": max(prompt_tokens, default=None), "over_budget": over_budget,
                                  "budget": budget},
                "prefix_reuse": {"n": len(reuse), "mean": round(statistics.fmean(reuse), 4) if reuse else None,
                                 "min": round(min(reuse), 4) if reuse else None},
                "ask_latency": latency(ask_walls),
            },
            "meetmem_prompt": {"recall_at_k": recall(rows, "meetmem_prompt"),
                               "definition": f"needle among the first {k} retrieved segments the prompt shows"},
            "bm25": {"recall_at_k": recall(rows, "bm25"), "tokens_per_question": mean(
                [r.tokens["bm25"] for r in rows])},
            "dense": ({"recall_at_k": recall(rows, "dense"),
                       "tokens_per_question": mean([r.tokens["dense"] for r in rows])} if dense_ok else None),
            "sliding_window": {"recall": recall(rows, "sliding_window"), **window.public(),
                               "tokens_per_question": mean([r.tokens["sliding_window"] for r in rows])},
            "rolling_summary": {"recall": recall(rows, "rolling_summary"), **rolling.public(),
                                "tokens_per_question": mean([r.tokens["rolling_summary"] for r in rows])},
            "full_transcript": {"recall": recall(rows, "full_transcript"), "transcript_tokens": full,
                                "tokens_per_question": mean([r.tokens["full_transcript"] for r in rows]),
                                f"fits_{LONG_WINDOW // 1000}k": full <= LONG_WINDOW, "window_tokens": LONG_WINDOW},
        }
        layers = {layer: recall(rows, layer) for layer in LAYERS}
        drift = {**layers, "l1_lines": sum(len(s.lines) for s in digest.sections), "l2_lines": len(digest.l2),
                 "definition": "share of questions whose expected value appears in the layer's text",
                 "answers": {"raw_retrieval": layers["raw_retrieval"],
                             **{name: recall(rows, name) for name in LAYER_ANSWERS},
                             "definition": f"share of questions whose expected value is in the first {k} "
                                           "citations of meetmem's answer over the log (raw_retrieval), or in "
                                           f"the first {k} lines the same search finds among the L1 or the L2 "
                                           "lines alone"},
                 "on_kept": {layer: kept_comparison(rows, layer, f"{layer}_answer") for layer in ("l1", "l2")}}
        corrections = [r for r in rows if r.needle.corrects is not None]
        distractors = set(meeting.distractors)
        methods["meetmem"]["answers_from_stale_segment"] = {
            "corrections_asked": len(corrections),
            "count": sum(r.first == r.needle.corrects for r in corrections),
            "definition": "a correction's question answered first from the segment it corrects"}
        methods["meetmem"]["answers_from_distractor"] = {
            "count": sum(r.first in distractors for r in rows), "distractors": len(distractors),
            "definition": "the answer's first citation is a distractor segment"}
        ledger = {"todo": ledger_todos(digest, meeting.needles, ids),
                  "traceability": traceability(digest, stored)}

    by_method = []
    for method in methods_run:
        share_recalled = recall(rows, method)
        tokens = [r.tokens[method] for r in rows if method in r.tokens]
        by_method.append({"method": method, "recall_at_k": share_recalled, "tokens_per_question": mean(tokens)})
    misses = [
        {"kind": r.needle.kind, "lang": r.needle.lang, "question": r.question, "expected": r.expected,
         "recalled": r.hit["meetmem"], "exact": r.exact, "needle_segment": r.needle.segment_index,
         "cited_segments": list(r.cited), "answer": r.answer}
        for r in rows if not (r.hit["meetmem"] and r.exact)
    ]
    return {
        "meeting": {"lang": meeting.lang, "seed": meeting.seed, "hours": meeting.hours,
                    "noise": meeting.notes.get("noise", 0.0), "source": meeting.notes.get("source", "text"),
                    "reworded_questions": sum(r.reworded for r in rows),
                    "segments": len(meeting.segments), "needles": len(meeting.needles), "questions": len(rows),
                    "needles_by_kind": dict(sorted(Counter(n.kind for n in meeting.needles).items(),
                                                   key=lambda kv: kind_order(kv[0]))),
                    "distractors": len(meeting.distractors), "transcript_tokens": full},
        "config": {"k": k, "budget": budget, "window_tokens": budget,
                   "search": "hybrid" if dense_ok else "bm25",
                   "embedders": sorted(routes.by_name()) if routes is not None else [],
                   "summarizer": "extractive", "ledger": "rules"},
        "build": build,
        "methods": methods,
        "drift": drift,
        "ledger": ledger,
        "by_kind": groups(rows, lambda r: r.needle.kind, methods_run, kind_order),
        "by_lang": groups(rows, lambda r: r.needle.lang, methods_run),
        "by_wording": groups(rows, lambda r: "reworded" if r.reworded else "as_said", methods_run),
        "by_method": by_method,
        "misses": {"not_recalled": sum(not r.hit["meetmem"] for r in rows),
                   "not_exact": sum(not r.exact for r in rows), "shown": misses[:MISSES_SHOWN]},
        "wall_s": round(time.perf_counter() - started, 2),
    }


def table(result: dict[str, Any]) -> str:
    """The result as a readable comparison table, then the breakdowns by kind and the ledger."""
    k = result["config"]["k"]
    m = result["meeting"]
    out = [f"needle meeting: {m['hours']:g} h, {m['segments']} segments, {m['needles']} needles, "
           f"{m['questions']} questions ({m['lang']}), transcript {m['transcript_tokens']} tokens; "
           f"search {result['config']['search']}", ""]
    out.append(f"{'method':<18} {'recall@' + str(k):>9} {'tokens/question':>16}")
    for row in result["by_method"]:
        shown = "-" if row["recall_at_k"] is None else f"{row['recall_at_k']:.3f}"
        tokens = "-" if row["tokens_per_question"] is None else f"{row['tokens_per_question']:.0f}"
        out.append(f"{row['method']:<18} {shown:>9} {tokens:>16}")
    mm = result["methods"]["meetmem"]
    lat = mm["ask_latency"]
    out += ["", f"meetmem exact answers {mm['exact_answer_rate']}, prefix reuse {mm['prefix_reuse']['mean']}, "
                f"ask p50 {lat.get('p50_ms')} ms, p95 {lat.get('p95_ms')} ms; corrections answered from the "
                f"stale segment {mm['answers_from_stale_segment']['count']}/"
                f"{mm['answers_from_stale_segment']['corrections_asked']}"]
    d = result["drift"]
    out.append("drift (expected value in layer): " + ", ".join(f"{name} {d[name]}" for name in LAYERS))
    answers = d["answers"]
    out.append(f"answered from one layer (value in the first {k}): raw_retrieval {answers['raw_retrieval']}, "
               + ", ".join(f"{name} {answers[name]}" for name in LAYER_ANSWERS))
    for layer, kept in d["on_kept"].items():
        out.append(f"  on the {kept['questions']} questions whose value {layer.upper()} keeps: raw_retrieval "
                   f"{kept['raw_retrieval']}, {layer}_answer {kept[layer + '_answer']}")
    todo = result["ledger"]["todo"]
    trace = result["ledger"]["traceability"]
    out.append(f"ledger todos: precision {todo['precision']}, recall {todo['recall']} "
               f"({todo['found_needles']}/{todo['needles']} needles, {todo['ledger_todos']} items); traceability "
               + ", ".join(f"{name} {v['share']}" for name, v in trace.items()))
    for title, breakdown in (("by kind", result["by_kind"]), ("by language", result["by_lang"]),
                          ("by wording of the subject", result["by_wording"])):
        out += ["", f"recall@{k} {title}: " + "  ".join(row["method"] for row in result["by_method"])]
        for name, group in breakdown.items():
            cells = " ".join("-" if group["recall_at_k"][row["method"]] is None
                             else f"{group['recall_at_k'][row['method']]:.2f}" for row in result["by_method"])
            out.append(f"  {name:<12} n={group['questions']:<4} {cells}  exact {group['exact_answer_rate']}")
    return "\n".join(out)
