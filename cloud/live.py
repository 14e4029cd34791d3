"""Wake-ups for live captions: a segment appended on a worker thread wakes every stream of its meeting.

The feed carries no data, only "look again": each stream reads the log itself from its last chain position,
so a stream that misses a wake-up, reconnects or starts late still sends every segment exactly once and in
arrival order (the event id is the chain position, which `Last-Event-ID` resumes from).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

MeetingKey = tuple[str, str]


class LiveFeed:
    """Per-meeting wake-ups from any thread to streams waiting on the server's event loop."""

    def __init__(self) -> None:
        self._waiters: dict[MeetingKey, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._lock = threading.Lock()

    @contextmanager
    def subscribe(self, key: MeetingKey) -> Iterator[asyncio.Event]:
        """An event set whenever the meeting gains segments or closes; call from the event loop."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.setdefault(key, set()).add(entry)
        try:
            yield entry[1]
        finally:
            with self._lock:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.discard(entry)
                    if not waiting:
                        del self._waiters[key]

    def publish(self, key: MeetingKey) -> None:
        """Wake every stream of the meeting (safe from any thread)."""
        with self._lock:
            entries = list(self._waiters.get(key, ()))
        for loop, event in entries:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that stream's loop has closed; its subscription is going away
                pass

    def subscribers(self, key: MeetingKey) -> int:
        with self._lock:
            return len(self._waiters.get(key, ()))
