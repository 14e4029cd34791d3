"""A chain cut from the end is caught (issue 16): the meeting's head, its closure, and signed receipts.

Each attack is done as someone with the database file would: a raw connection, the triggers dropped.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from meetmem.store.log import TranscriptLog
from meetmem.store.receipts import Receipt, ReceiptError, ReceiptKey, read_receipts

TEXTS = [f"segment number {i} about the launch" for i in range(10)]


CUT = ("DROP TRIGGER segments_refuse_delete", "DELETE FROM segments WHERE meeting_id = 'm' AND chain_pos >= 6")


@pytest.fixture
def key(tmp_path: Path) -> ReceiptKey:
    return ReceiptKey.load(tmp_path / "receipt.key", create=True)


@pytest.fixture
def meeting(log: TranscriptLog, segments_factory) -> TranscriptLog:
    log.append("m", "g1", segments_factory(TEXTS[:5]))
    log.append("m", "g1", segments_factory(TEXTS[5:], first_seq=5, start=20.0))
    return log


def test_a_log_cut_from_the_end_fails_against_its_head(backend, meeting: TranscriptLog) -> None:
    assert meeting.verify("m").ok and meeting.head("m")[0] == 9
    backend.tamper(*CUT)
    report = meeting.verify("m")
    assert not report.ok and report.checked == 6 and report.broken_pos == 6
    assert "head records position 9" in report.reason and "4 rows were removed" in report.reason


def test_a_log_with_every_row_removed_fails(backend, meeting: TranscriptLog) -> None:
    backend.tamper("DROP TRIGGER segments_refuse_delete", "DELETE FROM segments WHERE meeting_id = 'm'")
    report = meeting.verify("m")
    assert not report.ok and report.checked == 0 and "removed" in report.reason


def test_a_cut_that_also_drops_the_head_fails_against_the_closure(backend, meeting: TranscriptLog) -> None:
    meeting.close_meeting("m")
    backend.tamper(*CUT, "DROP TRIGGER heads_refuse_going_back",
           "UPDATE meeting_heads SET head_pos = 5, head_hash = (SELECT hash FROM segments WHERE meeting_id = 'm' "
           "AND chain_pos = 5)")
    report = meeting.verify("m")
    assert not report.ok and "closure record says it ran to position 9" in report.reason


def test_the_head_refuses_to_go_back_or_away(backend, meeting: TranscriptLog) -> None:
    with pytest.raises(backend.refused, match="only moves forward"):
        backend.raw("UPDATE meeting_heads SET head_pos = 3")
    with pytest.raises(backend.refused, match="never deleted|permission denied"):
        backend.raw("DELETE FROM meeting_heads")
    assert meeting.head("m")[0] == 9 and meeting.verify("m").ok


def test_receipts_catch_what_a_rewrite_of_segments_head_and_closures_hides(backend, meeting: TranscriptLog,
                                                                          key: ReceiptKey, segments_factory) -> None:
    result = meeting.append("m", "g1", segments_factory(["and one more"], first_seq=10, start=40.0))
    receipt = key.sign("local", "m", result.head_pos, result.head_hash)
    assert (receipt.pos, meeting.verify("m", receipts=[receipt], key=key).receipts) == (10, 1)
    # Everything the database holds about the end, cut back consistently: verify alone cannot tell.
    backend.tamper("DROP TRIGGER segments_refuse_delete",
           "DELETE FROM segments WHERE meeting_id = 'm' AND chain_pos >= 6",
           "DROP TRIGGER heads_refuse_going_back",
           "UPDATE meeting_heads SET head_pos = 5, head_hash = (SELECT hash FROM segments WHERE meeting_id = 'm' "
           "AND chain_pos = 5)")
    assert meeting.verify("m").ok
    report = meeting.verify("m", receipts=[receipt], key=key)
    assert not report.ok and "receipt acknowledges chain position 10" in report.reason


def test_a_receipt_for_a_rewritten_position_fails(meeting: TranscriptLog, key: ReceiptKey) -> None:
    head = meeting.head("m")
    receipt = key.sign("local", "m", 4, "ab" * 32)  # signed, but not what the log holds at 4
    report = meeting.verify("m", receipts=[receipt], key=key)
    assert head is not None and not report.ok and "another hash" in report.reason


def test_an_altered_or_foreign_receipt_is_refused(meeting: TranscriptLog, key: ReceiptKey, tmp_path: Path) -> None:
    pos, head = meeting.head("m")
    good = key.sign("local", "m", pos, head)
    forged = Receipt(**{**good.public(), "pos": pos - 3})
    with pytest.raises(ReceiptError, match="signature"):
        meeting.verify("m", receipts=[forged], key=key)
    other = ReceiptKey.load(tmp_path / "other.key", create=True)
    with pytest.raises(ReceiptError, match="signed with key"):
        meeting.verify("m", receipts=[good], key=other)
    with pytest.raises(ReceiptError, match="no receipt key"):
        ReceiptKey.load(tmp_path / "missing.key")
    assert (tmp_path / "receipt.key").stat().st_mode & 0o777 == 0o600


def test_receipts_files_in_every_shape(key: ReceiptKey, tmp_path: Path) -> None:
    import json

    a, b = key.sign("local", "m", 1, "0" * 64), key.sign("local", "m", 2, "1" * 64)
    one = tmp_path / "one.json"
    one.write_text(json.dumps(a.public()))
    many = tmp_path / "many.jsonl"
    many.write_text(json.dumps(a.public()) + "\n" + json.dumps(b.public()) + "\n")
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([a.public(), b.public()]))
    assert read_receipts(one) == [a] and read_receipts(many) == [a, b] == read_receipts(listed)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(a.public()) + "\n{\"pos\": 3}\n")
    with pytest.raises(ReceiptError, match=r"bad.jsonl:2: .*'tenant'"):
        read_receipts(bad)


def test_a_database_from_before_heads_gets_them_from_its_chains(tmp_path: Path, segments_factory) -> None:
    path = tmp_path / "old.db"
    with TranscriptLog(path) as log:
        log.append("m", "g1", segments_factory(TEXTS[:4]))
    with closing(sqlite3.connect(path)) as conn:
        # A database from before heads, which was made before the schema's steps were numbered (version 0).
        for sql in ("DROP TRIGGER heads_refuse_delete", "DROP TRIGGER heads_refuse_going_back",
                    "DROP TABLE meeting_heads", "PRAGMA user_version = 0"):
            conn.execute(sql)
        conn.commit()
    with TranscriptLog(path) as log:
        assert log.head("m") is not None and log.head("m")[0] == 3
        assert log.verify("m").ok
