"""What a CLI command opens: the settings-derived log, search and answerer, each built once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meetmem.settings import Settings

from .progress import note

if TYPE_CHECKING:
    from meetmem.cloud.answer import Answerer
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog


@dataclass
class CommandContext:
    """Lazily opens what a command needs, so `segments` never loads a model."""

    settings: Settings
    quiet: bool = False
    _log: TranscriptLog | None = field(default=None, init=False)
    _search: TranscriptSearch | None = field(default=None, init=False)
    _answerer: Answerer | None = field(default=None, init=False)

    @property
    def tenant(self) -> str:
        return self.settings.tenant

    @property
    def log(self) -> TranscriptLog:
        if self._log is None:
            from meetmem.store.log import TranscriptLog

            self._log = TranscriptLog(self.settings.db)
        return self._log

    @property
    def search(self) -> TranscriptSearch:
        if self._search is None:
            from meetmem.store.index.search import TranscriptSearch

            embedder = None
            if self.settings.embedder != "none":
                from meetmem.store.index.embedders import load_embedder

                if not self.quiet:
                    note(f"loading the {self.settings.embedder} embedding model ...")
                embedder = load_embedder(self.settings.embedder, threads=self.settings.threads)
            self._search = TranscriptSearch(self.log, embedder)
        return self._search

    @property
    def answerer(self) -> Answerer:
        if self._answerer is None:
            from meetmem.cloud.answer import Answerer

            self._answerer = Answerer(self.search)
        return self._answerer

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
