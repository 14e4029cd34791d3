"""Moving a whole log between databases (`meetmem migrate --from sqlite:///... --to postgresql://...`).

Every meeting of every tenant is copied with its rows exactly as stored (ids, arrival times, chain positions,
links, hashes), its closures, head and metadata, and its speaker map (every version as it was: names people
gave are not derived, so they travel with the log); then the tombstones of deleted meetings and each tenant's
retention setting. Each meeting is copied in one transaction of the target and its chain verified there on
arrival: a meeting whose chain does not verify on the target is reported and the run fails. Running it again
skips what arrived already (same head), so an interrupted migration is finished by running it again.
Derived data (indexes, summaries, ledger, audio) is not copied: it is rebuilt from the log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import StoreError
from .speaker_map import read_history, speaker_map_for

log = logging.getLogger(__name__)


@dataclass
class TransferReport:
    meetings: int = 0
    copied: int = 0
    skipped: int = 0
    segments: int = 0
    tombstones: int = 0
    retention: int = 0
    speaker_names: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed

    def public(self) -> dict[str, Any]:
        return {"ok": self.ok, "meetings": self.meetings, "copied": self.copied, "skipped": self.skipped,
                "segments": self.segments, "tombstones": self.tombstones, "retention_settings": self.retention,
                "speaker_names": self.speaker_names,
                "failed": self.failed, "seconds": round(self.seconds, 3)}


def copy_log(source: Any, target: Any, *, on_meeting: Callable[[str, str, int], None] | None = None) -> TransferReport:
    """Copy every meeting, tombstone and retention setting of `source` into `target`, verifying on arrival."""
    started = time.perf_counter()
    report = TransferReport()
    for tenant, meeting_id in source.meetings():
        report.meetings += 1
        dump = source.dump_meeting(meeting_id, tenant=tenant)
        try:
            copied = target.load_meeting(dump)
        except StoreError as exc:
            report.failed.append({"tenant": tenant, "meeting_id": meeting_id, "reason": str(exc)})
            continue
        verdict = target.verify(meeting_id, tenant=tenant)
        if not verdict.ok:
            report.failed.append({"tenant": tenant, "meeting_id": meeting_id,
                                  "reason": f"the chain does not verify on the target: {verdict.reason}"})
            continue
        try:
            names = read_history(source, meeting_id, tenant=tenant)
            report.speaker_names += speaker_map_for(target).load(meeting_id, names, tenant=tenant) if names else 0
        except StoreError as exc:
            report.failed.append({"tenant": tenant, "meeting_id": meeting_id, "reason": f"speaker names: {exc}"})
            continue
        if copied:
            report.copied += 1
            report.segments += len(dump.segments)
        else:
            report.skipped += 1
        if on_meeting is not None:
            on_meeting(tenant, meeting_id, len(dump.segments))
    for tombstone in source.tombstones():
        try:
            report.tombstones += int(target.load_tombstone(tombstone))
        except StoreError as exc:
            report.failed.append({"tenant": tombstone.tenant, "meeting_id": tombstone.meeting_id,
                                  "reason": f"tombstone: {exc}"})
    for tenant, days in source.retention_settings().items():
        target.set_retention(tenant, days)
        report.retention += 1
    report.seconds = time.perf_counter() - started
    return report
