"""Fuzzing the interchange reader and the segment schema (hypothesis): any bytes, any JSON value.

Whatever a file holds, `parse_jsonl` either returns valid segments or raises `InvalidSegment` naming the
file (and the line, when one line is to blame); it never raises anything else. A segment the validator takes
is one the log stores, and one the HTTP schema takes too (one rule for the CLI and the API).
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from meetmem.cloud.schemas import SegmentIn
from meetmem.store.errors import InvalidSegment
from meetmem.store.interchange import INTERCHANGE_FIELDS, MAX_TIMESTAMP_S, parse_jsonl, validate_segment

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

# Objects shaped like segments: the contract's fields (some missing, some wrong) plus an odd extra key.
segment_like = st.fixed_dictionaries(
    {},
    optional={
        "start": st.one_of(st.floats(min_value=-10, max_value=2 * MAX_TIMESTAMP_S), st.integers(-5, 10**6),
                           json_values),
        "end": st.one_of(st.floats(min_value=-10, max_value=2 * MAX_TIMESTAMP_S), st.integers(-5, 10**6),
                         json_values),
        "text": st.one_of(st.text(max_size=40), json_values),
        "speaker": st.one_of(st.none(), st.text(max_size=30)),
        "lang": st.one_of(st.none(), st.sampled_from(["en", "zh", "zh_CN", "en-GB", "english", ""])),
        "raw_text": st.one_of(st.none(), st.text(max_size=30)),
        "confidence": st.one_of(st.none(), st.floats(min_value=-1, max_value=2), st.integers(-1, 5)),
        "colour": st.text(max_size=5),
    },
)


def _is_location(err: InvalidSegment) -> bool:
    return err.source == "fuzz.jsonl" and str(err).startswith("fuzz.jsonl")


@FUZZ
@given(st.binary(max_size=400))
def test_any_bytes_give_segments_or_a_located_error(data: bytes) -> None:
    try:
        segments = parse_jsonl(data, "fuzz.jsonl")
    except InvalidSegment as err:
        assert _is_location(err), str(err)
        return
    assert segments and all(s.text.strip() for s in segments)


@FUZZ
@given(st.lists(st.one_of(segment_like, json_values), min_size=1, max_size=5))
def test_any_json_lines_give_segments_or_the_line_to_blame(rows: list) -> None:
    data = "\n".join(json.dumps(r) for r in rows).encode()
    try:
        segments = parse_jsonl(data, "fuzz.jsonl")
    except InvalidSegment as err:
        assert _is_location(err) and err.line is not None and 1 <= err.line <= len(rows), str(err)
        return
    assert [s.seq for s in segments] == list(range(1, len(rows) + 1))
    for seg in segments:
        assert 0 <= seg.start <= seg.end <= MAX_TIMESTAMP_S and math.isfinite(seg.end)
        assert seg.confidence is None or 0 <= seg.confidence <= 1


@FUZZ
@given(segment_like, st.integers(0, 2**40))
def test_the_file_reader_and_the_api_schema_agree(obj: dict, seq: int) -> None:
    try:
        validate_segment(obj, seq)
        file_ok = True
    except InvalidSegment:
        file_ok = False
    try:
        item = SegmentIn.model_validate({"seq": seq, **obj})
        validate_segment(item.model_dump(exclude={"seq"}, exclude_none=True), item.seq)
        api_ok = True
    except (ValidationError, InvalidSegment):
        api_ok = False
    if api_ok:
        assert file_ok, f"the API takes {obj!r} but a file may not hold it"
    if file_ok and set(obj) <= set(INTERCHANGE_FIELDS):
        # Numbers that are JSON integers where the schema wants a float are the only leeway the API has not.
        strictly_typed = all(not isinstance(obj.get(n), bool) for n in ("start", "end", "confidence"))
        if strictly_typed:
            assert api_ok, f"a file may hold {obj!r} but the API refuses it"


@pytest.mark.parametrize("depth", [100, 1500, 100_000])
def test_nesting_at_any_depth_is_an_error_not_a_crash(depth: int) -> None:
    with pytest.raises(InvalidSegment) as err:
        parse_jsonl(b"[" * depth + b"]" * depth, "fuzz.jsonl")
    assert _is_location(err.value) and err.value.line == 1
