"""HTTP byte ranges (RFC 9110 §14) over a file, for the audio player: it asks for `Range: bytes=a-b` to
seek without downloading the whole recording."""

from __future__ import annotations

import re

from fastapi.responses import Response, StreamingResponse

from meetmem.store.audio import AudioBlob

_SPEC = re.compile(r"([0-9]*)-([0-9]*)", re.ASCII)


def parse_range(header: str | None, size: int) -> tuple[int, int] | None | str:
    """The inclusive byte range a `Range` header asks for within `size` bytes.

    Returns:
        `(first, last)`; None to send the whole file (no header, another unit, several ranges, or a
        malformed one: a server may ignore a Range it does not serve); `"unsatisfiable"` when the range
        lies past the end (416).
    """
    if not header or not header.startswith("bytes=") or "," in header:
        return None
    # RFC 9110 §14.1.1: positions are 1*DIGIT, ASCII digits only (Python's int() would also take
    # "1_0", "+1", " 1" or other scripts' digits).
    spec = _SPEC.fullmatch(header[len("bytes="):].strip(" \t"))
    if spec is None:
        return None
    first_s, last_s = spec.groups()
    if first_s == "":
        if last_s == "":
            return None
        suffix = int(last_s)
        if suffix <= 0:
            return "unsatisfiable"
        return max(size - suffix, 0), size - 1
    first = int(first_s)
    last = int(last_s) if last_s else size - 1
    if first >= size:
        return "unsatisfiable"
    if first < 0 or last < first:
        return None
    return first, min(last, size - 1)


def blob_response(blob: AudioBlob, range_header: str | None, media_type: str,
                  headers: dict[str, str] | None = None) -> Response:
    """Stored bytes (a file, or a value in the database), whole (200) or the asked-for range (206), with
    `Accept-Ranges` so players know they may seek."""
    size = blob.size
    base = {"Accept-Ranges": "bytes", **(headers or {})}
    wanted = parse_range(range_header, size)
    if wanted == "unsatisfiable":
        return Response(status_code=416, headers={**base, "Content-Range": f"bytes */{size}"})
    if wanted is None or size == 0:
        return StreamingResponse(blob.read(0, size - 1), media_type=media_type,
                                 headers={**base, "Content-Length": str(size)})
    assert isinstance(wanted, tuple)
    first, last = wanted
    return StreamingResponse(blob.read(first, last), status_code=206, media_type=media_type,
                             headers={**base, "Content-Range": f"bytes {first}-{last}/{size}",
                                      "Content-Length": str(last - first + 1)})
