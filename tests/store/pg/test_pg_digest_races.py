"""Two processes making the same meeting's digest at once (two API processes, or one and a worker): both
saves succeed, in turn, and the stored digest is whole and the newest."""

from __future__ import annotations

import dataclasses
import threading

import pytest

pytest.importorskip("psycopg")

from meetmem.store.pg.derived import PgDerivedStore  # noqa: E402
from meetmem.store.pg.log import PgTranscriptLog  # noqa: E402
from meetmem.store.records import SegmentInput  # noqa: E402
from meetmem.summarizers.backends import make_digest_parts  # noqa: E402
from meetmem.summarizers.digest import MeetingDigester  # noqa: E402

TEXTS = ["Let's decide the casing.", "We decided the casing will be aluminium.",
         "Bo will send the revised quote by Friday.", "The tooling quote was 4,250 euros.",
         "What about the hinge supplier?", "Dana owns the press release."]


def digester(log: PgTranscriptLog) -> MeetingDigester:
    summarizer, ledger = make_digest_parts("extractive")
    return MeetingDigester(log, None, summarizer, extract_ledger=ledger)


def test_concurrent_saves_of_one_meetings_digest_take_turns(pg_url: str) -> None:
    logs = [PgTranscriptLog(pg_url) for _ in range(2)]
    try:
        logs[0].append("m", "d", [SegmentInput(seq=i, start=5.0 * i, end=5.0 * i + 4, text=t, speaker="Ana")
                                  for i, t in enumerate(TEXTS)], tenant="acme")
        digests = [digester(log).update("m", tenant="acme") for log in logs]  # each saves once here
        stores = [PgDerivedStore(log) for log in logs]
        failures: list[BaseException] = []
        start = threading.Barrier(2)

        def save(n: int) -> None:
            try:
                start.wait()
                for _ in range(30):
                    stores[n].save("acme", digests[n])
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=save, args=(n,)) for n in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert failures == []
        stored = stores[0].load("acme", "m")
        assert stored is not None and stored.through_pos == len(TEXTS) - 1
        assert [i.text for i in stored.ledger] == [i.text for i in digests[0].ledger]
        # An older digest (made from less of the log) does not replace a newer one.
        stores[1].save("acme", dataclasses.replace(digests[1], through_pos=2))
        assert stores[0].through_pos("acme", "m")[0] == len(TEXTS) - 1
    finally:
        for log in logs:
            log.close()
