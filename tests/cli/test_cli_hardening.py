"""What an attack run found in the CLI (issue 16): hostile files get a `file:line` error, the CLI takes what
the API takes and no more, and `verify` catches a log cut short, with the cloud's receipts too."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

#: On both stores: a cut behind the store's back is made by whoever owns the database (the SQLite file's
#: owner dropping its triggers; PostgreSQL's superuser with its triggers switched off).
BACKENDS = ("sqlite", "postgres")

LINE = {"start": 0.5, "end": 3.0, "speaker": "Alice", "text": "We ship on March 3rd.", "lang": "en"}


def _lines(n: int) -> list[dict[str, Any]]:
    return [{**LINE, "start": 3.0 * i, "end": 3.0 * i + 2.0, "text": f"line {i}: we ship on March {i + 1}"}
            for i in range(n)]


def test_a_deeply_nested_line_is_one_line_of_error(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(json.dumps(LINE).encode() + b"\n" + b"[" * 1500 + b"]" * 1500 + b"\n")
    r = run_cli("ingest", "m", str(path))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and f"{path}:2: " in r.stderr and "nested too deeply" in r.stderr


def test_a_byte_order_mark_is_accepted(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(LINE).encode() + b"\n")
    r = run_cli("ingest", "m", str(path), "--json")
    assert r.returncode == 0, r.stderr
    assert r.json()["new"] == 1


def test_what_the_api_refuses_the_cli_refuses(run_cli, jsonl_writer, tmp_path: Path) -> None:
    for name, row, needle in [("confidence", {**LINE, "confidence": 5}, "confidence"),
                              ("unknown", {**LINE, "colour": "red"}, "colour")]:
        r = run_cli("ingest", "m", str(jsonl_writer(tmp_path / f"{name}.jsonl", [row])))
        assert r.returncode != 0 and needle in r.stderr and ":1: " in r.stderr, r.stderr


def test_a_meeting_id_the_api_could_not_reach_is_refused(run_cli, jsonl_writer, tmp_path: Path) -> None:
    r = run_cli("ingest", "a/b", str(jsonl_writer(tmp_path / "t.jsonl", [LINE])))
    assert r.returncode != 0 and "'/'" in r.stderr
    assert run_cli("segments", "a/b", "--json").returncode != 0


def test_a_bad_supersedes_names_the_file_and_line(run_cli, jsonl_writer, tmp_path: Path) -> None:
    path = jsonl_writer(tmp_path / "fix.jsonl", [LINE, {**LINE, "supersedes": "s_0123456789abcdef0123"}])
    r = run_cli("ingest", "m", str(path))
    assert r.returncode != 0 and f"{path}:2: " in r.stderr and "supersedes" in r.stderr


def _tamper(db: Any, triggers: tuple[str, ...], sql: str, params: tuple = ()) -> None:
    """Run `sql` past the store's safeguards: a SQLite file (`db`, dropping `triggers` first), or a PostgreSQL
    store (tests/conftest.py PgStore) as its superuser with triggers off and row security bypassed."""
    if isinstance(db, Path):
        with closing(sqlite3.connect(db)) as conn:
            for trigger in triggers:
                conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            conn.execute(sql, params)
            conn.commit()
        return
    import psycopg

    with psycopg.connect(db.url) as conn:
        conn.execute("SET session_replication_role = replica")
        conn.execute(sql.replace("?", "%s"), params)


def _cut(db: Any, meeting: str, from_pos: int) -> None:
    _tamper(db, ("segments_refuse_delete",), "DELETE FROM segments WHERE meeting_id = ? AND chain_pos >= ?",
            (meeting, from_pos))


def test_verify_catches_a_log_cut_from_the_end(run_cli, jsonl_writer, tmp_path: Path) -> None:
    path = jsonl_writer(tmp_path / "t.jsonl", _lines(50))
    assert run_cli("ingest", "m", str(path)).returncode == 0
    ok = run_cli("verify", "m")
    assert ok.returncode == 0 and "50 segments" in ok.stdout
    _cut(run_cli.db, "m", 45)
    r = run_cli("verify", "m")
    assert r.returncode == 1 and "cut short" in r.stderr and "position 49" in r.stderr, r.stderr
    _cut(run_cli.db, "m", 0)
    r = run_cli("verify", "m", "--json")
    assert r.returncode == 1 and r.json()["ok"] is False and r.json()["checked"] == 0


def test_verify_with_the_clouds_receipts(serve_factory: Any, run_cli, tmp_path: Path) -> None:
    """The acknowledgement's receipt, kept outside the database, catches a cut the database hides."""
    import httpx

    pg = None if isinstance(run_cli.db, Path) else run_cli.db  # the test's PostgreSQL store, if any
    serve = serve_factory(database_url=pg.url if pg else None)
    serve.start()
    # The CLI verifies with the server's receipt key, beside its --db.
    db = serve.db if pg is None else dataclasses.replace(pg, home=serve.db)
    made = run_cli("token", "create", "--tenant", "local", db=db)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    receipts = []
    for n in range(3):
        body = {"device_id": "g", "segments": [{"seq": n * 5 + i, **row} for i, row in enumerate(_lines(5))]}
        for i, row in enumerate(body["segments"]):
            row["start"], row["end"] = 15.0 * n + 3 * i, 15.0 * n + 3 * i + 2
        r = httpx.post(f"{serve.url}/v1/meetings/m/segments", json=body, headers={"Authorization": f"Bearer {token}"},
                       timeout=30)
        assert r.status_code == 200, r.text
        answer = r.json()
        assert set(answer) >= {"meeting_id", "device_id", "new", "duplicates", "segment_ids"}  # as before
        receipts.append(answer["receipt"])
    assert [rc["pos"] for rc in receipts] == [4, 9, 14]
    kept = tmp_path / "receipts.jsonl"
    kept.write_text("".join(json.dumps(rc) + "\n" for rc in receipts))
    ok = run_cli("verify", "m", "--receipt", str(kept), "--json", db=db)
    assert ok.returncode == 0 and ok.json()["receipts"] == 3, ok.stderr
    # Cut back to position 9 and rewrite the head to match: the database alone now looks whole.
    _cut(db, "m", 10)
    _tamper(db, ("heads_refuse_going_back",), "UPDATE meeting_heads SET head_pos = 9, head_hash = (SELECT hash FROM "
            "segments WHERE meeting_id = 'm' AND chain_pos = 9)")
    assert run_cli("verify", "m", db=db).returncode == 0
    r = run_cli("verify", "m", "--receipt", str(kept), db=db)
    assert r.returncode == 1 and "receipt acknowledges chain position 14" in r.stderr, r.stderr
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({**receipts[1], "pos": 14}))
    r = run_cli("verify", "m", "--receipt", str(forged), db=db)
    assert r.returncode != 0 and "signature" in r.stderr
