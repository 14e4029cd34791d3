"""`meetmem delete`, `tombstones`, `retention` and `verify` of a deleted meeting, as a user runs them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from meetmem.store.backends import open_log
from meetmem.store.records import SegmentInput

#: Every command here on both stores (`--database postgresql://...` for PostgreSQL).
BACKENDS = ("sqlite", "postgres")


@pytest.fixture
def two_meetings(run_cli: Any, jsonl_writer: Any, tmp_path: Path) -> Any:
    rows = [{"start": 2.0 * i, "end": 2.0 * i + 1.5, "text": f"point {i}"}
            for i in range(4)]
    transcript = jsonl_writer(tmp_path / "m.jsonl", rows)
    # "old" was first stored in 2020 by the server's clock; "keep" today, though its device says 1970: a
    # meeting's age is the server's to tell.
    target = run_cli.db if isinstance(run_cli.db, Path) else run_cli.db.url
    with open_log(target, clock=lambda: "2020-01-06T09:00:00+00:00") as log:
        log.append("old", "file:old", [SegmentInput(seq=i, **row) for i, row in enumerate(rows)])
        log.close_meeting("old", reason="ingested")
    result = run_cli("ingest", "keep", str(transcript), "--date", "1970-01-01T00:00:00+00:00")
    assert result.returncode == 0, result.stderr
    return run_cli


def test_delete_needs_a_confirmation_off_a_terminal(two_meetings: Any) -> None:
    run_cli = two_meetings
    result = run_cli("delete", "old")
    assert result.returncode == 1 and "--yes" in result.stderr
    assert run_cli("segments", "old").returncode == 0  # nothing deleted
    result = run_cli("delete", "old", "--yes", "--json", "--reason", "asked by Ana")
    assert result.returncode == 0, result.stderr
    tomb = result.json()
    assert (tomb["meeting_id"], tomb["segments"], tomb["head_pos"], tomb["reason"]) == ("old", 4, 3, "asked by Ana")
    gone = run_cli("segments", "old")
    assert gone.returncode == 1 and "deleted at" in gone.stderr
    listed = run_cli("tombstones", "--json").json()
    assert listed == [tomb]
    assert run_cli("delete", "old", "--yes").returncode == 1  # once only
    assert run_cli("delete", "nope", "--yes").returncode == 1


def test_delete_asks_on_a_terminal(two_meetings: Any, cli_command: list[str]) -> None:
    run_cli = two_meetings

    def on_terminal(answer: bytes) -> subprocess.CompletedProcess:
        parent, child = os.openpty()
        try:
            os.write(parent, answer)
            env = {k: v for k, v in os.environ.items() if not k.startswith("MEETMEM_")}
            db = run_cli.db  # a SQLite file, or a PostgreSQL store (tests/conftest.py PgStore)
            where = ["--db", str(db)] if isinstance(db, Path) else ["--db", str(db.home), "--database", db.url]
            return subprocess.run([*cli_command, "delete", "old", *where], stdin=child,
                                  capture_output=True, env={**env, "MEETMEM_EMBEDDER": "none"}, timeout=120)
        finally:
            os.close(parent)
            os.close(child)

    refused = on_terminal(b"n\n")
    assert refused.returncode == 1 and b"cannot be undone" in refused.stderr and b"nothing deleted" in refused.stderr
    assert run_cli("segments", "old").returncode == 0
    agreed = on_terminal(b"y\n")
    assert agreed.returncode == 0, agreed.stderr
    assert run_cli("segments", "old").returncode == 1


def test_verify_of_a_deleted_meeting_checks_its_tombstone(two_meetings: Any) -> None:
    run_cli = two_meetings
    assert run_cli("delete", "old", "--yes").returncode == 0
    result = run_cli("verify", "old")
    assert result.returncode == 0 and "deleted at" in result.stdout and "signature" in result.stdout
    report = run_cli("verify", "old", "--json").json()
    assert report["ok"] is True and report["deleted"]["meeting_id"] == "old"
    ok = run_cli("verify", "keep")
    assert ok.returncode == 0 and "intact" in ok.stdout
    # Someone who can write the database but lacks the key rewrites the tombstone: verify says so.
    if isinstance(run_cli.db, Path):
        conn = sqlite3.connect(run_cli.db)
        conn.execute("DROP TRIGGER deletions_refuse_update")
        conn.execute("UPDATE meeting_deletions SET segments = 1")
        conn.commit()
        conn.close()
    else:  # PostgreSQL's superuser, its triggers switched off
        import psycopg

        with psycopg.connect(run_cli.db.url) as pg:
            pg.execute("SET session_replication_role = replica")
            pg.execute("UPDATE meeting_deletions SET segments = 1")
    forged = run_cli("verify", "old")
    assert forged.returncode == 1 and "does not carry this server's signature" in forged.stderr
    home = run_cli.db if isinstance(run_cli.db, Path) else run_cli.db.home
    assert run_cli("verify", "old", "--receipt-key", str(home) + ".nokey").returncode == 1


def test_retention_set_show_and_apply(two_meetings: Any) -> None:
    run_cli = two_meetings
    assert run_cli("retention", "set", "--days", "5").returncode == 1  # which tenant?
    result = run_cli("retention", "set", "--tenant", "local", "--days", "30", "--json")
    assert result.returncode == 0 and result.json() == {"tenant": "local", "days": 30, "source": "tenant"}
    assert run_cli("retention", "show", "--json").json() == {"default_days": None, "tenants": {"local": 30}}
    dry = run_cli("retention", "apply", "--dry-run", "--json").json()
    assert [e["meeting_id"] for e in dry["expired"]] == ["old"] and dry["deleted"] == []
    assert run_cli("segments", "old").returncode == 0
    done = run_cli("retention", "apply", "--json").json()
    assert [t["meeting_id"] for t in done["deleted"]] == ["old"]
    assert done["deleted"][0]["reason"].startswith("retention: older than 30 days (by first_received 2020-01-06")
    assert run_cli("segments", "old").returncode == 1 and run_cli("segments", "keep").returncode == 0
    assert run_cli("verify", "keep").returncode == 0
    assert run_cli("retention", "set", "--tenant", "local", "--days", "-1").returncode == 1
    assert json.loads(run_cli("retention", "apply", "--days", "1", "--dry-run", "--json").stdout)["expired"] == []
