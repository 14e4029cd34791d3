"""`meetmem webhook`: a tenant's endpoints that hear of its meetings, and what was sent to them.

`meetmem serve` sends the deliveries (cloud/webhooks.py); these commands register endpoints and show the
queue on the same database, for the CLI's tenant (`--tenant`, default `local`).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .options import JSON, STORAGE, TENANT, flags
from .output import emit_json

if TYPE_CHECKING:
    from .context import CommandContext


def _store(ctx: CommandContext):  # noqa: ANN202 (the store's type is imported lazily)
    from meetmem.store.webhooks import WebhookStore

    return WebhookStore(ctx.log)


def cmd_add(args: argparse.Namespace, ctx: CommandContext) -> int:
    endpoint = _store(ctx).add(ctx.tenant, args.url, args.events, secret=args.secret, description=args.description)
    if args.json:
        emit_json(endpoint.public(with_secret=True))
    else:
        sys.stdout.write(f"{endpoint.webhook_id}  {endpoint.url}  {','.join(endpoint.events)}\n"
                         f"signing secret (shown once; verify deliveries with it): {endpoint.secret}\n")
    return 0


def cmd_list(args: argparse.Namespace, ctx: CommandContext) -> int:
    endpoints = _store(ctx).list(ctx.tenant)
    if args.json:
        emit_json([e.public() for e in endpoints])
    else:
        for e in endpoints:
            sys.stdout.write(f"{e.webhook_id}  {e.url}  {','.join(e.events)}  since {e.created_at}"
                             + (f"  ({e.description})" if e.description else "") + "\n")
        if not endpoints:
            sys.stdout.write("no webhooks (meetmem webhook add URL --events meeting.closed)\n")
    return 0


def cmd_remove(args: argparse.Namespace, ctx: CommandContext) -> int:
    endpoint = _store(ctx).remove(ctx.tenant, args.webhook_id)
    if args.json:
        emit_json(endpoint.public())
    else:
        sys.stdout.write(f"removed {endpoint.webhook_id} ({endpoint.url})\n")
    return 0


def cmd_deliveries(args: argparse.Namespace, ctx: CommandContext) -> int:
    store = _store(ctx)
    if args.retry:
        store.retry_now(ctx.tenant, args.retry)
    deliveries = store.deliveries(ctx.tenant, webhook_id=args.webhook, limit=args.limit)
    if args.json:
        emit_json([d.public() for d in deliveries])
        return 0
    for d in deliveries:
        outcome = {"delivered": f"delivered {d.delivered_at}", "failed": "failed, given up",
                   "pending": f"pending, next try {d.next_attempt_at}"}.get(d.status, d.status)
        last = f"  last: {d.last_status or d.last_error}" if d.attempts else ""
        sys.stdout.write(f"{d.delivery_id}  {d.event}  {d.meeting_id}  {outcome}  attempts {d.attempts}{last}\n")
    if not deliveries:
        sys.stdout.write("no deliveries yet\n")
    return 0


def add_webhook_commands(sub: argparse._SubParsersAction) -> None:
    webhook = sub.add_parser("webhook", help="endpoints told when a meeting closes or its ledger changes",
                             description="Register the URLs that `meetmem serve` posts a meeting's events to "
                             "(signed per Standard Webhooks), and see what was sent.")
    actions = webhook.add_subparsers(dest="webhook_command", metavar="ACTION", required=True)
    p = actions.add_parser("add", parents=flags(*STORAGE, TENANT, JSON), help="register an endpoint",
                           description="Register an endpoint for the tenant's meetings; prints its signing secret "
                           "once. Each delivery is a JSON POST: the meeting's metadata, its summary, its ledger and "
                           "a link to its page.")
    p.add_argument("url", help="where to POST: an http(s) URL")
    p.add_argument("--events", required=True, metavar="EVENTS",
                   help="comma-separated: meeting.closed, ledger.updated")
    p.add_argument("--secret", default=None,
                   help="the signing secret, whsec_ + base64 of 24 to 64 bytes (default: a new random one)")
    p.add_argument("--description", default=None, help="a note to recognise the endpoint by")
    p.set_defaults(func=cmd_add)
    p = actions.add_parser("list", parents=flags(*STORAGE, TENANT, JSON), help="the tenant's endpoints",
                           description="List the tenant's endpoints (not their secrets).")
    p.set_defaults(func=cmd_list)
    p = actions.add_parser("remove", parents=flags(*STORAGE, TENANT, JSON), help="remove an endpoint",
                           description="Remove an endpoint; what it still had to be sent is dropped.")
    p.add_argument("webhook_id", metavar="WEBHOOK_ID", help="the endpoint's id (wh_...)")
    p.set_defaults(func=cmd_remove)
    p = actions.add_parser("deliveries", parents=flags(*STORAGE, TENANT, JSON),
                           help="what was sent, is waiting or was given up, newest first",
                           description="The tenant's latest deliveries: each one's id (its webhook-id header), "
                           "event, meeting, status, attempts and the endpoint's last answer.")
    p.add_argument("--webhook", default=None, metavar="WEBHOOK_ID", help="only this endpoint's")
    p.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    p.add_argument("--retry", default=None, metavar="DELIVERY_ID",
                   help="send this pending or failed delivery again on the service's next look")
    p.set_defaults(func=cmd_deliveries)
