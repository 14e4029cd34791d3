"""`meetmem db upgrade`, `db current` and `meetmem migrate`, run as processes against a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def empty_pg(pg_cluster) -> str:
    """A new database with no schema at all (as a DBA hands it over)."""
    pg_cluster.created += 1
    url = pg_cluster.server.create_database(f"cli_{pg_cluster.created}")
    yield url
    pg_cluster.drop_database(url)


def test_db_upgrade_makes_the_schema_once(meetmem_cli, empty_pg: str) -> None:
    behind = meetmem_cli("db", "current", "--database", empty_pg, "--json", db=None)
    assert behind.returncode == 1 and behind.json()["current"] is None
    refused = meetmem_cli("segments", "m1", "--database", empty_pg, db=None)
    assert refused.returncode == 1 and "meetmem db upgrade" in refused.stderr
    first = meetmem_cli("db", "upgrade", "--database", empty_pg, "--json", db=None)
    assert first.returncode == 0, first.stderr
    assert first.json()["before"] is None and first.json()["after"] == first.json()["head"]
    again = meetmem_cli("db", "upgrade", "--database", empty_pg, db=None)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert meetmem_cli("db", "current", "--database", empty_pg, db=None).returncode == 0


def test_db_upgrade_without_a_postgres_url_says_what_to_give(meetmem_cli, tmp_path: Path) -> None:
    result = meetmem_cli("db", "upgrade", db=tmp_path / "x.db")
    assert result.returncode == 1 and "--database postgresql://" in result.stderr


def test_migrate_copies_everything_verifies_and_can_run_again(meetmem_cli, empty_pg: str, tmp_path: Path,
                                                              sample_meeting_path: Path) -> None:
    db = tmp_path / "source.db"
    for tenant, meeting in (("local", "review"), ("acme", "review"), ("local", "gone")):
        made = meetmem_cli("ingest", meeting, str(sample_meeting_path), "--tenant", tenant, "--title", "Launch",
                           db=db)
        assert made.returncode == 0, made.stderr
    assert meetmem_cli("delete", "gone", "--yes", db=db).returncode == 0
    assert meetmem_cli("retention", "set", "--tenant", "acme", "--days", "90", db=db).returncode == 0

    moved = meetmem_cli("migrate", "--from", f"sqlite:///{db}", "--to", empty_pg, "--json", db=None)
    assert moved.returncode == 0, moved.stderr
    out = moved.json()
    assert (out["ok"], out["copied"], out["skipped"], out["tombstones"], out["retention_settings"]) == \
        (True, 2, 0, 1, 1)
    assert out["segments"] == 2 * len(sample_meeting_path.read_text().splitlines())
    for tenant in ("local", "acme"):
        there = meetmem_cli("verify", "review", "--tenant", tenant, "--database", empty_pg, "--json", db=None).json()
        here = meetmem_cli("verify", "review", "--tenant", tenant, "--json", db=db).json()
        assert there == here and there["ok"]
        seg_there = meetmem_cli("segments", "review", "--tenant", tenant, "--json", "--database", empty_pg, db=None)
        seg_here = meetmem_cli("segments", "review", "--tenant", tenant, "--json", db=db)
        assert seg_there.stdout == seg_here.stdout
    tombstones = meetmem_cli("tombstones", "--json", "--database", empty_pg, db=None).json()
    assert [t["meeting_id"] for t in tombstones] == ["gone"]
    assert tombstones == meetmem_cli("tombstones", "--json", db=db).json()

    again = meetmem_cli("migrate", "--from", str(db), "--to", empty_pg, "--json", db=None)
    assert again.returncode == 0 and (again.json()["copied"], again.json()["skipped"]) == (0, 2)


def test_migrate_refuses_a_missing_source_and_a_clashing_target(meetmem_cli, empty_pg: str, tmp_path: Path,
                                                                sample_meeting_path: Path) -> None:
    missing = meetmem_cli("migrate", "--from", f"sqlite:///{tmp_path}/nothing.db", "--to", empty_pg, db=None)
    assert missing.returncode == 1 and "no such database file" in missing.stderr
    assert not (tmp_path / "nothing.db").exists()
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    meetmem_cli("ingest", "m", str(sample_meeting_path), db=one)
    lines = sample_meeting_path.read_text().splitlines()
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(lines[:5]) + "\n")
    meetmem_cli("ingest", "m", str(short), db=two)
    assert meetmem_cli("migrate", "--from", str(one), "--to", empty_pg, db=None).returncode == 0
    clash = meetmem_cli("migrate", "--from", str(two), "--to", empty_pg, db=None)
    assert clash.returncode == 1 and "already holds meeting 'm'" in clash.stderr
    assert meetmem_cli("verify", "m", "--database", empty_pg, "--json", db=None).json()["checked"] == len(lines)


def test_the_everyday_commands_on_postgres(meetmem_cli, pg_url: str, tmp_path: Path,
                                           sample_meeting_path: Path) -> None:
    """--database: the same commands and answers as on the SQLite file, through to a verified deletion."""
    db = tmp_path / "home.db"  # the receipt key lives beside it
    db_args = ["--database", pg_url]
    answers = {}
    for where in (["--database", pg_url], []):
        def run(*args: str, where: list[str] = where) -> Any:
            result = meetmem_cli(*args, *where, db=db if not where else tmp_path / "unused.db")
            assert result.returncode == 0, (args, result.stderr)
            return result

        run("ingest", "demo", str(sample_meeting_path), "--title", "Launch", "--json")
        answers[bool(where)] = (
            run("ask", "demo", "what is the launch price?", "--json").json()["answer"],
            [d["text"] for d in run("ledger", "demo", "--json").json()["decisions"]],
            run("segments", "demo", "--json").stdout,
            run("verify", "demo", "--json").json()["head_pos"],
        )
    assert answers[True] == answers[False]
    deleted = meetmem_cli("delete", "demo", "--yes", "--json", *db_args, db=db)
    assert deleted.returncode == 0, deleted.stderr
    verified = meetmem_cli("verify", "demo", "--json", *db_args, db=db)
    assert verified.returncode == 0 and verified.json()["deleted"]["segments"] == deleted.json()["segments"]
    gone = meetmem_cli("segments", "demo", *db_args, db=db)
    assert gone.returncode == 1 and "deleted at" in gone.stderr


def test_migrate_back_from_postgres_to_a_sqlite_file(meetmem_cli, pg_url: str, tmp_path: Path,
                                                     sample_meeting_path: Path) -> None:
    db = tmp_path / "home.db"
    assert meetmem_cli("ingest", "m", str(sample_meeting_path), "--database", pg_url, db=db).returncode == 0
    back = tmp_path / "back.db"
    moved = meetmem_cli("migrate", "--from", pg_url, "--to", f"sqlite:///{back}", "--json", db=None)
    assert moved.returncode == 0, moved.stderr
    assert (moved.json()["copied"], moved.json()["segments"]) == (1, len(sample_meeting_path.read_text().splitlines()))
    assert meetmem_cli("verify", "m", "--json", db=back).json() == \
        meetmem_cli("verify", "m", "--json", "--database", pg_url, db=db).json()
