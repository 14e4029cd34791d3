"""`meetmem bench qmsum`: retrieval on the QMSum validation meetings, scored against annotated turn spans.

It prints its figures on stdout (ONE JSON object with --json); progress goes to stderr. It builds its own
temporary database (nothing is written to the user's log) and goes through the product's own paths:
`TranscriptLog.append`, `TranscriptSearch.search` and `Answerer.ask`.

``bench qmsum --data DIR`` (the QMSum validation meetings; the path is always given, the data never lives in
this repository). Each transcript turn becomes one segment whose `seq` is the turn's index, so a result maps
straight back onto QMSum's annotated turn spans. Times come from ``turn_timestamps_<split>.json`` when the
meeting has them; otherwise (the committee meetings) turn *i* is given ``[6 i, 6 i + 6)`` seconds. QMSum's
transcription markers (``{disfmarker}``, ``{vocalsound}``, ``{gap}``, ...) are annotation, not speech: they
are removed from the text (the original stays in `raw_text`) unless ``--keep-markers``; a turn that is
nothing but markers is not stored (it can never be a result, and it still counts in the spans). For every
*specific* query the first results of each method are scored against the annotated spans:

* ``hit@1``: the first result lies inside an annotated span;
* ``p@k``: the share of the first k results inside annotated spans (a missing result counts as a miss);
* ``hit@k`` and ``mrr@k`` for reference.

Methods: ``bm25``, ``dense``, ``hybrid_default`` (the current default `SearchOptions`, reported under
``search_options_used``), ``hybrid_rrf`` (reciprocal rank fusion, k 60, equal weights), ``hybrid_convex_d<w>``
(convex fusion with dense weight w and BM25 weight 1 - w), and ``ask``: the citations of `Answerer.ask` over
the default hybrid search, in the order it returns them. ``ratios`` divides each by ``bm25``, with a paired
bootstrap 95% interval over queries.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
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
    bootstrap_ratio,
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
    rounded_ratio,
    say_if,
)

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext
    from meetmem.store.index.embedder_routes import EmbedderRoutes
    from meetmem.store.index.embedders import Embedder
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.index.search_types import SearchOptions
    from meetmem.store.log import TranscriptLog
    from meetmem.store.records import SegmentInput

#: QMSum's `domain` field -> the short name used in the report.

DOMAINS = {"product(AMI)": "AMI", "academic(ICSI)": "ICSI", "committee": "committee"}
#: Seconds given to each turn of a meeting that has no timing (the committee meetings).
UNTIMED_TURN_S = 6.0
#: QMSum's transcription markers: annotation of non-speech, never words anybody said.
_MARKER_RE = re.compile(r"\{(?:disfmarker|vocalsound|nonvocalsound|gap|pause|comment)\}", re.IGNORECASE)
_SPACE_RE = re.compile(r"\s+")
QMSUM_DEVICE = "qmsum"

# -- QMSum ------------------------------------------------------------------------------------------------------
@dataclass
class QMSumMeeting:
    meeting_id: str
    domain: str
    turns: list[dict[str, Any]]
    timestamps: list[dict[str, Any]] | None


@dataclass
class QMSumQuery:
    qid: str
    meeting_id: str
    domain: str
    query: str
    spans: list[tuple[int, int]]

    def relevant(self, turn: int) -> bool:
        return any(a <= turn <= b for a, b in self.spans)


def load_qmsum(data: Path, split: str) -> tuple[list[QMSumMeeting], list[QMSumQuery]]:
    """The split's meetings (sorted by id) and its specific queries, checked for consistency."""
    queries_file = data / f"queries_{split}.jsonl"
    meetings_dir = data / split
    if not queries_file.is_file() or not meetings_dir.is_dir():
        raise BenchDataError(f"{data} does not hold QMSum's {split} split ({queries_file.name} and {split}/)")
    timestamps: dict[str, list[dict[str, Any]]] = {}
    ts_file = data / f"turn_timestamps_{split}.json"
    if ts_file.is_file():
        timestamps = json.loads(ts_file.read_text(encoding="utf-8")).get("meetings", {})
    queries: list[QMSumQuery] = []
    domains: dict[str, str] = {}
    n_turns: dict[str, int] = {}
    for line in queries_file.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        domains[obj["meeting_id"]] = DOMAINS.get(obj["domain"], obj["domain"])
        if obj.get("type") != "specific" or not obj.get("relevant_turn_spans_inclusive"):
            continue
        spans = [(int(a), int(b)) for a, b in obj["relevant_turn_spans_inclusive"]]
        queries.append(QMSumQuery(obj["qid"], obj["meeting_id"], domains[obj["meeting_id"]], obj["query"], spans))
        n_turns[obj["meeting_id"]] = int(obj["n_turns"])
    meetings: list[QMSumMeeting] = []
    for path in sorted(meetings_dir.glob("*.json")):
        mid = path.stem
        turns = json.loads(path.read_text(encoding="utf-8"))["meeting_transcripts"]
        if mid in n_turns and n_turns[mid] != len(turns):
            raise BenchDataError(f"{path}: {len(turns)} turns, but its queries say {n_turns[mid]}")
        times = timestamps.get(mid)
        if times is not None:
            if [t["turn"] for t in times] != list(range(len(turns))):
                raise BenchDataError(f"{ts_file.name}: the turns of {mid} do not match {path.name}")
        meetings.append(QMSumMeeting(mid, domains.get(mid, "unknown"), turns, times))
    known = {m.meeting_id for m in meetings}
    missing = sorted({q.meeting_id for q in queries} - known)
    if missing:
        raise BenchDataError(f"queries name meetings that {meetings_dir} lacks: {', '.join(missing[:5])}")
    return meetings, queries


def clean_turn(text: str) -> str:
    """A QMSum turn without its transcription markers, whitespace collapsed."""
    return _SPACE_RE.sub(" ", _MARKER_RE.sub(" ", text)).strip()


def qmsum_segments(meeting: QMSumMeeting, *, keep_markers: bool = False) -> tuple[list[SegmentInput], int]:
    """The meeting's turns as validated segments (`seq` = turn index) and how many turns were left out."""
    from meetmem.store.interchange import validate_segment

    segments: list[SegmentInput] = []
    skipped = 0
    for i, turn in enumerate(meeting.turns):
        raw = turn.get("content") or ""
        text = _SPACE_RE.sub(" ", raw).strip() if keep_markers else clean_turn(raw)
        if not text:
            skipped += 1
            continue
        if meeting.timestamps is not None:
            start = float(meeting.timestamps[i]["start"])
            end = max(start, float(meeting.timestamps[i]["end"]))
        else:
            start = i * UNTIMED_TURN_S
            end = start + UNTIMED_TURN_S
        obj = {"start": start, "end": end, "text": text, "speaker": turn.get("speaker") or None, "lang": "en",
               "raw_text": raw if raw != text else None}
        segments.append(validate_segment(obj, i))
    return segments, skipped


@dataclass
class MethodScores:
    """Per-query scores of one method, in query order."""

    hit1: list[float] = field(default_factory=list)
    pk: list[float] = field(default_factory=list)
    hitk: list[float] = field(default_factory=list)
    rr: list[float] = field(default_factory=list)
    #: Of every result returned (not only the first k): how many, and the share inside annotated spans.
    count: list[float] = field(default_factory=list)
    precision: list[float] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, turns: Sequence[int | None], query: QMSumQuery, k: int) -> None:
        top = list(turns[:k])
        rel = [t is not None and query.relevant(t) for t in top]
        self.hit1.append(1.0 if rel and rel[0] else 0.0)
        self.pk.append(sum(rel) / k)
        self.hitk.append(1.0 if any(rel) else 0.0)
        self.rr.append(next((1.0 / r for r, ok in enumerate(rel, start=1) if ok), 0.0))
        every = [t is not None and query.relevant(t) for t in turns]
        self.count.append(float(len(every)))
        self.precision.append(sum(every) / len(every) if every else 0.0)
        self.domains.append(query.domain)

    def summary(self, k: int, domains: Iterable[str]) -> dict[str, Any]:
        def block(keep: Callable[[str], bool]) -> dict[str, Any]:
            idx = [i for i, d in enumerate(self.domains) if keep(d)]
            return {
                "n": len(idx),
                "hit@1": rounded_mean([self.hit1[i] for i in idx]),
                f"p@{k}": rounded_mean([self.pk[i] for i in idx]),
                f"hit@{k}": rounded_mean([self.hitk[i] for i in idx]),
                f"mrr@{k}": rounded_mean([self.rr[i] for i in idx]),
                "results": rounded_mean([self.count[i] for i in idx]),
                "precision": rounded_mean([self.precision[i] for i in idx]),
            }

        out = block(lambda d: True)
        out["ms_per_query"] = round(1000 * self.seconds / max(1, len(self.hit1)), 1)
        out["by_domain"] = {d: block(lambda x, d=d: x == d) for d in domains}
        return out


def _ratios(scores: dict[str, MethodScores], k: int, domains: Sequence[str]) -> dict[str, Any]:
    base = scores.get("bm25")
    if base is None:
        return {}
    out: dict[str, Any] = {}
    for name, s in scores.items():
        if name == "bm25":
            continue
        entry: dict[str, Any] = {}
        for metric, attr in (("hit@1", "hit1"), (f"p@{k}", "pk")):
            num, den = getattr(s, attr), getattr(base, attr)
            entry[metric] = rounded_ratio(rounded_mean(num), rounded_mean(den))
            entry[f"{metric}_ci95"] = bootstrap_ratio(num, den)
            entry[f"{metric}_by_domain"] = {
                d: rounded_ratio(rounded_mean([v for v, x in zip(num, s.domains, strict=True) if x == d]),
                          rounded_mean([v for v, x in zip(den, base.domains, strict=True) if x == d]))
                for d in domains
            }
        out[f"{name}/bm25"] = entry
    return out


def evaluate_qmsum(data: Path, *, embedder: Embedder | EmbedderRoutes | None, split: str = "val", k: int = 5,
                   search_options: SearchOptions | None = None, convex_weights: Sequence[float] = (),
                   fusion_variants: bool = True, meetings: Sequence[str] | None = None, limit: int | None = None,
                   keep_markers: bool = False, work_db: Path | None = None, clock: RunClock | None = None,
                   part: str = "all", progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Search and ask on QMSum's meetings; every specific query scored against its annotated turn spans.

    Each meeting is appended to one log (a temporary file unless `work_db`), indexed once (the vectors are
    cached in the log, so every method and variant shares them) and queried by each method.

    Args:
        data: the QMSum folder (`queries_<split>.jsonl`, `<split>/`, optionally `turn_timestamps_<split>.json`).
        embedder: the dense model or the embedder routes; None for BM25 and `ask` alone.
        k: results scored per query (P@k, hit@k, MRR@k).
        search_options: the options of the default search and of `ask` (default: `SearchOptions()`).
        convex_weights: dense weights of the convex-fusion variants.
        fusion_variants: also score RRF and the convex variants (off: bm25, dense, hybrid_default, ask).
        meetings, limit: only these meeting ids / the first `limit` meetings (quick checks).
        part: `all`, or the half of the meetings (`tune` / `report`, `retrieval.dev_part` of the id) to score.
        keep_markers: keep QMSum's transcription markers in the text.
        work_db: keep the log (and its vectors) in this file, reused by a later run.
        clock: the run's clock (phases are added to it; its report is `wall_time`).
        progress: called with a line of progress for a person, if given.

    Returns:
        The `bench qmsum` figures without `default_configuration` and `code` (the CLI adds those).
    """
    from meetmem.answers.pipeline import Answerer
    from meetmem.store.index.embedder_routes import EmbedderRoutes
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.index.search_types import SearchOptions
    from meetmem.store.log import TranscriptLog

    say = progress or (lambda _line: None)
    clock = clock or RunClock()
    if k < 1:
        raise BenchDataError("--k must be at least 1")
    base = search_options or SearchOptions()
    default_model = embedder.default if isinstance(embedder, EmbedderRoutes) else embedder
    loaded, queries = load_qmsum(Path(data), split)
    if meetings:
        wanted = {m.strip() for m in meetings if m.strip()}
        loaded = [m for m in loaded if m.meeting_id in wanted]
    loaded = [m for m in loaded if in_part(m.meeting_id, part)]
    if limit:
        loaded = loaded[:limit]
    kept = {m.meeting_id for m in loaded}
    queries = [q for q in queries if q.meeting_id in kept]
    by_meeting: dict[str, list[QMSumQuery]] = {}
    for q in queries:
        by_meeting.setdefault(q.meeting_id, []).append(q)
    domains = [d for d in ("AMI", "ICSI", "committee") if any(q.domain == d for q in queries)]
    domains += sorted({q.domain for q in queries} - set(domains))
    total_turns = sum(len(m.turns) for m in loaded)
    say(f"QMSum {split}: {len(loaded)} meetings, {total_turns} turns, {len(queries)} specific queries")

    variant_options = fusion_options(base, convex_weights) if fusion_variants else {}
    methods = ["bm25"]
    if default_model is not None:
        methods += ["dense", "hybrid_default", *variant_options]
    methods.append("ask")
    scores = {name: MethodScores() for name in methods}
    baseline: list[float] = []
    skipped_turns = 0
    stored_turns = 0
    embedded = 0
    embed_seconds = 0.0

    with tempfile.TemporaryDirectory(prefix="meetmem-bench-qmsum-") as tmp:
        db_path = Path(work_db) if work_db else Path(tmp) / "qmsum.db"
        log = TranscriptLog(db_path)
        try:
            # The default options (what `ask` and the CLI use), unless search_options changes them.
            search = TranscriptSearch(log, embedder, options=base)
            variants: dict[str, TranscriptSearch] = {}
            if default_model is not None:
                variants = {name: TranscriptSearch(log, embedder, options=o) for name, o in variant_options.items()}
            answerer = Answerer(search)
            device = QMSUM_DEVICE + ("-markers" if keep_markers else "")
            turns_done = 0
            for number, meeting in enumerate(loaded, start=1):
                t = time.perf_counter()
                segments, skipped = qmsum_segments(meeting, keep_markers=keep_markers)
                log.append(meeting.meeting_id, device, segments)
                skipped_turns += skipped
                stored_turns += len(segments)
                turn_of = {s.segment_id: s.seq for s in log.chain(meeting.meeting_id) if s.device_id == device}
                clock.add("ingest", time.perf_counter() - t)

                t = time.perf_counter()
                before = _vector_count(log, default_model)
                search.meeting_index(meeting.meeting_id)
                for other in variants.values():
                    other.meeting_index(meeting.meeting_id)
                spent = time.perf_counter() - t
                new_vectors = _vector_count(log, default_model) - before
                embedded += new_vectors
                if new_vectors:
                    embed_seconds += spent
                clock.add("index", spent)

                t = time.perf_counter()
                n_indexable = len(segments)
                indexable = [s.seq for s in segments]
                for q in by_meeting.get(meeting.meeting_id, []):
                    baseline.append(sum(1 for i in indexable if q.relevant(i)) / max(1, n_indexable))
                    _score_query(q, k, meeting.meeting_id, search, variants, answerer, default_model, turn_of,
                                 scores)
                clock.add("queries", time.perf_counter() - t)

                turns_done += len(meeting.turns)
                elapsed = clock.elapsed()
                eta = elapsed / turns_done * (total_turns - turns_done)
                rate = f", {new_vectors / spent:.1f} turns/s embedded" if new_vectors and spent > 0 else ""
                say(f"[{number}/{len(loaded)}] {meeting.meeting_id}: {len(segments)} segments "
                    f"indexed in {spent:.1f}s{rate}; {len(by_meeting.get(meeting.meeting_id, []))} "
                    f"queries; elapsed {hms(elapsed)}, ETA {hms(eta)}")
        finally:
            log.close()

    return {
        "benchmark": "qmsum",
        "split": split,
        "part": part,
        "k": k,
        "meetings": len(loaded),
        "queries": len(queries),
        "queries_by_domain": {d: sum(1 for q in queries if q.domain == d) for d in domains},
        "turns": total_turns,
        "segments_stored": stored_turns,
        "turns_left_out_markers_only": skipped_turns,
        "markers_removed": not keep_markers,
        "search_options_used": options_public(base),
        "query_adapter": search.query_adapters.versions() if search.query_adapters is not None else None,
        "fusion_variants": {name: options_public(o) for name, o in variant_options.items()},
        "random_baseline": {f"p@{k}": rounded_mean(baseline)},
        "methods": {name: scores[name].summary(k, domains) for name in methods},
        "ratios": _ratios(scores, k, domains),
        "embedding": {"segments": embedded, "seconds": round(embed_seconds, 1),
                      "segments_per_s": round(embedded / embed_seconds, 1) if embed_seconds else None},
        "wall_time": clock.report(),
    }


def run_qmsum(args: argparse.Namespace, ctx: CommandContext) -> int:
    verbose = not ctx.quiet
    clock = RunClock()
    code_at_start = code_fingerprint()
    if args.k < 1:
        raise BenchDataError("--k must be at least 1")
    weights = parse_weights(args.convex_weights)
    base = base_options(args.search_option)
    load_qmsum(Path(args.data), args.split)  # a data error is reported before the model loads

    embedder_name = ctx.settings.embedder
    t = time.perf_counter()
    embedder = bench_embedder(embedder_name, ctx, verbose)
    clock.add("model_load", time.perf_counter() - t)

    meetings = args.meetings.split(",") if args.meetings else None
    result = evaluate_qmsum(Path(args.data), embedder=embedder, split=args.split, k=args.k, search_options=base,
                            convex_weights=weights, meetings=meetings, limit=args.limit,
                            keep_markers=args.keep_markers, work_db=Path(args.work_db) if args.work_db else None,
                            clock=clock, part=args.part,
                            progress=(lambda line: say_if(True, line)) if verbose else None)
    report: dict[str, Any] = {}
    for key, value in result.items():
        if key == "search_options_used":  # the CLI's report names what "the default" was, before the rest
            report["default_configuration"] = default_configuration(ctx, embedder_name if embedder else "none")
        report[key] = value
    report["wall_time"] = clock.report()
    report["code"] = code_report(code_at_start)
    emit_figures(report, as_json=args.json)
    return 0


def _vector_count(log: TranscriptLog, embedder: Embedder | None) -> int:
    """Rows of the vector cache (all models and variants): the difference over a meeting = vectors computed."""
    if embedder is None:
        return 0
    return int(log.db.execute("SELECT COUNT(*) FROM segment_vectors").fetchone()[0])


def _score_query(q: QMSumQuery, k: int, meeting_id: str, search: TranscriptSearch,
                 variants: dict[str, TranscriptSearch], answerer: Any, embedder: Embedder | None,
                 turn_of: dict[str, int], scores: dict[str, MethodScores]) -> None:
    qv = None
    t = time.perf_counter()
    if embedder is not None:
        # As a question is embedded for search (and its adapter applied, `SearchOptions.query_adapter`).
        qv = search.encode_query(meeting_id, q.query)
    encode_s = time.perf_counter() - t

    def run(name: str, fn: Callable[[], list[int | None]], extra: float = 0.0) -> None:
        t0 = time.perf_counter()
        turns = fn()
        scores[name].seconds += time.perf_counter() - t0 + extra
        scores[name].add(turns, q, k)

    def hits(s: TranscriptSearch, mode: str) -> list[int | None]:
        return [h.segment.seq for h in s.search(meeting_id, q.query, k=k, mode=mode, query_vectors=qv)]

    run("bm25", lambda: hits(search, "bm25"))
    if embedder is not None:
        run("dense", lambda: hits(search, "dense"), encode_s)
        run("hybrid_default", lambda: hits(search, "hybrid"), encode_s)
        for name, s in variants.items():
            run(name, lambda s=s: hits(s, "hybrid"), encode_s)

    def asked() -> list[int | None]:
        answer = answerer.ask(meeting_id, q.query)
        return [turn_of.get(c.segment_id) for c in answer.citations]

    run("ask", asked)


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "qmsum", parents=flags(MODEL, JSON, QUIET), help="retrieval quality on the QMSum meetings",
        description="Search and ask on QMSum's meetings, scored against the annotated turn spans of the specific "
                    "queries: hit@1 and P@k of BM25, dense, hybrid (rrf and convex) and ask's citations. The "
                    "figures on stdout (one JSON object with --json); progress on stderr. --embedder picks the "
                    "dense model (default minilm).")
    p.add_argument("--data", required=True, metavar="DIR", help="the QMSum folder (queries_<split>.jsonl, <split>/)")
    p.add_argument("--split", default="val", help="the split to score (default val)")
    p.add_argument("--k", type=int, default=5, help="results scored per query for P@k (default 5)")
    p.add_argument("--convex-weights", default=DEFAULT_CONVEX_WEIGHTS, metavar="W,W",
                   help=f"dense weights of the convex-fusion variants (default {DEFAULT_CONVEX_WEIGHTS})")
    p.add_argument("--meetings", default=None, metavar="ID,ID", help="only these meetings (quick checks)")
    p.add_argument("--limit", type=int, default=None, help="only the first N meetings (quick checks)")
    p.add_argument("--keep-markers", action="store_true", help="keep QMSum's {disfmarker}/{vocalsound}/... markers")
    p.add_argument("--work-db", default=None, metavar="PATH",
                   help="keep the benchmark's database (and its vectors) here instead of a temporary file")
    p.add_argument("--search-option", action="append", default=None, metavar="KEY=VALUE",
                   help="override a SearchOptions field for every search of the run (repeatable), e.g. rrf_k=20")
    p.add_argument("--part", choices=PARTS, default="all",
                   help="the half of the meetings to score (a fixed rule on the meeting id; defaults are tuned "
                        "on 'tune' and reported on 'report'; default all)")
    p.add_argument("--compact", dest="json", nargs=0, const=True, action=Deprecated, new="--json")
    p.set_defaults(func=guarded(run_qmsum))
