"""Two processes making the same meeting's digest at once (two API processes, one and a worker, two CLI runs
on one file): both saves succeed, in turn, and the stored digest is whole and the newest; a digest made from
less of the log never replaces a newer one. On both backends: the store is written once (issue 33 decided
the drift between the two copies it had: the older digest is dropped on SQLite too)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from meetmem.store.derived import DerivedStore
from meetmem.store.records import SegmentInput
from meetmem.summarizers.backends import make_digest_parts
from meetmem.summarizers.digest import MeetingDigester

TEXTS = ["Let's decide the casing.", "We decided the casing will be aluminium.",
         "Bo will send the revised quote by Friday.", "The tooling quote was 4,250 euros.",
         "What about the hinge supplier?", "Dana owns the press release."]


def digester(log: Any) -> MeetingDigester:
    summarizer, ledger = make_digest_parts("extractive")
    return MeetingDigester(log, None, summarizer, extract_ledger=ledger)


def test_concurrent_saves_of_one_meetings_digest_take_turns(open_log: Callable[..., Any]) -> None:
    logs = [open_log() for _ in range(2)]
    logs[0].append("m", "d", [SegmentInput(seq=i, start=5.0 * i, end=5.0 * i + 4, text=t, speaker="Ana")
                              for i, t in enumerate(TEXTS)], tenant="acme")
    digests = [digester(log).update("m", tenant="acme") for log in logs]  # each saves once here
    stores = [DerivedStore(log) for log in logs]
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

    # And a later, longer digest still replaces the stored one.
    logs[0].append("m", "d", [SegmentInput(seq=len(TEXTS), start=60.0, end=64.0, text="One more thing.",
                                           speaker="Ana")], tenant="acme")
    longer = digester(logs[0]).update("m", tenant="acme")
    assert longer.through_pos == len(TEXTS) and stores[1].through_pos("acme", "m")[0] == len(TEXTS)
