"""The cloud commands: `serve` runs the HTTP service, `token` makes and revokes its bearer tokens."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .options import DATABASE, JSON, MODEL, STORAGE, flags
from .output import emit_json

if TYPE_CHECKING:
    from .context import CommandContext


def cmd_serve(args: argparse.Namespace, ctx: CommandContext) -> int:
    try:
        import uvicorn

        from meetmem.cloud.app import create_app
    except ImportError as exc:
        from meetmem.store.index.errors import MissingDependency

        raise MissingDependency(exc.name or "fastapi") from exc
    settings = ctx.settings.model_copy(update={k: v for k, v in {"host": args.host, "port": args.port}.items()
                                                if v is not None})
    from meetmem.cloud.limits import header_timeout_protocol, trusted_networks

    app = create_app(settings)
    proxies = settings.forwarded_allow_ips
    protocol = header_timeout_protocol(settings.header_timeout, per_client=settings.per_client_requests,
                                       trusted=trusted_networks(proxies) if proxies else ())
    # limit_concurrency: past it uvicorn answers 503 rather than take connections until the process runs out
    # of file handles; timeout_keep_alive: an idle kept-alive connection is closed after 5 s. Forwarded
    # headers only from the configured proxies: uvicorn's default believes any loopback peer, so a proxy on
    # the same host would pass a client's made-up X-Forwarded-For through to the per-address limits.
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="info" if args.verbose else "warning",
                access_log=args.verbose, timeout_graceful_shutdown=5, limit_concurrency=settings.max_connections,
                timeout_keep_alive=5, http=protocol or "auto", proxy_headers=bool(proxies),
                forwarded_allow_ips=proxies or None)
    return 0


def cmd_worker(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.cloud.jobs import JobWork, WorkerOptions, run_worker
    from meetmem.store.pg import is_postgres_url

    url = ctx.settings.database_url
    if not is_postgres_url(url):
        sys.stderr.write("meetmem worker: the jobs live in PostgreSQL: give --database postgresql://... "
                         "(or MEETMEM_DATABASE_URL); the SQLite service runs its background work in-process\n")
        return 2
    from meetmem.store.index.embedder_routes import embedder_routes

    settings = ctx.settings
    routes = embedder_routes(settings.embedder, settings.embedder_zh, threads=settings.threads)
    options = WorkerOptions(concurrency=args.concurrency, heartbeat=args.heartbeat, stalled_after=args.stalled_after)
    from meetmem.store.backends import open_log
    from meetmem.store.pg.meeting_search import PgTranscriptSearch
    from meetmem.summarizers.backends import make_digest_parts, shared_minilm
    from meetmem.summarizers.digest import MeetingDigester

    transcript_log = open_log(url, upgrade=False)
    summarizer, ledger = make_digest_parts(settings.summarizer_for_embedder(), llm_url=settings.llm_url,
                                           llm_model=settings.llm_model, llm_api_key=settings.llm_api_key,
                                           llm_timeout=settings.llm_timeout,
                                           llm_system_role=settings.llm_system_role,
                                           ledger=settings.ledger_for_embedder(), embedder=shared_minilm(routes))
    # The digest's topic cuts read the segments' vectors from pgvector (embedding and storing any still missing).
    search = PgTranscriptSearch(transcript_log, routes, max_meetings=settings.worker_meetings)
    digester = MeetingDigester(transcript_log, search, summarizer, extract_ledger=ledger,
                               max_live=settings.worker_meetings)
    from meetmem.cloud.webhooks import WebhookEvents, public_url

    # The worker queues the meeting's webhooks as it stores digests; the API processes send them.
    base_url = public_url(settings.public_url, settings.host, settings.port)
    digester.on_saved.append(WebhookEvents(transcript_log, base_url=base_url))
    work = JobWork(url, routes, digester=lambda tenant, meeting_id: digester.update(meeting_id, tenant=tenant))
    try:
        run_worker(url, work, options)
    finally:
        work.close()
        search.close()
        transcript_log.close()
    return 0


def cmd_token_create(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.cloud.auth import TokenStore, parse_expiry

    expires_at = parse_expiry(args.expires) if args.expires else None
    token = TokenStore(ctx.log).create(args.tenant_name, label=args.label, expires_at=expires_at)
    if args.json:
        emit_json({"tenant": args.tenant_name, "token": token,
                   "expires_at": expires_at.isoformat(timespec="seconds") if expires_at else None})
    else:
        sys.stdout.write(token + "\n")
    return 0


def cmd_token_revoke(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.cloud.auth import TokenStore

    info = TokenStore(ctx.log).revoke(args.token)
    if args.json:
        emit_json(info.public())
    else:
        sys.stdout.write(f"revoked token {info.token_id} of tenant {info.tenant}\n")
    return 0


def cmd_token_list(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.cloud.auth import TokenStore

    tokens = TokenStore(ctx.log).list(tenant=args.tenant_name)
    if args.json:
        emit_json([t.public() for t in tokens])
    else:
        for t in tokens:
            if t.revoked_at:
                state = f"revoked {t.revoked_at}"
            elif t.expires_at:
                state = f"expired {t.expires_at}" if t.expired else f"active, expires {t.expires_at}"
            else:
                state = "active"
            label = f"  {t.label}" if t.label else ""
            sys.stdout.write(f"{t.token_id}  {t.tenant}  created {t.created_at}  {state}{label}\n")
    return 0


def add_cloud_commands(sub: argparse._SubParsersAction) -> None:
    """`serve`, `worker` and `token`. No tenant acts in them: the service takes each request's tenant from its
    token, and `token create|list --tenant` names the tenant a token is for."""
    p = sub.add_parser("serve", parents=flags(*STORAGE, MODEL), help="run the cloud HTTP service",
                       description="Run the cloud service (FastAPI under uvicorn) on the database. Models load "
                       "after the server starts; /healthz answers 200 once they are ready.")
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1; env MEETMEM_HOST)")
    p.add_argument("--port", type=int, default=None, help="port to listen on (default 8000; env MEETMEM_PORT)")
    p.set_defaults(func=cmd_serve)

    # PostgreSQL alone (the receipt key beside --db is the API processes' business, not the worker's).
    p = sub.add_parser("worker", parents=flags(DATABASE, MODEL),
                       help="run background jobs (indexing, embedding, digests) "
                       "from the PostgreSQL job queue",
                       description="Run the jobs that `meetmem serve` processes on PostgreSQL defer: a meeting's "
                       "search rows and embeddings, and its digest. Any number of workers may run, on any machine "
                       "that reaches the database; a job left by a worker that died is retried by another. Stops "
                       "on SIGINT or SIGTERM after the job in hand.")
    p.add_argument("--concurrency", type=int, default=1, help="jobs run at once (default 1)")
    p.add_argument("--heartbeat", type=float, default=5.0, help="seconds between the worker's heartbeats (default 5)")
    p.add_argument("--stalled-after", type=float, default=30.0,
                   help="retry a job whose worker has not beaten for this many seconds (default 30)")
    p.set_defaults(func=cmd_worker)

    token = sub.add_parser("token", help="bearer tokens of the cloud service",
                           description="Make, list and revoke the bearer tokens the service accepts. Only a "
                           "hash is stored: a token is shown once, when it is created.")
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    p = token_sub.add_parser("create", parents=flags(*STORAGE, JSON),
                             help="print a new bearer token for a tenant",
                             description="Print a new bearer token for a tenant on stdout.")
    p.add_argument("--tenant", dest="tenant_name", required=True, metavar="NAME",
                   help="the tenant the token is for: the token gives access to that tenant's meetings")
    p.add_argument("--label", default=None, help="a note to recognise the token by (a device name)")
    p.add_argument("--expires", default=None, metavar="WHEN",
                   help="when the token stops working: a duration (90s, 30m, 12h, 30d, 2w) or an ISO date-time "
                   "with an offset (default: never; revoke it instead)")
    p.set_defaults(func=cmd_token_create)
    p = token_sub.add_parser("revoke", parents=flags(*STORAGE, JSON), help="revoke a token (by the token or its id)",
                             description="Revoke a token at once: its next request gets 401.")
    p.add_argument("token", help="the token, or its id as `token list` shows it")
    p.set_defaults(func=cmd_token_revoke)
    p = token_sub.add_parser("list", parents=flags(*STORAGE, JSON),
                             help="list tokens (ids, tenants, state; never secrets)",
                             description="List the tokens: id, tenant, when created, whether revoked or expired.")
    p.add_argument("--tenant", dest="tenant_name", default=None, metavar="NAME",
                   help="only the tokens for this tenant")
    p.set_defaults(func=cmd_token_list)
