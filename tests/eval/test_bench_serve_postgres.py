"""`meetmem bench serve --backend postgres`: a real PostgreSQL started by the bench, `meetmem db upgrade`, the
preloaded meetings copied in by `meetmem migrate`, two real `meetmem serve` processes and a `meetmem worker`;
devices post to one process and their probes search on the other. Small and short: the figures are the
bench's job (docs/BENCHMARKS.md), this checks that it runs and reports every process."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("procrastinate")


def test_two_api_processes_and_a_worker_on_postgres(meetmem_cli: Callable[..., Any]) -> None:
    r = meetmem_cli("bench", "serve", "--backend", "postgres", "--api-processes", "2", "--workers", "1",
                    "--devices", "4", "--per-meeting", "2", "--askers", "2", "--duration", "4", "--hours", "0.1",
                    "--probe-fraction", "1", "--quiet", "--json", db=None, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    report = json.loads(r.stdout)
    assert report["config"]["backend"] == "postgres" and report["config"]["api_processes"] == 2
    assert report["errors"]["total"] == 0, report["errors"]
    assert report["segments_posted"] > 0 and report["ask"]["n"] > 0
    # Every segment probed (a 4 s run posts a few): found by a search on the other process than took it.
    assert report["searchable"]["n"] > 0
    assert [p["role"] for p in report["processes"]] == ["api", "api", "worker"]
    assert all(p["stop"]["how"] == "SIGTERM" for p in report["processes"])
    cpu = report["cpu_s_during_load"]
    assert cpu["api"] > 0 and cpu["postgres"] > 0 and cpu["worker"] >= 0
    prepared = report["preparation"]["postgres"]
    assert prepared["built_now"] and prepared["migrated_segments"] == report["config"]["preloaded_segments"]
    assert report["db_bytes"]["after"] > report["db_bytes"]["before"]


def test_the_sqlite_service_takes_no_extra_processes(meetmem_cli: Callable[..., Any]) -> None:
    r = meetmem_cli("bench", "serve", "--api-processes", "2", "--duration", "1", "--quiet", db=None)
    assert r.returncode != 0
    assert "--api-processes and --workers need --backend postgres" in r.stderr
