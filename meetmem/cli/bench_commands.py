"""`meetmem bench ...`: benchmarks that print JSON figures (recorded in docs/BENCHMARKS.md).

Each benchmark lives in `meetmem.eval` and registers its own subcommand; they are imported only here,
when the CLI builds its parser, and import their heavy libraries only when they run.
"""

from __future__ import annotations

import argparse


def add_bench_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    bench = sub.add_parser("bench", help="benchmarks that print JSON figures",
                           description="Benchmarks. Each prints one JSON object on stdout; progress on stderr.")
    bench_sub = bench.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    from meetmem.eval import (
        ami_ledger,
        ami_questions,
        bench_audio,
        bench_context,
        bench_delete,
        bench_edge,
        bench_faults,
        bench_serve,
        bench_speakers,
        bench_store,
        bench_summaries,
        locomo,
        retrieval,
        speaker_needles,
    )

    bench_store.add_parser(bench_sub, common)
    bench_serve.add_parser(bench_sub, common)
    retrieval.add_parser(bench_sub, common)
    bench_edge.add_parser(bench_sub, common)
    ami_ledger.add_parser(bench_sub, common)
    ami_questions.add_parser(bench_sub, common)
    bench_summaries.add_parser(bench_sub, common)
    bench_context.add_parser(bench_sub, common)
    locomo.add_parser(bench_sub, common)
    bench_audio.add_parser(bench_sub, common)
    bench_faults.add_parser(bench_sub, common)
    bench_delete.add_parser(bench_sub, common)
    bench_speakers.add_parser(bench_sub, common)
    speaker_needles.add_parser(bench_sub, common)
