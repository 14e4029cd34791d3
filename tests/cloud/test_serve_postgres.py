"""Real `meetmem serve` processes on one PostgreSQL database: what one acknowledges, another answers from.

Two API processes share nothing but the database (and the receipt key beside `--db`): a token made by the
CLI works on both, a batch sent to one is found by a question to the other, a replay sent to the other adds
nothing, and the chain verifies. Then one process is killed (-9) and the other still serves everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("psycopg")

SEGMENTS = [{"seq": i, "start": 2.0 * i, "end": 2.0 * i + 1.5, "text": t, "speaker": s} for i, (t, s) in enumerate([
    ("Good morning, let's start with the casing.", "Ana"),
    ("We decided the casing will be aluminium, not plastic.", "Bo"),
    ("The tooling quote came in at 4,250 euros.", "Ana"),
    ("We ship on March 3rd.", "Bo"),
])]


def test_two_api_processes_on_one_database(serve_factory: Any, meetmem_cli: Any, pg_url: str,
                                           tmp_path: Path) -> None:
    db = tmp_path / "key-home.db"  # the receipt key lives beside it, shared by both processes
    made = meetmem_cli("token", "create", "--tenant", "acme", "--database", pg_url, "--json", db=db)
    assert made.returncode == 0, made.stderr
    token = made.json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    one = serve_factory(db, database_url=pg_url)
    two = serve_factory(db, database_url=pg_url)
    one.start()
    two.start()
    body = {"device_id": "glasses-1", "segments": SEGMENTS, "title": "Hardware review"}
    r = httpx.post(f"{one.url}/v1/meetings/hw/segments", json=body, headers=headers, timeout=30)
    assert r.status_code == 200, r.text
    receipt = r.json()["receipt"]
    assert r.json()["new"] == 4
    again = httpx.post(f"{two.url}/v1/meetings/hw/segments", json=body, headers=headers, timeout=30)
    assert again.status_code == 200 and (again.json()["new"], again.json()["duplicates"]) == (0, 4)
    assert again.json()["receipt"] == receipt  # the same head, signed with the same key

    answer = httpx.post(f"{two.url}/v1/meetings/hw/ask", json={"question": "how much was the tooling quote?"},
                        headers=headers, timeout=60)
    assert answer.status_code == 200, answer.text
    assert "4,250" in answer.json()["answer"]
    listed = httpx.get(f"{two.url}/v1/meetings", headers=headers, timeout=30).json()
    assert [(m["meeting_id"], m["title"]) for m in listed] == [("hw", "Hardware review")]
    # Another tenant's token sees nothing of it on either process.
    other = meetmem_cli("token", "create", "--tenant", "globex", "--database", pg_url, "--json", db=db).json()
    for serve in (one, two):
        r = httpx.get(f"{serve.url}/v1/meetings/hw/segments", headers={"Authorization": f"Bearer {other['token']}"},
                      timeout=30)
        assert r.status_code == 404

    one.stop(kill=True)
    more = {"device_id": "glasses-1", "segments": [{"seq": 4, "start": 9.0, "end": 10.0, "text": "Dana owns the "
                                                    "press release."}]}
    r = httpx.post(f"{two.url}/v1/meetings/hw/segments", json=more, headers=headers, timeout=30)
    assert r.status_code == 200 and r.json()["receipt"]["pos"] == 4
    segments = httpx.get(f"{two.url}/v1/meetings/hw/segments", headers=headers, timeout=30).json()
    assert [s["seq"] for s in segments] == [0, 1, 2, 3, 4]
    receipts = tmp_path / "receipts.json"
    receipts.write_text(__import__("json").dumps(r.json()["receipt"]))
    verified = meetmem_cli("verify", "hw", "--tenant", "acme", "--database", pg_url, "--receipt", str(receipts),
                           "--json", db=db)
    assert verified.returncode == 0, verified.stderr
    assert verified.json()["ok"] and verified.json()["checked"] == 5 and verified.json()["receipts"] == 1
