"""`meetmem bench audio`: what keeping the audio costs on the edge: disk per hour of speech and encoding time.

The edge keeps what it heard as Ogg Opus chunks (`meetmem.edge.recording.AudioKeeper`, one minute each by
default). This feeds recordings through the same keeper at each bitrate and reports bytes per hour of
audio (against 16-bit PCM, which is what the edge would otherwise keep), the encoder's real-time factor
on this machine, and the cloud's time to join the chunks into one file for the player. Inputs: the demo
meeting's recording (espeak-ng voices, shipped in the package) and, with `--data`, every real human clip
of the shared audio set (`en/` and `zh/`).

Prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

DEFAULT_BITRATES = (16000, 24000, 32000)
PCM_BYTES_PER_HOUR = 16000 * 2 * 3600


def _recordings(data: Path | None) -> list[tuple[str, Path]]:
    demo = Path(str(resources.files("meetmem.demo_data").joinpath("sample_meeting.ogg")))
    found = [("demo meeting (espeak-ng)", demo)]
    if data is not None:
        for lang in ("en", "zh"):
            for path in sorted((data / lang).glob("*")):
                if path.suffix in (".wav", ".ogg", ".flac"):
                    found.append((f"{lang}/{path.name}", path))
    return found


def _measure(samples: Any, bitrate: int, folder: Path) -> dict[str, Any]:
    from meetmem.edge.recording import AudioKeeper

    keeper = AudioKeeper(folder, "bench", chunk_seconds=60, bitrate=bitrate)
    started = time.perf_counter()
    block = 16000  # one second, as the pipeline reads it
    for i in range(0, len(samples), block):
        keeper.feed(samples[i : i + block], i / 16000)
    keeper.close()
    encode = time.perf_counter() - started
    size = keeper.disk_bytes()
    chunks = keeper.chunks()
    keeper.shutdown()
    return {"bytes": size, "seconds_encoding": encode, "chunks": chunks}


def run(args: argparse.Namespace, ctx: Any) -> int:
    import numpy as np

    from meetmem.cloud.audio_render import render_range
    from meetmem.edge import audio
    from meetmem.store.audio import AudioChunk

    data = Path(args.data) if args.data else None
    recordings = _recordings(data)
    decoded = []
    for name, path in recordings:
        samples = np.concatenate(list(audio.read_file(path)))
        decoded.append((name, samples))
    total_seconds = sum(len(s) for _, s in decoded) / 16000
    results: dict[str, Any] = {}
    for bitrate in args.bitrates:
        total_bytes = 0
        total_encode = 0.0
        per_recording = []
        join_seconds = None
        for name, samples in decoded:
            with tempfile.TemporaryDirectory(prefix="meetmem-bench-audio-") as tmp:
                got = _measure(samples, bitrate, Path(tmp) / "chunks")
                seconds = len(samples) / 16000
                total_bytes += got["bytes"]
                total_encode += got["seconds_encoding"]
                per_recording.append({"recording": name, "seconds": round(seconds, 2), "bytes": got["bytes"],
                                      "mb_per_hour": round(got["bytes"] / seconds * 3600 / 1e6, 2)})
                if name.startswith("demo") and join_seconds is None:
                    stored = [AudioChunk("bench", "edge", c.chunk_seq, c.start, c.duration, c.sha256,
                                         c.path.stat().st_size, "opus", c.path, "") for c in got["chunks"]]
                    started = time.perf_counter()
                    render_range(stored, 0.0, seconds, Path(tmp) / "rendered")
                    join_seconds = time.perf_counter() - started
            if not ctx.quiet:
                sys.stderr.write(f"  {bitrate // 1000} kbit/s  {name}: {per_recording[-1]['mb_per_hour']} MB/h\n")
        results[str(bitrate)] = {
            "mb_per_hour_of_audio": round(total_bytes / total_seconds * 3600 / 1e6, 2),
            "fraction_of_pcm16": round(total_bytes / total_seconds * 3600 / PCM_BYTES_PER_HOUR, 4),
            "encode_real_time_factor": round(total_encode / total_seconds, 5),
            "cloud_join_seconds_for_the_demo_meeting": round(join_seconds or 0.0, 3),
            "recordings": per_recording,
        }
    out = {
        "benchmark": "audio",
        "date": datetime.now(UTC).date().isoformat(),
        "audio_seconds": round(total_seconds, 1),
        "recordings": len(decoded),
        "pcm16_mb_per_hour": round(PCM_BYTES_PER_HOUR / 1e6, 1),
        "chunk_seconds": 60,
        "load_average": os.getloadavg()[0],
        "bitrates": results,
    }
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0


def _bitrates(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected bitrates in bit/s such as 16000,24000, got {text!r}") from None
    if not values or any(v < 6000 or v > 256000 for v in values):
        raise argparse.ArgumentTypeError("each bitrate must be between 6000 and 256000 bit/s")
    return values


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "audio", parents=[common], help="disk per hour of speech kept by the edge, and encoding time",
        description="Feed recordings through the edge's audio keeper (Ogg Opus chunks) at each bitrate and "
                    "report MB per hour of audio, the encoder's real-time factor and the cloud's join time. "
                    "Prints one JSON object on stdout.")
    p.add_argument("--data", default=None, metavar="DIR", help="the shared audio set (adds its en/ and zh/ clips)")
    p.add_argument("--bitrates", type=_bitrates, default=list(DEFAULT_BITRATES), metavar="BPS[,BPS...]",
                   help="Opus bitrates in bit/s (default 16000,24000,32000)")
    p.set_defaults(func=run)
