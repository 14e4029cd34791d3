"""`meetmem bench questions`: time, topic, speaker and why questions on AMI meetings, scored by span.

The questions (`eval/data/ami_questions.jsonl`, written for this project against AMI dev meetings) each
name a meeting, a kind and the spans of the meeting (seconds) where a right answer lies: the range a
time question names; the human decision's evidence for a topic question; the stretches where the named
speaker talks about the topic; the reasons given for a why question. A question counts when its answer's
first citation overlaps one of its spans.

The meetings are read from the data path (never copied into the project) and ingested through the CLI's
own path into a fresh database: each AMI series (ES2002a-d, ...) into a tenant of its own, with its speaker
labels as the participants, so a speaker who introduced themself in the series' first meeting ("I'm the
project manager") is known by that role in the later ones.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.cli.options import JSON, MODEL, flags
from meetmem.cli.output import emit_figures

from ..harness import BenchDataError, guarded

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext

DEFAULT_QUESTIONS = Path(__file__).parent / "data" / "ami_questions.jsonl"


def load_questions(path: Path) -> list[dict[str, Any]]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        obj = json.loads(line)
        if not {"meeting", "kind", "question", "spans"} <= set(obj):
            raise BenchDataError(f"{path}:{number}: needs meeting, kind, question and spans")
        questions.append(obj)
    return questions


def first_citation_in_span(answer: dict[str, Any], spans: list[list[float]]) -> bool:
    """Whether the answer's first citation overlaps one of the spans (seconds)."""
    citations = answer.get("citations") or []
    if not citations:
        return False
    first = citations[0]
    return any(first["start"] <= b and first["end"] >= a for a, b in spans)


def _series(meeting_id: str) -> str:
    return meeting_id.rstrip("abcdefgh")


def run(data_dir: Path, questions_path: Path, *, embedder: str = "minilm",
        db: Path | None = None, ledger: str = "combined") -> dict[str, Any]:
    """Ingest the series the questions need, ask every question, and score the first citations."""
    from meetmem.cli.context import CommandContext
    from meetmem.settings import Settings
    from meetmem.store.records import SegmentInput

    from .ami_ledger import ami_segments

    questions = load_questions(questions_path)
    folder = Path(data_dir) / "dev"
    wanted = sorted({_series(q["meeting"]) for q in questions})
    files = {f.stem: f for f in folder.glob("*.json")} if folder.is_dir() else {}
    if not files:
        raise BenchDataError(f"{data_dir} holds no AMI meetings under dev/")
    from meetmem.store.meeting_meta import meeting_meta

    with tempfile.TemporaryDirectory() as tmp:
        path = db or Path(tmp) / "questions.db"
        ctx = CommandContext(Settings(db=path, embedder=embedder, ledger=ledger), quiet=True)
        results: list[dict[str, Any]] = []
        t_ingest = time.perf_counter()
        for series in wanted:
            for meeting_id in sorted(m for m in files if _series(m) == series):
                meeting = json.loads(files[meeting_id].read_text(encoding="utf-8"))
                segments = ami_segments(meeting)
                labels = sorted({s.speaker for s in segments if s.speaker})
                inputs = [SegmentInput(seq=s.seq, start=s.start, end=s.end, text=s.text, speaker=s.speaker,
                                       lang="en") for s in segments]
                ctx.log.append(meeting_id, "ami", inputs, tenant=series,
                               meta=meeting_meta(title=f"AMI {meeting_id}", participants=labels))
                ctx.log.close_meeting(meeting_id, tenant=series, reason="ingested")
                ctx.search.meeting_index(meeting_id, tenant=series)
                ctx.digester.update(meeting_id, tenant=series)
        ingest_s = time.perf_counter() - t_ingest
        from meetmem.answers.pipeline import Answerer

        baseline = Answerer(ctx.search, digests=ctx.digester.digest, route_questions=False)
        t_ask = time.perf_counter()
        for q in questions:
            series = _series(q["meeting"])
            answer = ctx.answerer.ask(q["meeting"], q["question"], tenant=series).public(explain=True)
            before = baseline.ask(q["meeting"], q["question"], tenant=series).public()
            first = answer["citations"][0] if answer["citations"] else None
            results.append({
                "meeting": q["meeting"], "kind": q["kind"], "question": q["question"],
                "route": answer.get("route", {}).get("name", answer["kind"]),
                "hit": first_citation_in_span(answer, q["spans"]),
                "hit_without_routes": first_citation_in_span(before, q["spans"]),
                "first_citation": None if first is None else [round(first["start"], 1), round(first["end"], 1),
                                                              first["speaker"], first["text"][:100]],
                "spans": q["spans"],
            })
        ask_s = (time.perf_counter() - t_ask) / 2  # each question is asked twice: with and without routes
        ctx.close()
    by_kind: dict[str, list[bool]] = defaultdict(list)
    without: dict[str, list[bool]] = defaultdict(list)
    routed: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        by_kind[r["kind"]].append(r["hit"])
        without[r["kind"]].append(r["hit_without_routes"])
        routed[r["kind"]].append(r["route"] == r["kind"])
    share = {k: round(sum(v) / len(v), 3) for k, v in sorted(by_kind.items())}
    return {
        "benchmark": "ami_questions",
        "questions": len(results),
        "meetings": sorted({r["meeting"] for r in results}),
        "criterion": "the answer's first citation overlaps one of the question's expected spans",
        "first_citation_in_span": round(sum(r["hit"] for r in results) / len(results), 3) if results else None,
        "by_kind": share,
        "without_routes": {
            "first_citation_in_span": round(sum(r["hit_without_routes"] for r in results) / len(results), 3)
            if results else None,
            "by_kind": {k: round(sum(v) / len(v), 3) for k, v in sorted(without.items())},
        },
        "routed_as_written": {k: round(sum(v) / len(v), 3) for k, v in sorted(routed.items())},
        "embedder": embedder,
        "ledger": ledger if embedder != "none" else "rules",
        "ingest_s": round(ingest_s, 1),
        "ask_s_per_question": round(ask_s / max(len(results), 1), 3),
        "results": results,
    }


def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    report = run(Path(args.data), Path(args.questions), embedder=ctx.settings.embedder, ledger=args.ledger)
    if not args.per_question:
        report.pop("results")
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "questions", parents=flags(MODEL, JSON), help="time, topic, speaker and why questions on AMI meetings",
        description="Ask the written time, topic, speaker and why questions about AMI dev meetings and report the "
                    "share whose first citation lies in the expected span, overall and by kind. The figures on "
                    "stdout (one JSON object with --json).")
    p.add_argument("--data", required=True, metavar="DIR", help="the AMI folder (dev/*.json)")
    p.add_argument("--questions", default=str(DEFAULT_QUESTIONS), metavar="FILE.jsonl",
                   help="the questions (default: eval/data/ami_questions.jsonl)")
    p.add_argument("--per-question", action="store_true", help="include every question's result")
    p.add_argument("--ledger", default="combined", choices=("combined", "detector", "rules"),
                   help="the ledger the digests hold (default combined: the service's default)")
    p.set_defaults(func=guarded(run_command))
