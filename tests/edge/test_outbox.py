"""The outbox: durable before it returns, seqs that only grow, resumable progress, a bound that warns first
and never drops a segment."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from meetmem.edge.errors import OutboxFull
from meetmem.edge.outbox import Outbox
from meetmem.edge.sync import Backoff


def _segment(i: int, text: str | None = None) -> dict:
    return {"start": i * 2.0, "end": i * 2.0 + 1.5, "text": text or f"utterance {i} about 4,500 dollars"}


def test_put_pending_ack(tmp_path: Path) -> None:
    with Outbox(tmp_path / "o.db") as outbox:
        stored = [outbox.put("m1", _segment(i)) for i in range(5)]
        assert [s.seq for s in stored] == [0, 1, 2, 3, 4]
        assert [s.seq for s in outbox.pending(3)] == [0, 1, 2]
        outbox.ack("m1", [0, 1, 2])
        assert [s.seq for s in outbox.pending()] == [3, 4]
        assert outbox.stats().pending == 2
        assert outbox.pending()[0].payload() == {"seq": 3, "start": 6.0, "end": 7.5, "text": _segment(3)["text"]}


def test_device_id_and_seqs_survive_a_reopen(tmp_path: Path) -> None:
    with Outbox(tmp_path / "o.db") as outbox:
        device = outbox.device_id
        outbox.put("m1", _segment(0))
        outbox.ack("m1", [0])
    with Outbox(tmp_path / "o.db", device_id="ignored-for-an-existing-outbox") as outbox:
        assert outbox.device_id == device and device.startswith("edge-")
        assert outbox.put("m2", _segment(1)).seq == 1  # never reused, whatever the meeting


def test_progress_is_recorded_with_the_segment(tmp_path: Path) -> None:
    with Outbox(tmp_path / "o.db") as outbox:
        assert outbox.progress("m1", "file:abc") == 0.0
        outbox.put("m1", _segment(0), source="file:abc", position=3.5)
        outbox.record_progress("m1", "file:abc", 2.0)  # never moves backwards
        assert outbox.progress("m1", "file:abc") == 3.5
        assert outbox.progress("m2", "file:abc") == 0.0


def test_the_bound_warns_first_then_refuses_without_dropping(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with Outbox(tmp_path / "o.db", max_bytes=2000, warn_fraction=0.5) as outbox:
        caplog.set_level(logging.WARNING)
        stored = 0
        with pytest.raises(OutboxFull, match="Nothing was dropped"):
            while True:
                outbox.put("m1", _segment(stored, "x" * 100))
                stored += 1
        assert "full" in caplog.text and stored > 0
        assert outbox.stats().pending == stored  # everything accepted is still there
        outbox.ack("m1", [s.seq for s in outbox.pending(stored)])
        outbox.put("m1", _segment(99))  # room again once the cloud took them


def test_a_segment_put_survives_kill_9(tmp_path: Path) -> None:
    """A writer killed with SIGKILL mid-stream: every segment it reported stored is in the outbox."""
    path = tmp_path / "o.db"
    writer = textwrap.dedent(f"""
        import sys
        from meetmem.edge.outbox import Outbox
        outbox = Outbox({str(path)!r})
        i = 0
        while True:
            outbox.put("m1", {{"start": i * 1.0, "end": i * 1.0 + 0.5, "text": "line %d" % i}})
            sys.stdout.write("%d\\n" % i)
            sys.stdout.flush()
            i += 1
    """)
    proc = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert proc.stdout is not None
    reported = -1
    for line in proc.stdout:
        reported = int(line)
        if reported >= 150:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    with Outbox(path) as outbox:
        seqs = [s.seq for s in outbox.pending(10_000)]
    assert seqs[: reported + 1] == list(range(reported + 1))
    assert seqs == list(range(len(seqs)))  # no gap, no duplicate


def test_backoff_grows_exponentially_with_full_jitter() -> None:
    backoff = Backoff(0.5, 8.0, rand=lambda: 1.0)
    assert [backoff.next_delay() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    backoff.reset()
    assert backoff.next_delay() == 0.5
    jittered = Backoff(0.5, 8.0, rand=lambda: 0.25)
    assert [jittered.next_delay() for _ in range(3)] == [0.125, 0.25, 0.5]


def test_a_corrupted_outbox_is_named_and_kept_aside_not_discarded(tmp_path: Path) -> None:
    from meetmem.edge.errors import OutboxCorrupt

    path = tmp_path / "outbox.db"
    with Outbox(path) as outbox:
        for i in range(5):
            outbox.put("m", {"start": float(i), "end": i + 0.5, "text": f"not yet sent {i}"})
    damaged = bytearray(path.read_bytes())
    damaged[:100] = b"\x00garbage" * 12 + b"\x00" * 4  # the header gone: SQLite no longer knows the file
    path.write_bytes(bytes(damaged))
    with pytest.raises(OutboxCorrupt) as err:
        Outbox(path)
    message = str(err.value)
    (aside,) = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name and not p.name.endswith(("-wal", "-shm"))]
    assert str(path) in message and str(aside) in message and "nothing was deleted" in message
    assert aside.read_bytes() == bytes(damaged)  # kept exactly as it was, for recovery
    assert not path.exists()
    with Outbox(path) as fresh:  # the next start begins a new outbox
        assert fresh.stats().pending == 0
