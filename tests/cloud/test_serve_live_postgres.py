"""Live captions across real `meetmem serve` processes on one PostgreSQL: a stream opened on one process gets
the segments and partial captions posted to another, at once (LISTEN/NOTIFY), not at its next keep-alive."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("psycopg")


def test_a_stream_on_one_process_gets_what_is_posted_to_another(serve_factory: Any, meetmem_cli: Any, pg_url: str,
                                                                tmp_path: Path, monkeypatch) -> None:
    # Idle streams look again only every 60 s: what arrives sooner was carried by a notification.
    monkeypatch.setenv("MEETMEM_SSE_KEEPALIVE", "60")
    monkeypatch.setenv("MEETMEM_TOKEN_RECHECK", "60")
    db = tmp_path / "key-home.db"
    made = meetmem_cli("token", "create", "--tenant", "acme", "--database", pg_url, "--json", db=db)
    assert made.returncode == 0, made.stderr
    headers = {"Authorization": f"Bearer {made.json()['token']}"}
    one = serve_factory(db, database_url=pg_url)
    two = serve_factory(db, database_url=pg_url)
    one.start()
    two.start()
    first = {"device_id": "glasses-1", "segments": [{"seq": 0, "start": 0.0, "end": 2.0, "text": "Hello all."}]}
    assert httpx.post(f"{one.url}/v1/meetings/live/segments", json=first, headers=headers, timeout=30).status_code \
        == 200

    events: list[tuple[str, dict, float]] = []
    opened = threading.Event()

    def follow() -> None:
        with httpx.stream("GET", f"{two.url}/v1/meetings/live/events?after=0", headers=headers,
                          timeout=httpx.Timeout(30, read=90)) as stream:
            kind = "message"
            for line in stream.iter_lines():
                if line.startswith(":"):
                    opened.set()
                elif line.startswith("event:"):
                    kind = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    events.append((kind, json.loads(line[5:]), time.monotonic()))
                    kind = "message"
                    if len(events) == 2:
                        return

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    assert opened.wait(30)
    time.sleep(0.5)  # the stream is waiting now
    partial = {"device_id": "glasses-1", "start": 2.5, "heard_until": 3.5, "text": "the deadline is"}
    sent = time.monotonic()
    r = httpx.post(f"{one.url}/v1/meetings/live/partials", json=partial, headers=headers, timeout=30)
    assert r.status_code == 202, r.text
    final = {"device_id": "glasses-1", "segments": [{"seq": 1, "start": 2.5, "end": 4.0,
                                                     "text": "The deadline is March 12th."}]}
    assert httpx.post(f"{one.url}/v1/meetings/live/segments", json=final, headers=headers,
                      timeout=30).status_code == 200
    reader.join(timeout=60)
    assert [(kind, data["text"]) for kind, data, _t in events] == [
        ("partial", "the deadline is"), ("message", "The deadline is March 12th.")]
    assert events[-1][2] - sent < 10  # long before the 60 s look-again

