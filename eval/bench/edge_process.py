"""The processes of `meetmem bench edge`: the edge, one capture run in a process of its own, and what it
measured; and the cloud it sends to (`meetmem serve` on loopback).

Each configuration runs in a fresh process so that its peak memory (VmHWM) is the edge's own: the
benchmark's parent process never loads a Whisper model. The job is a JSON object on stdin; the figures are
one JSON object on stdout. The run is what `meetmem edge run` does (`read_file`, optionally `paced`, then
`CaptureAgent`: VAD, Whisper, filler cleaning, the outbox; the `Uploader` when a cloud is given), with the
recogniser, `Outbox.put` and `Outbox.ack` of this run's objects timed from outside (`measure.patched`).

Every time in the result is in seconds on the monotonic clock from the moment the first chunk of audio was
asked for, which is also when `paced` starts its clock: an utterance that ends `end` seconds into the file
was spoken at time `end` on this clock, for a paced input.

The job: `model`, `beam`, `threads`, `language` (None: detect), `glossary`, `audio_context_s` (absent: the
finals' default; None: the whole 30 s window), `pack_seconds` (None: the agent's default), `pin_cores`,
`paced`, `cloud` ({url, token, timeout} or None), and `inputs`, each {path, meeting, seconds (None: all),
chunk_seconds}. `partials` ({model, cadence, threads}) turns partial captions on for a paced input, each one
noted with its time (threads of a partial model loaded apart: `partials.partial_model_threads` by default);
`workers` (default 1) is how many calls the finals' model runs at once (2: partials by that same model
run alongside the finals). `live_cut_after_s`, `live_sentence_after_s` and `speculate_after_ms` set those
`CaptureOptions` (null: off); `vad` ({field: value}) sets `VADOptions`.

    echo '{"model": "tiny.en", "inputs": [{"path": "meeting.ogg", "meeting": "m"}]}' | \
        python -m meetmem.eval.bench.edge_process
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..harness import db_bytes, patched, proc_status
from .serve_process import ServeBenchError, Server, machine_cpu_ticks

if TYPE_CHECKING:
    import numpy as np

SAMPLE_RATE = 16000
TENANT = "bench"


def first_seconds(chunks: Iterable[np.ndarray], seconds: float | None) -> Iterator[np.ndarray]:
    """The chunks up to `seconds` of audio (all of them for None)."""
    if seconds is None:
        yield from chunks
        return
    left = int(round(seconds * SAMPLE_RATE))
    for chunk in chunks:
        if left <= 0:
            return
        yield chunk[:left]
        left -= len(chunk)


class RunClock:
    """Monotonic seconds since `start()`; `start()` is called when the first chunk is asked for."""

    def __init__(self) -> None:
        self.zero: float | None = None

    def start(self) -> None:
        self.zero = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - (self.zero if self.zero is not None else time.monotonic())


def _started(chunks: Iterable[np.ndarray], clock: RunClock,
             deliveries: list[tuple[int, float]]) -> Iterator[np.ndarray]:
    """The chunks, starting the clock at the first, and noting when each reached the agent (samples so far)."""
    clock.start()
    total = 0
    for chunk in chunks:
        total += len(chunk)
        deliveries.append((total, clock.now()))
        yield chunk


def _pin(cores: int | None) -> list[int] | None:
    """Restrict this process to its first `cores` usable CPUs (a one-core board), where the OS allows it."""
    if not cores or not hasattr(os, "sched_setaffinity"):
        return None
    usable = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, usable[:cores])
    return sorted(os.sched_getaffinity(0))


def count_encoder_passes() -> dict[str, int]:
    """Counts every Whisper encoder pass (one per 30 s window, one per language detection) from now on in this
    process: where the time goes, since the encoder costs the same whatever the window holds."""
    from faster_whisper import WhisperModel

    counter = {"passes": 0}
    encode = WhisperModel.encode

    def counted(self: Any, features: Any) -> Any:
        counter["passes"] += 1
        return encode(self, features)

    WhisperModel.encode = counted  # type: ignore[method-assign]
    return counter


def capture(job: dict[str, Any]) -> dict[str, Any]:
    """Run the job (see the module docstring); returns the figures."""
    # Pinned before the imports: numpy's BLAS starts its threads when imported, and a thread keeps the
    # affinity it was created with (run_edge pins the whole process before it starts, as taskset does).
    pinned = _pin(job.get("pin_cores"))
    passes = count_encoder_passes()
    out = edge_capture(job, pinned)
    out["encoder_passes"] = passes["passes"]
    return out


def edge_capture(job: dict[str, Any], pinned: list[int] | None) -> dict[str, Any]:
    """The edge's side of `capture`."""
    from meetmem.edge.agent import CaptureOptions
    from meetmem.edge.asr import ASROptions, WhisperASR
    from meetmem.edge.outbox import Outbox

    language = job.get("language")
    t0 = time.perf_counter()
    asr = WhisperASR(ASROptions(model=job["model"], cpu_threads=int(job.get("threads", 2)),
                                beam_size=int(job.get("beam", 1)), language=language,
                                workers=int(job.get("workers", 1)),
                                **({"audio_context_s": job["audio_context_s"]} if "audio_context_s" in job else {})))
    out: dict[str, Any] = {"load_s": round(time.perf_counter() - t0, 3),
                           "rss_after_load_mb": proc_status().get("VmRSS"), "pinned_cpus": pinned, "inputs": []}
    glossary = tuple(job.get("glossary") or ())
    partial_asr = None
    if job.get("partials"):
        partial_model = job["partials"].get("model") or job["model"]
        from meetmem.edge.partials import AUDIO_CONTEXT_S, partial_model_threads

        context = job["partials"].get("audio_context_s", AUDIO_CONTEXT_S)
        threads = int(job["partials"].get("threads") or partial_model_threads(int(job.get("threads", 2))))
        partial_asr = asr.with_options(audio_context_s=context, beam_size=1) if partial_model == job["model"] else \
            WhisperASR(ASROptions(model=partial_model, cpu_threads=threads, beam_size=1, language=language,
                                  audio_context_s=context))
        out["rss_after_partials_load_mb"] = proc_status().get("VmRSS")
    packing = {"pack_seconds": float(job["pack_seconds"])} if job.get("pack_seconds") is not None else {}
    if "speculate_after_ms" in job:  # None: finals only once the VAD closes them
        packing["speculate_after_ms"] = job["speculate_after_ms"]
    for key in ("live_cut_after_s", "live_sentence_after_s"):  # None: live utterances are not cut that way
        if key in job:
            packing[key] = job[key]
    if job.get("vad"):  # the segmentation as given, e.g. {"cut_after_s": 8} to cut a file as live input is cut
        from meetmem.edge.vad import VADOptions

        packing["vad"] = VADOptions(**job["vad"])
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-edge-") as tmp:
        for number, item in enumerate(job["inputs"]):
            options = CaptureOptions(meeting_id=item["meeting"], language=asr.options.language, glossary=glossary,
                                     **packing)
            path = Path(tmp) / f"outbox-{number}.db"
            outbox = Outbox(path)
            try:
                out["inputs"].append(_capture_one(item, asr, outbox, options, paced=bool(job.get("paced")),
                                                  cloud=job.get("cloud"), partial_asr=partial_asr,
                                                  partial_cadence=(job.get("partials") or {}).get("cadence")))
            finally:
                outbox.close()
            # What the outbox file holds once closed (its WAL checkpointed): the disk a run leaves behind.
            out["inputs"][-1]["outbox_bytes"] = db_bytes(path)
    status = proc_status()
    out["peak_rss_mb"] = status.get("VmHWM")
    out["peak_vm_mb"] = status.get("VmPeak")
    out["rss_at_end_mb"] = status.get("VmRSS")
    out["heavy_modules_loaded"] = sorted(m for m in ("torch", "fastapi", "faiss", "sentence_transformers")
                                         if m in sys.modules)
    return out


def _capture_one(item: dict[str, Any], asr: Any, outbox: Any, options: Any, *, paced: bool,
                 cloud: dict[str, Any] | None, partial_asr: Any = None,
                 partial_cadence: float | None = None) -> dict[str, Any]:
    from meetmem.edge import audio
    from meetmem.edge.agent import CaptureAgent, source_id

    clock = RunClock()
    # One per recogniser call, in order. A file read as fast as it decodes is packed (several utterances per
    # call); a paced one is not, and then each stored segment follows its own call.
    calls: list[dict[str, float]] = []
    stored: list[dict[str, Any]] = []
    acked: dict[int, float] = {}
    deliveries: list[tuple[int, float]] = []
    real_transcribe, real_put, real_ack = asr.transcribe, outbox.put, outbox.ack

    def transcribe(samples: np.ndarray, **kwargs: Any) -> Any:
        began = clock.now()
        try:
            return real_transcribe(samples, **kwargs)
        finally:
            calls.append({"reached_asr": began, "transcribe_s": clock.now() - began,
                               "audio_s": len(samples) / SAMPLE_RATE})

    def put(meeting_id: str, segment: dict[str, Any], **kwargs: Any) -> Any:
        result = real_put(meeting_id, segment, **kwargs)
        stored.append({"seq": result.seq, "start": segment["start"], "end": segment["end"], "text": segment["text"],
                       "raw_text": segment["raw_text"], "lang": segment["lang"], "stored": clock.now(),
                       **{k: calls[-1][k] for k in ("reached_asr", "transcribe_s")}})
        return result

    def ack(meeting_id: str, seqs: Any, **kwargs: Any) -> None:
        now = clock.now()  # the cloud's answer has arrived; what follows is the outbox's own delete
        acked.update({seq: now for seq in seqs})
        real_ack(meeting_id, seqs, **kwargs)  # the receipt, since the cloud signs what it stored

    chunks = first_seconds(audio.read_file(item["path"], chunk_seconds=float(item.get("chunk_seconds", 1.0))),
                           item.get("seconds"))
    if paced:
        chunks = audio.paced(chunks)
    uploader = client = None
    if cloud:
        from meetmem.edge.sync import CloudClient, Uploader

        client = CloudClient(cloud["url"], cloud["token"])
        uploader = Uploader(outbox, client)
    partials: list[dict[str, Any]] = []
    caption = None
    if partial_asr is not None:
        from meetmem.edge.partials import PartialCaption, PartialOptions

        caption = PartialCaption(partial_asr, PartialOptions(cadence_s=float(partial_cadence or 0.4)),
                                 language=options.language, glossary=options.glossary)

    def on_partial(partial: Any) -> None:
        partials.append({"at": clock.now(), "start": partial.start, "heard_until": partial.heard_until,
                         "text": partial.text, "new_words": partial.new_words})

    agent = CaptureAgent(asr, outbox, options, on_segment=(lambda _: uploader.notify()) if uploader else None,
                         partials=caption, on_partial=on_partial)
    drained = None
    cpu0 = time.process_time()
    with patched(asr, "transcribe", transcribe), patched(outbox, "put", put), patched(outbox, "ack", ack):
        if uploader is not None:
            uploader.start()
        try:
            status = agent.run(_started(chunks, clock, deliveries), source=source_id(item["path"]),
                               anchor=time.time() if paced else None)
            captured_s = clock.now()
            cpu_s = time.process_time() - cpu0
            if uploader is not None:
                drained = uploader.drain(timeout=float(cloud.get("timeout", 120.0)))
        finally:
            if uploader is not None:
                uploader.stop()
            if client is not None:
                client.close()
    for segment in stored:
        segment["acked"] = acked.get(segment["seq"])
    return {
        "path": item["path"], "meeting": item["meeting"], "audio_s": round(status.audio_time, 3),
        "wall_s": round(captured_s, 3), "cpu_s": round(cpu_s, 3), "transcribe_s": round(status.transcribe_time, 3),
        "recogniser_calls": len(calls), "dropped": status.dropped, "segments": stored,
        "language_detections": status.language_detections, "merged_utterances": status.merged,
        "backlog_max": status.backlog_max, "backlog_max_s": status.backlog_max_s,
        "degradations": status.degradations, "partials": partials, "partial_passes": status.partial_passes,
        "partial_s": round(status.partial_time, 3), "partial_passes_alongside": status.partial_passes_alongside,
        "partial_errors": status.partial_errors, "partials_superseded": status.partials_superseded,
        "speculations": status.speculations, "speculations_used": status.speculations_used,
        "sentence_cuts": status.sentence_cuts, "sentence_places": status.sentence_places,
        "sentence_places_decoded": status.sentence_places_decoded,
        "sentence_places_refused": status.sentence_places_refused,
        "sentence_places_refused_latest": list(status.sentence_places_refused_latest),
        "call_audio_s": [round(u["audio_s"], 3) for u in calls],
        "agent_latencies_s": [round(x, 4) for x in status.latencies],
        "uploader_acks": len(uploader.ack_times) if uploader is not None else None,
        "drained": drained, "pending_after": outbox.stats().pending, "outbox_text_bytes": outbox.stats().bytes,
        "deliveries": [(n, round(at, 4)) for n, at in deliveries] if paced else None,
    }


# ------------------------------------------------------------------------------------------------------
# The benchmark's side: starting this module as a process, and the cloud it sends to.
# ------------------------------------------------------------------------------------------------------


def run_edge(job: dict[str, Any], *, address_space: int | None = None) -> dict[str, Any]:
    """One `edge_process` run; adds its wall time, its CPU time and the CPU every other process used.

    Args:
        address_space: a cap on the process's virtual memory in bytes (RLIMIT_AS, as `prlimit --as`), set in
            the child before it starts Python; None: no cap. The job's `pin_cores` is applied there too.

    Raises:
        ServeBenchError: the process failed (under a cap: the cap was too small).
    """
    usage0, ticks0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), machine_cpu_ticks(), time.perf_counter()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    cores = job.get("pin_cores")

    def before_exec() -> None:
        # As `taskset` and `prlimit` do: set before the interpreter starts, so every thread inherits them.
        if cores and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:cores])
        if address_space is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    proc = subprocess.run([sys.executable, "-m", "meetmem.eval.bench.edge_process"], input=json.dumps(job),
                          capture_output=True, text=True, env=env,
                          preexec_fn=before_exec if cores or address_space is not None else None)
    wall = time.perf_counter() - t0
    usage1, ticks1 = resource.getrusage(resource.RUSAGE_CHILDREN), machine_cpu_ticks()
    if proc.returncode != 0:
        raise ServeBenchError(f"the edge process failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    busy, total = ticks1[0] - ticks0[0], ticks1[1] - ticks0[1]
    everyone = (os.cpu_count() or 1) * busy / total if total else None
    result["process"] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                         "other_processes_cores": round(everyone - cpu / wall, 2) if everyone is not None else None}
    return result


class Cloud(Server):
    """`meetmem serve` as the edge's cloud: MiniLM embeddings, spoken questions off."""

    def start(self) -> None:
        exe = Path(sys.executable).with_name("meetmem")
        command = [str(exe)] if exe.exists() else [sys.executable, "-m", "meetmem.cli"]
        command += ["serve", "--db", str(self.db), "--host", "127.0.0.1", "--port", str(self.port)]
        env = {**os.environ, "MEETMEM_EMBEDDER": self.embedder, "MEETMEM_VOICE_MODEL": "none",
               "MEETMEM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def main() -> int:
    job = json.load(sys.stdin)
    result = capture(job)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
