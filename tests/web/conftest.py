"""Fixtures of the browser tests: Playwright driving Debian's chromium (by path, no browser download) against
a real `meetmem serve` on a loopback port holding the demo meeting and its audio. Where no chromium is
installed (scripts/test.sh installs it with apt-get), the tests skip and say so.

The page runs under a Content-Security-Policy without 'unsafe-eval': a `wait_for_function` takes a function
("() => ..."), which Playwright calls directly, never an expression string, which it would have to eval.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from meeting_page import CHROMIUM_FLAGS, DEMO_DATA, DEMO_MEETING, App, chromium


@pytest.fixture(scope="module")
def playwright() -> Iterator[Any]:
    """Playwright, once per test module, and the chromium path. Not once per session: its sync API allows one
    instance per thread and, while started, holds an asyncio loop running on the main thread, which a test of
    another folder that a worker runs next (`asyncio.run`, tests/cloud/test_pg_live.py) cannot start beside."""
    executable = chromium()
    if executable is None:
        pytest.skip("no chromium on this machine (scripts/test.sh installs Debian's with apt-get)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install 'meetmem[dev]')")
    with sync_playwright() as started:
        started.executable = executable
        yield started


@pytest.fixture(scope="module")
def browser(playwright: Any) -> Iterator[Any]:
    launched = playwright.chromium.launch(executable_path=playwright.executable, args=CHROMIUM_FLAGS)
    try:
        yield launched
    finally:
        launched.close()


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory, meetmem_cli: Callable[..., Any],
        cli_command: list[str]) -> Iterator[App]:
    """`meetmem serve` (the real MiniLM model) on a database holding the demo meeting with its audio; one
    for the session (each test names its own meetings)."""
    folder = tmp_path_factory.mktemp("web")
    db = folder / "app.db"
    result = meetmem_cli("ingest", DEMO_MEETING, str(DEMO_DATA / "sample_meeting.jsonl"), "--audio",
                         str(DEMO_DATA / "sample_meeting.ogg"), db=db)
    assert result.returncode == 0, result.stderr
    made = meetmem_cli("token", "create", "--tenant", "local", db=db)
    assert made.returncode == 0, made.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MEETMEM_THREADS="1",
               MEETMEM_EMBEDDER="minilm", MEETMEM_CLOSE_AFTER_SILENCE="0",
               # Spoken questions from the page: the small English Whisper is enough for one clear sentence.
               MEETMEM_VOICE_MODEL="tiny.en")
    log_path = folder / "serve.log"
    with log_path.open("ab") as output:
        process = subprocess.Popen([*cli_command, "serve", "--db", str(db), "--port", str(port)], env=env,
                                   stdout=output, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log_path.read_text(errors="replace")[-3000:]
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "meetmem serve did not become ready in 120 s"
            time.sleep(0.2)  # polling a process we do not control; the deadline bounds it
        yield App(url, db, made.stdout.strip())
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def page(browser: Any, app: App) -> Iterator[Any]:
    """A fresh desktop-sized tab (its own session storage), with the page's errors and console collected."""
    context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    tab = context.new_page()
    tab.errors = []
    tab.console = []
    tab.on("pageerror", lambda exc: tab.errors.append(str(exc)))
    tab.on("console", lambda message: tab.console.append(f"{message.type}: {message.text}"))
    try:
        yield tab
    finally:
        context.close()
