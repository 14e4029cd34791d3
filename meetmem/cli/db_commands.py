"""The store's administration: `meetmem db upgrade` / `db current`, and `meetmem migrate`.

Both engines' schemas are versioned: PostgreSQL's as Alembic revisions, upgraded by the database's owner once
per release before the service (which runs as the role `meetmem_app`) starts on it; SQLite's as numbered
steps (store/schema.py, the file's `user_version`), which opening the file applies too, so `db upgrade --db
FILE` is only ever needed to see what was done.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from meetmem.store.errors import InvalidSegment, StoreError

from .options import JSON, QUIET, STORAGE, flags
from .output import emit_json
from .progress import note

if TYPE_CHECKING:
    from .context import CommandContext


def _database(args: argparse.Namespace, ctx: CommandContext) -> str | None:
    """The PostgreSQL URL the command names, or None for the SQLite file (`--db`)."""
    from meetmem.store.pg import is_postgres_url

    url = ctx.settings.database_url
    if url and not is_postgres_url(url):
        raise InvalidSegment(f"--database {url!r} is not a postgresql:// URL; name a SQLite file with --db FILE")
    return url or None


def _sqlite_versions(ctx: CommandContext, *, upgrade: bool) -> tuple[str, int, int]:
    """The SQLite file's path and its schema version before and after (opening it applies missing steps)."""
    from meetmem.store.log import TranscriptLog
    from meetmem.store.schema import SCHEMA_VERSION, schema_version

    path = ctx.settings.db
    if not path.is_file():
        raise InvalidSegment(f"--db {path}: no such database file (name a SQLite file to upgrade, or give "
                             "--database postgresql://... for PostgreSQL)")
    if not upgrade:
        import sqlite3

        with sqlite3.connect(path) as conn:
            current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        return str(path), current, SCHEMA_VERSION
    with TranscriptLog(path) as log:
        before, after = log.database.upgraded
        assert schema_version(log.database.conn) == after
    return str(path), before, after


def cmd_db_upgrade(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.pg import migrate

    url = _database(args, ctx)
    if url is None:
        path, before, after = _sqlite_versions(ctx, upgrade=True)
        if args.json:
            emit_json({"database": path, "before": before, "after": after, "head": after})
        elif before == after:
            print(f"{path}: at schema version {after}, the newest; nothing to do")
        else:
            print(f"{path}: upgraded from schema version {before} to {after}")
        return 0
    before, after = migrate.upgrade(url)
    if args.json:
        emit_json({"database": migrate.redact(url), "before": before, "after": after, "head": migrate.head_revision()})
    elif before == after:
        print(f"{migrate.redact(url)}: at revision {after}, the newest; nothing to do")
    else:
        print(f"{migrate.redact(url)}: upgraded from revision {before or 'none'} to {after}")
    return 0


def cmd_db_current(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.pg import migrate

    url = _database(args, ctx)
    if url is None:
        path, current, head = _sqlite_versions(ctx, upgrade=False)
        shown = path
    else:
        current, head = migrate.current_revision(url), migrate.head_revision()
        shown = migrate.redact(url)
    if args.json:
        emit_json({"database": shown, "current": current, "head": head, "up_to_date": current == head})
    else:
        state = "up to date" if current == head else f"behind: run `meetmem db upgrade` (newest is {head})"
        print(f"{shown}: revision {current if current is not None else 'none'}, {state}")
    return 0 if current == head else 1


def cmd_migrate(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.backends import open_log, sqlite_path
    from meetmem.store.pg import is_postgres_url, migrate
    from meetmem.store.transfer import copy_log

    source_path = None if is_postgres_url(args.source) else sqlite_path(args.source)
    if source_path is not None and not source_path.is_file():
        raise InvalidSegment(f"--from {args.source}: no such database file ({source_path.resolve()})")
    if str(args.source) == str(args.target):
        raise InvalidSegment("--from and --to name the same database")
    source = open_log(args.source, upgrade=False)
    try:
        target = open_log(args.target, upgrade=True)
    except StoreError:
        source.close()
        raise
    shown = {"from": migrate.redact(str(args.source)), "to": migrate.redact(str(args.target))}

    def progress(tenant: str, meeting_id: str, segments: int) -> None:
        if not ctx.quiet:
            note(f"{tenant}/{meeting_id}: {segments} segments, chain verified on arrival")

    try:
        report = copy_log(source, target, on_meeting=progress)
    finally:
        source.close()
        target.close()
    if args.json:
        emit_json({**shown, **report.public()})
    else:
        print(f"copied {report.copied} meetings ({report.segments} segments), {report.skipped} already there, "
              f"{report.tombstones} tombstones, {report.retention} retention settings from {shown['from']} to "
              f"{shown['to']} in {report.seconds:.1f} s; every copied chain verified on arrival")
        for item in report.failed:
            sys.stderr.write(f"meetmem: {item['tenant']}/{item['meeting_id']} not copied: {item['reason']}\n")
    return 0 if report.ok else 1


def add_db_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("db", help="the database's schema: upgrade, current",
                       description="Schema migrations: a PostgreSQL store's Alembic revisions (--database URL), or a "
                       "SQLite file's numbered steps (--db FILE; opening the file applies them too).")
    db_sub = p.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    q = db_sub.add_parser("upgrade", parents=flags(*STORAGE, JSON),
                          help="bring the database's schema to the newest revision "
                          "(run as the database's owner; a database already there is left alone)")
    q.set_defaults(func=cmd_db_upgrade)
    q = db_sub.add_parser("current", parents=flags(*STORAGE, JSON),
                          help="the database's schema revision (exit 1 when behind)")
    q.set_defaults(func=cmd_db_current)

    # --from and --to name both databases: neither --db nor --database applies.
    p = sub.add_parser("migrate", parents=flags(JSON, QUIET), help="copy a whole log to another database (SQLite to "
                       "PostgreSQL or back), verifying every chain on arrival",
                       description="Copy every meeting (rows exactly as stored), tombstone and retention setting "
                       "from one database to another, verifying each meeting's chain on arrival. Running it again "
                       "skips meetings already copied. Indexes, summaries and audio are rebuilt, not copied.")
    p.add_argument("--from", dest="source", required=True, metavar="SOURCE",
                   help="sqlite:///PATH (four slashes for an absolute path), a file path, or postgresql://...")
    p.add_argument("--to", dest="target", required=True, metavar="TARGET",
                   help="postgresql://... (its schema is upgraded first, as its owner), sqlite:///PATH or a path")
    p.set_defaults(func=cmd_migrate)
