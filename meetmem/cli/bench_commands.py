"""`meetmem bench ...`: benchmarks that print their figures (recorded in docs/BENCHMARKS.md), as JSON with --json.

Each benchmark lives in `meetmem.eval` (`bench/`, `corpora/`, `needles/`) and registers its own subcommand.
The CLI imports a benchmark's module only when that benchmark is asked for (`meetmem bench store ...`): every
other command, `meetmem bench --help` included, sees the names and one-line helps below and imports nothing
of eval/. `build_parser()` without the command line (the help test, the Pi unit) registers them all.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .lazy import add_lazily

#: Each benchmark's name, the module that registers it (its `add_parser`), and its one-line help.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "store": ("meetmem.eval.bench.store", "ingest and search speed of the store"),
    "serve": ("meetmem.eval.bench.serve", "the cloud service under devices and askers, on loopback"),
    "qmsum": ("meetmem.eval.corpora.qmsum", "retrieval quality on the QMSum meetings"),
    "zh": ("meetmem.eval.corpora.zh", "ask quality on the project's Chinese meeting"),
    "edge": ("meetmem.eval.bench.edge", "the edge agent: real-time factor, memory, latency, WER"),
    "ledger": ("meetmem.eval.corpora.ami_ledger",
               "the ledger's todos and decisions on AMI (rules, learned detector, both)"),
    "summaries-ami": ("meetmem.eval.corpora.ami_summaries", "L1/L2 summaries on AMI (extractive, learned, "
                      "lead-N): cited-utterance precision/recall and ROUGE"),
    "questions": ("meetmem.eval.corpora.ami_questions", "time, topic, speaker and why questions on AMI meetings"),
    "roles": ("meetmem.eval.corpora.ami_roles",
              "role mentions (\"the project manager\", \"marketing\") resolved to AMI's speaker letters"),
    "locomo": ("meetmem.eval.corpora.locomo", "evidence recall on LoCoMo's long conversations"),
    "faults": ("meetmem.eval.bench.faults", "the fault campaign: kills, outages, a full disk; counts what survived"),
    "delete": ("meetmem.eval.bench.delete", "how long deleting a meeting takes"),
    "speakers": ("meetmem.eval.bench.speakers", "speaker labels: DER, speaker counts, the encoder's CPU and memory"),
    "speaker-needles": ("meetmem.eval.needles.speakers", "\"who said ...?\" questions of a generated needle meeting"),
}


def add_bench_commands(sub: argparse._SubParsersAction, *, argv: Sequence[str] | None = None) -> None:
    """Register `meetmem bench`; given the command line, only the benchmark it names is imported."""
    bench = sub.add_parser("bench", help="benchmarks that print their figures (JSON with --json)",
                           description="Benchmarks. Each prints its figures on stdout, as `key: value` lines or, with "
                           "--json, as one JSON object; progress on stderr.")
    bench_sub = bench.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    add_lazily(bench_sub, BENCHMARKS, command="bench", argv=argv)
