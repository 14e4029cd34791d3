"""`meetmem export` (minutes, subtitles, JSON) and a meeting's audio (`ingest --audio`, `audio delete`)."""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from meetmem.store.errors import InvalidSegment

from .options import JSON, MODEL, QUIET, STORAGE, TENANT, add_meeting_id, flags
from .output import emit_json
from .progress import note

if TYPE_CHECKING:
    from .context import CommandContext

#: The device id of audio attached to a meeting from a file (`ingest --audio`): one per meeting.
FILE_AUDIO_DEVICE = "file"


def cmd_export(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.export import header_for, render

    log = ctx.log
    segments = log.segments(args.meeting_id, tenant=ctx.tenant, include_superseded=True)
    info = log.meta(args.meeting_id, tenant=ctx.tenant) if segments else None  # title, date, participants
    header = header_for(args.meeting_id, segments, title=info.title if info else None,
                        started_at=info.started_at if info else None,
                        participants=info.participants if info else None,
                        closed=log.closure(args.meeting_id, tenant=ctx.tenant) is not None)
    digest = ctx.digester.digest(args.meeting_id, tenant=ctx.tenant) if segments else None
    names = None
    if args.format in ("ics", "csv") and segments:  # an owner named as a user confirmed them
        from meetmem.store.speaker_map import speaker_map_for

        current = speaker_map_for(log).current(args.meeting_id, tenant=ctx.tenant)
        names = {label: entry.name for label, entry in current.items() if entry.name and entry.source == "user"} or None
    # The todos link to the meeting page: where the service is reached (MEETMEM_PUBLIC_URL), else its default.
    sys.stdout.write(render(args.format, header, segments, digest, owner_names=names,
                            base_url=ctx.settings.public_url))
    return 0


def ogg_audio(path: Path, *, quiet: bool = False) -> bytes:
    """The file's bytes when it is Ogg Opus or Vorbis already, else the file encoded as Ogg Opus (PyAV)."""
    from meetmem.store.audio import InvalidAudio, ogg_info

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidSegment(f"cannot read the audio file: {exc.strerror}", source=str(path)) from exc
    try:
        ogg_info(data)
        return data
    except InvalidAudio:
        pass
    from meetmem.edge.audio import read_file
    from meetmem.edge.recording import OggOpusWriter

    if not quiet:
        note(f"encoding {path.name} as Ogg Opus")
    with tempfile.TemporaryDirectory(prefix="meetmem-audio-") as tmp:
        out = Path(tmp) / "audio.ogg"
        with OggOpusWriter(out) as writer:
            for block in read_file(path, chunk_seconds=10.0):
                writer.write(block)
        return out.read_bytes()


def attach_audio(meeting_id: str, data: bytes, path: str, ctx: CommandContext) -> dict[str, object]:
    """Keep `data` (Ogg, from `ogg_audio(path)`) as the meeting's audio from the meeting's start (the CLI's
    `ingest --audio`)."""
    from meetmem.store.backends import audio_store_for

    store = audio_store_for(ctx.log)
    existing = store.get(meeting_id, FILE_AUDIO_DEVICE, 0, tenant=ctx.tenant)
    if existing is not None and existing.sha256 != hashlib.sha256(data).hexdigest():
        raise InvalidSegment(f"meeting {meeting_id!r} already has other audio; remove it first with "
                             f"`meetmem audio delete {meeting_id}`", source=path)
    chunk, new = store.add(meeting_id, FILE_AUDIO_DEVICE, 0, data, start=0.0, tenant=ctx.tenant)
    if not ctx.quiet:
        state = "kept" if new else "already kept"
        note(f"audio {state}: {chunk.duration:.1f} s of {chunk.codec}, {chunk.size / 1024:.0f} KiB, "
             f"sha256 {chunk.sha256[:12]}…")
    return chunk.public()


def cmd_audio_delete(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.backends import audio_store_for

    removed = audio_store_for(ctx.log).delete(args.meeting_id, tenant=ctx.tenant)
    if args.json:
        emit_json({"meeting_id": args.meeting_id, "deleted_chunks": removed})
    else:
        print(f"{args.meeting_id}: removed {removed} audio chunks; the transcript is unchanged")
    return 0


def add_export_commands(sub: argparse._SubParsersAction) -> None:
    # No --json: the format is the output (`--format json` is the meeting as one JSON document).
    p = sub.add_parser("export", parents=flags(*STORAGE, TENANT, MODEL, QUIET),
                       help="a meeting as Markdown minutes, SRT/WebVTT subtitles or JSON",
                       description="Write the meeting to stdout: `md` minutes (title, date, participants, summary, "
                       "decisions, todos with owners and dates, open questions, each with its time), `srt` or `vtt` "
                       "subtitles (one cue per segment), or `json` (segments, summary and ledger).")
    add_meeting_id(p)
    p.add_argument("--format", choices=["md", "srt", "vtt", "json", "ics", "csv"], default="md",
                   help="the format (default md); ics and csv: the open todos, as calendar tasks or tracker rows")
    p.set_defaults(func=cmd_export)

    audio = sub.add_parser("audio", help="a meeting's kept audio",
                           description="Manage a meeting's audio, which is kept apart from its transcript "
                           "(attach it with `ingest --audio FILE`).")
    audio_sub = audio.add_subparsers(dest="audio_command", metavar="ACTION", required=True)
    p = audio_sub.add_parser("delete", parents=flags(*STORAGE, TENANT, JSON),
                             help="delete a meeting's audio, keeping its transcript",
                             description="Remove the meeting's audio files. The transcript log and its hash chain "
                             "are not touched (`meetmem verify` still passes).")
    add_meeting_id(p)
    p.set_defaults(func=cmd_audio_delete)
