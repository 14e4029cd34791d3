"""Ask sessions: the earlier rounds of a conversation about one meeting, kept so the next prompt can show them.

A session holds records (question, answer, the evidence shown), never a prompt: each question's prompt is
compiled again from the log with these rounds as its history, so it stays within its budget and its
unchanged part is byte-identical to the previous prompt (a provider's prompt cache reuses it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

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
