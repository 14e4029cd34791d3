"""`meetmem eval ...`: evaluations of meetmem's answers against baselines on generated meetings.

`eval run` reads a needle meeting folder (`<name>.jsonl` and `<name>.needles.json`, as
`meetmem.eval.needle_types.NeedleMeeting.write` leaves them) and prints the comparison of
`meetmem.eval.needle_eval.evaluate`: a table, or one JSON object with `--json`. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from .progress import note


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def run(args: argparse.Namespace, ctx: Any) -> int:
    from meetmem.eval.needle_eval import evaluate, table
    from meetmem.eval.needle_types import NeedleMeeting
    from meetmem.eval.run_info import checkout, machine_info
    from meetmem.store.index.search import embedder_routes

    folder = Path(args.meeting)
    files = [folder / f"{args.name}.jsonl", folder / f"{args.name}.needles.json"]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        sys.stderr.write(f"meetmem: error: not a needle meeting folder, missing {', '.join(missing)}\n")
        return 2
    try:
        meeting = NeedleMeeting.read(folder, args.name)
    except (ValueError, KeyError, TypeError) as exc:
        sys.stderr.write(f"meetmem: error: cannot read the needle meeting in {folder}: {exc!r}\n")
        return 1
    say = None if ctx.quiet else note
    s = ctx.settings
    routes = embedder_routes(s.embedder, s.embedder_zh, threads=s.threads, on_load=(
        None if ctx.quiet else (lambda name: note(f"loading the {name} embedding model ..."))))
    info = machine_info()
    head, modified = checkout(["cloud", "store", "summarizers", "eval/needle_eval.py", "eval/baselines.py"])
    # A database named with --db keeps the evaluated copy for a look afterwards; it must be new.
    if args.db:
        if Path(args.db).exists():
            sys.stderr.write(f"meetmem: error: {args.db} exists; eval run ingests into a new database\n")
            return 2
        result = evaluate(meeting, db_path=args.db, routes=routes, k=args.k, budget=args.budget, progress=say)
    else:
        with tempfile.TemporaryDirectory(prefix="meetmem-eval-") as tmp:
            result = evaluate(meeting, db_path=Path(tmp) / "needles.db", routes=routes, k=args.k,
                              budget=args.budget, progress=say)
    if args.json:
        report = {"evaluation": "needles", "meeting_folder": str(folder), "machine": info,
                  "code": {"git_head": head, "modified_files": modified}, **result}
        sys.stdout.write(json.dumps(report, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(table(result) + "\n")
    sys.stdout.flush()
    return 0


def add_eval_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    group = sub.add_parser(
        "eval", help="evaluate meetmem's answers against baselines on a needle meeting",
        description="Evaluations of meetmem's answers against the usual baselines. Each action takes the "
                    "common flags (--db, --json, --embedder, -q) after its name.",
    )
    actions = group.add_subparsers(dest="eval_command", metavar="ACTION", required=True)
    p = actions.add_parser(
        "run", parents=[common], help="needle recall of meetmem against baselines on a needle meeting folder",
        description="Ingest a needle meeting into a new database (temporary unless --db names a new file), "
                    "index it, digest it, and put every needle question to meetmem and to BM25 alone, dense "
                    "alone, a sliding window over the last tokens, a rolling summary and the full transcript: "
                    "recall@k, exact answers, prompt tokens, prefix reuse, latency, drift per summary layer "
                    "and ledger todo precision/recall. A table on stdout, or one JSON object with --json; "
                    "progress on stderr.",
    )
    p.add_argument("--meeting", required=True, metavar="FOLDER",
                   help="folder with <name>.jsonl and <name>.needles.json (NeedleMeeting.write)")
    p.add_argument("--name", default="meeting", help="the files' stem in the folder (default: meeting)")
    p.add_argument("--k", type=_positive, default=5, help="citations or hits that count for recall (default: 5)")
    p.add_argument("--budget", type=_positive, default=4000,
                   help="compiled prompt budget and sliding window size, in tokens (default: 4000)")
    p.set_defaults(func=run)
