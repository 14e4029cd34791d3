"""`meetmem bench store`: ingest and search speed of the transcript store at 1k, 10k and 100k segments."""

from __future__ import annotations

import argparse


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser("store", parents=[common], help="ingest and search speed of the store")
    p.set_defaults(func=lambda args, ctx: 0)
