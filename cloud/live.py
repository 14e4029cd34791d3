"""Wake-ups for live captions: a segment appended on a worker thread wakes every stream of its meeting.

The feed carries no data, only "look again": each stream reads the log itself from its last chain position,
so a stream that misses a wake-up, reconnects or starts late still sends every segment exactly once and in
arrival order (the event id is the chain position, which `Last-Event-ID` resumes from).

Partial captions are the one thing it holds: the latest partial of each device of a meeting, in memory,
never in the log (the final segment replaces it), numbered so a stream sends each one once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MeetingKey = tuple[str, str]

log = logging.getLogger(__name__)


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
        self._wake(key)

    def _wake(self, key: MeetingKey) -> None:
        """Wake this process's streams of the meeting."""
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
        self._wake(key)
        return number

    def partials_after(self, key: MeetingKey, after: int) -> list[tuple[int, dict[str, Any]]]:
        """The meeting's latest partials numbered above `after`, oldest first."""
        with self._lock:
            held = list(self._partials.get(key, {}).values())
        return sorted((item for item in held if item[0] > after), key=lambda item: item[0])


#: The PostgreSQL channel that carries wake-ups and partial captions between API processes.
CHANNEL = "meetmem_live"
#: PostgreSQL refuses a NOTIFY payload of 8000 bytes or more; a partial's text is cut to fit, keeping its end.
_MAX_PAYLOAD = 7900


class PgLiveFeed(LiveFeed):
    """A `LiveFeed` shared by every API process on one PostgreSQL database, through LISTEN/NOTIFY.

    A segment appended on one process wakes the streams of its meeting on every process (each stream then
    reads the log itself, as with one process); a partial caption posted to one process reaches the streams
    on all of them. A notification lost while a listener reconnects costs only latency: streams re-read
    the log at least every keep-alive, and every stream is woken when the listener is back.

    Args:
        url: the database.
        origin: this process's name in its notifications (its own come back to it and are skipped).
    """

    def __init__(self, url: str, *, origin: str | None = None) -> None:
        super().__init__()
        import uuid

        self.url = url
        self.origin = origin or uuid.uuid4().hex
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._send_lock = threading.Lock()
        self._sender: Any = None
        self._listener = threading.Thread(target=self._listen, name="meetmem-live-listen", daemon=True)
        self._listener.start()

    def wait_listening(self, timeout: float = 10.0) -> bool:
        """True once the listener is subscribed (notifications from then on are received)."""
        return self._ready.wait(timeout)

    def publish(self, key: MeetingKey) -> None:
        super().publish(key)
        self._notify({"o": self.origin, "t": key[0], "m": key[1]})

    def post_partial(self, key: MeetingKey, device_id: str, partial: dict[str, Any]) -> int:
        number = super().post_partial(key, device_id, partial)
        message = {"o": self.origin, "t": key[0], "m": key[1], "d": device_id, "p": partial}
        text = str(partial.get("text", ""))
        while len(_json(message).encode("utf-8")) > _MAX_PAYLOAD and text:
            text = text[len(text) // 4 + 1:]
            message["p"] = {**partial, "text": "…" + text}
        self._notify(message)
        return number

    def close(self) -> None:
        self._stop.set()
        with self._send_lock:
            if self._sender is not None:
                self._sender.close()
                self._sender = None
        self._listener.join(timeout=5)

    # -- the wire ---------------------------------------------------------------------------------------
    def _notify(self, message: dict[str, Any]) -> None:
        import psycopg

        payload = _json(message)
        with self._send_lock:
            for attempt in (1, 2):
                try:
                    if self._sender is None or self._sender.closed:
                        self._sender = psycopg.connect(self.url, autocommit=True)
                    self._sender.execute("SELECT pg_notify(%s, %s)", (CHANNEL, payload))
                    return
                except psycopg.Error as exc:
                    if self._sender is not None:
                        self._sender.close()
                    self._sender = None
                    if attempt == 2:  # other processes' streams catch up at their next keep-alive
                        log.warning("live notification not sent: %s", exc)

    def _listen(self) -> None:
        import psycopg

        backoff = 0.2
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    if self._ready.is_set():
                        self._wake_all()  # back after a gap: whatever was missed is read from the log
                    self._ready.set()
                    backoff = 0.2
                    while not self._stop.is_set():
                        for note in conn.notifies(timeout=0.5):
                            self._receive(note.payload)
            except psycopg.Error as exc:
                if self._stop.is_set():
                    return
                log.warning("live listener lost the database (%s); reconnecting", exc)
                self._stop.wait(backoff)
                backoff = min(5.0, backoff * 2)

    def _receive(self, payload: str) -> None:
        import json

        try:
            message = json.loads(payload)
            if message.get("o") == self.origin:
                return
            key = (str(message["t"]), str(message["m"]))
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a malformed live notification")
            return
        if "p" in message:
            LiveFeed.post_partial(self, key, str(message.get("d", "")), message["p"])
        else:
            self._wake(key)

    def _wake_all(self) -> None:
        with self._lock:
            keys = list(self._waiters)
        for key in keys:
            self._wake(key)


def _json(message: dict[str, Any]) -> str:
    import json

    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))
