"""Subcommands whose code lives in eval/ (`bench`, `train`), registered so that only the one asked for is
imported: every other command line sees their names and one-line helps and imports nothing of eval/."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping, Sequence


def asked(argv: Sequence[str] | None, command: str) -> str | None:
    """The subcommand a command line names after `command` (`bench NAME ...`), or None."""
    if argv is None or command not in argv:
        return None
    after = list(argv)[list(argv).index(command) + 1:]
    return next((w for w in after if not w.startswith("-")), None)


def add_lazily(group: argparse._SubParsersAction, table: Mapping[str, tuple[str, str]], *, command: str,
               argv: Sequence[str] | None) -> None:
    """Register each `name: (module, help)` of `table` in `group`. With `argv` (the command line), only the
    subcommand it names is imported (its module's `add_parser(group)`, which gives it the shared options it
    reads: options.flags); the others are their name and help alone. Without it (tests, introspection) every
    module registers in full."""
    wanted = asked(argv, command)
    for name, (module, text) in table.items():
        if argv is None or name == wanted:
            importlib.import_module(module).add_parser(group)
        else:
            group.add_parser(name, help=text)
