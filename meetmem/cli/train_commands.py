"""`meetmem train ...`: rebuild the shipped learned weights from annotated data, seeded, and print their figures."""

from __future__ import annotations

import argparse


def add_train_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    train = sub.add_parser("train", help="rebuild the shipped learned weights from annotated data",
                           description="Training commands. Each rebuilds one shipped artifact from the data it names, "
                                       "with a fixed seed, and prints one JSON object of the figures it reaches on "
                                       "stdout; progress on stderr.")
    train_sub = train.add_subparsers(dest="train", metavar="WHAT", required=True)
    from meetmem.eval.training import ledger as train_ledger
    from meetmem.eval.training import retrieval as train_retrieval

    train_ledger.add_parser(train_sub, common)
    train_retrieval.add_parser(train_sub, common)
