"""Jobs on PostgreSQL with real processes: `meetmem worker` runs the queue's jobs, one killed mid-job (kill -9)
leaves its job to another worker, which finishes it once; with no worker, search still finds new segments."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable

import pytest

psycopg = pytest.importorskip("psycopg")
pytest.importorskip("procrastinate")

TENANT = "acme"
MEETING = "weekly"
WORDS = ("budget casing supplier tooling quote deadline sensor board firmware launch review invoice shipping "
         "battery hinge camera lens warranty").split()


def store_segments(url: str, n: int, *, meeting: str = MEETING, first: int = 0) -> None:
    """`n` segments in the log's tables, as the owner (the log's own append is not what these tests test)."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT set_config('app.tenant', %s, true)", (TENANT,))
        conn.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES (%s, %s, 'now') "
                     "ON CONFLICT DO NOTHING", (TENANT, meeting))
        rows = []
        for i in range(first, first + n):
            text = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11)) + f" item {i}"
            rows.append((f"{meeting}-{i}", TENANT, meeting, "dev", i, 2.0 * i, 2.0 * i + 1.5, text,
                         "Ana" if i % 2 else "Ben", "en", "now", i, "", f"h{i}"))
        conn.cursor().executemany(
            "INSERT INTO segments (segment_id, tenant, meeting_id, device_id, seq, start, \"end\", text, speaker, "
            "lang, received_at, chain_pos, prev_hash, hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s, %s)", rows)


def count(url: str, sql: str, params: tuple = ()) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute(sql, params).fetchone()[0])


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the worker exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def start_worker(cli_command: list[str], url: str, tmp_path, name: str, embedder: str = "minilm") -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEETMEM_THREADS": "1"}
    with open(tmp_path / f"{name}.log", "w") as log:  # the child keeps its own copy of the handle
        return subprocess.Popen(
            [*cli_command, "worker", "--database", url, "--embedder", embedder, "--heartbeat", "1",
             "--stalled-after", "4", "-v"],
            stdout=subprocess.DEVNULL, stderr=log, env=env)


def test_with_no_worker_a_search_finds_new_segments_by_their_words(pg_url: str) -> None:
    from meetmem.cloud.jobs import INDEX_TASK, JobQueue
    from meetmem.store.pg.search import PgSearch, connect_pool

    store_segments(pg_url, 20)
    queue = JobQueue(pg_url)
    try:
        assert queue.index(TENANT, MEETING) is True
        assert queue.index(TENANT, MEETING) is False  # one waiting job per meeting covers later appends too
    finally:
        queue.close()
    pool = connect_pool(pg_url)
    try:
        search = PgSearch(pool, None)
        assert search.catch_up(TENANT, MEETING) == 20
        store_segments(pg_url, 1, first=20)
        assert search.catch_up(TENANT, MEETING) == 1
        hits = search.keyword_across(TENANT, "item 20", k=3, meeting_ids=[MEETING])
        assert hits[0][0] == f"{MEETING}-20"
    finally:
        pool.close()
    assert count(pg_url, "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s AND status = 'todo'",
                 (INDEX_TASK,)) == 1


@pytest.mark.model
def test_a_worker_killed_mid_job_leaves_it_to_another_which_finishes_it_once(pg_url: str, cli_command, tmp_path,
                                                                             embedder) -> None:
    from meetmem.cloud.jobs import INDEX_TASK, JobQueue

    total = 1500
    store_segments(pg_url, total)
    queue = JobQueue(pg_url)
    try:
        assert queue.index(TENANT, MEETING)
    finally:
        queue.close()
    embedded = "SELECT count(*) FROM segment_search WHERE embedding IS NOT NULL"
    first = start_worker(cli_command, pg_url, tmp_path, "first")
    try:
        wait_for(lambda: count(pg_url, embedded) > 0, 300, "the first batch of vectors", first)
        assert count(pg_url, embedded) < total  # mid-job
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    assert count(pg_url, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'doing'") == 1
    second = start_worker(cli_command, pg_url, tmp_path, "second")
    try:
        wait_for(lambda: count(pg_url, "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'") == 1,
                 300, "the job to be finished by the second worker", second)
    finally:
        second.send_signal(signal.SIGTERM)
        try:
            second.wait(timeout=30)
        except subprocess.TimeoutExpired:
            second.kill()
    assert second.returncode == 0, (tmp_path / "second.log").read_text()
    # Once: one job, run to success once; every segment has one row and one vector.
    assert count(pg_url, "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s", (INDEX_TASK,)) == 1
    assert count(pg_url, "SELECT count(*) FROM procrastinate_events WHERE type = 'succeeded'") == 1
    assert count(pg_url, "SELECT attempts FROM procrastinate_jobs") >= 1
    assert count(pg_url, "SELECT count(*) FROM segment_search") == total
    assert count(pg_url, embedded) == total
    # The vectors are the model's, for "Speaker: text", whichever worker made them.
    import numpy as np
    from pgvector.psycopg import register_vector

    with psycopg.connect(pg_url, autocommit=True) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT s.speaker, g.text, s.embedding FROM segment_search s JOIN segments g "
                            "USING (segment_id) WHERE s.doc IN (0, 1499)").fetchall()
    for speaker, text, vector in rows:
        want = embedder.encode([f"{speaker}: {text}"])[0]
        assert float(np.dot(vector.to_numpy(), want)) > 0.999


def test_a_worker_makes_the_digest_a_job_asks_for(pg_url: str, cli_command, tmp_path) -> None:
    from meetmem.cloud.jobs import DIGEST_TASK, JobQueue
    from meetmem.store.derived import DerivedStore
    from meetmem.store.pg.log import PgTranscriptLog
    from meetmem.store.records import SegmentInput

    log = PgTranscriptLog(pg_url)
    try:
        texts = ["Let's decide the casing.", "We decided the casing will be aluminium.",
                 "Bo will send the revised quote by Friday.", "The tooling quote was 4,250 euros."]
        log.append(MEETING, "dev", [SegmentInput(seq=i, start=5.0 * i, end=5.0 * i + 4, text=t, speaker="Ana")
                                    for i, t in enumerate(texts)], tenant=TENANT)
        queue = JobQueue(pg_url)
        try:
            assert queue.digest(TENANT, MEETING)
        finally:
            queue.close()
        worker = start_worker(cli_command, pg_url, tmp_path, "digest", embedder="none")
        done = "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s AND status = 'succeeded'"
        try:
            wait_for(lambda: count(pg_url, done, (DIGEST_TASK,)) == 1, 120, "the digest job", worker)
        finally:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=30)
        digest = DerivedStore(log).load(TENANT, MEETING)
        assert digest is not None and digest.through_pos == log.last_chain_pos(MEETING, tenant=TENANT)
        assert any("aluminium" in item.text for item in digest.ledger if item.kind == "decision")
    finally:
        log.close()
