"""A meeting written out for people and other programs: Markdown minutes, SRT and WebVTT subtitles, JSON.

Pure functions over the store's records (standard library only), so the CLI and the HTTP service render
the same bytes. Times in minutes and subtitles are the meeting's own positions (seconds from its start),
the same ones every answer cites, so a line of the minutes can be played back from the audio.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .records import LEDGER_KEYS, MeetingDigest, Segment
from .timecode import format_time

#: The formats `meetmem export --format` and `GET .../export?format=` take, with their media types.
EXPORT_FORMATS: dict[str, str] = {
    "md": "text/markdown; charset=utf-8",
    "srt": "application/x-subrip; charset=utf-8",
    "vtt": "text/vtt; charset=utf-8",
    "json": "application/json",
    "ics": "text/calendar; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
}

#: The file name extension of each format (for a download's name).
EXPORT_SUFFIX = {"md": ".md", "srt": ".srt", "vtt": ".vtt", "json": ".json", "ics": ".ics", "csv": ".csv"}
#: Where exported todos link to when the caller names no address (`meetmem serve`'s default).
DEFAULT_BASE_URL = "http://127.0.0.1:8000"

# A subtitle cue must end after it starts (WebVTT requires it); a zero-length segment is shown this long.
_MIN_CUE = 0.5


@dataclass(frozen=True, slots=True)
class MeetingHeader:
    """What the minutes say about a meeting before its content.

    `title`, `started_at` and `participants` come from the meeting's metadata when it has some; otherwise
    the title is the meeting's id and the participants are the speakers heard (see `header_for`).
    """

    meeting_id: str
    title: str
    started_at: str | None = None
    duration: float = 0.0
    participants: tuple[str, ...] = field(default_factory=tuple)
    closed: bool = True


def header_for(meeting_id: str, segments: Sequence[Segment], *, title: str | None = None,
               started_at: str | None = None, participants: Sequence[str] | None = None,
               closed: bool = True) -> MeetingHeader:
    """The header from whatever metadata is known, the rest derived from the segments."""
    speakers: list[str] = []
    for seg in segments:
        if seg.speaker and seg.speaker not in speakers:
            speakers.append(seg.speaker)
    duration = max((s.end for s in segments), default=0.0)
    return MeetingHeader(meeting_id=meeting_id, title=title or meeting_id, started_at=started_at,
                         duration=duration, participants=tuple(participants or speakers), closed=closed)


def render(fmt: str, header: MeetingHeader, segments: Sequence[Segment], digest: MeetingDigest | None, *,
           owner_names: Mapping[str, str] | None = None, speaker_names: Mapping[str, str] | None = None,
           base_url: str | None = None) -> str:
    """The meeting in `fmt` (`md`, `srt`, `vtt`, `json`; `ics` and `csv`: its open todos, store/calendar.py).

    Args:
        segments: the meeting's segments in listing order, corrected ones included (`supersedes` links a
            correction to the segment it replaces): subtitles show only what stands, the JSON keeps both.
        digest: the summaries and ledger (None when none could be made: the minutes then say so).
        owner_names: speaker label -> name from the meeting's speaker map: a ledger item owned by a label
            gets `owner_name` (as GET ledger gives it), and the minutes show "Priya (S2)" (the caller
            decides which names a document states).
        speaker_names: speaker label -> name for the transcript's lines: subtitles show the name, the JSON's
            segments add `speaker_name` (their `speaker` stays the label), the minutes' participants read
            "Priya (S2)". None: the labels alone.
        base_url: where the service's page is, for the todos' links (`ics`, `csv`; `DEFAULT_BASE_URL` if None).

    Raises:
        ValueError: an unknown format (the message lists the known ones).
    """
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")
    if fmt == "md":
        return minutes_markdown(header, segments, digest, owner_names=owner_names, speaker_names=speaker_names)
    if fmt == "json":
        return export_json(header, segments, digest, owner_names=owner_names, speaker_names=speaker_names)
    if fmt in ("ics", "csv"):
        from .calendar import todos_csv, todos_ics

        write = todos_ics if fmt == "ics" else todos_csv
        return write(header, digest, base_url=base_url or DEFAULT_BASE_URL, owner_names=owner_names)
    return subtitles(_standing(segments), vtt=fmt == "vtt", speaker_names=speaker_names)


def _standing(segments: Sequence[Segment]) -> list[Segment]:
    """The segments no correction replaced, in listing order."""
    replaced = {s.supersedes for s in segments if s.supersedes}
    return [s for s in segments if s.segment_id not in replaced]


# -- subtitles ----------------------------------------------------------------------------------------------
def _cue_time(seconds: float, *, sep: str) -> str:
    millis = int(round(max(seconds, 0.0) * 1000))
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, ms = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{sep}{ms:03d}"


def _one_line(text: str) -> str:
    """The text on one line: every run of whitespace (line breaks of any kind included) one space."""
    return " ".join(text.split())


# "-->" in any form: a run of dashes (and spaces, which lenient SRT readers allow inside the arrow) ending in
# ">". Each run is taken whole, so no arrow is left for a second pass ("--->" with its first "-->" replaced
# was "-->" again); one without ">" stays as it is.
_DASHES = re.compile(r"-[- ]*>?")


def _no_arrows(text: str) -> str:
    return _DASHES.sub(lambda m: "->" if m.group().endswith(">") else m.group(), text)


def cue_text(text: str) -> str:
    """Text that reads as words inside one subtitle cue and never as a cue's structure.

    A blank line ends a cue and a line holding "-->" starts the next in both SRT and WebVTT, and in SRT a
    line of digits before a timing line is a cue number: the text goes on one line (so no line follows it)
    with no arrow in it. Speaker names take the same path as the words.
    """
    return _no_arrows(_one_line(text))


def _vtt_escape(text: str) -> str:
    # WebVTT cue text must escape "&" and "<" (WebVTT §4.2.2, cue text); ">" may stand as it is.
    return text.replace("&", "&amp;").replace("<", "&lt;")


def subtitles(segments: Sequence[Segment], *, vtt: bool, speaker_names: Mapping[str, str] | None = None) -> str:
    """SRT (`vtt=False`) or WebVTT cues, one per segment, the speaker (by the name `speaker_names` gives the
    label, else the label) as a voice (VTT) or a prefix (SRT)."""
    names = speaker_names or {}
    ordered = sorted(segments, key=lambda s: (s.start, s.device_id, s.seq))
    blocks: list[str] = ["WEBVTT\n"] if vtt else []
    for number, seg in enumerate(ordered, start=1):
        end = max(seg.end, seg.start + _MIN_CUE) if seg.end - seg.start < 0.001 else seg.end
        text = cue_text(seg.text)
        sep = "." if vtt else ","
        timing = f"{_cue_time(seg.start, sep=sep)} --> {_cue_time(end, sep=sep)}"
        who = cue_text(names.get(seg.speaker, seg.speaker)) if seg.speaker else ""
        if vtt:
            # The voice's name ends at ">": one inside the name would end it early.
            speaker = who.replace(">", "")
            body = f"<v {_vtt_escape(speaker)}>{_vtt_escape(text)}" if speaker else _vtt_escape(text)
        else:
            body = f"{who}: {text}" if who else text
        blocks.append(f"{number}\n{timing}\n{body}\n")
    return "\n".join(blocks)


# -- Markdown minutes ---------------------------------------------------------------------------------------
# Characters Markdown reads as structure inside a line, escaped with a backslash (CommonMark §2.4): "[" and "]"
# open links, images and references; "`" code; "*", "_", "~" emphasis and strike-through; "|" a table cell;
# "\\" first, so text cannot undo an escape. "<" starts raw HTML and autolinks, and a backslash does not
# stop that in every renderer (Python-Markdown's does not): it becomes "&lt;", as does the "&" of anything
# that reads as a character reference, so "&lt;" said in a meeting stays those four characters.
_MD_ESCAPE = re.compile(r"[\\`*_~|\[\]]")
_MD_ENTITY = re.compile(r"&(?=#?[0-9A-Za-z]+;)")


def md_text(text: str) -> str:
    """Text for one line of Markdown (a list item or a table cell) that reads as the words alone: no HTML,
    no link or image, no emphasis, code or table cell of its own, whatever the text holds."""
    text = _MD_ESCAPE.sub(lambda m: "\\" + m.group(0), _one_line(text))
    return _MD_ENTITY.sub("&amp;", text).replace("<", "&lt;")


def _md_code(text: str) -> str:
    """Text as a Markdown code span, fenced with more backticks than any run inside it (CommonMark §6.1)."""
    text = _one_line(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""  # one space each side is dropped, so a backtick may start or end the text
    return f"{fence}{pad}{text}{pad}{fence}"


def _at(source: dict[str, Any]) -> str:
    return f"[{format_time(float(source['start']))}]"


def named_ledger(digest: MeetingDigest, owner_names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The digest's ledger (`ledger --json`'s shape), each item whose owner is a named speaker label with its
    `owner_name` from the meeting's speaker map."""
    ledger = digest.ledger_public()
    for key in LEDGER_KEYS.values():
        for item in ledger[key]:
            if owner_names and item.get("owner") in owner_names:
                item["owner_name"] = owner_names[item["owner"]]
    return ledger


def minutes_markdown(header: MeetingHeader, segments: Sequence[Segment], digest: MeetingDigest | None, *,
                     owner_names: Mapping[str, str] | None = None,
                     speaker_names: Mapping[str, str] | None = None) -> str:
    """Minutes: title, date, participants, the summary, decisions, todos, open questions and facts, each
    line with the time it was said (superseded items struck through and kept, in time order)."""
    out = [f"# {md_text(header.title)}", ""]
    if header.title != header.meeting_id:
        out.append(f"- **Meeting:** {_md_code(header.meeting_id)}")
    out.append(f"- **Date:** {md_text(header.started_at) if header.started_at else 'not recorded'}")
    out.append(f"- **Duration:** {format_time(header.duration)}")
    names = speaker_names or {}
    people = [f"{names[p]} ({p})" if p in names and names[p] != p else p for p in header.participants]
    out.append(f"- **Participants:** {', '.join(md_text(p) for p in people) or 'not recorded'}")
    out.append(f"- **Status:** {'closed' if header.closed else 'in progress'}")
    out.append("")
    if digest is None:
        out += ["_No summary or ledger could be made for this meeting._", ""]
        return "\n".join(out)
    out += ["## Summary", ""]
    out += [f"- {_at(line.source.public())} {md_text(line.text)}" for line in digest.l2] or ["_Nothing yet._"]
    out.append("")
    ledger = named_ledger(digest, owner_names)

    def item_line(item: dict[str, Any], text: str) -> str:
        if item["status"] == "superseded":
            return f"- {_at(item['source'])} ~~{text}~~ (superseded)"
        return f"- {_at(item['source'])} {text}"

    out += ["## Decisions", ""]
    out += [item_line(i, md_text(i["text"])) for i in ledger["decisions"]] or ["_None recorded._"]
    out += ["", "## To do", ""]
    if ledger["todos"]:
        out += ["| Time | Owner | Task | Due | Status |", "| --- | --- | --- | --- | --- |"]
        for item in ledger["todos"]:
            due = item.get("due") or ""
            if item.get("due_date"):
                due = f"{due} ({item['due_date']})" if due else item["due_date"]
            task = md_text(item.get("task") or item["text"])
            state = "superseded" if item["status"] == "superseded" else "open"
            if state == "superseded":
                task = f"~~{task}~~"
            owner = item.get("owner") or "—"
            if item.get("owner_name"):
                owner = f"{item['owner_name']} ({owner})"
            out.append(f"| {_at(item['source'])} | {md_text(owner)} | {task} | "
                       f"{md_text(due) or '—'} | {state} |")
    else:
        out.append("_None recorded._")
    for key, title in (("open_questions", "Open questions"), ("facts", "Facts")):
        out += ["", f"## {title}", ""]
        out += [item_line(i, md_text(i["text"])) for i in ledger[key]] or ["_None recorded._"]
    out.append("")
    return "\n".join(out)


# -- JSON -----------------------------------------------------------------------------------------------------
def export_json(header: MeetingHeader, segments: Sequence[Segment], digest: MeetingDigest | None, *,
                owner_names: Mapping[str, str] | None = None, speaker_names: Mapping[str, str] | None = None) -> str:
    """One JSON document: the meeting, every segment (corrections and the segments they replace, marked),
    the summary and the ledger, in the shapes of `segments`, `summary` and `ledger --json`."""
    replaced = {s.supersedes: s.segment_id for s in segments if s.supersedes}
    rows = []
    for seg in segments:
        row = seg.public()
        if speaker_names is not None:
            row["speaker_name"] = speaker_names.get(seg.speaker) if seg.speaker else None
        row["superseded_by"] = replaced.get(seg.segment_id)
        rows.append(row)
    doc: dict[str, Any] = {
        "meeting_id": header.meeting_id,
        "title": header.title,
        "started_at": header.started_at,
        "duration": header.duration,
        "participants": list(header.participants),
        "status": "closed" if header.closed else "live",
        "segments": rows,
        "summary": digest.summary_public() if digest is not None else None,
        "ledger": named_ledger(digest, owner_names) if digest is not None else None,
    }
    if digest is None:
        doc["ledger"] = {key: [] for key in LEDGER_KEYS.values()}
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
