"""What the benchmark commands share beside measurement (`measure`) and the run's record (`run_info`).

The retrieval benchmarks (`bench qmsum`, `bench zh`, `bench locomo`, the AMI benches and the corpora report)
share the tune/report halves of a dev corpus, the data error and the CLI guard that prints it, the run clock,
the bootstrap interval of a ratio, the digests of the code that decides the figures, and the search options a
run compares (the default with `--search-option` overrides, RRF and convex fusion). Every `meetmem bench`
command shares the CLI pieces at the end: the guard that turns `BenchDataError` into a one-line message, the
progress note `--quiet` silences, and the `--hours` list.
"""

from __future__ import annotations

import argparse
import functools
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
    from meetmem.store.index.search_types import SearchOptions

#: QMSum's `domain` field -> the short name used in the report.
DEFAULT_CONVEX_WEIGHTS = "0.5,0.7"
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


def say_if(enabled: bool, message: str) -> None:
    if enabled:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()


def hms(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s"


def rounded_mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def rounded_ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return round(num / den, 3)


def bootstrap_ratio(num: Sequence[float], den: Sequence[float], rounds: int = BOOTSTRAP_ROUNDS,
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


def bench_embedder(name: str, ctx: CommandContext, verbose: bool) -> Embedder | None:
    if name in ("none", "bm25", ""):
        return None
    from meetmem.store.index.embedders import load_embedder

    say_if(verbose, f"loading the {name} embedding model ...")
    return load_embedder(name, threads=ctx.settings.threads)


def options_public(options: SearchOptions) -> dict[str, Any]:
    """Every field of the search options (whatever fields the current SearchOptions has)."""
    from dataclasses import fields

    return {f.name: getattr(options, f.name) for f in fields(options)}


def default_configuration(ctx: CommandContext, embedder_name: str) -> dict[str, Any]:
    """What the benchmark ran as "the default": the embedder, the search options, the answerer's settings."""
    from meetmem.answers.extractive import VerbatimRetrieval
    from meetmem.answers.pipeline import Answerer
    from meetmem.answers.records import MAX_CITATIONS
    from meetmem.store.index.search_types import SearchOptions
    from meetmem.store.index.tokenize import MeetingTokenizer

    tokenizer = MeetingTokenizer()
    answerer_defaults = dict(Answerer.__init__.__kwdefaults__ or {})
    out: dict[str, Any] = {
        "embedder": embedder_name,
        "search_options": options_public(SearchOptions()),
        "tokenizer": {"stopwords": tokenizer.stopwords, "stemming": tokenizer.stemming},
        "answer": {**{k: v for k, v in answerer_defaults.items() if isinstance(v, int | float | tuple)},
                   "max_citations": MAX_CITATIONS, "verbatim_citations": VerbatimRetrieval.max_citations,
                   "citation_floor": VerbatimRetrieval.citation_floor},
        "cli_settings": {"embedder": ctx.settings.embedder},
    }
    if hasattr(ctx.settings, "embedder_zh"):
        out["cli_settings"]["embedder_zh"] = ctx.settings.embedder_zh
    return out


#: Modules whose code decides the figures; their digests go into the report, since they change often.
_FINGERPRINTED = ("store.index.search", "store.index.search_types", "store.index.embedder_routes",
                  "store.index.tokenize", "store.index.bm25", "store.index.dense", "store.index.embedders",
                  "answers.pipeline", "answers.extractive", "answers.plan")


def code_fingerprint() -> dict[str, str]:
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


def code_report(at_start: dict[str, str]) -> dict[str, Any]:
    """The digests taken when the run started (the code it loaded), and any file edited while it ran."""
    now = code_fingerprint()
    changed = sorted(name for name, digest in at_start.items() if now.get(name) != digest)
    return {"sha256_12": at_start, "edited_during_run": changed}


def parse_weights(text: str) -> list[float]:
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


def convex_name(w: float) -> str:
    return f"hybrid_convex_d{w:g}"


def base_options(overrides: Sequence[str] | None) -> SearchOptions:
    """The default `SearchOptions` with `--search-option KEY=VALUE` overrides (to try a setting before
    changing a default); values are parsed as JSON when they can be (numbers), else kept as strings."""
    from dataclasses import fields, replace

    from meetmem.store.index.search_types import SearchOptions

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


def fusion_options(base: SearchOptions, weights: Sequence[float]) -> dict[str, SearchOptions]:
    """The fusions compared with the default: RRF (k 60, equal weights) and convex with each fixed dense
    weight (no per-query weight; the base's other options, such as neighbour scores, stay)."""
    from dataclasses import replace

    out = {"hybrid_rrf": replace(base, fusion="rrf", rrf_k=60, bm25_weight=1.0, dense_weight=1.0,
                                 adaptive_dense_weight=None)}
    out.update({convex_name(w): convex_options(w, base) for w in weights})
    return out


def convex_options(w: float, base: SearchOptions | None = None) -> SearchOptions:
    from dataclasses import replace

    from meetmem.store.index.search_types import SearchOptions

    return replace(base or SearchOptions(), fusion="convex", bm25_weight=round(1.0 - w, 6), dense_weight=w,
                   adaptive_dense_weight=None)



# -- the CLI ----------------------------------------------------------------------------------------------------
def guarded(run: Callable[[argparse.Namespace, CommandContext], int],
            errors: tuple[type[Exception], ...] = (BenchDataError,)) -> Callable[..., int]:
    """`run` as a command: one of `errors` becomes a one-line message and exit status 2."""
    @functools.wraps(run)  # the help test reads the options `run` uses through __wrapped__
    def call(args: argparse.Namespace, ctx: CommandContext) -> int:
        try:
            return run(args, ctx)
        except errors as exc:
            sys.stderr.write(f"meetmem: error: {exc}\n")
            return 2

    return call


def progress_note(ctx: Any, message: str) -> None:
    """A progress line on stderr, unless the command runs with --quiet."""
    if not ctx.quiet:
        from meetmem.cli.progress import note

        note(message)


def hours_arg(value: str) -> list[float]:
    """`--hours 1,4`: meeting lengths in hours, each above 0 and at most 24 (an argparse type)."""
    try:
        hours = [float(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--hours takes comma-separated numbers, not {value!r}") from None
    if not hours or any(h <= 0 or h > 24 for h in hours):
        raise argparse.ArgumentTypeError("--hours needs lengths above 0 and at most 24")
    return hours
