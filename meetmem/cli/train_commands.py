"""`meetmem train ...`: rebuild the shipped learned weights from annotated data, seeded, and print their figures."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .lazy import add_lazily

#: What can be trained: the module that registers it, and its one-line help.
TRAINERS: dict[str, tuple[str, str]] = {
    "ledger": ("meetmem.eval.training.ledger",
               "rebuild the ledger detector from AMI dev (seeded) and print its figures"),
    "retrieval": ("meetmem.eval.training.retrieval",
                  "rebuild the query adapter from the dev corpora's tune halves (seeded) and print its figures"),
}


def add_train_commands(sub: argparse._SubParsersAction, *, argv: Sequence[str] | None = None) -> None:
    train = sub.add_parser("train", help="rebuild the shipped learned weights from annotated data",
                           description="Training commands. Each rebuilds one shipped artifact from the data it names, "
                                       "with a fixed seed, and prints the figures it reaches on stdout (one JSON "
                                       "object with --json); progress on stderr.")
    train_sub = train.add_subparsers(dest="train", metavar="WHAT", required=True)
    add_lazily(train_sub, TRAINERS, command="train", argv=argv)
