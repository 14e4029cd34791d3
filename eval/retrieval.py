"""`meetmem bench qmsum` / `meetmem bench zh`: retrieval quality on real meetings and on a Chinese meeting."""

from __future__ import annotations

import argparse


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser("qmsum", parents=[common], help="retrieval quality on the QMSum meetings")
    p.set_defaults(func=lambda args, ctx: 0)
