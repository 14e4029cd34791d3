"""The bench of questions on PostgreSQL end to end on a small size: recomputed vectors against pgvector's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("psycopg")


@pytest.mark.model
def test_bench_pg_questions_prints_its_figures() -> None:
    result = subprocess.run([sys.executable, "-m", "meetmem.eval.bench.pg_questions", "--repeat", "1", "--rounds", "1"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    segments = out["params"]["segments"]
    recompute, stored = out["results"]["recompute"], out["results"]["pgvector"]
    # Every instance embeds the meeting when it recomputes; with pgvector only the first does.
    assert recompute["second_instance"]["segments_embedded"] == segments
    assert stored["first_instance"]["segments_embedded"] == segments
    assert stored["second_instance"]["segments_embedded"] == 0
    assert out["same_answers"] is True
