"""The transcript interchange format (JSON Lines, one segment per line), read and validated.

A file is read whole and validated before anything is stored, so a bad line anywhere leaves the log
untouched: the error names the file and the line.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from .errors import InvalidSegment
from .records import FILE_DEVICE_PREFIX, SegmentInput

#: A week. A timestamp beyond it is a unit mistake (milliseconds sent as seconds), not a meeting.
MAX_TIMESTAMP_S = 7 * 24 * 3600.0
MAX_TEXT_CHARS = 20_000
#: The longest speaker name, language tag and segment id a segment may carry (the API states the same).
MAX_SPEAKER_CHARS = 200
MAX_LANG_CHARS = 35
MAX_SEGMENT_ID_CHARS = 64
#: The longest meeting, device or tenant id.
MAX_ID_CHARS = 200
#: Every field an interchange line may hold; anything else is a typo the caller should hear about.
INTERCHANGE_FIELDS = ("start", "end", "text", "speaker", "lang", "raw_text", "confidence", "supersedes")
_BOM = b"\xef\xbb\xbf"
_LANG_RE = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")


def _number(obj: dict[str, Any], name: str, *, required: bool) -> float | None:
    if name not in obj or obj[name] is None:
        if required:
            raise InvalidSegment(f"missing required field {name!r}")
        return None
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidSegment(f"{name!r} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise InvalidSegment(f"{name!r} must be a finite number, got {value!r}")
    return value


def _optional_str(obj: dict[str, Any], name: str, max_chars: int) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidSegment(f"{name!r} must be a string or null, got {type(value).__name__}")
    if len(value) > max_chars:
        raise InvalidSegment(f"{name!r} is {len(value)} characters; at most {max_chars}")
    return _storable(name, value)


def is_valid_unicode(value: str) -> bool:
    """False for a lone surrogate (JSON's `\\ud800` decodes to one), which no UTF-8 database can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def has_control_characters(value: str) -> bool:
    """Whether `value` holds a C0 control character or DEL (NUL included)."""
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in value)


def _storable(name: str, value: str) -> str:
    """JSON's `\\ud800` escapes decode to lone surrogates, which no UTF-8 database can hold."""
    if not is_valid_unicode(value):
        raise InvalidSegment(f"{name!r} contains a lone surrogate; text must be valid Unicode")
    if "\x00" in value:
        raise InvalidSegment(f"{name!r} contains a NUL character")
    return value


def validate_segment(obj: Any, seq: int) -> SegmentInput:
    """Check one decoded interchange object against the CONTRACT and return it as a `SegmentInput`.

    The one validator of a segment: the CLI's file reader, the HTTP API (after its schema) and the log's own
    guard all call it, so a segment one of them takes the others take too.

    Raises:
        InvalidSegment: naming the field and what is wrong with it (no location; callers add it).
    """
    if not isinstance(obj, dict):
        raise InvalidSegment(f"a segment must be a JSON object, got {type(obj).__name__}")
    unknown = [name for name in obj if name not in INTERCHANGE_FIELDS]
    if unknown:
        raise InvalidSegment(f"unknown field {', '.join(repr(str(n)) for n in unknown)}; a segment holds only "
                             f"{', '.join(INTERCHANGE_FIELDS)}")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise InvalidSegment(f"'seq' must be a non-negative integer, got {seq!r}")
    start = _number(obj, "start", required=True)
    end = _number(obj, "end", required=True)
    assert start is not None and end is not None
    if start < 0:
        raise InvalidSegment(f"'start' is negative ({start}); times are seconds from the meeting's start")
    if end < start:
        raise InvalidSegment(f"'end' ({end}) is before 'start' ({start})")
    if end > MAX_TIMESTAMP_S:
        raise InvalidSegment(
            f"'end' ({end}) is more than a week after the meeting's start; times must be in seconds"
        )
    if "text" not in obj or obj["text"] is None:
        raise InvalidSegment("missing required field 'text'")
    text = obj["text"]
    if not isinstance(text, str):
        raise InvalidSegment(f"'text' must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InvalidSegment("'text' is empty")
    _storable("text", text)
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidSegment(f"'text' is {len(text)} characters; one segment holds at most {MAX_TEXT_CHARS}")
    speaker = _optional_str(obj, "speaker", MAX_SPEAKER_CHARS)
    if speaker is not None and has_control_characters(speaker):
        raise InvalidSegment("'speaker' contains a control character; a speaker label is an id")
    lang = _optional_str(obj, "lang", MAX_LANG_CHARS)
    if lang is not None and not _LANG_RE.match(lang):
        raise InvalidSegment(f"'lang' must be a language code such as 'en' or 'zh', got {lang!r}")
    raw_text = _optional_str(obj, "raw_text", MAX_TEXT_CHARS)
    supersedes = _optional_str(obj, "supersedes", MAX_SEGMENT_ID_CHARS)
    confidence = _number(obj, "confidence", required=False)
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidSegment(f"'confidence' must be between 0 and 1, got {confidence}")
    return SegmentInput(
        seq=seq,
        start=start,
        end=end,
        text=text,
        speaker=speaker,
        lang=lang.lower().replace("_", "-") if lang else None,
        raw_text=raw_text,
        confidence=confidence,
        supersedes=supersedes,
    )


def check_segment_input(item: SegmentInput) -> None:
    """Re-check a `SegmentInput` built by code rather than read from a file (the log's own guard).

    Raises:
        InvalidSegment: naming the seq and the problem.
    """
    fields = {
        "start": item.start,
        "end": item.end,
        "text": item.text,
        "speaker": item.speaker,
        "lang": item.lang,
        "raw_text": item.raw_text,
        "confidence": item.confidence,
        "supersedes": item.supersedes,
    }
    try:
        validate_segment(fields, item.seq)
    except InvalidSegment as exc:
        raise InvalidSegment(f"seq {item.seq}: {exc.reason}") from None


def check_id(what: str, value: str) -> str:
    """A meeting, device or tenant id: 1-200 characters, not blank, no control characters.

    A meeting id is also a path segment of the API (`/v1/meetings/{meeting_id}`), so it may not hold `/`
    (nor be `.` or `..`): an id the CLI took would otherwise be listed by the API but unreachable there.

    Raises:
        InvalidSegment: naming the id and the rule it breaks.
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidSegment(f"{what} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise InvalidSegment(f"{what} is longer than {MAX_ID_CHARS} characters")
    if has_control_characters(value):
        raise InvalidSegment(f"{what} contains control characters")
    if not is_valid_unicode(value):
        raise InvalidSegment(f"{what} contains a lone surrogate; it must be valid Unicode")
    if what == "meeting id" and ("/" in value or value in (".", "..")):
        raise InvalidSegment(f"meeting id {value!r} cannot be used in a URL: it may not contain '/' or be '.' or '..'")
    return value


def file_device_id(data: bytes) -> str:
    """The CONTRACT's device id for a file ingested by the CLI: `file:` + sha256 of its bytes."""
    return FILE_DEVICE_PREFIX + hashlib.sha256(data).hexdigest()


def parse_jsonl(data: bytes, source: str) -> list[SegmentInput]:
    """Parse and validate a whole interchange file; `seq` is the 1-based line number.

    Blank lines are skipped (they keep their line number), and so is a UTF-8 byte order mark at the start
    (editors on Windows write one; JSON over HTTP may carry one too). Raises `InvalidSegment` naming the
    source and line of the first problem, before anything could be stored.
    """
    segments: list[SegmentInput] = []
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidSegment(
                f"not valid UTF-8 (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})", source=source, line=number
            ) from exc
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidSegment(f"malformed JSON: {exc.msg} at column {exc.colno}", source=source,
                                 line=number) from exc
        except RecursionError:
            raise InvalidSegment("the JSON is nested too deeply; a segment is one flat object", source=source,
                                 line=number) from None
        try:
            segments.append(validate_segment(obj, number))
        except InvalidSegment as exc:
            raise InvalidSegment(exc.reason, source=source, line=number) from None
    if not segments:
        raise InvalidSegment("no segments in file", source=source)
    return segments


def read_jsonl(path: str | Path) -> tuple[str, list[SegmentInput]]:
    """Read an interchange file: its CONTRACT device id and its validated segments."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidSegment(f"cannot read file: {exc.strerror}", source=str(path)) from exc
    return file_device_id(data), parse_jsonl(data, str(path))
