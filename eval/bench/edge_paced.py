"""`meetmem bench edge`'s latency part: the meeting at speaking pace (`paced`, as `edge run --realtime`) with
the uploader sending to a real `meetmem serve` on loopback, in 1 s and 0.1 s chunks, with and without partial
captions, speculative finals and live cuts, and a continuous-speech meeting that leaves the recogniser no idle
time. Each run is scored by `edge_latency.latency_figures`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..harness import say_if
from .edge_latency import SAMPLE_RATE, latency_figures
from .edge_process import TENANT, Cloud, run_edge
from .serve_process import create_token, free_port


def _note(ctx: Any, message: str) -> None:
    say_if(not ctx.quiet, message)


#: Partial captions in the latency runs: tiny.en (the smaller model) re-transcribing the utterance in progress.
PARTIALS = {"model": "tiny.en", "cadence": 0.4}
#: The pause left between reference utterances in the continuous-speech meeting.
CONTINUOUS_GAP_S = 0.25


def continuous_meeting(audio: Path, reference: list[dict[str, Any]], folder: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The meeting with every pause between utterances cut to `CONTINUOUS_GAP_S` (the reference's own spans,
    spliced end to end: the words are the recording's, the times exact): speech that leaves the recogniser
    no idle time, as a fast talker or a heated discussion does. Written as a 16 kHz WAV beside its reference."""
    import wave

    import numpy as np

    from meetmem.edge.audio import read_file

    samples = np.concatenate(list(read_file(audio, chunk_seconds=5.0)))
    gap = np.zeros(int(CONTINUOUS_GAP_S * SAMPLE_RATE), dtype=np.int16)
    parts: list[Any] = []
    spliced: list[dict[str, Any]] = []
    at = 0
    for segment in reference:
        piece = samples[int(segment["start"] * SAMPLE_RATE):int(segment["end"] * SAMPLE_RATE)]
        spliced.append({**segment, "start": round(at / SAMPLE_RATE, 3),
                        "end": round((at + len(piece)) / SAMPLE_RATE, 3)})
        parts += [piece, gap]
        at += len(piece) + len(gap)
    path = folder / "continuous_meeting.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(np.concatenate(parts).astype("<i2").tobytes())
    return path, spliced


def latency_part(ctx: Any, audio: Path, cut: float | None, reference: list[dict[str, Any]], *,
                 chunks: Sequence[float] = (1.0,), embedder: str = "minilm", partials: bool = True,
                 continuous: bool = True, partial_models: Sequence[str] = ("tiny.en", "base"),
                 without_speculation: bool = True, partials_alongside: bool = False,
                 without_live_cuts: bool = True) -> dict[str, Any]:
    """The meeting at speaking pace into a real cloud: once per chunk length (1 s is what `edge run
    --realtime` reads a file in; 0.1 s is what the microphone delivers), with partial captions by tiny.en on;
    then, in 0.1 s chunks, with partials by each other model of `partial_models` (base: the finals' own
    model, no second one loaded), without partials (what they cost the finals), without partials nor
    speculative finals (what speculation saves, in the same run), without live cuts (what they save: a long
    utterance cut at its next pause after `CaptureOptions.live_cut_after_s`, or at a shorter one where its
    words end a sentence after `live_sentence_after_s`, instead of at the VAD's length limit), and the
    continuous-speech meeting, with and without live cuts.

    Partials by the finals' own model take turns with the finals (one call at a time); `partials_alongside`
    adds a column where that model is loaded with two workers sharing its weights, so passes run alongside
    the finals (docs/BENCHMARKS.md "Issue 19: partial captions": +100 MB of peak RSS)."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-edge-cloud-") as tmp:
        db = Path(tmp) / "cloud.db"
        token = create_token(db, TENANT, label="bench edge")
        cloud = Cloud(db, free_port(), embedder, Path(tmp) / "serve.log")
        first = partial_models[0] if partial_models else PARTIALS["model"]
        # name, audio, reference, chunk seconds, partial model (None: off), speculative finals, workers of the
        # finals' model (2: partials by that model run alongside the finals), live cuts (the default) or none
        runs: list[tuple[str, Path, list[dict[str, Any]], float, str | None, bool, int, bool]] = [
            (f"chunks_{chunk:g}s", audio, reference, chunk, first if partials else None, True, 1, True)
            for chunk in chunks]
        if partials:
            runs += [(f"chunks_{chunks[-1]:g}s_partials_{model}", audio, reference, chunks[-1], model, True, 1, True)
                     for model in partial_models[1:]]
            if partials_alongside:
                runs.append((f"chunks_{chunks[-1]:g}s_partials_base_alongside", audio, reference, chunks[-1], "base",
                             True, 2, True))
            runs.append((f"chunks_{chunks[-1]:g}s_without_partials", audio, reference, chunks[-1], None, True, 1,
                         True))
        if without_live_cuts:
            runs.append((f"chunks_{chunks[-1]:g}s_without_partials_nor_live_cuts", audio, reference, chunks[-1],
                         None, True, 1, False))
        if without_speculation:
            runs.append((f"chunks_{chunks[-1]:g}s_without_partials_nor_speculation", audio, reference, chunks[-1],
                         None, False, 1, True))
        if continuous:
            spliced, spliced_reference = continuous_meeting(audio, reference, Path(tmp))
            runs.append((f"continuous_chunks_{chunks[-1]:g}s", spliced, spliced_reference, chunks[-1],
                         first if partials else None, True, 1, True))
            if without_live_cuts:
                runs.append((f"continuous_chunks_{chunks[-1]:g}s_without_live_cuts", spliced, spliced_reference,
                             chunks[-1], first if partials else None, True, 1, False))
        _note(ctx, f"latency: starting `meetmem serve` on port {cloud.port} ({embedder} embeddings) ...")
        try:
            cloud.start()
            ready_s = cloud.wait_ready(600.0)
            at_ready = cloud.figures()
            for name, path, ref, chunk, partial_model, speculate, n_workers, live_cuts in runs:
                span = f"the first {cut:g} s" if cut and path == audio else "all of it"
                captions = f"partials by {partial_model}" if partial_model else "no partials"
                if partial_model == "base":
                    captions += " alongside the finals" if n_workers > 1 else " taking turns with the finals"
                _note(ctx, f"latency: {name}: {path.name} at speaking pace ({span}) in {chunk:g} s chunks, base "
                           f"beam 1 on 2 threads, {captions}{'' if speculate else ', no speculative finals'}"
                           f"{'' if live_cuts else ', no live cuts'} "
                           f"(load average {os.getloadavg()[0]:.1f}) ...")
                result = run_edge({"model": "base", "beam": 1, "threads": 2, "paced": True, "workers": n_workers,
                                   "partials": {**PARTIALS, "model": partial_model} if partial_model else None,
                                   **({} if speculate else {"speculate_after_ms": None}),
                                   **({} if live_cuts else {"live_cut_after_s": None, "live_sentence_after_s": None}),
                                   "cloud": {"url": cloud.url, "token": token, "timeout": 120.0},
                                   "inputs": [{"path": str(path), "meeting": f"latency-{name}",
                                               "seconds": cut if path == audio else None, "chunk_seconds": chunk}]})
                out[name] = latency_figures(result, ref)
                out[name]["partials"] = partial_model
                out[name]["finals_model_workers"] = n_workers
                out[name]["speculative_finals_on"] = speculate
                out[name]["live_cuts_on"] = live_cuts
                out[name]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
                _note(ctx, "  end of speech -> acknowledged minus own transcription p95 "
                           f"{out[name]['speech_end_to_ack_minus_own_transcription'].get('p95_ms')} ms; "
                           f"first partial words p95 {out[name]['partial_first_words_after_spoken'].get('p95_ms')} ms")
            at_end = cloud.figures()
        finally:
            stopped = cloud.stop()
        problems = cloud.log_problems()
    out["cloud"] = {"embedder": embedder, "start_to_ready_s": round(ready_s, 1), "peak_rss_mb": at_end.get("VmHWM"),
                    "cpu_s_during_runs": round(at_end.get("cpu_s", 0.0) - at_ready.get("cpu_s", 0.0), 2),
                    "stop": stopped, "log_problems": problems}
    return out
