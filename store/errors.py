"""Errors raised by the transcript store.

Every foreign error (sqlite3, JSON decoding, Unicode decoding) is converted to one of these at the store's
boundary so that the CLI and the API can turn them into a one-line message or a 4xx response.
"""

from __future__ import annotations


class StoreError(Exception):
    """Base class of every error the store raises."""


class InvalidSegment(StoreError):
    """A segment (or a line of an interchange file) is malformed.

    Attributes:
        source: the file name or request the segment came from, if known.
        line: the 1-based line number in that file, if known.
        seq: the `seq` of the segment to blame, when the log found the problem (a file's seq is its line).
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 seq: int | None = None) -> None:
        self.reason = message
        self.source = source
        self.line = line
        self.seq = seq
        where = ""
        if source is not None and line is not None:
            where = f"{source}:{line}: "
        elif source is not None:
            where = f"{source}: "
        elif line is not None:
            where = f"line {line}: "
        elif seq is not None:
            where = f"seq {seq}: "
        super().__init__(f"{where}{message}")


class MeetingNotFound(StoreError):
    """The tenant has no meeting with that id."""

    def __init__(self, tenant: str, meeting_id: str, *, deleted_at: str | None = None) -> None:
        self.tenant = tenant
        self.meeting_id = meeting_id
        self.deleted_at = deleted_at
        gone = f" (it was deleted at {deleted_at})" if deleted_at else ""
        super().__init__(f"no meeting {meeting_id!r} for tenant {tenant!r}{gone}")


class SegmentNotFound(StoreError):
    """A segment id named by a correction does not exist in that meeting."""


class ImmutableLog(StoreError):
    """Something tried to change or delete a row of the append-only log."""


class SequenceError(StoreError):
    """A device's segments arrived with a `seq` that goes backwards or repeats with different content."""


class MeetingDeleted(StoreError):
    """The meeting was deleted: its id is taken by a tombstone and stays so (re-posting it is refused)."""

    def __init__(self, tenant: str, meeting_id: str, deleted_at: str) -> None:
        self.tenant = tenant
        self.meeting_id = meeting_id
        self.deleted_at = deleted_at
        super().__init__(f"meeting {meeting_id!r} of tenant {tenant!r} was deleted at {deleted_at} and its "
                         "tombstone keeps the id: send these segments under a new meeting id")


class DatabaseUnavailable(StoreError):
    """The database server cannot be reached or cannot take work now (stopped, restarting, out of connections).

    Nothing was written. The service reconnects by itself once the server is back, so the request can simply
    be sent again later.

    Attributes:
        reason: what the server or the connection said, in one line, without the database's address (for a
            message to API clients, who need not know where the database runs).
    """

    def __init__(self, message: str, *, reason: str) -> None:
        self.reason = reason
        super().__init__(message)
