"""`meetmem bench edge --parts library`: the edge beside plain faster-whisper, the library it wraps, on the same
weights, clips and cores, in the same run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..harness import error_rate, pooled, say_if
from .edge_latency import segments_text
from .edge_process import run_edge


def _note(ctx: Any, message: str) -> None:
    say_if(not ctx.quiet, message)


def library_part(ctx: Any, audio: Path, reference: list[dict[str, Any]], data: Path | None, *,
                 quick: bool = False) -> dict[str, Any]:
    """The edge beside plain faster-whisper (`transcribe(beam_size=1, vad_filter=True)`), the library it wraps:
    the same weights, the English clips plus the meeting, 2 threads, in the same run. Each side runs in a
    fresh process; the rounds alternate which side goes first, so a neighbour's load falls on both alike.
    The ratio is the edge's RTF over plain faster-whisper's (1.0: as fast)."""
    inputs: list[dict[str, Any]] = []
    references: list[str] = []
    clips = json.loads((data / "index.json").read_text(encoding="utf-8")) if data and (data / "index.json").is_file() \
        else []
    for n, clip in enumerate(c for c in clips if c["language"] == "en"):
        inputs.append({"path": str(data / clip["file"]), "meeting": f"clip-{n}"})  # type: ignore[operator]
        references.append(clip["reference"])
    inputs.append({"path": str(audio), "meeting": "meeting"})
    references.append(segments_text(reference))
    models = ("base",) if quick else ("tiny.en", "base")
    rounds = 1 if quick else 2
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {m: {"edge": [], "plain": []} for m in models}
    for round_no in range(rounds):
        for model in models:
            sides = ("edge", "plain") if round_no % 2 == 0 else ("plain", "edge")
            for side in sides:
                _note(ctx, f"library: {model} beam 1 on 2 threads, {side}, round {round_no + 1} of {rounds} ...")
                result = run_edge({"model": model, "beam": 1, "threads": 2, "plain": side == "plain",
                                   "inputs": inputs})
                runs[model][side].append(_library_run(result, references))
                _note(ctx, f"  RTF {runs[model][side][-1]['rtf']}, meeting WER {runs[model][side][-1]['meeting_wer']}, "
                           f"peak RSS {runs[model][side][-1]['peak_rss_mb']} MB")
    out: dict[str, Any] = {"inputs": [i["path"] for i in inputs], "audio_s": runs[models[0]]["edge"][0]["audio_s"],
                           "models": {}}
    for model in models:
        edge, plain = runs[model]["edge"], runs[model]["plain"]
        ratios = [e["wall_s"] / p["wall_s"] for e, p in zip(edge, plain, strict=True)]
        out["models"][model] = {
            "edge": edge, "plain": plain,
            "rtf_ratio_edge_over_plain": round(sum(e["wall_s"] for e in edge) / sum(p["wall_s"] for p in plain), 3),
            "rtf_ratio_per_round": [round(r, 3) for r in ratios],
            # CPU seconds (every thread of the process) hold up better than wall time on a shared machine.
            "cpu_ratio_edge_over_plain": round(sum(e["cpu_s"] for e in edge) / sum(p["cpu_s"] for p in plain), 3),
            "wer": {"edge_meeting": edge[0]["meeting_wer"], "plain_meeting": plain[0]["meeting_wer"],
                    "edge_clips": edge[0]["clips_wer"], "plain_clips": plain[0]["clips_wer"]},
            "peak_rss_mb": {"edge": max(e["peak_rss_mb"] for e in edge), "plain": max(p["peak_rss_mb"] for p in plain)}}
    return out


def _library_run(result: dict[str, Any], references: list[str]) -> dict[str, Any]:
    items = result["inputs"]
    wall, audio_s = sum(i["wall_s"] for i in items), sum(i["audio_s"] for i in items)
    clip_scores = [error_rate(ref, segments_text(i["segments"]))
                   for ref, i in zip(references[:-1], items[:-1], strict=True)]
    cpu = sum(i["cpu_s"] for i in items)
    return {"wall_s": round(wall, 2), "audio_s": round(audio_s, 2), "rtf": round(wall / audio_s, 4),
            "cpu_s": round(cpu, 2), "cpu_per_audio_s": round(cpu / audio_s, 4),
            "meeting_rtf": round(items[-1]["wall_s"] / items[-1]["audio_s"], 4),
            "meeting_wer": error_rate(references[-1], segments_text(items[-1]["segments"]))["rate"],
            "clips_wer": pooled(clip_scores)["rate"] if clip_scores else None,
            # plain faster-whisper detects once per file (a multilingual model, no language given)
            "language_detections": sum(i["language_detections"] for i in items) if "language_detections" in items[0]
            else len(items),
            "recogniser_calls": sum(i.get("recogniser_calls", 0) for i in items) or None,
            # every encoder pass of the process: 30 s windows decoded plus language detections
            "encoder_passes": result.get("encoder_passes"),
            "merged_utterances": sum(i.get("merged_utterances", 0) for i in items),
            "peak_rss_mb": result["peak_rss_mb"], "other_processes_cores": result["process"]["other_processes_cores"]}
