"""Wake-ups for live captions: a segment appended on a worker thread wakes every stream of its meeting.

The feed carries no data, only "look again": each stream reads the log itself from its last chain position,
so a stream that misses a wake-up, reconnects or starts late still sends every segment exactly once and in
arrival order (the event id is the chain position, which `Last-Event-ID` resumes from).

Partial captions are the one thing it holds: the latest partial of each device of a meeting, in memory,
never in the log (the final segment replaces it), numbered so a stream sends each one once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MeetingKey = tuple[str, str]


class LiveFeed:
    """Per-meeting wake-ups from any thread to streams waiting on the server's event loop."""

    def __init__(self) -> None:
        self._waiters: dict[MeetingKey, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._lock = threading.Lock()
        self._partials: dict[MeetingKey, dict[str, tuple[int, dict[str, Any]]]] = {}
        self._partial_count = 0

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

    def forget(self, key: MeetingKey) -> None:
        """Drop the meeting's partial captions and wake its streams, which then find it gone and end."""
        with self._lock:
            self._partials.pop(key, None)
        self.publish(key)

    def subscribers(self, key: MeetingKey) -> int:
        with self._lock:
            return len(self._waiters.get(key, ()))

    def post_partial(self, key: MeetingKey, device_id: str, partial: dict[str, Any]) -> int:
        """Keep a device's latest partial caption of the meeting and wake its streams; returns its number.

        Only a meeting someone is following keeps one (nothing accumulates for meetings nobody watches)."""
        with self._lock:
            self._partial_count += 1
            number = self._partial_count
            if key in self._waiters:
                self._partials.setdefault(key, {})[device_id] = (number, partial)
            else:
                self._partials.pop(key, None)
        self.publish(key)
        return number

    def partials_after(self, key: MeetingKey, after: int) -> list[tuple[int, dict[str, Any]]]:
        """The meeting's latest partials numbered above `after`, oldest first."""
        with self._lock:
            held = list(self._partials.get(key, {}).values())
        return sorted((item for item in held if item[0] > after), key=lambda item: item[0])
