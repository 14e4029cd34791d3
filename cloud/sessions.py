"""Ask sessions: the earlier rounds of a conversation about one meeting, kept so the next prompt can show them.

A session holds records (question, answer, the evidence shown), never a prompt: each question's prompt is
compiled again from the log with these rounds as its history, so it stays within its budget and its
unchanged part is byte-identical to the previous prompt (a provider's prompt cache reuses it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .compiler import Turn

#: How many sessions the service keeps in memory; the least recently used go first.
MAX_SESSIONS = 1000


class AskSession:
    """The rounds of one conversation about one meeting, oldest first.

    `lock` is held for a whole question, so two questions of one session take their turns in order.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._turns: list[Turn] = []

    @property
    def turns(self) -> tuple[Turn, ...]:
        with self.lock:
            return tuple(self._turns)

    def add(self, turn: Turn) -> None:
        with self.lock:
            self._turns.append(turn)

    def __len__(self) -> int:
        return len(self._turns)


class SessionStore:
    """Sessions by (tenant, meeting, session id), at most `capacity`, least recently used evicted first.

    In memory: a restart forgets them, which costs only the history of the next questions (the answers
    themselves never depend on it being there).
    """

    def __init__(self, capacity: int = MAX_SESSIONS) -> None:
        self.capacity = max(1, capacity)
        self._sessions: OrderedDict[tuple[str, str, str], AskSession] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, tenant: str, meeting_id: str, session_id: str) -> AskSession:
        """The session with this key, made on first use."""
        key = (tenant, meeting_id, session_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = AskSession()
                while len(self._sessions) > self.capacity:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            return session

    def forget(self, tenant: str, meeting_id: str) -> None:
        """Drop every session of the meeting (after it was deleted)."""
        with self._lock:
            for key in [k for k in self._sessions if k[:2] == (tenant, meeting_id)]:
                del self._sessions[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


class PgAskSession:
    """One conversation's rounds, kept in PostgreSQL (`ask_turns`) so every API process sees them.

    `lock` orders the questions of a session within this process; two processes answering the same
    session at once each see the rounds stored before they started, and both rounds are kept.
    """

    def __init__(self, store: PgSessionStore, key: tuple[str, str, str]) -> None:
        self.lock = threading.RLock()
        self._store = store
        self._key = key

    @property
    def turns(self) -> tuple[Turn, ...]:
        return self._store.turns(*self._key)

    def add(self, turn: Turn) -> None:
        self._store.add(*self._key, turn)

    def __len__(self) -> int:
        return len(self.turns)


class PgSessionStore:
    """Sessions of the PostgreSQL backend: rounds in the database, the in-process part (a lock per session)
    kept for at most `capacity` sessions.

    Args:
        pool: connections on the database (`store.pg.search.connect_pool`: the service's role).
        segments: looks stored segments up by id (the log's `get`): a round keeps the ids of the evidence
            it showed, and its next prompt shows those same segments again.
    """

    def __init__(self, pool: Any, segments: Callable[[Iterable[str]], Mapping[str, Any]],
                 capacity: int = MAX_SESSIONS) -> None:
        self.pool = pool
        self.segments = segments
        self.capacity = max(1, capacity)
        self._sessions: OrderedDict[tuple[str, str, str], PgAskSession] = OrderedDict()
        self._lock = threading.Lock()

    @contextmanager
    def _session(self, tenant: str) -> Iterator[Any]:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('app.tenant', %s, true)", (tenant,))
            yield conn

    def get(self, tenant: str, meeting_id: str, session_id: str) -> PgAskSession:
        key = (tenant, meeting_id, session_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = PgAskSession(self, key)
                while len(self._sessions) > self.capacity:
                    self._sessions.popitem(last=False)
            else:
                self._sessions.move_to_end(key)
            return session

    def turns(self, tenant: str, meeting_id: str, session_id: str) -> tuple[Turn, ...]:
        """The session's rounds, oldest first, their evidence read back from the log."""
        from .compiler import Evidence

        with self._session(tenant) as conn:
            rows = conn.execute(
                "SELECT question, answer, evidence FROM ask_turns WHERE tenant = %s AND meeting_id = %s "
                "AND session_id = %s ORDER BY round", (tenant, meeting_id, session_id)).fetchall()
        ids = [e["segment_id"] for _q, _a, evidence in rows for e in evidence]
        stored = self.segments(ids) if ids else {}
        return tuple(
            Turn(question, answer, tuple(Evidence(stored[e["segment_id"]], e["reason"])
                                         for e in evidence if e["segment_id"] in stored))
            for question, answer, evidence in rows
        )

    def add(self, tenant: str, meeting_id: str, session_id: str, turn: Turn) -> None:
        """Store a round after the session's last (numbered in the database, so processes never collide)."""
        from psycopg.types.json import Jsonb

        evidence = Jsonb([{"segment_id": e.segment.segment_id, "reason": e.reason} for e in turn.evidence])
        with self._session(tenant) as conn:
            # One writer per session at a time, across processes: the round number is read and used under it.
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                         (f"{tenant}\x1f{meeting_id}\x1f{session_id}",))
            conn.execute(
                "INSERT INTO ask_turns (tenant, meeting_id, session_id, round, question, answer, evidence) "
                "SELECT %s, %s, %s, coalesce(max(round), -1) + 1, %s, %s, %s FROM ask_turns "
                "WHERE tenant = %s AND meeting_id = %s AND session_id = %s",
                (tenant, meeting_id, session_id, turn.question, turn.answer, evidence, tenant, meeting_id,
                 session_id))

    def forget(self, tenant: str, meeting_id: str) -> None:
        """Drop the meeting's sessions (its rows also go with the meeting when it is deleted)."""
        with self._lock:
            for key in [k for k in self._sessions if k[:2] == (tenant, meeting_id)]:
                del self._sessions[key]
        with self._session(tenant) as conn:
            conn.execute("DELETE FROM ask_turns WHERE tenant = %s AND meeting_id = %s", (tenant, meeting_id))

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)
