"""Fixtures for the cloud service: the app on a real SQLite file (TestClient), and `meetmem serve` as a real
uvicorn server on a loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from meetmem.cloud.app import create_app
from meetmem.cloud.service import MeetingService
from meetmem.settings import Settings
from meetmem.store.index.search import EmbedderRoutes


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
def make_api(tmp_path: Path, embedder: Any) -> Iterator[Callable[..., Api]]:
    """Build an app on `tmp_path` (the real MiniLM model unless `embedders=None`) and start it."""
    opened: list[TestClient] = []

    def build(*, embedders: Any = "minilm", db: Path | None = None, **overrides: Any) -> Api:
        settings = Settings(db=db or tmp_path / "cloud.db", **{"close_after_silence": 0, **overrides})
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    """A running `meetmem serve` process."""

    url: str
    db: Path
    process: subprocess.Popen
    token: Callable[[str], str]

    def client(self, token: str, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, **kwargs)


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = 120.0) -> None:
    """Poll /healthz until it answers 200 (the models are loaded), failing early if the process died."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"meetmem serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(delay)  # polling a process we do not control; the deadline bounds it
        delay = min(delay * 2, 0.5)
    raise AssertionError(f"meetmem serve did not become ready within {timeout} s")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, cli_command: list[str],
           meetmem_cli: Callable[..., Any]) -> Iterator[Server]:
    """`meetmem serve` with the real MiniLM model on a free loopback port, one per test module."""
    workdir = tmp_path_factory.mktemp("serve")
    db = workdir / "cloud.db"
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MEETMEM_THREADS="1",
               MEETMEM_EMBEDDER="minilm", MEETMEM_CLOSE_AFTER_SILENCE="0")
    # Output goes to a file: a pipe nobody reads would block the server once its buffer filled.
    output = (workdir / "serve.log").open("wb")
    process = subprocess.Popen([*cli_command, "serve", "--db", str(db), "--port", str(port)], env=env,
                               stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def token(tenant: str) -> str:
        result = meetmem_cli("token", "create", "--tenant", tenant, db=db)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    try:
        try:
            wait_healthy(url, process)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{(workdir / 'serve.log').read_text(errors='replace')[-4000:]}") from None
        yield Server(url, db, process, token)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        output.close()
