"""`meetmem bench ...`: benchmarks that print JSON figures (recorded in docs/BENCHMARKS.md).

Each benchmark lives in `meetmem.eval` (`bench/` and `corpora/`) and registers its own subcommand; they are
imported only here, when the CLI builds its parser, and import their heavy libraries only when they run.
"""

from __future__ import annotations

import argparse


def add_bench_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    bench = sub.add_parser("bench", help="benchmarks that print JSON figures",
                           description="Benchmarks. Each prints one JSON object on stdout; progress on stderr.")
    bench_sub = bench.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    from meetmem.eval.bench import audio as bench_audio
    from meetmem.eval.bench import context as bench_context
    from meetmem.eval.bench import delete as bench_delete
    from meetmem.eval.bench import edge as bench_edge
    from meetmem.eval.bench import faults as bench_faults
    from meetmem.eval.bench import pgsearch as bench_pgsearch
    from meetmem.eval.bench import serve as bench_serve
    from meetmem.eval.bench import speakers as bench_speakers
    from meetmem.eval.bench import store as bench_store
    from meetmem.eval.bench import summaries as bench_summaries
    from meetmem.eval.corpora import ami_ledger, ami_questions, ami_roles, ami_summaries, locomo, qmsum, zh
    from meetmem.eval.needles import speakers as speaker_needles

    bench_store.add_parser(bench_sub, common)
    bench_serve.add_parser(bench_sub, common)
    qmsum.add_parser(bench_sub, common)
    zh.add_parser(bench_sub, common)
    bench_edge.add_parser(bench_sub, common)
    ami_ledger.add_parser(bench_sub, common)
    ami_summaries.add_parser(bench_sub, common)
    ami_questions.add_parser(bench_sub, common)
    ami_roles.add_parser(bench_sub, common)
    bench_summaries.add_parser(bench_sub, common)
    bench_context.add_parser(bench_sub, common)
    locomo.add_parser(bench_sub, common)
    bench_audio.add_parser(bench_sub, common)
    bench_faults.add_parser(bench_sub, common)
    bench_delete.add_parser(bench_sub, common)
    bench_pgsearch.add_parser(bench_sub, common)
    bench_speakers.add_parser(bench_sub, common)
    speaker_needles.add_parser(bench_sub, common)
