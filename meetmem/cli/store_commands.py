"""The transcript commands: ingest, segments, search, ask, verify, reindex."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.store.errors import InvalidSegment
from meetmem.store.timecode import format_time

from .options import JSON, MODEL, QUIET, STORAGE, TENANT, Deprecated, add_meeting_id, flags
from .output import emit_json
from .progress import StderrProgress, note

if TYPE_CHECKING:
    from .context import CommandContext


def cmd_ingest(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.interchange import read_jsonl
    from meetmem.store.meeting_meta import meeting_meta

    invite = None
    if args.ics is not None:  # the calendar's invite: what the flags leave out
        from meetmem.store.calendar import read_invite, with_invite

        try:
            data = Path(args.ics).read_bytes()
        except OSError as exc:
            raise InvalidSegment(f"cannot read the invite: {exc.strerror}", source=args.ics) from exc
        invite = read_invite(data, name=args.ics)
        if not ctx.quiet and args.date is None:
            for problem in invite.problems:
                note(f"{args.ics}: {problem}")
        title, date, participants = with_invite(invite, args.title, args.date, args.participants)
    else:
        title, date, participants = args.title, args.date, args.participants
    meta = meeting_meta(title, date, participants)  # checked before the file is read
    device_id, segments = read_jsonl(args.file)
    audio = None
    if args.audio is not None:  # checked (and encoded) before anything is stored
        from .export_commands import ogg_audio

        audio = ogg_audio(Path(args.audio), quiet=ctx.quiet)
    try:
        result = ctx.log.append(args.meeting_id, device_id, segments, tenant=ctx.tenant, meta=meta)
    except InvalidSegment as exc:
        if exc.seq is None or exc.source is not None:
            raise
        raise InvalidSegment(exc.reason, source=args.file, line=exc.seq) from None  # a file's seq is its line
    if not ctx.quiet:
        note(f"stored {result.new} new segments ({result.duplicates} already stored) in meeting {args.meeting_id}")
    # A file is a whole meeting (CONTRACT): it is closed once stored, and its summaries and ledger are made
    # before the command returns.
    if result.new or ctx.log.closure(args.meeting_id, tenant=ctx.tenant) is None:
        ctx.log.close_meeting(args.meeting_id, tenant=ctx.tenant, reason="ingested")
    # New metadata (a date) changes how the ledger resolves "by Friday": the digest is remade.
    if result.new or not meta.empty or not ctx.digester.is_current(args.meeting_id, tenant=ctx.tenant):
        ctx.search.meeting_index(
            args.meeting_id, tenant=ctx.tenant, progress=StderrProgress("indexing", enabled=not ctx.quiet)
        )
        ctx.digester.update(args.meeting_id, tenant=ctx.tenant)
    out = {"meeting_id": args.meeting_id, "device_id": device_id, "segments": len(segments), "new": result.new,
           "duplicates": result.duplicates, **ctx.log.meta(args.meeting_id, tenant=ctx.tenant).public()}
    if audio is not None:
        from .export_commands import attach_audio

        out["audio"] = attach_audio(args.meeting_id, audio, args.audio, ctx)
    if args.json:
        emit_json(out)
    else:
        print(f"{args.meeting_id}: {result.new} new, {result.duplicates} already stored")
    return 0


def cmd_segments(args: argparse.Namespace, ctx: CommandContext) -> int:
    rows = ctx.log.segments(args.meeting_id, tenant=ctx.tenant, start=args.start, end=args.end)
    if args.json:
        emit_json([{k: v for k, v in s.public().items() if k not in ("confidence", "supersedes")} for s in rows])
    else:
        for s in rows:
            who = f"{s.speaker}: " if s.speaker else ""
            print(f"[{format_time(s.start)}-{format_time(s.end)}] {who}{s.text}")
    return 0


def _across_positionals(args: argparse.Namespace, what: str, attr: str) -> str:
    """With `--all`, the one positional is the query (there is no MEETING_ID)."""
    if getattr(args, attr) is not None:
        raise InvalidSegment(f"with --all, give only the {what}: meetmem {args.command} --all \"{what.upper()}\"")
    return args.meeting_id


def cmd_search(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.index.search_types import SearchFilters

    if args.all:
        from meetmem.answers.across import CrossMeetings

        query = _across_positionals(args, "query", "query")
        found = CrossMeetings(ctx.search).find(query, tenant=ctx.tenant, k=args.k)
        if args.json:
            emit_json([c.public() for c in found])
        else:
            for rank, c in enumerate(found, start=1):
                s = c.hit.segment
                who = f"{s.speaker}: " if s.speaker else ""
                print(f"{rank:2d}. {c.meeting_id} [{format_time(s.start)}] {who}{s.text}")
        return 0
    if args.query is None:
        raise InvalidSegment("give a MEETING_ID and a QUERY, or --all QUERY")

    filters = SearchFilters(start=args.start, end=args.end, speaker=args.speaker)
    mode = args.mode
    if ctx.settings.embedder == "none" and mode == "hybrid":
        mode = "bm25"
    hits = ctx.search.search(args.meeting_id, args.query, tenant=ctx.tenant, k=args.k, mode=mode, filters=filters)
    if args.json:
        emit_json([h.public() for h in hits])
    else:
        for rank, h in enumerate(hits, start=1):
            s = h.segment
            who = f"{s.speaker}: " if s.speaker else ""
            print(f"{rank:2d}. [{format_time(s.start)}] {who}{s.text}")
    return 0


def _read_questions(path: str) -> list[str]:
    source = Path(path)
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise InvalidSegment(f"cannot read file: {exc.strerror}", source=path) from exc
    questions = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidSegment(f"not a JSON line: {exc}", source=path, line=number) from exc
        question = obj.get("question") if isinstance(obj, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise InvalidSegment("expected an object with a non-empty string 'question'", source=path, line=number)
        questions.append(question)
    return questions


def cmd_ask(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.all:
        from meetmem.answers.across import CrossMeetings

        question = _across_positionals(args, "question", "question")
        out = CrossMeetings(ctx.search, ctx.answerer).ask(question, tenant=ctx.tenant).public(explain=args.explain)
        if args.json:
            emit_json(out)
        else:
            print(f"Q: {out['question']}\nA: {out['answer']}")
            for c in out["citations"][:3]:
                who = f"{c['speaker']}: " if c["speaker"] else ""
                print(f"   {c['meeting_id']} [{format_time(c['start'])}-{format_time(c['end'])}] {who}{c['text']}")
            if args.explain:
                print(f"   route: {out['route']['name']} ({out['route']['reason']})")
        return 0
    if (args.question is None) == (args.questions is None):
        raise InvalidSegment("give either a QUESTION or --questions FILE.jsonl")
    ctx.log.require_meeting(args.meeting_id, tenant=ctx.tenant)
    questions = [args.question] if args.question is not None else _read_questions(args.questions)
    answerer = ctx.answerer
    from meetmem.answers.sessions import AskSession

    # The questions of one run are one conversation: with a model, each prompt shows the earlier rounds.
    session = AskSession()
    progress = StderrProgress("answering", enabled=not ctx.quiet and len(questions) > 1)
    for done, question in enumerate(questions, start=1):
        answer = answerer.ask(args.meeting_id, question, tenant=ctx.tenant, device_id=args.device_id,
                              session=session)
        if args.json:
            emit_json(answer.public(explain=args.explain))
        else:
            print(f"Q: {answer.question}\nA: {answer.answer}")
            for c in answer.citations[:3]:
                who = f"{c.speaker}: " if c.speaker else ""
                print(f"   [{format_time(c.start)}-{format_time(c.end)}] {who}{c.text}")
            if args.explain:
                plan = answer.public(explain=True).get("plan")
                if plan:
                    print(f"   route: {plan['route']} ({plan['why']})")
                    if plan["params"]:
                        print("   params: " + ", ".join(f"{k}={v}" for k, v in plan["params"].items()))
                for block in answer.manifest:
                    print(f"   · {block.block}: {block.tokens} tokens ({block.reason})")
        progress(done, len(questions))
    return 0


def _verify_deleted(args: argparse.Namespace, ctx: CommandContext, tombstone: Any, receipts: list[Any]) -> int:
    """A deleted meeting: intact when its tombstone carries the server's signature (and the receipts given
    acknowledge nothing past the chain's end it records). Exit 0 then, else 1."""
    from meetmem.store.receipts import ReceiptError, ReceiptKey

    problem = None
    try:
        key = ReceiptKey.load(args.receipt_key or ctx.settings.receipt_key_path())
        ctx.log.check_tombstone(tombstone, key)
        for receipt in receipts:
            key.check_signature(receipt)
            if receipt.pos > tombstone.head_pos or (receipt.pos == tombstone.head_pos
                                                    and receipt.head != tombstone.head_hash):
                problem = (f"a signed receipt acknowledges chain position {receipt.pos}, beyond or other than the "
                           f"chain's end the tombstone records (position {tombstone.head_pos})")
    except ReceiptError as exc:
        problem = str(exc)
    if args.json:
        emit_json({"meeting_id": args.meeting_id, "ok": problem is None, "deleted": tombstone.public(),
                   "checked": 0, "broken_at": None, "reason": problem, "head_pos": tombstone.head_pos,
                   "receipts": len(receipts)})
    if problem is not None:
        sys.stderr.write(f"meetmem: {args.meeting_id}: deleted at {tombstone.deleted_at}, but its tombstone does not "
                         f"hold: {problem}\n")
        return 1
    if not args.json:
        print(f"{args.meeting_id}: deleted at {tombstone.deleted_at} ({tombstone.reason}); its {tombstone.segments} "
              f"segments are gone, and its tombstone (chain end {tombstone.head_pos}) carries this server's "
              "signature")
    return 0


def cmd_verify(args: argparse.Namespace, ctx: CommandContext) -> int:
    receipts: list[Any] = []
    key = None
    tombstone = ctx.log.tombstone(args.meeting_id, tenant=ctx.tenant)
    if tombstone is not None:
        from meetmem.store.receipts import read_receipts

        mine = [r for path in args.receipt or () for r in read_receipts(path)
                if (r.tenant, r.meeting_id) == (ctx.tenant, args.meeting_id)]
        return _verify_deleted(args, ctx, tombstone, mine)
    if args.receipt:
        from meetmem.store.receipts import ReceiptKey, read_receipts

        for path in args.receipt:
            receipts.extend(read_receipts(path))
        key = ReceiptKey.load(args.receipt_key or ctx.settings.receipt_key_path())
        foreign = [r for r in receipts if (r.tenant, r.meeting_id) != (ctx.tenant, args.meeting_id)]
        if len(foreign) == len(receipts):
            raise InvalidSegment(f"none of the receipts is for meeting {args.meeting_id!r} of tenant "
                                 f"{ctx.tenant!r} (they name {foreign[0].meeting_id!r} of {foreign[0].tenant!r})")
    report = ctx.log.verify(args.meeting_id, tenant=ctx.tenant, receipts=receipts, key=key)
    if args.json:
        emit_json({"meeting_id": report.meeting_id, "ok": report.ok, "checked": report.checked,
                   "broken_at": report.broken_at, "reason": report.reason, "head_pos": report.head_pos,
                   "receipts": report.receipts})
    if report.ok:
        if not args.json:
            signed = f", {report.receipts} signed receipts match" if report.receipts else ""
            print(f"{args.meeting_id}: hash chain intact ({report.checked} segments, ends where its head "
                  f"says{signed})")
        return 0
    if report.broken_at is None:
        sys.stderr.write(f"meetmem: {args.meeting_id}: the log was cut short: {report.reason}\n")
    else:
        sys.stderr.write(f"meetmem: {args.meeting_id}: hash chain broken at {report.reason}\n")
    return 1


def cmd_reindex(args: argparse.Namespace, ctx: CommandContext) -> int:
    total = ctx.search.rebuild(progress=StderrProgress("embedding", enabled=not ctx.quiet))
    meetings = len(ctx.log.meetings())
    digests = ctx.digester.rebuild()
    if args.json:
        emit_json({"meetings": meetings, "segments": total, "digests": digests})
    else:
        print(f"rebuilt the indexes, summaries and ledgers of {meetings} meetings ({total} segments)")
    return 0


def add_store_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", parents=flags(*STORAGE, TENANT, MODEL, JSON, QUIET),
                       help="append a transcript file (JSON Lines), all or nothing",
                       description="Append a transcript (JSON Lines, one segment per line) to a meeting. The whole "
                       "file is validated first: a bad line stores nothing. Ingesting the same file twice adds "
                       "nothing the second time.")
    add_meeting_id(p)
    p.add_argument("file", metavar="FILE.jsonl")
    p.add_argument("--audio", metavar="FILE", default=None,
                   help="the meeting's audio (Ogg Opus/Vorbis kept as is; WAV, FLAC, MP3... encoded to Opus)")
    p.add_argument("--title", default=None, help="the meeting's title")
    p.add_argument("--date", default=None, metavar="DATETIME",
                   help="when the meeting started: ISO 8601 with a UTC offset, e.g. 2027-03-01T10:00:00+01:00; "
                   "relative dates said in it (\"by Friday\") resolve against its day")
    p.add_argument("--participants", default=None, metavar="NAMES", help='who took part, comma-separated: "Ana,Bo"')
    p.add_argument("--ics", default=None, metavar="INVITE.ics",
                   help="the meeting's calendar invite (iCalendar): its title, start with its timezone and attendees, "
                   "where --title, --date and --participants do not say otherwise")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("segments", parents=flags(*STORAGE, TENANT, JSON),
                       help="list a meeting's segments, optionally by time range",
                       description="List a meeting's segments ordered by start time.")
    add_meeting_id(p)
    p.add_argument("--start", type=float, default=None, help="keep segments ending at or after S seconds")
    p.add_argument("--end", type=float, default=None, help="keep segments starting at or before E seconds")
    p.set_defaults(func=cmd_segments)

    p = sub.add_parser("search", parents=flags(*STORAGE, TENANT, MODEL, JSON, QUIET),
                       help="hybrid (BM25 + dense) search of a meeting's transcript",
                       description="Search a meeting's transcript; hits best first. With --all, every meeting of "
                       "the tenant, each hit naming its meeting_id.")
    add_meeting_id(p, text="the meeting (with --all: the query)")
    p.add_argument("query", metavar="QUERY", nargs="?", default=None)
    p.add_argument("--all", action="store_true", help="search all the tenant's meetings: meetmem search --all QUERY")
    p.add_argument("--k", type=int, default=10, help="how many hits (default 10)")
    p.add_argument("--mode", choices=["hybrid", "bm25", "dense"], default="hybrid", help="ranking (default hybrid)")
    p.add_argument("--start", type=float, default=None, help="only segments ending at or after S seconds")
    p.add_argument("--end", type=float, default=None, help="only segments starting at or before E seconds")
    p.add_argument("--speaker", default=None, help="only this speaker's segments")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("ask", parents=flags(*STORAGE, TENANT, MODEL, JSON, QUIET),
                       help="answer a question about a meeting, with timestamped citations",
                       description="Answer a question (or a file of questions, one JSON object per line) from "
                       "the meeting's transcript. The models load once for the whole file.")
    add_meeting_id(p, text="the meeting (with --all: the question)")
    p.add_argument("question", metavar="QUESTION", nargs="?", default=None)
    p.add_argument("--all", action="store_true",
                   help="ask across all the tenant's meetings: meetmem ask --all QUESTION (citations name meeting_id)")
    p.add_argument("--questions", metavar="FILE.jsonl", default=None, help='one {"question": ...} per line')
    p.add_argument("--explain", action="store_true", help="add the plan (route, parameters, why) and the manifest of "
                   "the context the answer used")
    p.add_argument("--device-id", default=None, metavar="DEVICE_ID",
                   help='the asking device: "what was said since I joined?" starts at its first segment')
    p.add_argument("--device", dest="device_id", metavar="DEVICE_ID", action=Deprecated, new="--device-id")
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("verify", parents=flags(*STORAGE, TENANT, JSON), help="recompute a meeting's hash chain",
                       description="Recompute the meeting's hash chain and check that it ends where the meeting's "
                       "head and closure say; with --receipt, also that it holds every position the cloud "
                       "signed a receipt for. Exit 0 when intact, else name the first broken link (or the cut) "
                       "and exit 1. A deleted meeting is reported as deleted (when, why) and its tombstone's "
                       "signature checked with the receipt key: exit 0 when it holds, 1 when not.")
    add_meeting_id(p)
    p.add_argument("--receipt", action="append", metavar="FILE", default=None,
                   help="receipts kept outside the database (JSON or JSON Lines, as the API returned them, or "
                   "`edge receipts --json`); may be repeated")
    p.add_argument("--receipt-key", default=None, metavar="PATH",
                   help="the server's receipt key (default: MEETMEM_RECEIPT_KEY, else <db>.receipt-key)")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("reindex", parents=flags(*STORAGE, MODEL, JSON, QUIET),
                       help="rebuild every derived index from the log",
                       description="Drop every derived index (vectors included), summary and ledger, and rebuild "
                       "them from the log.")
    p.set_defaults(func=cmd_reindex)
