"""`meetmem edge run` and `meetmem edge ask`: the agent on the glasses' companion board.

These import only `meetmem.edge` (faster-whisper, webrtcvad, PyAV, httpx): never torch, FastAPI, faiss or
the search index, so they run on a board with the `edge` extra alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from .context import CommandContext
from .progress import note
from .store_commands import emit_json

EXIT_PENDING = 3  # the file is captured but the cloud has not acknowledged everything before --timeout


def _cloud_and_token(args: argparse.Namespace) -> tuple[str, str]:
    cloud = args.cloud or os.environ.get("MEETMEM_CLOUD")
    token = args.token or os.environ.get("MEETMEM_TOKEN")
    missing = [name for name, value in (("--cloud (or MEETMEM_CLOUD)", cloud),
                                        ("--token (or MEETMEM_TOKEN)", token)) if not value]
    if missing:
        from meetmem.edge.errors import EdgeError

        raise EdgeError(f"missing {' and '.join(missing)}: the edge needs the cloud's URL and a bearer token "
                        "(`meetmem token create --tenant NAME` on the cloud)")
    assert cloud is not None and token is not None
    return cloud, token


def _asr(args: argparse.Namespace) -> Any:
    from meetmem.edge.asr import ASROptions, WhisperASR

    language = None if args.language in (None, "auto") else args.language
    return WhisperASR(ASROptions(model=args.model, cpu_threads=args.threads, beam_size=args.beam,
                                 language=language))


def _glossary(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(t.strip() for t in (args.glossary or "").split(",") if t.strip())


class StatusLine:
    """One status line on stderr: audio time, segments, outbox pending, real-time factor."""

    def __init__(self, outbox: Any, uploader: Any, *, enabled: bool, interval: float = 1.0) -> None:
        self.outbox = outbox
        self.uploader = uploader
        self.enabled = enabled
        self.interval = interval
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, status: Any, *, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self._last < self.interval):
            return
        self._last = now
        stats = self.outbox.stats()
        cloud = "cloud ok" if self.uploader.last_error is None else f"cloud: {self.uploader.last_error}"[:60]
        minutes, seconds = divmod(int(status.audio_time), 60)
        line = (f"audio {minutes:02d}:{seconds:02d}  segments {status.segments}  outbox {stats.pending} pending"
                f"  RTF {status.real_time_factor:.2f}  {cloud}")
        sys.stderr.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.tty:
            sys.stderr.write("\n")


def _with_cloud_glossary(client: Any, meeting_id: str, glossary: tuple[str, ...], *, quiet: bool) -> tuple[str, ...]:
    """Add the names and terms the cloud's ledger already holds for this meeting (a device joining late or
    resuming); offline, the agent records with what it has."""
    from meetmem.edge.errors import CloudError

    try:
        terms = client.glossary(meeting_id)
    except CloudError as exc:
        if not quiet:
            note(f"no glossary from the cloud ({exc}); recording without it")
        return glossary
    merged = tuple(dict.fromkeys(glossary + tuple(terms[:50])))
    if terms and not quiet:
        note(f"{len(terms)} glossary terms from the cloud's ledger as hotwords")
    return merged


def cmd_edge_run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.edge import audio
    from meetmem.edge.agent import CaptureAgent, CaptureOptions, default_outbox_path, source_id
    from meetmem.edge.outbox import Outbox
    from meetmem.edge.sync import CloudClient, SyncOptions, Uploader

    cloud, token = _cloud_and_token(args)
    live = args.input in ("-", "mic")
    if args.input == "mic":
        from meetmem.edge.microphone import read_microphone

        chunks = read_microphone()
    elif args.input == "-":
        chunks = audio.read_pcm_stream(sys.stdin.buffer)
    else:
        chunks = audio.read_file(args.input)  # checks the file at once: a bad one fails before any model loads
        if args.realtime:
            chunks = audio.paced(chunks)
    source = source_id(args.input)
    outbox = Outbox(Path(args.outbox) if args.outbox else default_outbox_path(),
                    max_bytes=args.outbox_max_mb * 1024 * 1024, device_id=args.device_id)
    if not ctx.quiet:
        note(f"loading the Whisper {args.model} model ...")
    asr = _asr(args)
    client = CloudClient(cloud, token)
    glossary = _glossary(args)
    if args.cloud_glossary:
        glossary = _with_cloud_glossary(client, args.meeting, glossary, quiet=ctx.quiet)
    uploader = Uploader(outbox, client, SyncOptions(batch=args.batch))
    status_line = StatusLine(outbox, uploader, enabled=not ctx.quiet)
    agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id=args.meeting, language=asr.options.language,
                                                     glossary=glossary, speaker=args.speaker),
                         on_segment=lambda _: uploader.notify(), on_status=status_line)
    uploader.start()
    try:
        status = agent.run(chunks, source=source, live=live,
                           anchor=time.time() if (live or args.realtime) else None)
        status_line(status, force=True)
        drained = uploader.drain(timeout=args.timeout)
        status_line(status, force=True)
    finally:
        status_line.done()
        uploader.stop()
        client.close()
    stats = outbox.stats()
    report = {"meeting_id": args.meeting, "device_id": outbox.device_id,
              "audio_seconds": round(status.audio_time, 2), "segments": status.segments,
              "dropped_utterances": status.dropped, "sent": uploader.sent, "pending": stats.pending,
              "rejected": stats.rejected, "real_time_factor": round(status.real_time_factor, 3),
              "outbox": str(outbox.path)}
    outbox.close()
    if args.json:
        emit_json(report)
    if uploader.fatal is not None:
        sys.stderr.write(f"meetmem: error: {uploader.fatal}; {stats.pending} segments are safe in {report['outbox']}\n")
        return 1
    if not drained:
        sys.stderr.write(f"meetmem: the cloud did not acknowledge {stats.pending} segments within {args.timeout:g} s "
                         f"({uploader.last_error or 'no answer'}); they are safe in {report['outbox']}: run the "
                         "same command again to send them\n")
        return EXIT_PENDING
    if not ctx.quiet and not args.json:
        note(f"{status.segments} segments captured and acknowledged by the cloud")
    return 0


def cmd_edge_ask(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.edge import audio
    from meetmem.edge.sync import CloudClient

    cloud, token = _cloud_and_token(args)
    if args.audio == "mic":
        samples = _push_to_talk()
    else:
        samples = audio.decode_file(args.audio)
    if not ctx.quiet:
        note(f"loading the Whisper {args.model} model ...")
    asr = _asr(args)
    pieces = asr.transcribe(samples, glossary=_glossary(args))
    from meetmem.edge.agent import join_pieces

    question = join_pieces(pieces)
    if not question:
        from meetmem.edge.errors import AudioError

        raise AudioError(args.audio, "no speech recognised in the question")
    client = CloudClient(cloud, token)
    try:
        answer = client.ask(args.meeting, question, explain=args.explain)
    finally:
        client.close()
    answer["transcribed_question"] = question
    if args.json:
        emit_json(answer)
    else:
        print(f"Q: {question}\n{answer['answer']}")
    return 0


def _push_to_talk() -> Any:
    """Record from the microphone from now until Enter is pressed (at most 30 s)."""
    import threading

    from meetmem.edge.microphone import record_until

    stop = threading.Event()

    def wait_for_enter() -> None:
        sys.stdin.readline()
        stop.set()

    note("recording your question: press Enter when you have finished speaking")
    threading.Thread(target=wait_for_enter, name="push-to-talk", daemon=True).start()
    return record_until(stop)


def add_edge_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    edge = sub.add_parser("edge", help="the edge agent: speech to the cloud, questions by voice",
                          description="The edge agent for the glasses' companion board (needs only the "
                          "`edge` extra: no torch).")
    edge_sub = edge.add_subparsers(dest="edge_command", metavar="ACTION", required=True)

    asr = argparse.ArgumentParser(add_help=False)
    asr.add_argument("--meeting", required=True, help="the meeting id")
    asr.add_argument("--cloud", default=None, help="the cloud's URL (env MEETMEM_CLOUD)")
    asr.add_argument("--token", default=None, help="a bearer token for the cloud (env MEETMEM_TOKEN)")
    asr.add_argument("--model", default="base", help="Whisper model: base (multilingual) or tiny.en (default base)")
    asr.add_argument("--language", default="auto", help="en, zh or auto (detect per utterance; default)")
    asr.add_argument("--beam", type=int, default=1, help="beam size (1: greedy, fastest; default 1)")
    asr.add_argument("--threads", type=int, default=2, help="CPU threads for the recogniser (default 2)")
    asr.add_argument("--glossary", default=None, help="comma-separated names and terms to spell right")

    p = edge_sub.add_parser("run", parents=[common, asr], help="capture a meeting and sync it to the cloud",
                            description="Capture speech from a file, the microphone (`mic`) or raw 16 kHz 16-bit "
                            "mono PCM on stdin (`-`), transcribe it, keep every segment in a durable outbox and "
                            "sync it to the cloud. For a file it returns once the cloud acknowledged every "
                            f"segment, or exits {EXIT_PENDING} after --timeout with them safe in the outbox.")
    p.add_argument("--input", required=True, help="an audio file (WAV, FLAC, Ogg, ...), `mic` or `-`")
    p.add_argument("--outbox", default=None, help="the outbox file (default: the user data directory)")
    p.add_argument("--outbox-max-mb", type=int, default=256, help="the outbox's size bound (default 256 MB)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds to wait for the cloud after the input ends (default 120)")
    p.add_argument("--realtime", action="store_true", help="replay a file at speaking pace, as a microphone would")
    p.add_argument("--speaker", default=None, help="a speaker label for every segment (the wearer)")
    p.add_argument("--device-id", default=None, help="the device id of a new outbox (default: random)")
    p.add_argument("--batch", type=int, default=50, help="segments per request (default 50)")
    p.add_argument("--no-cloud-glossary", dest="cloud_glossary", action="store_false",
                   help="do not add the glossary the cloud's ledger holds for the meeting to the hotwords")
    p.set_defaults(func=cmd_edge_run)

    p = edge_sub.add_parser("ask", parents=[common, asr], help="ask the cloud a spoken question",
                            description="Transcribe a spoken question on the device and ask the cloud; prints "
                            "the answer with `transcribed_question`.")
    p.add_argument("--audio", required=True,
                   help="the question as an audio file, or `mic`: push-to-talk (speak, then press Enter)")
    p.add_argument("--explain", action="store_true", help="also return the manifest of the context used")
    p.set_defaults(func=cmd_edge_ask)
