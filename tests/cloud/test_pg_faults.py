"""Faults of a PostgreSQL deployment, with real processes (eval/bench/pg_faults.py, `meetmem bench faults
--backend postgres`): a real PostgreSQL of the test's own, two `meetmem serve` processes, a `meetmem worker`.

- an API process SIGKILLed mid-ingest: devices carry on against the other process;
- PostgreSQL stopped (as by a crash) and started again while devices post and askers ask: 503 with a message
  and Retry-After while it is down, never a 500, and every process recovers by itself (ingest, questions, an
  ask session, live captions across processes by LISTEN/NOTIFY, a job run by the worker);
- (a worker SIGKILLed mid-job, whose job another finishes once, is tests/cloud/test_jobs.py's; the bench's
  `worker_killed_mid_job` step runs it at a larger size.)

Afterwards: every acknowledged segment stored and every receipt the devices got matching its chain (`meetmem
verify --receipt`), no (device_id, seq) stored twice, every chain verified. Small loads: the long campaign is
the bench's (docs/BENCHMARKS.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("procrastinate")

# Its deployment (eval/bench/pg_deployment.py) starts PostgreSQL, API processes and workers of its own.
pytestmark = [pytest.mark.postgres, pytest.mark.process]

from meetmem.eval.bench import pg_faults  # noqa: E402


def assert_nothing_lost(report: dict[str, Any]) -> None:
    assert report["acknowledged"] > 0
    assert report["acknowledged_lost"] == 0, report
    assert report["duplicated"] == 0, report
    assert report["stored"] >= report["acknowledged"]
    assert report["chains_broken"] == 0 and report["chains_verified"] >= 1, report
    assert report["server_error_500"] == 0, report["server_errors"]
    assert report["device_errors"] == []


def test_an_api_process_killed_mid_ingest_loses_and_doubles_nothing(tmp_path: Path) -> None:
    report = pg_faults.api_killed_mid_ingest(tmp_path, devices=4, batch=20, seconds=1.0, quiet=True)
    assert_nothing_lost(report)
    assert report["failovers"] >= 1  # the killed process's devices went to the other one
    # Every receipt a device got for a batch matches the chain it is in.
    assert report["receipts_checked"] == report["statuses"]["ingest 200"]


def test_postgres_restarted_under_load_answers_503_then_recovers_by_itself(tmp_path: Path) -> None:
    report = pg_faults.postgres_restarted_under_load(tmp_path, devices=4, batch=10, askers=2, down_s=2.0,
                                                     quiet=True)
    assert_nothing_lost(report)
    down = report["statuses_while_down"]
    assert down.get("ingest 503", 0) > 0 and down.get("ask 503", 0) > 0, down
    assert not [status for status in down if status.endswith(" 500")]
    # A person can act on it: what happened, that retrying is safe, when; and the header says when too.
    assert report["unavailable_without_retry_after"] == 0
    assert set(report["unavailable_details"]) == {"the database cannot be reached right now"}
    example = report["unavailable_example"]
    assert "send the request again after 2 s" in example and "PostgreSQL is running" in example
    assert "127.0.0.1" not in example  # the database's address is the operator's business, not the client's
    # Recovered without a restart of any meetmem process.
    assert report["processes_alive"] == 3, report["processes_dead"]
    assert report["after_restart"] == {"api_1_ask": 200, "api_1_healthz": 200, "api_2_ask": 200,
                                       "api_2_healthz": 200, "session_after": 200}
    assert report["session_before"] == 200
    assert report["live_before_s"] is not None and report["live_after_s"] is not None  # well before the 60 s look
    assert report["worker_job_after_s"] is not None
    assert report["receipts_checked"] == report["statuses"]["ingest 200"]
