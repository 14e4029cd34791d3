"""`meetmem demo`: the sample meeting goes through the system and sample questions are answered.

The sample (espeak-ng voices, made by `meetmem.eval.sample_meeting`) ships with the package, so the demo
needs nothing beyond the install: it uses a fresh database in a temporary folder unless `--db` is given.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from meetmem.store.timecode import format_time

from .options import DATABASE, JSON, MODEL, QUIET, TENANT, flags
from .output import emit_json
from .progress import StderrProgress, note

if TYPE_CHECKING:
    from .context import CommandContext

DEMO_MEETING = "demo-launch-review"


def _demo_file(name: str) -> Path:
    return Path(str(resources.files("meetmem.demo_data").joinpath(name)))


def cmd_demo(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.settings import Settings

    from .context import CommandContext

    with tempfile.TemporaryDirectory(prefix="meetmem-demo-") as tmp:
        if args.db is None:
            ctx = CommandContext(Settings(**{**ctx.settings.model_dump(), "db": Path(tmp) / "demo.db"}),
                                 quiet=ctx.quiet)
        try:
            status = _run_demo(args, ctx)
            if not args.serve:
                return status
            token = _attach_and_token(ctx)
            settings = ctx.settings
        finally:
            ctx.close()
        return _serve(settings, token, host=args.host, port=args.port, verbose=args.verbose)


def _attach_and_token(ctx: CommandContext) -> str:
    """Keep the sample meeting's recording as its audio, and make a token for its tenant."""
    from meetmem.cloud.auth import TokenStore

    from .export_commands import attach_audio

    audio = _demo_file("sample_meeting.ogg")
    attach_audio(DEMO_MEETING, audio.read_bytes(), str(audio), ctx)
    return TokenStore(ctx.log).create(ctx.tenant, label="demo")


def _serve(settings: object, token: str, *, host: str, port: int, verbose: bool) -> int:
    """`meetmem serve` on the demo's database, after printing where to open it and how to sign in."""
    import socket

    import uvicorn

    from meetmem.cloud.app import create_app

    if port == 0:
        with socket.socket() as sock:
            sock.bind((host, 0))
            port = sock.getsockname()[1]
    settings = settings.model_copy(update={"host": host, "port": port, "close_after_silence": 0})  # type: ignore[attr-defined]
    url = f"http://{host}:{port}/"
    print(f"\nThe meeting app: {url}\nSign-in token:   {token}\n"
          f"Or open {url}#token={token} to sign in at once. Ctrl-C stops the server.", flush=True)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info" if verbose else "warning",
                timeout_graceful_shutdown=5)
    return 0


def _run_demo(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.interchange import read_jsonl

    transcript = _demo_file("sample_meeting.jsonl")
    questions = [json.loads(line) for line in _demo_file("sample_questions.jsonl").read_text().splitlines() if line]
    note(f"[1/5] reading the sample meeting's transcript ({transcript.name})")
    device_id, segments = read_jsonl(transcript)
    speakers = sorted({s.speaker for s in segments if s.speaker})
    note(f"      {len(segments)} segments, {segments[-1].end / 60:.1f} minutes, speakers: {', '.join(speakers)}")
    note(f"[2/5] appending it to the transcript log at {ctx.settings.db}")
    result = ctx.log.append(DEMO_MEETING, device_id, segments, tenant=ctx.tenant)
    report = ctx.log.verify(DEMO_MEETING, tenant=ctx.tenant)
    note(f"      {result.new} new segments; hash chain {'intact' if report.ok else 'BROKEN'} ({report.checked} links)")
    note("[3/5] indexing (BM25 + dense vectors)")
    started = time.perf_counter()
    search = ctx.search
    search.meeting_index(DEMO_MEETING, tenant=ctx.tenant, progress=StderrProgress("      embedding"))
    note(f"      indexed in {time.perf_counter() - started:.1f} s")
    ctx.log.close_meeting(DEMO_MEETING, tenant=ctx.tenant, reason="ingested")
    note(f"[4/5] answering {len(questions)} questions")
    answers = []
    found = 0
    for item in questions:
        started = time.perf_counter()
        answer = ctx.answerer.ask(DEMO_MEETING, item["question"], tenant=ctx.tenant)
        ms = (time.perf_counter() - started) * 1000
        ok = item["expected"].casefold() in answer.answer.casefold()
        found += ok
        answers.append({**answer.public(), "expected": item["expected"], "found": ok})
        if not args.json:
            print(f"\nQ: {answer.question}")
            print(f"A: {answer.answer}")
            top = answer.citations[0]
            print(f"   play back at {format_time(top.start)}-{format_time(top.end)} · {ms:.0f} ms · "
                  f"expected {item['expected']!r}: {'found' if ok else 'NOT found'}")
    note("[5/5] summarizing: topic sections, L1 and L2, and the ledger of decisions and todos")
    started = time.perf_counter()
    digest = ctx.digester.digest(DEMO_MEETING, tenant=ctx.tenant)
    note(f"      {len(digest.sections)} sections, {len(digest.ledger)} ledger items in "
         f"{(time.perf_counter() - started) * 1000:.0f} ms")
    overview = ctx.answerer.ask(DEMO_MEETING, "What did we decide, and what is pending?", tenant=ctx.tenant)
    if args.json:
        emit_json({"meeting_id": DEMO_MEETING, "segments": len(segments), "answers": answers,
                   "summary": digest.summary_public(), "ledger": digest.ledger_public(),
                   "overview": overview.public()})
    else:
        print("\nSummary (L2):")
        for line in digest.l2:
            print(f"   [{format_time(line.source.start)}] {line.text}")
        print(f"\nQ: {overview.question}\nA: {overview.answer}")
        print(f"\n{found} of {len(questions)} answers hold the expected value.")
    return 0 if found == len(questions) else 1


def add_demo_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", parents=flags(DATABASE, TENANT, MODEL, JSON, QUIET, own_db=True),
                       help="run the sample meeting through meetmem and ask it questions",
                       description="Ingest the bundled sample meeting (four speakers, about four minutes), index "
                       "it and answer sample questions with timestamps. Uses a temporary database unless --db "
                       "is given.")
    p.add_argument("--db", default=None, metavar="PATH",
                   help="keep the demo in this database file (default: a temporary one, deleted afterwards)")
    p.add_argument("--serve", action="store_true",
                   help="then serve the demo meeting, with its audio, in the meeting app; prints its URL and a token")
    p.add_argument("--host", default="127.0.0.1", help="with --serve: the address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="with --serve: the port (default 8000; 0 picks a free one)")
    p.set_defaults(func=cmd_demo)
