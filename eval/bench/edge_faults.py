"""The fault campaign's edge steps (`meetmem bench faults`): the edge's outbox and uploader while the cloud is
down, a damaged outbox, and `meetmem edge run` SIGKILLed mid-meeting on real speech and restarted."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from .fault_checks import create_token, note, segment, tally, wait_up
from .serve_process import Server, free_port


def cloud_down_mid_meeting(workdir: Path, *, segments: int, down_s: float, quiet: bool) -> dict[str, Any]:
    from meetmem.edge.outbox import Outbox
    from meetmem.edge.sync import CloudClient, SyncOptions, Uploader

    db = workdir / "down.db"
    token = create_token(db, "faults")
    server = Server(db, free_port(), "none", workdir / "down.log")
    server.start()
    wait_up(server)
    t0 = time.monotonic()
    acknowledged: dict[tuple[str, str], set[int]] = {}
    with Outbox(workdir / "down-outbox.db", device_id="edge-down") as outbox:
        client = CloudClient(server.url, token, timeout=10)
        uploader = Uploader(outbox, client, SyncOptions(batch=20, backoff_base=0.05, backoff_max=1.0, timeout=10))
        uploader.start()
        stopped_at = segments // 3
        restarted_at = 2 * segments // 3
        for i in range(segments):
            if i == stopped_at:
                server.stop()
                note(quiet, f"cloud down after {i} segments, for {down_s:g} s of the meeting")
                down_until = time.monotonic() + down_s
            if i == restarted_at:
                time.sleep(max(0.0, down_until - time.monotonic()))
                server.start()
                wait_up(server)
                note(quiet, "cloud back")
            outbox.put("down-mid-meeting", {k: v for k, v in segment(0, i).items() if k != "seq"})
            uploader.notify()
            time.sleep(0.01)  # segments arrive over time, as speech does
        drained = uploader.drain(timeout=300)
        uploader.stop()
        client.close()
        pending = outbox.stats().pending
        # What left the outbox was acknowledged: every seq below the outbox's next one, less what is pending.
        acknowledged[("down-mid-meeting", "edge-down")] = set(range(segments)) - {s.seq for s in
                                                                                 outbox.pending(segments)}
    server.stop()
    result = tally(db, "faults", acknowledged)
    return {"step": "cloud_down_mid_meeting", "segments": segments, "down_s": down_s, "drained": drained,
            "still_in_outbox": pending, "wall_s": round(time.monotonic() - t0, 1), **result}


def corrupted_outbox(workdir: Path, *, cli: list[str], quiet: bool) -> dict[str, Any]:
    """`meetmem edge run` on an outbox whose file was damaged while it held unsent segments."""
    import wave

    from meetmem.edge.outbox import Outbox

    path = workdir / "edge-outbox.db"
    unsent = 25
    with Outbox(path, device_id="edge-corrupt") as outbox:
        for i in range(unsent):
            outbox.put("corrupt", {k: v for k, v in segment(0, i).items() if k != "seq"})
    damaged = bytearray(path.read_bytes())
    damaged[:100] = b"\x00" * 100  # the header: SQLite no longer recognises the file
    path.write_bytes(bytes(damaged))
    audio = workdir / "silence.wav"
    with wave.open(str(audio), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00" * 16000)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([*cli, "edge", "run", "corrupt", "--input", str(audio), "--cloud",
                          "http://127.0.0.1:9", "--token", "unused", "--outbox", str(path), "--model", "tiny.en",
                          "--no-cloud-glossary", "--quiet"], env=env, capture_output=True, text=True, timeout=300)
    asides = [p for p in workdir.iterdir() if p.name.startswith(path.name + ".corrupt-") and
              not p.name.endswith(("-wal", "-shm"))]
    kept = bool(asides) and asides[0].read_bytes() == bytes(damaged)
    note(quiet, f"corrupted outbox: exit {run.returncode}, kept aside: {kept}")
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    return {"step": "corrupted_outbox", "unsent_segments": unsent, "exit_status": run.returncode,
            "error": lines[-1][:400] if lines else "", "error_lines": len(lines), "kept_aside": kept,
            "discarded": 0 if kept else unsent}


def _outbox_acknowledged(path: Path) -> tuple[str, set[int], int]:
    """The outbox's device id, the seqs the cloud acknowledged (every seq it gave out, less those still
    pending or rejected: an acknowledged row leaves the outbox) and how many are pending."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        held = {seq for (seq,) in conn.execute("SELECT seq FROM outbox UNION SELECT seq FROM rejected")}
        pending = conn.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
    finally:
        conn.close()
    return meta["device_id"], set(range(int(meta.get("next_seq", 0)))) - held, pending


def _captured_until(path: Path) -> float:
    """Seconds of the meeting the outbox holds as captured (its resume point; 0 before the first utterance)."""
    import sqlite3

    if not path.exists():
        return 0.0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return round(float(conn.execute("SELECT COALESCE(MAX(position), 0) FROM progress").fetchone()[0]), 1)
    finally:
        conn.close()


def _spoken(db: Path, tenant: str, meeting: str) -> list[tuple[float, float, str]]:
    from meetmem.store.log import TranscriptLog

    with TranscriptLog(db) as transcript_log:
        return sorted((row.start, row.end, row.text) for row in transcript_log.chain(meeting, tenant=tenant))


def edge_killed_mid_meeting(workdir: Path, *, kills: int, seconds: float | None, rng: random.Random,
                            cli: list[str], quiet: bool) -> dict[str, Any]:
    """`meetmem edge run` on real speech (the packaged demo meeting, tiny.en) SIGKILLed at random points of
    the meeting and started again on the same outbox, then once more to the end. Against a run never killed:
    speech heard twice (segments overlapping in time), speech missing (an utterance of the uninterrupted run
    that no segment covers), and what the outbox says the cloud acknowledged against what the cloud holds."""
    from importlib import resources

    audio = Path(str(resources.files("meetmem.demo_data").joinpath("sample_meeting.ogg")))
    if seconds is not None:  # the short campaign: the meeting's first minute
        cut = workdir / "meeting-start.wav"
        subprocess.run(["sox", str(audio), "-r", "16000", "-c", "1", str(cut), "trim", "0", f"{seconds:g}"],
                       check=True, capture_output=True)
        audio = cut
    db = workdir / "edge-killed.db"
    token = create_token(db, "faults")
    reference_token = create_token(db, "reference")  # its own tenant: the tally sees only the killed meeting
    server = Server(db, free_port(), "none", workdir / "edge-killed.log")
    server.start()
    wait_up(server)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("MEETMEM_TOKEN", None)

    def edge(meeting: str, outbox: Path, token: str = token) -> list[str]:
        return [*cli, "edge", "run", meeting, "--input", str(audio), "--cloud", server.url,
                "--token", token, "--outbox", str(outbox), "--model", "tiny.en", "--language", "en", "--threads", "2",
                "--no-cloud-glossary", "--timeout", "120"]

    t0 = time.monotonic()
    try:
        timing = time.monotonic()
        subprocess.run([*edge("uninterrupted", workdir / "reference-outbox.db", reference_token), "--quiet"], env=env,
                       capture_output=True, text=True, timeout=900, check=True)
        whole_s = time.monotonic() - timing
        reference = _spoken(db, "reference", "uninterrupted")
        outbox = workdir / "killed-outbox.db"
        outcomes = {"kills_landed": 0, "finished_before_kill": 0, "killed_before_first_status": 0}
        per_run = max(1, len(reference) // max(1, kills))
        kill_points: list[float] = []  # the meeting time the outbox had captured when each kill landed
        for k in range(kills):
            # A random point: after this run has stored 0..per_run segments, plus up to a second more.
            target, extra = rng.randint(0, per_run), rng.uniform(0.0, 1.0)
            proc = subprocess.Popen(edge("killed", outbox), env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
            reached = threading.Event()

            def watch(stream: Any, target: int = target, reached: threading.Event = reached) -> None:
                for line in stream:
                    if "segments " in line and int(line.split("segments ")[1].split()[0]) >= target:
                        reached.set()
                reached.set()  # the run ended: nothing more to wait for

            watcher = threading.Thread(target=watch, args=(proc.stderr,), daemon=True)
            watcher.start()
            reached.wait(timeout=whole_s + 60)
            try:
                proc.wait(timeout=extra)
                outcomes["finished_before_kill"] += 1
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                outcomes["kills_landed"] += 1
                kill_points.append(_captured_until(outbox))
            watcher.join(timeout=10)
            assert proc.stderr is not None
            proc.stderr.close()
            note(quiet, f"edge killed ({k + 1}/{kills}) after its status showed >= {target} segments "
                         f"+ {extra:.2f} s")
        final = subprocess.run([*edge("killed", outbox), "--quiet"], env=env, capture_output=True, text=True,
                               timeout=900)
        device, acked, pending = _outbox_acknowledged(outbox)
        result = tally(db, "faults", {("killed", device): acked})
        killed = _spoken(db, "faults", "killed")
        heard_twice = sum(1 for a, b in zip(killed, killed[1:], strict=False) if b[0] < a[1] - 0.05)
        missing = [r for r in reference
                   if not any(s - 0.1 <= (r[0] + r[1]) / 2 <= e + 0.1 for s, e, _ in killed)]
    finally:
        server.stop()
    return {"step": "edge_killed_mid_meeting", "kills": kills, "audio": audio.name,
            "audio_s": seconds if seconds is not None else 252.4, "model": "tiny.en",
            "uninterrupted_run_s": round(whole_s, 1), "segments_uninterrupted": len(reference),
            "final_run_exit": final.returncode, "still_in_outbox": pending, **outcomes, **result,
            "duplicated": result["duplicated"] + heard_twice, "heard_twice": heard_twice,
            "speech_missing": len(missing), "captured_until_at_kills_s": kill_points,
            "wall_s": round(time.monotonic() - t0, 1)}
