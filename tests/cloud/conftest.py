"""Fixtures for the cloud service: the app on a real SQLite file under a TestClient. (`meetmem serve` as a
real uvicorn server on a loopback port is the `server` fixture of tests/conftest.py, shared with the edge.)

A test module that sets `BACKENDS = ("sqlite", "postgres")` runs each of its tests on both stores
(`cloud_backend`, tests/conftest.py): the app then keeps its log, tokens and digests in a fresh PostgreSQL
database (`MEETMEM_DATABASE_URL`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from meetmem.cloud.app import create_app
from meetmem.cloud.service import MeetingService
from meetmem.settings import Settings
from meetmem.store.index.embedder_routes import EmbedderRoutes


@dataclass
class Api:
    """A TestClient on a fresh app, with helpers that carry a tenant's token."""

    client: TestClient
    service: MeetingService
    tokens: Any
    settings: Settings

    def token(self, tenant: str) -> str:
        return self.tokens.create(tenant)

    def headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def make_api(tmp_path: Path, embedder: Any, cloud_backend: str | None) -> Iterator[Callable[..., Api]]:
    """Build an app on `tmp_path` (the real MiniLM model unless `embedders=None`) and start it."""
    opened: list[TestClient] = []

    def build(*, embedders: Any = "minilm", db: Path | None = None, **overrides: Any) -> Api:
        # On PostgreSQL the app indexes and summarises in its own process at once, as on SQLite (no worker runs
        # here); tests of the job queue with real workers set `index_fallback_after` themselves.
        defaults = {"close_after_silence": 0, "voice_model": "none", "database_url": cloud_backend,
                    "index_fallback_after": 0}
        settings = Settings(db=db or tmp_path / "cloud.db", **{**defaults, **overrides})
        routes = EmbedderRoutes(embedder) if embedders == "minilm" else embedders
        client = TestClient(create_app(settings, embedders=routes))
        client.__enter__()
        opened.append(client)
        service = client.app.state.service
        assert service.wait_ready(120), service.failure
        return Api(client, service, client.app.state.tokens, settings)

    yield build
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture
def api(make_api: Callable[..., Api]) -> Api:
    return make_api()


@pytest.fixture
def kept_audio_bytes() -> Callable[[Api], int]:
    """`kept_audio_bytes(api)`: bytes of audio the app's store still holds anywhere (files beside the SQLite
    file; rows of chunks and of rendered audio in PostgreSQL, read as the database's owner, past row security)."""

    def count(api: Api) -> int:
        log = api.service.log
        if log.backend == "sqlite":
            folder = log.path.with_name(log.path.name + ".audio")
            return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0
        import psycopg

        with psycopg.connect(api.settings.database_url) as conn:
            return sum(conn.execute(f"SELECT COALESCE(SUM(octet_length(data)), 0) FROM {table}").fetchone()[0]
                       for table in ("meeting_audio", "meeting_audio_rendered"))

    return count
