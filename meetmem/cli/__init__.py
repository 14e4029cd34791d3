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

from .options import UsageError


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The CLI's parser. Given the command line, a benchmark's module is imported only when it is the one asked
    for (`meetmem bench NAME`); without it (tests, introspection) every benchmark registers in full. Each
    command takes the shared options it reads (options.py), no others."""
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
    from .webhook_commands import add_webhook_commands

    add_store_commands(sub)
    add_digest_commands(sub)
    add_export_commands(sub)
    add_delete_commands(sub)
    add_db_commands(sub)
    add_cloud_commands(sub)
    add_webhook_commands(sub)
    add_edge_commands(sub)
    add_bench_commands(sub, argv=argv)
    add_eval_commands(sub)
    add_train_commands(sub, argv=argv)
    add_demo_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if getattr(args, "verbose", False) else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from meetmem.settings import Settings

    from .context import CommandContext

    # A command has only the shared options it reads (options.py): a Namespace may lack any of them.
    overrides = {name: value for name in ("db", "database_url", "tenant", "embedder")
                 if (value := getattr(args, name, None))}
    settings = Settings(**overrides)
    ctx = CommandContext(settings, quiet=getattr(args, "quiet", False))
    try:
        return int(args.func(args, ctx) or 0)
    except (StoreError, EdgeError, SummarizerError) as exc:
        sys.stderr.write(f"meetmem: error: {exc}\n")
        return 1
    except UsageError as exc:
        sys.stderr.write(f"meetmem: error: {exc}\n")
        return 2
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
