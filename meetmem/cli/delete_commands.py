"""Deleting meetings and retention: delete, tombstones, retention set/show/apply.

Deletion is the one way data leaves the log (store/log.py `delete_meeting`): the meeting's rows go in one
transaction, its audio files after, and a tombstone signed with the server's receipt key stays forever.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from meetmem.store.errors import InvalidSegment, StoreError

from .options import JSON, STORAGE, TENANT, add_meeting_id, flags
from .output import emit_json

if TYPE_CHECKING:
    from .context import CommandContext


def _key(ctx: CommandContext, *, create: bool) -> Any:
    from meetmem.store.receipts import ReceiptKey

    return ReceiptKey.load(ctx.settings.receipt_key_path(), create=create)


def delete_with_audio(ctx: CommandContext, meeting_id: str, tenant: str, reason: str, key: Any) -> Any:
    """Delete the meeting's rows (one transaction), then its audio files; returns the tombstone."""
    from meetmem.store.audio import AudioStore

    tombstone, shas = ctx.log.delete_meeting(meeting_id, tenant=tenant, reason=reason, key=key)
    if shas:  # audio is kept beside the SQLite file (none on PostgreSQL yet)
        AudioStore(ctx.log).remove_files(meeting_id, shas, tenant=tenant)
    return tombstone


def _confirm(question: str) -> bool:
    sys.stderr.write(question)
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in {"y", "yes"}


def cmd_delete(args: argparse.Namespace, ctx: CommandContext) -> int:
    ctx.log.require_meeting(args.meeting_id, tenant=ctx.tenant)
    if not args.yes:
        if not sys.stdin.isatty():
            raise InvalidSegment("deleting a meeting cannot be undone: confirm on a terminal, or pass --yes")
        segments, _ = ctx.log.meeting_stats(args.meeting_id, tenant=ctx.tenant)
        title = ctx.log.meta(args.meeting_id, tenant=ctx.tenant).title
        named = f"{args.meeting_id!r}" + (f" ({title})" if title else "")
        if not _confirm(f"Delete meeting {named} of tenant {ctx.tenant!r}: {segments} segments, its summaries, "
                        "ledger and audio? This cannot be undone. [y/N] "):
            sys.stderr.write("meetmem: nothing deleted\n")
            return 1
    tombstone = delete_with_audio(ctx, args.meeting_id, ctx.tenant, args.reason, _key(ctx, create=True))
    if args.json:
        emit_json(tombstone.public())
    else:
        print(f"deleted meeting {args.meeting_id} ({tombstone.segments} segments) at {tombstone.deleted_at}; "
              "its signed tombstone is kept (meetmem tombstones)")
    return 0


def cmd_tombstones(args: argparse.Namespace, ctx: CommandContext) -> int:
    tombstones = ctx.log.tombstones(tenant=None if args.all_tenants else ctx.tenant)
    if args.json:
        emit_json([t.public() for t in tombstones])
        return 0
    if not tombstones:
        print("no deleted meetings")
    for t in tombstones:
        who = f"{t.tenant}/" if args.all_tenants else ""
        print(f"{who}{t.meeting_id}\tdeleted {t.deleted_at}\t{t.segments} segments\t{t.reason}")
    return 0


def cmd_retention_set(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.retention import RetentionPolicy

    if args.tenant_name is None:
        raise InvalidSegment("name the tenant: meetmem retention set --tenant T --days N")
    if (args.days is None) == (not args.clear):
        raise InvalidSegment("give --days N (0: keep forever) or --clear, not both")
    policy = RetentionPolicy(ctx.log, default_days=ctx.settings.retention_days)
    policy.set(args.tenant_name, None if args.clear else args.days)
    days, source = policy.days_for(args.tenant_name)
    if args.json:
        emit_json({"tenant": args.tenant_name, "days": days, "source": source})
    else:
        kept = f"meetings older than {days} days are deleted" if days else "meetings are kept forever"
        print(f"tenant {args.tenant_name}: {kept} ({'its own setting' if source == 'tenant' else 'the default'})")
    return 0


def cmd_retention_show(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.retention import RetentionPolicy

    policy = RetentionPolicy(ctx.log, default_days=ctx.settings.retention_days)
    own = policy.settings()
    if args.json:
        emit_json({"default_days": ctx.settings.retention_days, "tenants": own})
        return 0
    default = ctx.settings.retention_days
    print(f"default (MEETMEM_RETENTION_DAYS): {f'{default} days' if default else 'keep forever'}")
    for tenant, days in own.items():
        print(f"tenant {tenant}: {f'{days} days' if days else 'keep forever'}")
    return 0


def cmd_retention_apply(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.store.retention import RetentionPolicy

    if args.days is not None and args.days < 1:
        raise InvalidSegment(f"--days must be 1 or more, got {args.days}")
    policy = RetentionPolicy(ctx.log, default_days=ctx.settings.retention_days)
    expired = policy.expired(tenant=args.tenant_name, days=args.days)
    deleted: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    key = None if args.dry_run or not expired else _key(ctx, create=True)
    for item in expired:
        if args.dry_run:
            continue
        reason = f"retention: older than {item.days} days (by {item.basis} {item.since})"
        try:
            deleted.append(delete_with_audio(ctx, item.meeting_id, item.tenant, reason, key).public())
        except StoreError as exc:
            failed.append({**item.public(), "error": str(exc)})
    if args.json:
        emit_json({"dry_run": args.dry_run, "expired": [e.public() for e in expired], "deleted": deleted,
                   "failed": failed})
    else:
        verb = "would delete" if args.dry_run else "deleted"
        for item in expired:
            print(f"{verb} {item.tenant}/{item.meeting_id} ({item.basis} {item.since}, older than {item.days} days)")
        print(f"{verb} {len(expired) if args.dry_run else len(deleted)} meetings")
        for item in failed:
            sys.stderr.write(f"meetmem: {item['tenant']}/{item['meeting_id']} not deleted: {item['error']}\n")
    return 1 if failed else 0


def add_delete_commands(sub: argparse._SubParsersAction) -> None:
    """`delete`, `tombstones` and `retention`; `retention set|apply --tenant` names the tenant whose retention
    it sets or applies (no tenant acts there)."""
    p = sub.add_parser("delete", parents=flags(*STORAGE, TENANT, JSON),
                       help="delete a meeting: segments, derived data and audio",
                       description="Delete a meeting: its segments, summaries, ledger, vectors and audio, in one "
                       "transaction (the audio files right after). A tombstone signed with the server's receipt "
                       "key stays forever (meetmem tombstones), and the meeting id cannot be used again. Asks for "
                       "confirmation on a terminal; elsewhere --yes is required.")
    add_meeting_id(p)
    p.add_argument("--yes", action="store_true", help="delete without asking")
    p.add_argument("--reason", default="deleted by the tenant", help="why, kept in the tombstone")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("tombstones", parents=flags(*STORAGE, TENANT, JSON),
                       help="list deleted meetings (their signed tombstones)",
                       description="List the tenant's deleted meetings, oldest deletion first.")
    p.add_argument("--all-tenants", action="store_true", help="every tenant's tombstones")
    p.set_defaults(func=cmd_tombstones)

    retention = sub.add_parser("retention", help="delete meetings older than N days, per tenant",
                               description="Retention: meetings older than N days (counted from when the server first "
                               "stored a row of them, never from a time a device gave) are deleted by the server's "
                               "reaper and by `retention apply`; a meeting still receiving segments (open, or one "
                               "stored within the last day) is kept. "
                               "N is the tenant's own setting, else MEETMEM_RETENTION_DAYS (none: keep forever).")
    rsub = retention.add_subparsers(dest="retention_command", metavar="ACTION", required=True)
    p = rsub.add_parser("set", parents=flags(*STORAGE, JSON), help="set a tenant's retention",
                        description="Set a tenant's retention in days (0: keep forever, whatever the default), "
                        "or --clear it to follow MEETMEM_RETENTION_DAYS.")
    p.add_argument("--tenant", dest="tenant_name", default=None, metavar="TENANT",
                   help="the tenant whose retention to set (required)")
    p.add_argument("--days", type=int, default=None, metavar="N", help="days to keep its meetings (0: forever)")
    p.add_argument("--clear", action="store_true", help="remove the tenant's own setting")
    p.set_defaults(func=cmd_retention_set)
    p = rsub.add_parser("show", parents=flags(*STORAGE, JSON), help="the default and each tenant's retention")
    p.set_defaults(func=cmd_retention_show)
    p = rsub.add_parser("apply", parents=flags(*STORAGE, JSON), help="delete the meetings past retention now",
                        description="Delete every meeting past its tenant's retention (every tenant, or --tenant "
                        "T), each leaving a signed tombstone. Exit 1 if any could not be deleted.")
    p.add_argument("--tenant", dest="tenant_name", default=None, metavar="TENANT",
                   help="only this tenant's meetings (default: every tenant's)")
    p.add_argument("--days", type=int, default=None, metavar="N",
                   help="delete meetings older than N days, whatever the tenants' settings")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    p.set_defaults(func=cmd_retention_apply)
