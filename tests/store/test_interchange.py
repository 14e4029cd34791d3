"""The interchange format (JSON Lines): validation rules, line numbers, the file's device id."""

from __future__ import annotations

import hashlib
import json

import pytest

from meetmem.store.errors import InvalidSegment
from meetmem.store.interchange import file_device_id, parse_jsonl, validate_segment

GOOD = {"start": 12.34, "end": 15.6, "speaker": "A", "text": "we ship on March 3rd", "lang": "en"}

BAD_OBJECTS = [
    pytest.param({k: v for k, v in GOOD.items() if k != "start"}, "start", id="missing start"),
    pytest.param({k: v for k, v in GOOD.items() if k != "end"}, "end", id="missing end"),
    pytest.param({k: v for k, v in GOOD.items() if k != "text"}, "text", id="missing text"),
    pytest.param({**GOOD, "text": ""}, "text", id="empty text"),
    pytest.param({**GOOD, "text": " \t "}, "text", id="blank text"),
    pytest.param({**GOOD, "text": 42}, "text", id="text not a string"),
    pytest.param({**GOOD, "end": 10.0}, "end", id="end before start"),
    pytest.param({**GOOD, "start": -1.0}, "start", id="negative start"),
    pytest.param({**GOOD, "start": "12.34"}, "start", id="string start"),
    pytest.param({**GOOD, "start": True}, "start", id="boolean start"),
    pytest.param({**GOOD, "start": float("nan")}, "start", id="nan start"),
    pytest.param({**GOOD, "end": float("inf")}, "end", id="infinite end"),
    pytest.param({**GOOD, "end": 30 * 24 * 3600.0}, "end", id="end in milliseconds"),
    pytest.param({**GOOD, "speaker": 7}, "speaker", id="speaker not a string"),
    pytest.param({**GOOD, "lang": "english please"}, "lang", id="bad lang"),
    pytest.param([GOOD], "object", id="not an object"),
]


@pytest.mark.parametrize(("obj", "named"), BAD_OBJECTS)
def test_validate_segment_refuses(obj, named: str) -> None:
    with pytest.raises(InvalidSegment) as err:
        validate_segment(obj, 1)
    assert named in str(err.value)


def test_validate_segment_keeps_text_exactly_and_optional_fields() -> None:
    text = "  um, we ship on March 3rd  "
    seg = validate_segment({**GOOD, "text": text, "raw_text": "uh we ship", "confidence": 0.9, "lang": "zh_CN"}, 3)
    assert seg.text == text  # stored exactly as given: cleaning is the edge's job
    assert (seg.seq, seg.start, seg.end, seg.speaker) == (3, 12.34, 15.6, "A")
    assert (seg.raw_text, seg.confidence, seg.lang) == ("uh we ship", 0.9, "zh-cn")
    minimal = validate_segment({"start": 0, "end": 0, "text": "x"}, 1)
    assert (minimal.start, minimal.end, minimal.speaker, minimal.lang) == (0.0, 0.0, None, None)


def test_parse_jsonl_numbers_segments_by_physical_line() -> None:
    lines = [json.dumps(GOOD), "", json.dumps({**GOOD, "start": 16.0, "end": 17.0}), "   ", json.dumps(GOOD)]
    segments = parse_jsonl("\n".join(lines).encode(), "t.jsonl")
    assert [s.seq for s in segments] == [1, 3, 5]


def test_parse_jsonl_accepts_crlf_line_endings() -> None:
    data = (json.dumps(GOOD) + "\r\n" + json.dumps(GOOD) + "\r\n").encode()
    assert [s.text for s in parse_jsonl(data, "t.jsonl")] == [GOOD["text"]] * 2


@pytest.mark.parametrize(("bad_line", "fragment"), [
    (b'{"start": 1, "end": 2, "text": "x",}', "malformed JSON"),
    (b'{"start": 1, "end": 2, "text": "caf\xe9"}', "UTF-8"),
    (b'{"start": NaN, "end": 2, "text": "x"}', "finite"),
])
def test_parse_jsonl_names_source_and_line(bad_line: bytes, fragment: str) -> None:
    data = json.dumps(GOOD).encode() + b"\n\n" + json.dumps(GOOD).encode() + b"\n" + bad_line + b"\n"
    with pytest.raises(InvalidSegment) as err:
        parse_jsonl(data, "meeting.jsonl")
    assert (err.value.source, err.value.line) == ("meeting.jsonl", 4)
    assert str(err.value).startswith("meeting.jsonl:4: ")
    assert fragment in str(err.value)


def test_an_empty_file_is_refused() -> None:
    with pytest.raises(InvalidSegment, match="no segments"):
        parse_jsonl(b"\n\n", "empty.jsonl")


def test_the_file_device_id_is_the_sha256_of_its_bytes() -> None:
    data = json.dumps(GOOD).encode() + b"\n"
    assert file_device_id(data) == "file:" + hashlib.sha256(data).hexdigest()
    assert file_device_id(data) != file_device_id(data + b"\n")


# -- what an attack run found (issue 16): one validator, clear errors for hostile lines -------------------
def test_a_deeply_nested_line_is_named_by_file_and_line() -> None:
    data = json.dumps(GOOD).encode() + b"\n" + b"[" * 1500 + b"]" * 1500 + b"\n"
    with pytest.raises(InvalidSegment) as err:
        parse_jsonl(data, "deep.jsonl")
    assert str(err.value).startswith("deep.jsonl:2: ") and "nested too deeply" in str(err.value)


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    data = b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n"
    assert [s.text for s in parse_jsonl(data, "bom.jsonl")] == [GOOD["text"]]


@pytest.mark.parametrize(("obj", "named"), [
    pytest.param({**GOOD, "confidence": 5}, "confidence", id="confidence above 1"),
    pytest.param({**GOOD, "confidence": -0.1}, "confidence", id="negative confidence"),
    pytest.param({**GOOD, "colour": "red"}, "colour", id="unknown field"),
    pytest.param({**GOOD, "speaker": "x" * 201}, "speaker", id="speaker too long"),
    pytest.param({**GOOD, "supersedes": "s_" + "0" * 70}, "supersedes", id="supersedes too long"),
])
def test_the_file_reader_refuses_what_the_api_refuses(obj: dict, named: str) -> None:
    with pytest.raises(InvalidSegment) as err:
        parse_jsonl(json.dumps(obj).encode(), "t.jsonl")
    assert named in str(err.value) and str(err.value).startswith("t.jsonl:1: ")


@pytest.mark.parametrize("meeting_id", ["a/b", "/", ".", "..", "x\x7f"])
def test_a_meeting_id_the_api_cannot_route_is_refused(meeting_id: str) -> None:
    from meetmem.store.interchange import check_id

    with pytest.raises(InvalidSegment, match="meeting id"):
        check_id("meeting id", meeting_id)
    assert check_id("device id", "file:abc/def") == "file:abc/def"  # only meeting ids are path segments
