"""Property test: random batches, split into random appends and replays, keep the log's invariants."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

WORDS = ["ship", "March", "3rd", "$4,250", "TS-204", "not", "我们", "不", "budget", "Dana", "10:30", "aluminium"]


@st.composite
def device_streams(draw: st.DrawFn) -> dict[str, list[list[SegmentInput]]]:
    """Per device: its segments (increasing seq with gaps, increasing start), cut into consecutive batches."""
    streams: dict[str, list[list[SegmentInput]]] = {}
    for device in draw(st.lists(st.sampled_from(["glasses-1", "glasses-2", "phone"]), min_size=1, max_size=3,
                                unique=True)):
        n = draw(st.integers(min_value=1, max_value=12))
        gaps = draw(st.lists(st.integers(min_value=1, max_value=3), min_size=n, max_size=n))
        durations = draw(st.lists(st.floats(min_value=0.0, max_value=5.0, allow_nan=False), min_size=n, max_size=n))
        texts = draw(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
                              min_size=n, max_size=n))
        seq, start, segments = draw(st.integers(min_value=0, max_value=3)), 0.0, []
        for gap, duration, text in zip(gaps, durations, texts, strict=True):
            segments.append(SegmentInput(seq=seq, start=start, end=start + duration, text=text, speaker=device))
            seq += gap
            start += duration + gap * 0.25
        cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=max(1, n - 1)), max_size=n)))
        bounds = [0, *[c for c in cuts if 0 < c < n], n]
        streams[device] = [segments[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    return streams


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(streams=device_streams(), data=st.data())
def test_random_appends_and_replays_keep_the_invariants(streams, data) -> None:
    with tempfile.TemporaryDirectory(prefix="meetmem-prop-") as tmp:
        path = Path(tmp) / "prop.db"
        _check_invariants(lambda: TranscriptLog(path), streams, data)


@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(streams=device_streams(), data=st.data())
def test_random_appends_and_replays_keep_the_invariants_on_postgres(pg_cluster, streams, data) -> None:
    """The same on PostgreSQL, a fresh database per example (`pg_cluster` is the run's one server)."""
    from meetmem.store.pg.log import PgTranscriptLog

    url = pg_cluster.fresh_database("prop")
    try:
        _check_invariants(lambda: PgTranscriptLog(url), streams, data)
    finally:
        pg_cluster.drop_database(url)


def _check_invariants(open_log, streams, data) -> None:
    log = open_log()
    try:
        pending = {device: list(batches) for device, batches in streams.items()}
        sent: dict[str, list[list[SegmentInput]]] = {device: [] for device in streams}
        expected_ids: set[tuple[str, int]] = set()
        while any(pending.values()):
            device = data.draw(st.sampled_from(sorted(d for d, b in pending.items() if b)))
            action = data.draw(st.sampled_from(["append", "replay", "replay+append", "reopen"]))
            before = log.count()
            if action == "reopen":
                log.close()
                log = open_log()
                assert log.count() == before
                continue
            if action == "replay" and sent[device]:
                old = data.draw(st.sampled_from(sent[device]))
                result = log.append("meeting", device, data.draw(st.permutations(old)))
                assert (result.new, result.duplicates) == (0, len(old))
                assert log.count() == before
                continue
            batch = pending[device].pop(0)
            replayed = data.draw(st.sampled_from(sent[device])) if action == "replay+append" and sent[device] \
                else []
            result = log.append("meeting", device, [*replayed, *batch])
            assert result.new == len(batch)
            assert result.duplicates == len(replayed)
            assert log.count() == before + len(batch)
            sent[device].append(batch)
            expected_ids.update((device, s.seq) for s in batch)

        rows = list(log.chain("meeting"))
        assert {(r.device_id, r.seq) for r in rows} == expected_ids
        assert len(rows) == len(expected_ids)
        for device in streams:
            seqs = [r.seq for r in rows if r.device_id == device]
            starts = [r.start for r in rows if r.device_id == device]
            assert all(a < b for a, b in zip(seqs, seqs[1:], strict=False)), seqs
            assert all(a <= b for a, b in zip(starts, starts[1:], strict=False)), starts
        listed = log.segments("meeting")
        assert [(s.start, s.device_id, s.seq) for s in listed] == sorted((s.start, s.device_id, s.seq)
                                                                          for s in listed)
        report = log.verify("meeting")
        assert report.ok, report.reason
        assert report.checked == len(expected_ids)
    finally:
        log.close()
