"""The service's questions on PostgreSQL read the vectors stored in pgvector, and its background work is jobs.

A segment is embedded once for every process: a second app on the same database answers about a meeting
without embedding any of its segments (only the question), with the same answers as SQLite. After an append
the app defers the meeting's indexing and digest to `meetmem worker` (a real process here); until one runs,
new segments are found by their words, `/healthz` counts the segments waiting for vectors, and after
`index_fallback_after` seconds the app embeds them itself, once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.store.index.embedder_routes import EmbedderRoutes
from meetmem.store.records import SegmentInput

psycopg = pytest.importorskip("psycopg")
pytest.importorskip("procrastinate")

pytestmark = [pytest.mark.backends("postgres")]

MEETING = "design-review"
TENANT = "local"


class CountingEmbedder:
    """The real model, with every text it embeds as a passage and every question it embeds recorded."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.name = model.name
        self.dim = model.dim
        self.passages: list[str] = []
        self.queries: list[str] = []

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        self.passages.extend(t for t in texts if t != "warm-up")  # the service's start-up load check
        return self.model.encode(texts, batch_size=batch_size)

    def encode_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return self.model.encode_query(text)


def _indexed(model: CountingEmbedder, segments: Sequence[SegmentInput]) -> list[str]:
    """The passages the model embedded for the search index ("Speaker: words", `embedded_text`)."""
    forms = {f"{s.speaker}: {s.text}" if s.speaker else s.text for s in segments}
    return [p for p in model.passages if p in forms]


def _body(device_id: str, segments: Sequence[SegmentInput]) -> dict[str, Any]:
    return {"device_id": device_id, "segments": [{k: v for k, v in asdict(s).items() if v is not None}
                                                 for s in segments]}


def _ingest(api: Any, headers: dict[str, str], device_id: str, segments: Sequence[SegmentInput]) -> None:
    for i in range(0, len(segments), 20):
        r = api.client.post(f"/v1/meetings/{MEETING}/segments", json=_body(device_id, segments[i : i + 20]),
                            headers=headers)
        assert r.status_code == 200, r.text


def _answers(api: Any, headers: dict[str, str], questions: Sequence[str]) -> list[dict[str, Any]]:
    out = []
    for question in questions:
        r = api.client.post(f"/v1/meetings/{MEETING}/ask", json={"question": question, "explain": True},
                            headers=headers)
        assert r.status_code == 200, r.text
        out.append(r.json())
    return out


def _count(url: str, sql: str, params: tuple = ()) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute(sql, params).fetchone()[0])


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str,
              proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the worker exited ({proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _verbatim(questions: list[dict[str, Any]]) -> list[str]:
    return [q["question"] for q in questions if q.get("kind", "verbatim") != "overview"][:6]


@pytest.mark.model
def test_a_second_app_on_the_database_embeds_no_segment_again(
        make_api: Callable[..., Any], embedder: Any, tmp_path: Path,
        sample_device_and_segments: tuple[str, list[SegmentInput]],
        sample_questions: list[dict[str, Any]]) -> None:
    device_id, segments = sample_device_and_segments
    questions = _verbatim(sample_questions)
    first_model = CountingEmbedder(embedder)
    first = make_api(embedders=EmbedderRoutes(first_model))
    headers = first.headers(first.token(TENANT))
    _ingest(first, headers, device_id, segments)
    assert first.service.scheduler.indexer.wait_idle(120)
    assert first.client.get("/healthz", headers=headers).json()["pending_vectors"] == 0
    answered = _answers(first, headers, questions)
    # Each segment once for the index, stored in pgvector (the digest's scorer embeds the words alone, once).
    assert len(_indexed(first_model, segments)) == len(segments)
    assert len(first_model.passages) - len(segments) <= len(segments)
    url = first.settings.database_url
    assert _count(url, "SELECT count(*) FROM segment_search WHERE embedding IS NOT NULL") == len(segments)

    # A second app (another API process's view: nothing shared but the database) answers the same.
    second_model = CountingEmbedder(embedder)
    second = make_api(embedders=EmbedderRoutes(second_model))
    assert _answers(second, headers, questions) == answered
    assert _indexed(second_model, segments) == []  # no segment embedded again
    assert second_model.queries  # only the questions
    assert second.service.search.adopted == len(segments) and second.service.search.embedded == 0

    # The answers are SQLite's for the same meeting.
    sqlite = make_api(database_url=None, db=tmp_path / "sqlite.db")
    sqlite_headers = sqlite.headers(sqlite.token(TENANT))
    _ingest(sqlite, sqlite_headers, device_id, segments)
    assert sqlite.service.scheduler.indexer.wait_idle(120)
    assert _answers(sqlite, sqlite_headers, questions) == answered


def _start_worker(cli_command: list[str], url: str, tmp_path: Path, name: str) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEETMEM_THREADS": "1"}
    with open(tmp_path / f"{name}.log", "w") as log:  # the child keeps its own copy of the handle
        return subprocess.Popen(
            [*cli_command, "worker", "--database", url, "--embedder", "minilm", "--heartbeat", "1",
             "--stalled-after", "4", "-v"],
            stdout=subprocess.DEVNULL, stderr=log, env=env)


@pytest.mark.model
def test_the_api_defers_indexing_and_the_digest_to_a_real_worker(
        make_api: Callable[..., Any], embedder: Any, cli_command: list[str], tmp_path: Path,
        sample_device_and_segments: tuple[str, list[SegmentInput]],
        sample_questions: list[dict[str, Any]]) -> None:
    from meetmem.cloud.jobs import DIGEST_TASK, INDEX_TASK

    device_id, segments = sample_device_and_segments
    questions = _verbatim(sample_questions)
    model = CountingEmbedder(embedder)
    api = make_api(embedders=EmbedderRoutes(model), index_fallback_after=3600)
    url = api.settings.database_url
    headers = api.headers(api.token(TENANT))
    _ingest(api, headers, device_id, segments)
    assert api.service.scheduler.indexer.wait_idle(120)
    jobs = "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s AND status = %s"
    assert _count(url, jobs, (INDEX_TASK, "todo")) == 1 and _count(url, jobs, (DIGEST_TASK, "todo")) == 1
    # No worker yet: nothing embedded here, every segment waits for its vector, and is found by its words.
    assert model.passages == []
    assert api.client.get("/healthz", headers=headers).json() == {"status": "ready", "detail": None,
                                                                  "pending_vectors": len(segments)}
    last = segments[-1]
    r = api.client.get(f"/v1/meetings/{MEETING}/search", params={"q": last.text, "k": 3}, headers=headers)
    assert r.status_code == 200 and last.text in [hit["text"] for hit in r.json()]
    assert api.client.post(f"/v1/meetings/{MEETING}/ask", json={"question": questions[0]},
                           headers=headers).status_code == 200

    worker = _start_worker(cli_command, url, tmp_path, "worker")
    try:
        _wait_for(lambda: _count(url, jobs, (INDEX_TASK, "succeeded")) == 1
                  and _count(url, jobs, (DIGEST_TASK, "succeeded")) == 1, 300, "the worker's jobs", worker)
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
    assert api.client.get("/healthz", headers=headers).json()["pending_vectors"] == 0
    # The worker's vectors and digest serve this process, which embedded nothing: its answers are those of an
    # app that embedded everything itself (SQLite's, by the test above).
    api.service.search.adopt_interval = 0.0
    answered = _answers(api, headers, questions)
    assert model.passages == [] and api.service.search.adopted == len(segments)
    assert api.service.digester.is_current(MEETING, tenant=TENANT)  # made by the worker
    own = make_api(database_url=None, db=tmp_path / "sqlite.db")
    own_headers = own.headers(own.token(TENANT))
    _ingest(own, own_headers, device_id, segments)
    assert own.service.scheduler.indexer.wait_idle(120)
    assert _answers(own, own_headers, questions) == answered


@pytest.mark.model
def test_with_no_worker_the_api_embeds_after_its_fallback_delay_once(
        make_api: Callable[..., Any], embedder: Any,
        sample_device_and_segments: tuple[str, list[SegmentInput]]) -> None:
    from meetmem.cloud.jobs import INDEX_TASK, JobWork

    device_id, segments = sample_device_and_segments
    model = CountingEmbedder(embedder)
    api = make_api(embedders=EmbedderRoutes(model), index_fallback_after=0.5)
    url = api.settings.database_url
    headers = api.headers(api.token(TENANT))
    _ingest(api, headers, device_id, segments)
    assert api.service.scheduler.indexer.wait_idle(120)
    assert api.service.scheduler.fallback.wait_idle(120) and api.service.scheduler.summaries.wait_idle(120)
    assert api.client.get("/healthz", headers=headers).json()["pending_vectors"] == 0
    assert sorted(_indexed(model, segments)) == sorted(f"{s.speaker}: {s.text}" for s in segments)
    assert api.service.digester.is_current(MEETING, tenant=TENANT)
    # The deferred job is still queued; a worker that comes later finds nothing left to embed.
    assert _count(url, "SELECT count(*) FROM procrastinate_jobs WHERE task_name = %s AND status = 'todo'",
                  (INDEX_TASK,)) == 1
    work = JobWork(url, EmbedderRoutes(model))
    try:
        assert work.index(TENANT, MEETING) == {"added": 0, "embedded": 0}
    finally:
        work.close()
    assert len(_indexed(model, segments)) == len(segments)


@pytest.mark.model
def test_search_across_meetings_on_pgvector_finds_what_sqlite_finds(
        make_api: Callable[..., Any], tmp_path: Path,
        sample_device_and_segments: tuple[str, list[SegmentInput]],
        sample_questions: list[dict[str, Any]]) -> None:
    device_id, segments = sample_device_and_segments
    queries = [*_verbatim(sample_questions), "how much does it cost", "who owns the next step"]
    found = {}
    for backend, overrides in (("postgres", {}), ("sqlite", {"database_url": None, "db": tmp_path / "sqlite.db"})):
        api = make_api(**overrides)
        headers = api.headers(api.token(TENANT))
        for n, i in enumerate(range(0, len(segments), 20)):  # the meeting in three parts, three meetings
            r = api.client.post(f"/v1/meetings/part-{n}/segments", json=_body(device_id, segments[i : i + 20]),
                                headers=headers)
            assert r.status_code == 200, r.text
        assert api.service.scheduler.indexer.wait_idle(120)
        found[backend] = []
        for query in queries:
            r = api.client.get("/v1/search", params={"q": query, "k": 3}, headers=headers)
            assert r.status_code == 200, r.text
            found[backend].append([(hit["meeting_id"], hit["segment_id"]) for hit in r.json()][:1])
        assert all(found[backend])
    assert found["postgres"] == found["sqlite"]


@pytest.mark.model
@pytest.mark.backends("sqlite")
def test_health_counts_the_segments_waiting_for_vectors_on_sqlite_too(
        make_api: Callable[..., Any], sample_device_and_segments: tuple[str, list[SegmentInput]]) -> None:
    device_id, segments = sample_device_and_segments
    api = make_api()
    headers = api.headers(api.token(TENANT))
    _ingest(api, headers, device_id, segments)
    assert api.service.scheduler.indexer.wait_idle(120)
    assert api.client.get("/healthz", headers=headers).json() == {"status": "ready", "detail": None,
                                                                  "pending_vectors": 0}
    assert make_api(embedders=None).client.get("/healthz").json()["pending_vectors"] is None  # no model: nothing waits
