"""The FastAPI application: `create_app(settings)` builds it; `meetmem serve` runs it under uvicorn.

Nothing heavy happens at import or in the factory: the lifespan opens the database, starts the service's
background threads and begins loading the models, and the server takes segments at once. `/healthz` says
`ready` (200) once the models are loaded and the stored meetings indexed; until then questions get 503.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from meetmem.settings import Settings
from meetmem.store.errors import (
    DatabaseUnavailable,
    ImmutableLog,
    InvalidSegment,
    MeetingDeleted,
    MeetingNotFound,
    SegmentNotFound,
    SequenceError,
    StoreError,
)

from .headers import SecurityHeaders
from .service import NotReady
from .voice import VoiceUnavailable

if TYPE_CHECKING:
    from meetmem.store.index.embedder_routes import EmbedderRoutes

log = logging.getLogger(__name__)

API_DESCRIPTION = """\
meetmem keeps the timestamped transcripts of a wearer's meetings and answers questions about them with
the exact words said, each answer citing the segments (and times) it rests on.

Every `/v1` endpoint needs `Authorization: Bearer TOKEN` (`meetmem token create --tenant NAME`); a
tenant sees only its own meetings: any other meeting id answers 404. Errors are JSON `{"detail": "..."}`.
"""


def create_app(settings: Settings | None = None, *, embedders: EmbedderRoutes | None | str = "settings") -> FastAPI:
    """The meetmem cloud service.

    Args:
        settings: the process settings (built once by the caller; `Settings()` when omitted).
        embedders: the embedding models to use instead of the ones `settings` names (tests share loaded
            models between apps this way); `None` for BM25 alone.
    """
    settings = settings or Settings()
    from meetmem.answers.model import check_settings

    check_settings(settings)  # a misconfigured answerer fails here, naming the setting, not on the first question

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from meetmem.answers.model import make_answerer
        from meetmem.store.backends import open_log, open_search
        from meetmem.store.index.embedder_routes import embedder_routes
        from meetmem.store.receipts import ReceiptKey
        from meetmem.store.webhooks import WebhookStore
        from meetmem.summarizers.backends import make_digest_parts, shared_minilm
        from meetmem.summarizers.digest import MeetingDigester

        from .auth import TokenStore
        from .service import MeetingService, ServiceOptions
        from .voice import VoiceQuestions
        from .webhooks import WebhookEvents, WebhookSender, public_url

        routes = embedders
        if isinstance(routes, str):
            routes = embedder_routes(settings.embedder, settings.embedder_zh, threads=settings.threads,
                                     instances=settings.model_instances,
                                     on_load=lambda name: log.info("loading the %s embedding model", name))
        # MEETMEM_DATABASE_URL: the log in PostgreSQL, whose schema its owner upgrades (`meetmem db upgrade`);
        # else the SQLite file, which makes its own.
        transcript_log = open_log(settings.database_url or settings.db, upgrade=False,
                                  max_bytes=settings.max_db_bytes)
        receipts = ReceiptKey.load(settings.receipt_key_path(), create=True)
        search = open_search(transcript_log, routes)
        # The service's indexer embeds new segments; a question adds them to BM25 and never waits for that.
        search.background_embedding = True
        summarizer, ledger = make_digest_parts(settings.summarizer_for_embedder(), llm_url=settings.llm_url,
                                               llm_model=settings.llm_model, llm_api_key=settings.llm_api_key,
                                               llm_timeout=settings.llm_timeout,
                                               llm_system_role=settings.llm_system_role,
                                               ledger=settings.ledger_for_embedder(), embedder=shared_minilm(routes))
        digester = MeetingDigester(transcript_log, search, summarizer, extract_ledger=ledger)
        # Webhooks: events queued as digests are stored, sent from threads that ingest and asks never wait on.
        webhook_events = WebhookEvents(transcript_log,
                                       base_url=public_url(settings.public_url, settings.host, settings.port))
        digester.on_saved.append(webhook_events)
        webhook_events.sender = WebhookSender(WebhookStore(transcript_log),
                                                timeout_s=getattr(settings, "webhook_timeout", 10.0))
        answerer = make_answerer(settings, search, digester.stored, stamp=digester.stamp)
        shared = _shared_across_processes(settings.database_url, jobs=settings.index_fallback_after > 0)
        service = MeetingService(
            transcript_log,
            search,
            answerer,
            ServiceOptions(close_after_silence=settings.close_after_silence,
                           reap_interval=min(30.0, max(0.05, settings.close_after_silence / 4)),
                           retention_days=settings.retention_days, fallback_after=settings.index_fallback_after),
            voice=VoiceQuestions(settings.voice_model, threads=settings.threads or 1),
            digester=digester,
            receipt_key=receipts,
            feed=shared.get("feed"),
            jobs=shared.get("jobs"),
        )
        app.state.settings = settings
        app.state.tokens = TokenStore(transcript_log)
        app.state.webhooks = WebhookStore(transcript_log)
        app.state.receipts = receipts
        app.state.service = service
        service.start()
        webhook_events.sender.start()
        try:
            yield
        finally:
            webhook_events.sender.stop()
            service.stop()
            close_answerer = getattr(answerer, "close", None)
            if callable(close_answerer):
                close_answerer()
            for part in shared.values():
                part.close()
            close_search = getattr(search, "close", None)
            if callable(close_search):
                close_search()
            transcript_log.close()

    from .routers.deps import errors

    app = FastAPI(
        title="meetmem",
        version="0.1.0",
        description=API_DESCRIPTION,
        lifespan=lifespan,
        # /docs and /redoc are served by the web router from packaged assets: FastAPI's own load from a CDN.
        docs_url=None,
        redoc_url=None,
        # Every request passes the client limits (cloud/limits.py), whatever its route.
        responses=errors(408, 429),
    )
    from meetmem.store.pg import is_postgres_url

    _add_error_handlers(app, postgres=is_postgres_url(settings.database_url), hide=_private_places(settings))
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    from .limits import ClientLimits, LimitOptions

    # Added last, so it runs first: a client over its share is refused before anything reads its body.
    app.add_middleware(ClientLimits, options=LimitOptions(
        body_timeout=settings.body_timeout, body_deadline=settings.body_deadline,
        body_min_rate=settings.body_min_rate, per_client=settings.per_client_requests, rate=settings.rate_limit,
        burst=settings.rate_burst), lookup=lambda token: app.state.tokens.lookup(token))
    app.add_middleware(SecurityHeaders)  # outermost and reading nothing: the limits' refusals get headers too

    from .routers import across, ask, audio, digests, events, export, health, meetings, speakers, web, webhooks

    for module in (health, meetings, ask, digests, events, across, export, audio, speakers, web, webhooks):
        app.include_router(module.router)
    app.include_router(meetings.tombstones_router)
    app.include_router(webhooks.deliveries_router)
    return app


class BodyLimit:
    """Refuses request bodies over the configured size with a JSON 413, without reading past the limit.

    A body that announces its size in Content-Length is refused before it is read; a streamed one as soon
    as it passes the limit (the route's body parsing then lets the 413 through to the error handler).
    """

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _detail(self, size: str) -> str:
        return (f"the request body is {size} bytes; the service accepts at most {self.limit} "
                "(MEETMEM_MAX_BODY_BYTES): send fewer segments per request")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers") or ():
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await _error(413, self._detail(value.decode()))(scope, receive, send)
                return
        seen = 0

        async def limited() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise StarletteHTTPException(413, self._detail(f"over {self.limit}"))
            return message

        await self.app(scope, limited, send)


_METHODS = ("DELETE", "GET", "PATCH", "POST", "PUT")


def _error(status: int, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    return JSONResponse({"detail": detail, **extra}, status_code=status, headers=headers)


#: What the PostgreSQL client libraries raise when the server cannot be reached (answered as the log's
#: DatabaseUnavailable is): psycopg's, its pool's, and the job queue's.
_CONNECTION_ERRORS = ("psycopg.OperationalError", "psycopg_pool.PoolTimeout",
                      "procrastinate.exceptions.ConnectorException")
DATABASE_RETRY_AFTER_S = 2


def _database_down(reason: str) -> JSONResponse:
    """503 for a database that cannot be reached: what happened, that nothing was stored, and when to retry."""
    return _error(503, f"the database cannot be reached right now ({reason}). The service reconnects by itself "
                  f"once it is back: send the request again after {DATABASE_RETRY_AFTER_S} s (a batch of segments sent "
                  "again is never stored twice); if this lasts, the operator should check that PostgreSQL is running",
                  {"Retry-After": str(DATABASE_RETRY_AFTER_S)})


#: Where a database is, as drivers write it into their messages: any URL (a DSN, its password hidden or not,
#: dropped: "the database <url> refused" reads "the database refused"), psycopg's `connection to server at
#: "host" (ip), port N` and `server on socket "path"`, an IPv4 or bracketed IPv6 address with or without a port.
_URLS = re.compile(r" ?\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_SERVERS = re.compile(
    r'(?:connection to )?server (?:at "[^"]*"(?: \([^)]*\))?, port \d+|on socket "[^"]*")'
    r"|\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"
    r"|\[[0-9A-Fa-f:.]+\](?::\d+)?",
    re.IGNORECASE,
)


def _private_places(settings: Settings) -> tuple[str, ...]:
    """What this service's errors must not show its clients: the database's host (with its port), and the
    folders holding the database file, its audio and its key (a file keeps its own name)."""
    from urllib.parse import urlsplit

    hidden: list[str] = []
    if settings.database_url:
        try:
            where = urlsplit(settings.database_url)
            host, port = where.hostname, where.port
        except ValueError:
            host, port = None, None
        if host:
            hidden += [f"{host}:{port}" if port else host, f'"{host}"']
    for path in (settings.db, settings.receipt_key_path()):
        for folder in {str(path.parent), str(path.parent.resolve())}:
            if folder not in ("", ".", "/"):
                hidden.append(folder.rstrip("/") + "/")
    return tuple(sorted(set(hidden), key=len, reverse=True))


def public_detail(text: str, hide: tuple[str, ...] = ()) -> str:
    """`text` without a database address, a connection string or the service's folders, for an error
    answered to a client (issue 30: a 503 named the database's host and port). The server's log keeps the
    whole message."""
    text = _SERVERS.sub("the database server", _URLS.sub("", text))
    for place in hide:
        text = text.replace(place, "" if place.endswith("/") else "the database server")
    return text


def _add_error_handlers(app: FastAPI, *, postgres: bool = False, hide: tuple[str, ...] = ()) -> None:
    """Store errors become 4xx (or 503 for a busy or loading service) with the store's own message, never
    with where the database or the service's files are (`public_detail`)."""

    def reply(status: int, detail: str, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
        # A 5xx carries what went wrong inside the service: said without where (4xx details are the client's).
        return _error(status, public_detail(detail, hide) if status >= 500 else detail, headers, **extra)

    statuses: list[tuple[type[StoreError], int]] = [
        (MeetingNotFound, 404),
        (SegmentNotFound, 404),
        (InvalidSegment, 422),
        (SequenceError, 409),
        (MeetingDeleted, 409),
        (ImmutableLog, 409),
    ]

    async def store_error(request: Request, exc: Exception) -> JSONResponse:
        from meetmem.store.calendar import CalendarError
        from meetmem.store.index.errors import MissingDependency, ModelUnavailable, SearchError
        from meetmem.store.webhooks import UnknownWebhook, WebhookError

        from .auth import TokenError

        if isinstance(exc, UnknownWebhook):
            return reply(404, str(exc))
        if isinstance(exc, WebhookError | CalendarError):
            return reply(422, str(exc))
        for cls, status in statuses:
            if isinstance(exc, cls):
                return reply(status, str(exc))
        if isinstance(exc, NotReady | MissingDependency | ModelUnavailable | VoiceUnavailable):
            return reply(503, str(exc), {"Retry-After": "2"})
        if isinstance(exc, SearchError | TokenError):
            return reply(422, str(exc))
        if isinstance(exc, DatabaseUnavailable):
            log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
            return _database_down(public_detail(exc.reason, hide))
        # Anything else the store raises is the database being unable to take the work now (locked, full).
        log.warning("store error on %s %s: %s", request.method, request.url.path, exc)
        return reply(503, f"the database could not take the request: {exc}", {"Retry-After": "1"})

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append({"loc": [str(p) for p in err.get("loc", ())], "msg": str(err.get("msg", "")),
                             "type": str(err.get("type", ""))})
            if len(problems) == 1:
                first = f"{where}: {err.get('msg', 'invalid')}"
        detail = first if len(problems) == 1 else f"{first} (and {len(problems) - 1} more problems)"
        return reply(422, detail, errors=problems)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail
        headers = dict(exc.headers or {})
        if exc.status_code == 400 and detail == "There was an error parsing the body":
            if isinstance(exc.__cause__, RecursionError):
                return reply(422, "the JSON body is nested too deeply: a batch is an object holding a list of "
                              "flat segment objects")
            detail = "the request body could not be read: send UTF-8 encoded JSON"
        elif exc.status_code == 405:
            # Starlette names only the methods of the first route whose path matched; list them all. Asked of
            # the router method by method, since included routers nest their routes out of sight.
            allowed = sorted(method for method in _METHODS
                             if any(route.matches({**request.scope, "method": method})[0] == Match.FULL
                                    for route in request.app.router.routes))
            headers["Allow"] = ", ".join(allowed)
            detail = f"{request.method} is not allowed here; use {' or '.join(allowed)}"
        return reply(exc.status_code, str(detail), headers or None)

    async def summarizer_error(request: Request, exc: Exception) -> JSONResponse:
        log.warning("summarizer error on %s %s: %s", request.method, request.url.path, exc)
        return reply(503, f"summaries could not be made: {exc}", {"Retry-After": "5"})

    async def connection_error(request: Request, exc: Exception) -> JSONResponse:
        # The database's own driver errors reach here only from code that talks to it beside the log (the
        # search's pool, the job queue): a lost connection is the same outage the log reports.
        from meetmem.store.pg.connections import unavailable_reason

        log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
        return _database_down(public_detail(unavailable_reason(exc.__cause__ or exc), hide))

    from meetmem.summarizers.errors import SummarizerError

    for name in _CONNECTION_ERRORS if postgres else ():
        module, _, cls = name.rpartition(".")
        try:
            app.add_exception_handler(getattr(importlib.import_module(module), cls), connection_error)
        except ImportError:  # the postgres extra is not installed: nothing of it can fail
            pass
    app.add_exception_handler(StoreError, store_error)
    app.add_exception_handler(SummarizerError, summarizer_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)


def _shared_across_processes(database_url: str | None, *, jobs: bool = True) -> dict[str, Any]:
    """On PostgreSQL, what every `meetmem serve` process on the database shares beyond the log: live captions'
    wake-ups and partials (LISTEN/NOTIFY), and the job queue the workers take indexing and digests from
    (unless `jobs` is off); nothing on SQLite, whose one process holds them. (Ask sessions are chosen by the
    log: `sessions.session_store_for`.)"""
    from meetmem.store.pg import is_postgres_url

    if not is_postgres_url(database_url):
        return {}
    from .live import PgLiveFeed

    shared: dict[str, Any] = {"feed": PgLiveFeed(str(database_url))}
    if jobs:
        from .jobs import JobQueue, JobsUnavailable

        try:
            shared["jobs"] = JobQueue(str(database_url))
        except JobsUnavailable as exc:  # the service does the work itself, as with no worker
            log.warning("no job queue (%s): this process indexes and summarises its meetings itself", exc)
    return shared
