"""Speaker needles: "who said we are not using titanium?" asked of a generated needle meeting.

For each planted fact that one person stated (a negation, a quote, an amount, a quantity, a name), a
question asks who said it, worded as a user recalls it. The meeting is stored the way the edge stores it:
its speakers as the edge's labels (`S1`, `S2`, ... in order of first speech), with their names only in the
meeting's speaker map (`store.speaker_map`, as a user would set them after the suggestions). An answer is
right when its first citation is the needle's segment and that segment's label maps to the person who said
it; `speaker_at_k` counts any of the first k citations.

    meetmem bench speaker-needles --hours 1            # --embedder none: BM25 alone
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from meetmem.cli.options import JSON, MODEL, flags
from meetmem.cli.output import emit_figures

from .records import Needle, NeedleMeeting

KINDS = ("negation", "quote", "money", "quantity", "name")


@dataclass(frozen=True)
class SpeakerQuestion:
    needle: Needle
    question: str
    speaker: str  # the person's name


def question_for(needle: Needle) -> str | None:
    """The "who said ..." question of an English needle, or None for a kind without one."""
    v = needle.values
    subject = v.get("subject", "")
    if needle.kind == "negation" and v.get("vendor"):
        return f"Who said we are not using {v['vendor']} for the {subject}?"
    if needle.kind == "quote" and v.get("quote"):
        return f'Who said "{v["quote"]}"?'
    if needle.kind == "money" and v.get("amount"):
        return f"Who said the {subject} is {v['amount']}?"
    if needle.kind == "quantity" and v.get("quantity"):
        return f"Who said the {subject} will be {v['quantity']}?"
    if needle.kind == "name" and v.get("name"):
        return f"Who said the {subject} would be called {v['name']}?"
    return None


def speaker_questions(meeting: NeedleMeeting) -> list[SpeakerQuestion]:
    out = []
    for needle in meeting.needles:
        if needle.kind not in KINDS or needle.lang != "en":
            continue
        question = question_for(needle)
        speaker = meeting.segments[needle.segment_index].get("speaker")
        if question and speaker:
            out.append(SpeakerQuestion(needle, question, str(speaker)))
    return out


def as_edge_labels(meeting: NeedleMeeting) -> tuple[NeedleMeeting, dict[str, str]]:
    """The meeting with its speakers replaced by edge labels, and `label -> name`."""
    labels: dict[str, str] = {}
    rows = []
    for row in meeting.segments:
        name = row.get("speaker")
        if name:
            labels.setdefault(name, f"S{len(labels) + 1}")
            row = {**row, "speaker": labels[name]}
        rows.append(row)
    return replace(meeting, segments=tuple(rows)), {label: name for name, label in labels.items()}


def evaluate(meeting: NeedleMeeting, *, db_path: Path, routes: Any, k: int = 5) -> dict[str, Any]:
    from meetmem.answers.pipeline import Answerer
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.store.speaker_map import SpeakerMap

    from .evaluation import MEETING_ID, ingest

    questions = speaker_questions(meeting)
    labelled, names = as_edge_labels(meeting)
    rows = []
    with TranscriptLog(db_path) as log:
        ids = ingest(log, labelled)
        SpeakerMap(log).set(MEETING_ID, names)
        search = TranscriptSearch(log, routes)
        search.meeting_index(MEETING_ID)
        answerer = Answerer(search)
        started = time.perf_counter()
        for item in questions:
            answer = answerer.ask(MEETING_ID, item.question)
            targets = {ids[i] for i in item.needle.segments}
            cited = answer.citations[:k]
            said_by = [names.get(c.speaker or "", c.speaker) for c in cited]
            first_right = bool(cited) and cited[0].segment_id in targets and said_by[0] == item.speaker
            any_right = any(c.segment_id in targets and who == item.speaker for c, who in zip(cited, said_by,
                                                                                              strict=True))
            rows.append({"kind": item.needle.kind, "question": item.question, "expected": item.speaker,
                         "answered": said_by[0] if said_by else None, "right": first_right, "right_at_k": any_right})
        wall = time.perf_counter() - started
    by_kind: dict[str, dict[str, Any]] = {}
    counts = Counter(r["kind"] for r in rows)
    for kind in counts:
        mine = [r for r in rows if r["kind"] == kind]
        by_kind[kind] = {"questions": len(mine), "speaker_at_1": round(sum(r["right"] for r in mine) / len(mine), 3),
                         f"speaker_at_{k}": round(sum(r["right_at_k"] for r in mine) / len(mine), 3)}
    total = len(rows)
    return {"questions": total, "k": k,
            "speaker_at_1": round(sum(r["right"] for r in rows) / total, 3) if total else None,
            f"speaker_at_{k}": round(sum(r["right_at_k"] for r in rows) / total, 3) if total else None,
            "by_kind": by_kind, "ask_mean_ms": round(1000 * wall / max(1, total), 1),
            "wrong": [r for r in rows if not r["right"]][:10]}


def run(args: argparse.Namespace, ctx: Any = None) -> int:
    from meetmem.store.index.embedder_routes import embedder_routes

    from .generator import generate

    meeting = generate(args.hours, seed=args.seed)
    s = ctx.settings
    routes = embedder_routes(s.embedder, s.embedder_zh, threads=s.threads)
    with tempfile.TemporaryDirectory(prefix="speaker-needles-") as tmp:
        result = evaluate(meeting, db_path=Path(tmp) / "needles.db", routes=routes, k=args.k)
    result = {"hours": args.hours, "seed": args.seed, "embedder": s.embedder, **result}
    emit_figures(result, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "speaker-needles", parents=flags(MODEL, JSON), help='"who said ...?" questions of a generated needle meeting',
        description="Generate a needle meeting, store it with edge-style speaker labels and the names in the "
                    "speaker map, ask who said each negation, quote, amount, quantity and name; print the share "
                    "whose first citation is the needle's segment with the right person. The figures on stdout "
                    "(one JSON object with --json).")
    p.add_argument("--hours", type=float, default=1.0, help="meeting length (default 1)")
    p.add_argument("--seed", type=int, default=7, help="generator seed (default 7)")
    p.add_argument("--k", type=int, default=5, help="citations counted for speaker_at_k (default 5)")
    p.set_defaults(func=run)
