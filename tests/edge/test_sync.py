"""Sync against a real `meetmem serve`: every segment arrives exactly once, through lost acknowledgements,
a cloud that is unreachable for a while, and a cloud that is killed and restarted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from meetmem.edge.outbox import Outbox
from meetmem.edge.sync import CloudClient, SyncOptions, Uploader

FAST = SyncOptions(batch=20, backoff_base=0.05, backoff_max=0.3, timeout=10)


def _fill(outbox: Outbox, meeting: str, n: int, first: int = 0) -> None:
    for i in range(first, first + n):
        outbox.put(meeting, {"start": i * 3.0, "end": i * 3.0 + 2.0, "text": f"line {i}: order {i * 7} units",
                             "raw_text": f"um line {i}: order {i * 7} units", "lang": "en"})


def _stored(url: str, token: str, meeting: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{url}/v1/meetings/{meeting}/segments", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _exactly_once(rows: list[dict[str, Any]], n: int) -> None:
    assert len(rows) == n
    assert sorted(r["seq"] for r in rows) == list(range(n))
    assert all(r["text"] == f"line {r['seq']}: order {r['seq'] * 7} units" for r in rows)



def _drained(outbox: Outbox, client: CloudClient) -> Uploader:
    """An uploader run until the outbox is empty (asserted), then stopped, with the client closed."""
    uploader = Uploader(outbox, client, FAST)
    uploader.start()
    try:
        assert uploader.drain(timeout=60)
    finally:
        uploader.stop()
        client.close()
    return uploader

def test_the_outbox_drains_once_even_when_an_ack_is_lost(tmp_path: Path, serve_factory: Callable[..., Any],
                                                          token_maker: Callable[[Path, str], str]) -> None:
    serve = serve_factory()
    token = token_maker(serve.db, "acme")
    serve.start()
    with Outbox(tmp_path / "outbox.db") as outbox:
        _fill(outbox, "m1", 75)
        client = CloudClient(serve.url, token)
        # The first batch reached the cloud but its acknowledgement was lost: it is still in the outbox.
        first = outbox.pending(FAST.batch)
        client.post_segments("m1", outbox.device_id, [s.payload() for s in first])
        uploader = _drained(outbox, client)
        assert outbox.stats().pending == 0 and uploader.sent == 75
    _exactly_once(_stored(serve.url, token, "m1"), 75)


def test_an_unreachable_cloud_delays_but_loses_nothing(tmp_path: Path, serve_factory: Callable[..., Any],
                                                        token_maker: Callable[[Path, str], str]) -> None:
    serve = serve_factory()
    token = token_maker(serve.db, "acme")
    with Outbox(tmp_path / "outbox.db") as outbox:
        client = CloudClient(serve.url, token)
        uploader = Uploader(outbox, client, FAST)
        uploader.start()
        try:
            _fill(outbox, "m1", 30)  # capture goes on while the cloud is down
            uploader.notify()
            assert not uploader.drain(timeout=1.0)
            assert uploader.last_error is not None and uploader.last_error.status is None
            assert outbox.stats().pending == 30
            serve.start()  # the cloud comes back on the same address
            _fill(outbox, "m1", 10, first=30)
            uploader.notify()
            assert uploader.drain(timeout=60)
        finally:
            uploader.stop()
            client.close()
    _exactly_once(_stored(serve.url, token, "m1"), 40)


def test_a_cloud_killed_and_restarted_mid_meeting(tmp_path: Path, serve_factory: Callable[..., Any],
                                                  token_maker: Callable[[Path, str], str]) -> None:
    serve = serve_factory()
    token = token_maker(serve.db, "acme")
    serve.start()
    with Outbox(tmp_path / "outbox.db") as outbox:
        client = CloudClient(serve.url, token)
        uploader = Uploader(outbox, client, FAST)
        uploader.start()
        try:
            _fill(outbox, "m1", 40)
            uploader.notify()
            assert uploader.drain(timeout=60)
            serve.stop(kill=True)
            _fill(outbox, "m1", 40, first=40)
            uploader.notify()
            assert not uploader.drain(timeout=0.5)
            serve.start()
            assert uploader.drain(timeout=60)
        finally:
            uploader.stop()
            client.close()
    _exactly_once(_stored(serve.url, token, "m1"), 80)


def test_a_revoked_token_stops_sync_and_keeps_the_segments(tmp_path: Path, serve_factory: Callable[..., Any],
                                                            token_maker: Callable[[Path, str], str]) -> None:
    serve = serve_factory()
    serve.start()
    with Outbox(tmp_path / "outbox.db") as outbox:
        client = CloudClient(serve.url, "mm_000000000000_" + "x" * 43)
        uploader = Uploader(outbox, client, FAST)
        uploader.start()
        try:
            _fill(outbox, "m1", 5)
            uploader.notify()
            assert not uploader.drain(timeout=30)
            assert uploader.fatal is not None and uploader.fatal.status == 401
            assert outbox.stats().pending == 5
        finally:
            uploader.stop()
            client.close()


def test_the_cloud_ledger_glossary_becomes_the_devices_hotwords(serve_factory: Callable[..., Any],
                                                                token_maker: Callable[[Path, str], str],
                                                                sample_segments: list[Any]) -> None:
    serve = serve_factory()  # BM25 alone: the glossary needs no embedding model
    token = token_maker(serve.db, "acme")
    serve.start()
    client = CloudClient(serve.url, token)
    try:
        assert client.glossary("not-started-yet") == []
        rows = [{k: v for k, v in vars_of(s).items() if v is not None} for s in sample_segments]
        client.post_segments("review", "glasses-1", rows)
        client.close_meeting("review")
        terms = client.glossary("review")
    finally:
        client.close()
    assert {"TS-204", "Dana", "Chen Wei"} <= set(terms)


def vars_of(segment: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(segment)


def test_the_outbox_keeps_the_clouds_latest_receipt_for_verify(tmp_path: Path, serve_factory: Callable[..., Any],
                                                               token_maker: Callable[[Path, str], str],
                                                               meetmem_cli: Callable[..., Any]) -> None:
    """Every acknowledgement carries a signed receipt; the device keeps the furthest one per meeting, and
    `meetmem verify --receipt` checks the cloud's log against it (issue 16)."""
    import json

    serve = serve_factory()
    token = token_maker(serve.db, "acme")
    serve.start()
    outbox_path = tmp_path / "outbox.db"
    with Outbox(outbox_path) as outbox:
        _fill(outbox, "m1", 45)
        client = CloudClient(serve.url, token)
        _drained(outbox, client)
        (receipt,) = outbox.receipts()
    assert (receipt["meeting_id"], receipt["tenant"], receipt["pos"]) == ("m1", "acme", 44)
    printed = meetmem_cli("edge", "receipts", "--outbox", str(outbox_path), "--json", db=None)
    assert printed.returncode == 0 and [json.loads(line) for line in printed.stdout.splitlines()] == [receipt]
    kept = tmp_path / "receipts.jsonl"
    kept.write_text(printed.stdout)
    serve.stop()
    r = meetmem_cli("verify", "m1", "--tenant", "acme", "--receipt", str(kept), "--json", db=serve.db)
    assert r.returncode == 0 and json.loads(r.stdout)["receipts"] == 1, r.stderr
