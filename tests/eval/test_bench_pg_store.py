"""The PostgreSQL store bench end to end on a small size (its own durable server, as it runs for the figures)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("psycopg")


def test_bench_pg_store_prints_its_figures() -> None:
    result = subprocess.run([sys.executable, "-m", "meetmem.eval.bench.pg_store", "--segments", "120",
                             "--meetings", "2", "--batch", "40", "--writers", "2"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    for backend in ("sqlite", "postgres"):
        got = out["results"][backend]
        assert got["one_writer"]["segments"] == 240 and got["2_writers"]["segments"] == 240
        assert got["verify_one_meeting"]["segments"] == 120
    assert out["results"]["migrate_sqlite_to_postgres"]["segments"] == 240 + 240
    assert set(out["postgres_over_sqlite"]) == {"one_writer", "2_writers", "verify_one_meeting"}
