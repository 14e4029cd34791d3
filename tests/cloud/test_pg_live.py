"""Several API processes on one PostgreSQL: live wake-ups and partial captions through LISTEN/NOTIFY reach a
stream on another process, and ask sessions live in the database, seen by every process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

psycopg = pytest.importorskip("psycopg")

KEY = ("acme", "weekly")


def other_process(url: str, body: str) -> None:
    """Run `body` in a new Python process holding its own `PgLiveFeed` named `feed` on `url`."""
    script = textwrap.dedent(f"""
        from meetmem.cloud.live import PgLiveFeed
        feed = PgLiveFeed({url!r}, origin="other")
        assert feed.wait_listening()
    """) + textwrap.dedent(body) + "\nfeed.close()\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_stream_on_one_process_is_woken_by_an_append_on_another(pg_url: str) -> None:
    from meetmem.cloud.live import PgLiveFeed

    feed = PgLiveFeed(pg_url)
    try:
        assert feed.wait_listening()

        async def follow() -> tuple[bool, bool]:
            with feed.subscribe(KEY) as wake, feed.subscribe(("acme", "other-meeting")) as elsewhere:
                await asyncio.get_running_loop().run_in_executor(
                    None, other_process, pg_url, f"feed.publish({KEY!r})")
                await asyncio.wait_for(wake.wait(), timeout=10)
                return wake.is_set(), elsewhere.is_set()

        woken, other_woken = asyncio.run(follow())
        assert woken and not other_woken
    finally:
        feed.close()


def test_partial_captions_cross_processes_and_long_ones_keep_their_end(pg_url: str) -> None:
    from meetmem.cloud.live import PgLiveFeed

    feed = PgLiveFeed(pg_url)
    long_text = "我们下周五之前把样品寄给供应商" * 250  # 3750 characters, 11,250 bytes: over NOTIFY's limit
    try:
        assert feed.wait_listening()

        async def follow() -> list:
            with feed.subscribe(KEY) as wake:
                body = f"""
                    feed.post_partial({KEY!r}, "glasses-1", {{"device_id": "glasses-1", "start": 12.0,
                                       "heard_until": 13.5, "text": "the deadline is March"}})
                    feed.post_partial({KEY!r}, "glasses-2", {{"device_id": "glasses-2", "start": 14.0,
                                       "heard_until": 90.0, "text": {long_text!r}}})
                """
                await asyncio.get_running_loop().run_in_executor(None, other_process, pg_url, body)
                for _ in range(50):
                    if len(feed.partials_after(KEY, 0)) == 2:
                        break
                    wake.clear()
                    await asyncio.wait_for(wake.wait(), timeout=10)
                return feed.partials_after(KEY, 0)

        partials = asyncio.run(follow())
        assert [p["device_id"] for _n, p in partials] == ["glasses-1", "glasses-2"]
        assert partials[0][1]["text"] == "the deadline is March"
        cut = partials[1][1]["text"]
        assert cut.startswith("…") and long_text.endswith(cut[1:]) and len(cut.encode()) < 8000
    finally:
        feed.close()


def test_ask_sessions_are_shared_by_processes_and_go_with_their_meeting(pg_url: str, tmp_path) -> None:
    from meetmem.cloud.compiler import Evidence, Turn
    from meetmem.cloud.sessions import PgSessionStore
    from meetmem.store.pg.log import PgTranscriptLog
    from meetmem.store.pg.search import connect_pool
    from meetmem.store.receipts import ReceiptKey
    from meetmem.store.records import SegmentInput

    log = PgTranscriptLog(pg_url)
    pools = [connect_pool(pg_url), connect_pool(pg_url)]
    try:
        log.append("weekly", "dev", [SegmentInput(seq=0, start=0.0, end=2.0, text="Ship on March 12th.",
                                                  speaker="Ana")], tenant="acme")
        segment = next(iter(log.chain("weekly", tenant="acme")))
        one, two = (PgSessionStore(pool, log.get) for pool in pools)  # two API processes
        first = one.get("acme", "weekly", "s1")
        with first.lock:
            first.add(Turn("When do we ship?", "March 12th [1]", (Evidence(segment, "retrieved: bm25 #1"),)))
        two.get("acme", "weekly", "s1").add(Turn("Who said it?", "Ana [1]"))
        turns = two.get("acme", "weekly", "s1").turns
        assert [t.question for t in turns] == ["When do we ship?", "Who said it?"]
        assert turns[0].evidence == (Evidence(segment, "retrieved: bm25 #1"),)
        assert one.get("acme", "weekly", "s1").turns == turns
        assert two.get("other", "weekly", "s1").turns == ()  # another tenant sees nothing
        assert one.get("acme", "weekly", "s2").turns == ()
        log.delete_meeting("weekly", tenant="acme", reason="test", key=ReceiptKey.load(tmp_path / "k", create=True))
        with psycopg.connect(pg_url, autocommit=True) as owner:
            assert owner.execute("SELECT count(*) FROM ask_turns").fetchone()[0] == 0
    finally:
        for pool in pools:
            pool.close()
        log.close()
