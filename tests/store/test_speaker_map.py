"""The speaker map on both stores (tests/store/conftest.py's `backend`): versions appended, never rewritten,
the same order and answers on SQLite and PostgreSQL, bad names refused with nothing stored, and the names
gone with their meeting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from meetmem.store.errors import InvalidSegment, MeetingNotFound
from meetmem.store.receipts import ReceiptKey
from meetmem.store.records import SegmentInput
from meetmem.store.speaker_map import read_current, speaker_map_for


@pytest.fixture
def meeting(log: Any) -> Any:
    log.append("m1", "g1", [SegmentInput(seq=0, start=0.0, end=1.0, text="hello", speaker="S1")], tenant="acme")
    return log


def test_a_log_no_name_was_set_in_has_an_empty_map(meeting: Any) -> None:
    assert read_current(meeting, "m1", tenant="acme") == {}


def test_versions_are_appended_and_the_newest_is_the_name(meeting: Any) -> None:
    names = speaker_map_for(meeting)
    added = names.set("m1", {"S1": " Maria  Lopez ", "S2": "Priya"}, tenant="acme")
    assert [(e.label, e.name, e.version, e.source) for e in added] == [
        ("S1", "Maria Lopez", 1, "user"), ("S2", "Priya", 1, "user")]
    assert names.set("m1", {"S1": "Maria Lopez"}, tenant="acme") == []  # unchanged: no new version
    names.set("m1", {"S1": "Marie", "S2": None}, tenant="acme")
    assert [(e.label, e.name, e.version) for e in names.history("m1", tenant="acme")] == [
        ("S1", "Maria Lopez", 1), ("S1", "Marie", 2), ("S2", "Priya", 1), ("S2", None, 2)]
    current = read_current(meeting, "m1", tenant="acme")
    assert {label: (e.name, e.version) for label, e in current.items()} == {"S1": ("Marie", 2), "S2": (None, 2)}
    assert current["S1"].set_at.endswith("Z")


def test_labels_come_in_byte_order_on_both_stores(meeting: Any) -> None:
    names = speaker_map_for(meeting)
    names.set("m1", {label: "X" for label in ("wearer", "a", "S2", "S10", "B")}, tenant="acme")
    assert [e.label for e in names.history("m1", tenant="acme")] == ["B", "S10", "S2", "a", "wearer"]


@pytest.mark.parametrize("bad", [{}, {"S1": ""}, {"S1": 5}, {"": "A"}, {"S1": "x" * 201}, {"S1": "Ma\x00ria"},
                                 {"S\x001": "Maria"}, "Maria"])
def test_bad_names_are_refused_and_nothing_is_stored(meeting: Any, bad: Any) -> None:
    names = speaker_map_for(meeting)
    with pytest.raises(InvalidSegment):
        names.set("m1", {"S2": "Priya", **bad} if isinstance(bad, dict) and bad else bad, tenant="acme")
    assert names.history("m1", tenant="acme") == []


def test_an_unknown_meeting_or_tenant_is_not_found(meeting: Any) -> None:
    names = speaker_map_for(meeting)
    for meeting_id, tenant in (("nope", "acme"), ("m1", "rival")):
        with pytest.raises(MeetingNotFound):
            names.set(meeting_id, {"S1": "Maria"}, tenant=tenant)
    assert names.history("m1", tenant="acme") == []


def test_deleting_the_meeting_removes_its_names(meeting: Any, tmp_path: Path) -> None:
    meeting.append("m2", "g1", [SegmentInput(seq=0, start=0.0, end=1.0, text="hi", speaker="S1")], tenant="acme")
    names = speaker_map_for(meeting)
    for meeting_id in ("m1", "m2"):
        names.set(meeting_id, {"S1": "Maria"}, tenant="acme")
        names.set(meeting_id, {"S1": "Marie"}, tenant="acme")
    meeting.delete_meeting("m1", tenant="acme", key=ReceiptKey.load(tmp_path / "key", create=True))
    assert names.history("m1", tenant="acme") == [] and read_current(meeting, "m1", tenant="acme") == {}
    assert [e.version for e in names.history("m2", tenant="acme")] == [1, 2]
    with pytest.raises(MeetingNotFound, match="deleted at"):
        names.set("m1", {"S1": "Maria"}, tenant="acme")


def test_the_database_refuses_to_rewrite_a_version(meeting: Any, backend: Any) -> None:
    speaker_map_for(meeting).set("m1", {"S1": "Maria"}, tenant="acme")
    for sql in ("UPDATE speaker_names SET name = 'Eve'", "DELETE FROM speaker_names"):
        with pytest.raises(backend.refused):
            backend.raw(sql, tenant="acme")
    assert [e.name for e in speaker_map_for(meeting).history("m1", tenant="acme")] == ["Maria"]
