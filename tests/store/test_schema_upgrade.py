"""The SQLite schema's numbered steps: a database the previous release made opens, is upgraded in place, and
verifies, with every row and chain as it was (issue 33).

tests/store/data/release-2026-12-04.db was made by the code at d91649d (before the steps were numbered):
one closed meeting with two devices, a correction, metadata, speaker names in two versions and a digest; one
deleted meeting; a token; a retention setting.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from meetmem.cloud.auth import TokenStore
from meetmem.store.derived import DerivedStore
from meetmem.store.errors import StoreError
from meetmem.store.log import TranscriptLog
from meetmem.store.receipts import ReceiptKey
from meetmem.store.retention import RetentionPolicy
from meetmem.store.schema import SCHEMA_VERSION
from meetmem.store.speaker_map import SpeakerMap

DATA = Path(__file__).parent / "data"
OLD = DATA / "release-2026-12-04.db"


def _raw(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    target = tmp_path / "old.db"
    shutil.copy(OLD, target)
    return target


def test_an_old_database_opens_upgrades_and_verifies(old_db: Path) -> None:
    rows_before = _raw(old_db, "SELECT * FROM segments ORDER BY tenant, meeting_id, chain_pos")
    heads_before = _raw(old_db, "SELECT * FROM meeting_heads ORDER BY tenant, meeting_id")
    assert _raw(old_db, "PRAGMA user_version") == [(0,)] and rows_before
    key = ReceiptKey.load(DATA / "release-2026-12-04.receipt-key")
    with TranscriptLog(old_db) as log:
        assert log.database.upgraded == (0, SCHEMA_VERSION)
        report = log.verify("casing", tenant="acme", key=key)
        assert report.ok and report.checked == 6
        assert log.closure("casing", tenant="acme") is not None
        # The correction still hides what it corrected; the metadata is there.
        texts = [s.text for s in log.segments("casing", tenant="acme")]
        assert "We decided the casing will be anodised aluminium." in texts and len(texts) == 5
        assert log.meta("casing", tenant="acme").title == "Casing review"
        # The deleted meeting's tombstone, signed as it was.
        tombstone = log.tombstone("gone", tenant="acme")
        assert tombstone is not None and tombstone.segments == 1
        log.check_tombstone(tombstone, key)
        # What the stores kept: names in two versions, the digest, the token's tenant, the retention.
        history = SpeakerMap(log).history("casing", tenant="acme")
        assert [(e.label, e.name, e.version) for e in history] == [("S1", "Ana", 1), ("S2", "Bo", 1),
                                                                  ("S2", "Bo Lind", 2)]
        digest = DerivedStore(log).load("acme", "casing")
        assert digest is not None and digest.through_pos == 5
        assert RetentionPolicy(log).settings() == {"acme": 90}
        assert [(t.tenant, t.label) for t in TokenStore(log).list()] == [("acme", "old")]
        # The log still refuses to change history, and takes new rows on the same chain.
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            log.db.execute("UPDATE segments SET text = 'x'")
    assert _raw(old_db, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert _raw(old_db, "SELECT * FROM segments ORDER BY tenant, meeting_id, chain_pos") == rows_before
    assert _raw(old_db, "SELECT * FROM meeting_heads ORDER BY tenant, meeting_id") == heads_before
    tables = {r[0] for r in _raw(old_db, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"ask_turns", "meeting_audio", "audio_policy", "segment_vectors"} <= tables
    with TranscriptLog(old_db) as log:  # opened again: nothing left to do
        assert log.database.upgraded == (SCHEMA_VERSION, SCHEMA_VERSION)


def test_a_database_from_a_newer_meetmem_is_refused_untouched(old_db: Path) -> None:
    with sqlite3.connect(old_db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = old_db.read_bytes()
    with pytest.raises(StoreError, match="newer meetmem"):
        TranscriptLog(old_db)
    assert old_db.read_bytes() == before


def test_db_upgrade_and_current_name_the_sqlite_files_version(old_db: Path, meetmem_cli: Callable[..., Any]) -> None:
    current = meetmem_cli("db", "current", "--json", db=old_db)
    assert current.returncode == 1, current.stderr
    assert json.loads(current.stdout) == {"database": str(old_db), "current": 0, "head": SCHEMA_VERSION,
                                          "up_to_date": False}
    upgraded = meetmem_cli("db", "upgrade", "--json", db=old_db)
    assert upgraded.returncode == 0, upgraded.stderr
    assert json.loads(upgraded.stdout)["before"] == 0 and json.loads(upgraded.stdout)["after"] == SCHEMA_VERSION
    again = meetmem_cli("db", "upgrade", db=old_db)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert meetmem_cli("db", "current", db=old_db).returncode == 0
    assert meetmem_cli("verify", "casing", "--tenant", "acme", db=old_db).returncode == 0
