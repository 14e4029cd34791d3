"""Ask sessions: the earlier rounds of a conversation about one meeting, kept so the next prompt can show them.

A session holds records (question, answer, the evidence shown), never a prompt: each question's prompt is
compiled again from the log with these rounds as its history, so it stays within its budget and its
unchanged part is byte-identical to the previous prompt (a provider's prompt cache reuses it).
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from meetmem.store.database import ALL_TENANTS

from .compiler import Evidence, Turn

#: How many sessions' locks the service keeps; the least recently used go first.
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


class StoredSession:
    """One conversation kept in the log's database (table `ask_turns`): any API process reads its rounds,
    and a restart keeps them.

    `lock` orders the questions of a session within this process; two processes asking in the same session
    at the same moment each see the rounds stored before they began.
    """

    def __init__(self, log: Any, key: tuple[str, str, str], lock: threading.RLock) -> None:
        self.log = log
        self.key = key
        self.lock = lock

    @property
    def turns(self) -> tuple[Turn, ...]:
        tenant = self.key[0]
        rows = self.log.database.rows("SELECT question, answer, evidence FROM ask_turns WHERE tenant = ? AND "
                                      "meeting_id = ? AND session_id = ? ORDER BY n", self.key, tenant=tenant)
        shown = [json.loads(r[2]) for r in rows]
        segments = self.log.get(sid for evidence in shown for sid, _ in evidence)
        return tuple(Turn(q, a, tuple(Evidence(segments[sid], reason) for sid, reason in evidence if sid in segments))
                     for (q, a, _), evidence in zip(rows, shown, strict=True))

    def add(self, turn: Turn) -> None:
        tenant, meeting_id, session_id = self.key
        evidence = json.dumps([[e.segment.segment_id, e.reason] for e in turn.evidence], ensure_ascii=False)
        with self.log.database.session(tenant, lock=f"{meeting_id}\x1fask\x1f{session_id}") as conn:
            conn.execute("INSERT INTO ask_turns (tenant, meeting_id, session_id, n, question, answer, evidence, "
                         "asked_at) SELECT ?, ?, ?, COALESCE(MAX(n), -1) + 1, ?, ?, ?, ? FROM ask_turns "
                         "WHERE tenant = ? AND meeting_id = ? AND session_id = ?",
                         (*self.key, turn.question, turn.answer, evidence,
                          datetime.now(UTC).isoformat(timespec="seconds"), *self.key))

    def __len__(self) -> int:
        return len(self.turns)


class SessionStore:
    """Sessions kept in the log's database, on either engine, so several API processes share them and a
    restart keeps them; this process holds a lock per recent session (at most `capacity`, least recently
    used dropped first)."""

    def __init__(self, log: Any, capacity: int = MAX_SESSIONS) -> None:
        self.log = log
        self._locks: OrderedDict[tuple[str, str, str], threading.RLock] = OrderedDict()
        self._capacity = max(1, capacity)
        self._lock = threading.Lock()

    def get(self, tenant: str, meeting_id: str, session_id: str) -> StoredSession:
        key = (tenant, meeting_id, session_id)
        with self._lock:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.RLock()
                while len(self._locks) > self._capacity:
                    self._locks.popitem(last=False)
            else:
                self._locks.move_to_end(key)
        return StoredSession(self.log, key, lock)

    def forget(self, tenant: str, meeting_id: str) -> None:
        """Drop every session of the meeting (after it was deleted; the deletion removed its rows already)."""
        with self.log.database.session(tenant) as conn:
            conn.execute("DELETE FROM ask_turns WHERE tenant = ? AND meeting_id = ?", (tenant, meeting_id))
        with self._lock:
            for key in [k for k in self._locks if k[:2] == (tenant, meeting_id)]:
                del self._locks[key]

    def __len__(self) -> int:
        return int(self.log.database.rows("SELECT COUNT(*) FROM (SELECT DISTINCT tenant, meeting_id, session_id "
                                          "FROM ask_turns) s", tenant=ALL_TENANTS)[0][0])


def session_store_for(log: Any) -> SessionStore:
    """The ask sessions of the log's database."""
    return SessionStore(log)
