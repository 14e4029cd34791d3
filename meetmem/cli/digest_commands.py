"""The overview commands: a meeting's layered summary and its ledger of decisions, todos and facts."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from meetmem.store.timecode import format_time

from .options import JSON, MODEL, QUIET, STORAGE, TENANT, add_meeting_id, flags
from .output import emit_json

if TYPE_CHECKING:
    from .context import CommandContext


def cmd_summary(args: argparse.Namespace, ctx: CommandContext) -> int:
    digest = ctx.digester.digest(args.meeting_id, tenant=ctx.tenant)
    if args.json:
        emit_json(digest.summary_public())
        return 0
    state = "closed" if digest.final else "in progress"
    print(f"{args.meeting_id} ({state}): {len(digest.sections)} sections")
    for line in digest.l2:
        print(f"  [{format_time(line.source.start)}] {line.text}")
    if args.sections:
        for summary in digest.sections:
            s = summary.section
            print(f"\n§{s.index + 1} [{format_time(s.start)}-{format_time(s.end)}] ({s.closed_by})")
            for line in summary.lines:
                print(f"  [{format_time(line.source.start)}] {line.text}")
    return 0


_TITLES = (("decisions", "Decisions"), ("todos", "To do"), ("open_questions", "Open questions"),
           ("facts", "Facts"), ("glossary", "Glossary"))


def cmd_ledger(args: argparse.Namespace, ctx: CommandContext) -> int:
    digest = ctx.digester.digest(args.meeting_id, tenant=ctx.tenant)
    data = digest.ledger_public()
    if args.json:
        emit_json(data)
        return 0
    for key, title in _TITLES:
        items = data[key]
        if not items:
            continue
        print(f"{title}:")
        for item in items:
            mark = "  " if item["status"] == "current" else "  (superseded) "
            print(f"{mark}[{format_time(item['source']['start'])}] {item['text']}")
    return 0


def add_digest_commands(sub: argparse._SubParsersAction) -> None:
    # Summaries and the ledger are made on demand, and the topic cuts embed: the model and its progress apply.
    common = flags(*STORAGE, TENANT, MODEL, JSON, QUIET)
    p = sub.add_parser("summary", parents=common, help="a meeting's layered summary (L2 over L1 per topic section)",
                       description="Print the meeting's summary: L2 lines for the whole meeting, made from the L1 "
                       "summaries of its topic sections, each made from that section's raw segments. Every line "
                       "cites its segments. Made on demand when the stored one is not current.")
    add_meeting_id(p)
    p.add_argument("--sections", action="store_true", help="also print each section's L1 lines")
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("ledger", parents=common, help="a meeting's decisions, todos, open questions, facts, glossary",
                       description="Print the meeting's ledger. Every item cites the segments it was read from; an "
                       "item a later statement changed stays, marked superseded, beside the one that replaced it.")
    add_meeting_id(p)
    p.set_defaults(func=cmd_ledger)
