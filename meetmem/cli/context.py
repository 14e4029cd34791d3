"""What a CLI command opens: the settings-derived log, search and answerer, each built once."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meetmem.settings import Settings

from .progress import note

if TYPE_CHECKING:
    from meetmem.answers.pipeline import Answerer
    from meetmem.store.index.embedder_routes import EmbedderRoutes
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.summarizers.digest import MeetingDigester


@dataclass
class CommandContext:
    """Lazily opens what a command needs, so `segments` never loads a model."""

    settings: Settings
    quiet: bool = False
    _log: TranscriptLog | None = field(default=None, init=False)
    _search: TranscriptSearch | None = field(default=None, init=False)
    _answerer: Answerer | None = field(default=None, init=False)
    _digester: MeetingDigester | None = field(default=None, init=False)

    @property
    def tenant(self) -> str:
        return self.settings.tenant

    @property
    def log(self) -> TranscriptLog:
        if self._log is None:
            from meetmem.store.backends import open_log

            # PostgreSQL's schema is the owner's to upgrade (`meetmem db upgrade`); SQLite makes its own.
            self._log = open_log(self.settings.database_url or self.settings.db, upgrade=False)
        return self._log

    @property
    def search(self) -> TranscriptSearch:
        if self._search is None:
            from meetmem.store.backends import open_search

            # On PostgreSQL the vectors come from pgvector (those the service and its workers stored).
            self._search = open_search(self.log, self._embedder_routes())
        return self._search

    def _embedder_routes(self) -> EmbedderRoutes | None:
        from meetmem.store.index.embedder_routes import embedder_routes

        announce = None if self.quiet else (lambda name: note(f"loading the {name} embedding model ..."))
        settings = self.settings
        return embedder_routes(settings.embedder, settings.embedder_zh, threads=settings.threads, on_load=announce)

    @property
    def answerer(self) -> Answerer:
        """The answerer the settings choose (`MEETMEM_ANSWERER`): extractive, or a language model's."""
        if self._answerer is None:
            from meetmem.answers.model import check_settings, make_answerer

            check_settings(self.settings)  # before loading any model: a missing setting is named at once
            self._answerer = make_answerer(self.settings, self.search, self.digester.digest,
                                           stamp=self.digester.stamp)
        return self._answerer

    @property
    def digester(self) -> MeetingDigester:
        """Summaries and the ledger, made with the summarizer the settings choose."""
        if self._digester is None:
            from meetmem.summarizers.backends import make_digest_parts, shared_minilm
            from meetmem.summarizers.digest import MeetingDigester

            s = self.settings
            search = self.search

            def parts() -> tuple:
                # Made when a digest is first made here: reading a stored one loads no ledger rules or model.
                return make_digest_parts(s.summarizer_for_embedder(), llm_url=s.llm_url, llm_model=s.llm_model,
                                         llm_api_key=s.llm_api_key, llm_timeout=s.llm_timeout,
                                         llm_system_role=s.llm_system_role, ledger=s.ledger_for_embedder(),
                                         embedder=shared_minilm(getattr(search, "routes", None)))

            self._digester = MeetingDigester(self.log, search, parts)
            # A meeting ingested here closes here: its webhooks are queued for `meetmem serve` to send.
            from meetmem.cloud.webhooks import WebhookEvents, public_url

            base_url = public_url(s.public_url, s.host, s.port)
            self._digester.on_saved.append(WebhookEvents(self.log, base_url=base_url))
        return self._digester

    def close(self) -> None:
        close_answerer = getattr(self._answerer, "close", None)
        if callable(close_answerer):
            close_answerer()
        close_search = getattr(self._search, "close", None)
        if callable(close_search):
            close_search()
        if self._log is not None:
            self._log.close()
