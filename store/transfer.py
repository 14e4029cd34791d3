"""Moving a whole log between databases (`meetmem migrate --from sqlite:///... --to postgresql://...`).

Every meeting of every tenant is copied with its rows exactly as stored (ids, arrival times, chain positions,
links, hashes), its closures, head and metadata, its speaker map (every version as it was: names people gave
are not derived, so they travel with the log) and its kept audio (every chunk with its bytes, place and time
of arrival: a recording cannot be rebuilt either); then the tombstones of deleted meetings, each tenant's
retention setting and the audio policies. Each meeting is copied in one transaction of the target and its
chain verified there on arrival: a meeting whose chain does not verify on the target is reported and the run
fails. Running it again skips what arrived already (same head, same chunks), so an interrupted migration is
finished by running it again. Derived data (indexes, summaries, ledger, audio made for the player) is not
copied: it is rebuilt from the log and the chunks. A chunk whose bytes do not match the sha256 the source
recorded for them (a damaged file) is not copied, and the meeting is reported.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .backends import audio_store_for
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
    audio_chunks: int = 0
    audio_bytes: int = 0
    audio_policies: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed

    def public(self) -> dict[str, Any]:
        return {"ok": self.ok, "meetings": self.meetings, "copied": self.copied, "skipped": self.skipped,
                "segments": self.segments, "tombstones": self.tombstones, "retention_settings": self.retention,
                "speaker_names": self.speaker_names, "audio_chunks": self.audio_chunks,
                "audio_bytes": self.audio_bytes, "audio_policies": self.audio_policies,
                "failed": self.failed, "seconds": round(self.seconds, 3)}


def copy_log(source: Any, target: Any, *, on_meeting: Callable[[str, str, int], None] | None = None) -> TransferReport:
    """Copy every meeting, tombstone and retention setting of `source` into `target`, verifying on arrival."""
    started = time.perf_counter()
    report = TransferReport()
    source_audio, target_audio = audio_store_for(source), audio_store_for(target)
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
        try:
            _copy_audio(source_audio, target_audio, tenant, meeting_id, report)
        except StoreError as exc:  # a missing file, other bytes under a chunk there (SequenceError), a refusal
            report.failed.append({"tenant": tenant, "meeting_id": meeting_id, "reason": f"audio: {exc}"})
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
    for tenant, meeting_id, keep, set_at in source_audio.policies():
        target_audio.set_policy(keep, tenant=tenant, meeting_id=meeting_id, set_at=set_at)
        report.audio_policies += 1
    report.seconds = time.perf_counter() - started
    return report


def _copy_audio(source: Any, target: Any, tenant: str, meeting_id: str, report: TransferReport) -> None:
    """Each of the meeting's chunks, one at a time (a chunk's bytes are in memory, never the whole meeting's);
    one already there with the same bytes is skipped."""
    for chunk in source.chunks(meeting_id, tenant=tenant):
        held = target.get(meeting_id, chunk.device_id, chunk.chunk_seq, tenant=tenant)
        if held is not None and held.sha256 == chunk.sha256:
            continue
        data = source.read_bytes(chunk)
        if hashlib.sha256(data).hexdigest() != chunk.sha256:
            raise StoreError(f"chunk {chunk.chunk_seq} of device {chunk.device_id!r}: its bytes do not match the "
                             "sha256 recorded for them; not copied")
        _, new = target.add(meeting_id, chunk.device_id, chunk.chunk_seq, data, start=chunk.start, tenant=tenant,
                            added_at=chunk.added_at)
        if new:
            report.audio_chunks += 1
            report.audio_bytes += len(data)
