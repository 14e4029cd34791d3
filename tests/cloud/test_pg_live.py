"""Several API processes on one PostgreSQL: live wake-ups and partial captions through LISTEN/NOTIFY reach a
stream on another process."""

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
