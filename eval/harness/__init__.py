"""What every benchmark shares, as one public surface: import from `meetmem.eval.harness`, not its modules.

- measurement (`measure`): latency percentiles, stopwatches and clocks, memory and database size;
- the run's record (`run_info`): the machine, library versions and the checkout a figure was measured on;
- the PostgreSQL a run uses (`postgres`): a given server, or the bundled one started for the run;
- Markdown tables (`md_table`) and speech-recognition scoring (`asr_scoring`: WER/CER, term hits);
- the benchmark commands' plumbing (`runs`): the tune/report halves, the data error and its CLI guard, the
  run clock, bootstrap intervals, code digests, the search options a retrieval run compares, progress notes.
"""

from .asr_scoring import edit_distance, error_rate, meeting_glossary, normalise, pooled, spoken_end, term_hits, tokens
from .md_table import num, table
from .measure import (
    Clock,
    SharedVectorEmbedder,
    Stopwatch,
    db_bytes,
    latency,
    patched,
    preemptions,
    proc_status,
    rate,
    reset_peak_rss,
)
from .postgres import BenchPostgres
from .run_info import ROOT, STORE_DISTRIBUTIONS, checkout, machine_info, versions
from .runs import (
    BOOTSTRAP_ROUNDS,
    DEFAULT_CONVEX_WEIGHTS,
    PARTS,
    BenchDataError,
    RunClock,
    base_options,
    bench_embedder,
    bootstrap_ratio,
    code_fingerprint,
    code_report,
    convex_name,
    convex_options,
    default_configuration,
    dev_part,
    fusion_options,
    guarded,
    hms,
    hours_arg,
    in_part,
    options_public,
    parse_weights,
    progress_note,
    rounded_mean,
    rounded_ratio,
    say_if,
)

__all__ = [
    "BOOTSTRAP_ROUNDS", "DEFAULT_CONVEX_WEIGHTS", "PARTS", "ROOT", "STORE_DISTRIBUTIONS", "BenchDataError",
    "BenchPostgres", "Clock",
    "RunClock", "SharedVectorEmbedder", "Stopwatch", "base_options", "bench_embedder", "bootstrap_ratio", "checkout",
    "code_fingerprint", "code_report", "convex_name", "convex_options", "db_bytes", "default_configuration",
    "dev_part", "edit_distance", "error_rate", "fusion_options", "guarded", "hms", "hours_arg", "in_part", "latency",
    "machine_info", "meeting_glossary", "normalise", "num", "options_public", "parse_weights", "patched", "pooled",
    "preemptions", "proc_status", "progress_note", "rate", "reset_peak_rss", "rounded_mean", "rounded_ratio",
    "say_if", "spoken_end", "table", "term_hits", "tokens", "versions",
]
