"""Opening the transcript log a URL or path names: SQLite (the embedded default) or PostgreSQL.

`sqlite:///path/to/meetmem.db` or a plain path opens `store.log.TranscriptLog`; `postgresql://...` opens
`store.pg.log.PgTranscriptLog` (the `postgres` extra). Both have the same public methods and guarantees.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .audio import AudioStore, MeetingAudio
from .errors import StoreError
from .log import TranscriptLog
from .pg import is_postgres_url

if TYPE_CHECKING:
    from .pg.log import PgTranscriptLog

    AnyLog = TranscriptLog | PgTranscriptLog
else:
    AnyLog = Any


def sqlite_path(target: str | Path) -> Path | None:
    """The file a SQLite target names (`sqlite:///abs/path`, `sqlite:///rel/path` or a plain path), else None."""
    text = str(target)
    if text.startswith("sqlite:///"):
        # SQLAlchemy's form: three slashes then the path, so an absolute path shows four.
        return Path(text[len("sqlite:///"):])
    if "://" in text:
        return None
    return Path(text)


def open_log(target: str | Path, *, upgrade: bool = True, clock: Callable[[], str] | None = None,
             max_bytes: int | None = None) -> AnyLog:
    """The log at `target`: a `postgresql://` URL, a `sqlite:///` URL or a file path.

    Args:
        upgrade: for PostgreSQL, bring the schema to the newest revision first (needs the owner's rights;
            a database already there is left alone). SQLite always makes what is missing of its schema.

    Raises:
        StoreError: an unknown scheme, or the database cannot be opened.
    """
    text = str(target)
    if is_postgres_url(text):
        from .pg.log import PgTranscriptLog

        return PgTranscriptLog(text, upgrade=upgrade, clock=clock)
    path = sqlite_path(text)
    if path is None:
        raise StoreError(f"unknown database {text!r}: give a file path, sqlite:///PATH or postgresql://...")
    return TranscriptLog(path, clock=clock, max_bytes=max_bytes)


def open_search(log: AnyLog, embedder: Any = None) -> Any:
    """The meeting search over `log`: `TranscriptSearch` with its vectors cached beside the SQLite log, or on
    PostgreSQL `PgTranscriptSearch`, whose vectors live in pgvector, embedded once for every process.

    Args:
        embedder: the dense model (or `EmbedderRoutes`), or None for BM25 alone.
    """
    if log.dialect.backend == "postgres":
        from .pg.meeting_search import PgTranscriptSearch

        return PgTranscriptSearch(log, embedder)
    from .index.search import TranscriptSearch

    return TranscriptSearch(log, embedder)


def audio_store_for(log: AnyLog, *, default_keep: bool = False) -> MeetingAudio:
    """The audio store of the log's database: files beside the SQLite file (`store.audio.AudioStore`), or rows
    in the PostgreSQL database (`store.pg.audio.PgAudioStore`); both are `MeetingAudio`, with the same methods."""
    if log.dialect.backend == "postgres":
        from .pg.audio import PgAudioStore

        return PgAudioStore(log, default_keep=default_keep)
    return AudioStore(log, default_keep=default_keep)
