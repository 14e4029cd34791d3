"""`meetmem bench edge`: the edge agent's speed, memory, latency and recognition quality.

* Speed: the project's generated meeting (`meetmem/demo_data/sample_meeting.ogg`, 4 minutes of espeak-ng
  voices) through what `meetmem edge run` does with a file (decode, VAD, utterances packed into Whisper
  windows, Whisper int8, cleaning, the outbox), for each model, beam size and thread count, each in a fresh
  process (`edge_process`) whose peak RSS is the edge's own; plus base one utterance per call, as live input
  is transcribed. One thread also pins the process to one core: a Pi-class board. Real-time factor = wall
  seconds of the capture / seconds of audio; the recogniser's share is reported beside it. WER of each
  configuration against the meeting's reference, so that speed and accuracy are judged on the same audio.
* Latency: the meeting replayed at speaking pace (`paced`, as `edge run --realtime`) with the uploader
  sending to a real `meetmem serve` on loopback: end of speech (the reference's) -> in the outbox ->
  acknowledged, p50/p95, with each utterance's transcription time; in 1 s chunks (what `--realtime` reads)
  and in 0.1 s chunks (what the microphone delivers).
* Quality on real speech (`--data`, the shared clips): WER for English, CER for Mandarin.
* The glossary: WER of the generated meeting with and without its names and product codes as hotwords.
* Languages (`--parts languages`, not run by default; `bilingual`): a generated meeting of two English
  speakers and a Mandarin one, the language detected once a minute against once per speaker turn.
* The resource budget (`--parts budget`, not run by default; `edge_budget`): RTF, CPU in speech and in
  silence, peak RSS, the smallest address-space cap and outbox growth, projected onto a Raspberry Pi 4 and 5.

Prints its figures on stdout (one JSON object with --json); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from meetmem.cli.options import JSON, QUIET, flags
from meetmem.cli.output import emit_figures

from ..harness import (
    checkout,
    error_rate,
    guarded,
    machine_info,
    meeting_glossary,
    pooled,
    term_hits,
    tokens,
    versions,
)
from .edge_latency import segments_text
from .edge_paced import latency_part
from .edge_process import run_edge
from .serve_process import ServeBenchError


def demo_file(name: str) -> Path:
    """A file of the bundled sample meeting, found as package data (`meetmem demo` finds it the same way), so
    the default works from an installed wheel as well as from the source tree."""
    from importlib import resources

    # demo_data has no __init__.py: files() gives a MultiplexedPath; joinpath gives a real file's path.
    return Path(str(resources.files("meetmem.demo_data").joinpath(name)))

TARGET = {"rtf": 0.12, "peak_rss_mb": 450.0, "ack_minus_transcription_p95_ms": 1000.0}
QUICK_SECONDS = 60.0
EDGE_DISTRIBUTIONS = ("faster-whisper", "ctranslate2", "webrtcvad-wheels", "av", "opencc-python-reimplemented",
                      "httpx")

# ------------------------------------------------------------------------------------------------------
# The parts.
# ------------------------------------------------------------------------------------------------------


def _note(ctx: Any, message: str) -> None:
    if not ctx.quiet:
        from meetmem.cli.progress import note

        note(message)


def load_reference(path: Path, seconds: float | None) -> tuple[list[dict[str, Any]], float | None]:
    """The reference segments, and where to cut the audio: in the pause after the last segment that ends
    by `seconds` (None: the whole meeting)."""
    segments = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if seconds is None:
        return segments, None
    kept = [s for s in segments if s["end"] <= seconds] or segments[:1]
    following = segments[len(kept)] if len(kept) < len(segments) else None
    cut = (kept[-1]["end"] + following["start"]) / 2 if following else kept[-1]["end"] + 0.5
    return kept, round(cut, 3)


def speed_config(result: dict[str, Any], job: dict[str, Any], reference: str) -> dict[str, Any]:
    item = result["inputs"][0]
    audio_s = item["audio_s"]
    return {
        "model": job["model"], "beam": job["beam"], "threads": job["threads"],
        "language": "en (English-only model)" if job["model"] == "tiny.en" else job.get("language") or "auto (en|zh)",
        "audio_s": audio_s,
        "rtf": round(item["wall_s"] / audio_s, 4), "rtf_transcribe": round(item["transcribe_s"] / audio_s, 4),
        "cpu_per_audio_s": round(item["cpu_s"] / audio_s, 4),
        "packing": "one utterance per call (as live input)" if job.get("pack_seconds") == 0 else
                   "utterances packed into windows of up to 24 s (edge run on a file)",
        "utterances": len(item["segments"]) + item["dropped"], "recogniser_calls": item["recogniser_calls"],
        "segments": len(item["segments"]), "dropped": item["dropped"],
        "wer": error_rate(reference, segments_text(item["segments"]))["rate"],
        "wer_raw": error_rate(reference, segments_text(item["segments"], "raw_text"))["rate"],
        "load_s": result["load_s"], "peak_rss_mb": result["peak_rss_mb"],
        "rss_after_load_mb": result["rss_after_load_mb"],
        "pinned_cpus": result["pinned_cpus"], "heavy_modules_loaded": result["heavy_modules_loaded"],
        "other_processes_cores": result["process"]["other_processes_cores"],
    }


def speed(ctx: Any, args: argparse.Namespace, audio: Path, cut: float | None, reference: str) -> dict[str, Any]:
    configs = []
    for model, beam, threads, language, pack in _speed_matrix(args):
        job = {"model": model, "beam": beam, "threads": threads, "language": language,
               "pin_cores": 1 if threads == 1 else None, "pack_seconds": pack}
        spoken = "en" if model == "tiny.en" else language or "auto"
        _note(ctx, f"speed: {model} beam {beam} on {threads} thread(s), language {spoken}"
                   f"{', one utterance per call' if pack == 0 else ''} ...")
        result = run_edge({**job, "inputs": [{"path": str(audio), "meeting": "speed", "seconds": cut}]})
        configs.append(speed_config(result, job, reference))
        _note(ctx, f"  RTF {configs[-1]['rtf']}, WER {configs[-1]['wer']}, peak RSS {configs[-1]['peak_rss_mb']} MB")
    by_model: dict[str, float] = {}
    for c in configs:
        by_model[c["model"]] = max(by_model.get(c["model"], 0.0), c["peak_rss_mb"] or 0.0)
    return {"configs": configs, "peak_rss_mb_by_model": by_model}


def _speed_matrix(args: argparse.Namespace) -> list[tuple[str, int, int, str | None, float | None]]:
    """(model, beam, threads, language, pack seconds): None packs as `edge run` does a file, 0 never does."""
    if args.quick:
        return [("base", 1, 2, None, None)]
    matrix: list[tuple[str, int, int, str | None, float | None]] = [
        (m, b, t, None, None) for m in ("tiny.en", "base") for t in (2, 1) for b in (1, 5)]
    # `edge run` detects the language per call by default: fixing it shows what detection costs. Live input
    # is transcribed one utterance per call: what a board must sustain during a meeting.
    return matrix + [("base", 1, 2, "en", None), ("base", 1, 2, None, 0.0), ("base", 1, 1, None, 0.0)]


def clips_part(ctx: Any, data: Path | None) -> dict[str, Any]:
    if data is None:
        return {"skipped": "no --data given (the shared clips: --data ../shared/data/audio)"}
    index = data / "index.json"
    if not index.is_file():
        return {"skipped": f"no clips: {index} does not exist"}
    from opencc import OpenCC

    simplified = OpenCC("t2s").convert
    clips = json.loads(index.read_text(encoding="utf-8"))
    _note(ctx, f"clips: {len(clips)} clips of {data}, base beam 1 on 2 threads, language detected (en|zh) ...")
    inputs = [{"path": str(data / c["file"]), "meeting": f"clip-{n}"} for n, c in enumerate(clips)]
    result = run_edge({"model": "base", "beam": 1, "threads": 2, "language": None, "inputs": inputs})
    rows: list[dict[str, Any]] = []
    for clip, item in zip(clips, result["inputs"], strict=True):
        unit = "char" if clip["language"] == "zh" else "word"
        hyp, raw = segments_text(item["segments"]), segments_text(item["segments"], "raw_text")
        reference = clip["reference"]
        if unit == "char":
            reference, hyp, raw = simplified(reference), simplified(hyp), simplified(raw)
        score, score_raw = error_rate(reference, hyp, unit), error_rate(reference, raw, unit)
        rows.append({"file": clip["file"], "language": clip["language"], "metric": "CER" if unit == "char" else "WER",
                     "speech_type": clip.get("speech_type"), "audio_s": item["audio_s"],
                     "detected": sorted({s["lang"] for s in item["segments"] if s.get("lang")}),
                     "rate": score["rate"], "rate_raw": score_raw["rate"], "errors": score["errors"],
                     "ref_tokens": score["ref_tokens"], "_raw": score_raw, "hypothesis": hyp})
    overall = {}
    for language, metric in (("en", "WER"), ("zh", "CER")):
        mine = [r for r in rows if r["language"] == language]
        if mine:
            overall[f"{language}_{metric}"] = pooled(mine)
            overall[f"{language}_{metric}_raw"] = pooled([r["_raw"] for r in mine])
    for r in rows:
        del r["_raw"]
    return {"clips": rows, "overall": overall, "rtf": round(sum(i["wall_s"] for i in result["inputs"])
                                                          / sum(i["audio_s"] for i in result["inputs"]), 4)}


def glossary_part(ctx: Any, audio: Path, cut: float | None, reference: list[dict[str, Any]],
                  terms: list[str]) -> dict[str, Any]:
    text = segments_text(reference)
    runs: dict[str, Any] = {}
    for name, glossary in (("without", []), ("with", terms)):
        _note(ctx, f"glossary: base beam 1 on 2 threads, {name} the glossary ...")
        item = run_edge({"model": "base", "beam": 1, "threads": 2, "glossary": glossary,
                         "inputs": [{"path": str(audio), "meeting": "glossary", "seconds": cut}]})["inputs"][0]
        hyp = segments_text(item["segments"])
        runs[name] = {"wer": error_rate(text, hyp)["rate"], "terms": term_hits(text, hyp, terms),
                      "rtf": round(item["wall_s"] / item["audio_s"], 4)}
    return {"glossary": terms,
            "how": "the reference's speaker names plus the product codes in its text (regex [A-Z][A-Z0-9]*-\\d+)",
            **runs}


# ------------------------------------------------------------------------------------------------------
# The command.
# ------------------------------------------------------------------------------------------------------


def targets(report: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets as pass/fail, where the run measured them."""
    checks: dict[str, Any] = {}
    configs = report.get("speed", {}).get("configs", [])

    def find(beam: int, language: str) -> dict[str, Any] | None:
        return next((c for c in configs if c["model"] == "base" and c["threads"] == 2 and c["beam"] == beam
                     and c["language"] == language and c["packing"].startswith("utterances packed")), None)

    for language in ("auto (en|zh)", "en"):
        fast, beam5 = find(1, language), find(5, language) or find(5, "auto (en|zh)")
        if fast is not None:
            checks[f"base_rtf_2_threads_language_{language.split()[0]}"] = {
                "target": f"base beam 1 RTF <= {TARGET['rtf']} (edge run on a file) with WER <= beam 5's",
                "value": {"rtf": fast["rtf"], "wer": fast["wer"], "beam5_wer": beam5["wer"] if beam5 else None,
                          "beam5_language": beam5["language"] if beam5 else None},
                "pass": fast["rtf"] <= TARGET["rtf"] and (beam5 is None or fast["wer"] <= beam5["wer"])}
    for model, peak in report.get("speed", {}).get("peak_rss_mb_by_model", {}).items():
        checks[f"peak_rss_{model}"] = {"target": f"<= {TARGET['peak_rss_mb']:g} MB", "value": peak,
                                       "pass": peak <= TARGET["peak_rss_mb"]}
    for name, lat in report.get("latency", {}).items():
        if lat.get("speech_end_to_ack_minus_own_transcription", {}).get("n"):
            value = lat["speech_end_to_ack_minus_own_transcription"]["p95_ms"]
            checks[f"speech_end_to_ack_p95_{name}"] = {
                "target": "end of speech -> acknowledged, minus the utterance's transcription time: p95 <= 1000 ms, "
                          "every segment acknowledged",
                "value": value, "pass": value <= TARGET["ack_minus_transcription_p95_ms"]
                and lat["acknowledged"] == lat["segments"]}
    return {**checks, "all_pass": all(c["pass"] for c in checks.values())}


def run(args: argparse.Namespace, ctx: Any) -> int:

    wall0 = time.perf_counter()
    info = machine_info()
    info["versions"].update(versions(EDGE_DISTRIBUTIONS))
    audio, transcript = Path(args.audio), Path(args.reference)
    reference, cut = load_reference(transcript, QUICK_SECONDS if args.quick else None)
    parts = set(args.parts)
    report: dict[str, Any] = {
        "benchmark": "edge", "machine": info,
        "code": dict(zip(("git_head", "modified"), checkout(["edge", "eval/bench/edge.py", "eval/bench/edge_process.py",
                                                            "eval/bench/edge_budget.py"]), strict=True)),
        "config": {"audio": str(audio), "reference": str(transcript), "audio_cut_s": cut, "quick": args.quick,
                   "reference_segments": len(reference),
                   "reference_words": len(tokens(segments_text(reference), "word")),
                   "compute_type": "int8", "vad": "edge defaults (webrtcvad 2, 30 ms frames, 600 ms silence)",
                   "rtf": "wall seconds of the capture (decode, VAD, Whisper, cleaning, outbox) / seconds of audio",
                   "wer": "Levenshtein on words after casefold, punctuation removed; cleaned text (wer) and the "
                          "recogniser's raw_text (wer_raw)",
                   "one_thread": "cpu_threads=1 and the process pinned to one core (sched_setaffinity)",
                   "latency": "base beam 1, 2 threads, language auto, no glossary, at speaking pace (`paced`) into "
                              "`meetmem serve` (MiniLM, spoken questions off) on loopback, on the same cores; the "
                              "file read in 1 s chunks as `edge run --realtime` does, and in 0.1 s chunks as the "
                              "microphone delivers; end of speech = the reference utterance's end",
                   "timing": "edge process: monotonic clock from the paced start; acknowledged = the cloud's "
                             "answer received (before the outbox delete); percentiles nearest-rank"},
    }
    if "speed" in parts:
        report["speed"] = speed(ctx, args, audio, cut, segments_text(reference))
    if "latency" in parts:
        report["latency"] = latency_part(ctx, audio, cut, reference, chunks=(1.0,) if args.quick else (1.0, 0.1),
                                         continuous=not args.quick,
                                         partial_models=("tiny.en",) if args.quick else ("tiny.en", "base"),
                                         without_speculation=not args.quick, without_live_cuts=True)
    if "glossary" in parts:
        # The whole meeting's glossary even for a part of it: the organiser lists it before the meeting.
        terms = meeting_glossary(load_reference(transcript, None)[0])
        report["glossary"] = glossary_part(ctx, audio, cut, reference, terms)
    if "clips" in parts:
        report["clips"] = clips_part(ctx, Path(args.data) if args.data else None)
        if "skipped" in report["clips"]:
            _note(ctx, f"clips skipped: {report['clips']['skipped']}")
    if "budget" in parts:
        from .edge_budget import budget_part

        report["budget"] = budget_part(lambda message: _note(ctx, message), audio, quick=args.quick)
    if "languages" in parts:  # last: it loads Whisper in this process (no memory figure is taken from it)
        from .bilingual import bilingual_part

        report["languages"] = bilingual_part(lambda message: _note(ctx, message))
    info["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    report["targets"] = targets(report)
    report["wall_s"] = round(time.perf_counter() - wall0, 1)
    emit_figures(report, as_json=args.json)
    sys.stdout.flush()
    return 0 if report["targets"]["all_pass"] or not args.check else 1



PARTS = ("speed", "latency", "glossary", "clips", "budget", "languages")
#: The resource budget (issue 8) takes half an hour more: asked for by name.
DEFAULT_PARTS = ("speed", "latency", "glossary", "clips")


def _parts(value: str) -> list[str]:
    chosen = [p.strip() for p in value.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PARTS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"choose among {','.join(PARTS)}")
    return chosen


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "edge", parents=flags(JSON, QUIET), help="the edge agent: real-time factor, memory, latency, WER",
        description="The edge agent on the project's generated meeting: real-time factor, WER and peak RSS of "
                    "tiny.en and base at beam 1 and 5 on 2 threads and on 1 (pinned to one core), each in its own "
                    "process; end of speech to outbox and to the acknowledgement of a real `meetmem serve` on "
                    "loopback at speaking pace; WER with and without the meeting's glossary; WER/CER on the "
                    "shared real clips (--data). Prints the figures on stdout (one JSON object with --json) with "
                    "the targets as pass/fail; "
                    "progress on stderr. Takes 15-20 minutes on 2 cores; --quick takes about 3.")
    p.add_argument("--quick", action="store_true",
                   help=f"a smoke run: base beam 1 on 2 threads only, the first {QUICK_SECONDS:g} s of the meeting")
    p.add_argument("--data", default=None, metavar="PATH",
                   help="the shared real speech clips (../shared/data/audio, with index.json); skipped without it")
    p.add_argument("--parts", type=_parts, default=list(DEFAULT_PARTS), metavar="PART[,PART...]",
                   help=f"what to measure, among {','.join(PARTS)} (default: {','.join(DEFAULT_PARTS)}); budget: "
                        "RTF, CPU %% in speech and in silence, peak RSS, the smallest address-space cap and outbox "
                        "growth of tiny.en and base on 1 and 2 threads, projected onto a Raspberry Pi 4 and 5 "
                        "(about 25 minutes; sysbench for the projection); languages: a generated English and "
                        "Mandarin meeting (espeak-ng, pypinyin) with the language detected once a minute against "
                        "per speaker turn: detections, segments stored with the right language, WER and CER")
    p.add_argument("--audio", default=str(demo_file("sample_meeting.ogg")), help="the meeting recording (default: "
                   "the generated sample meeting)")
    p.add_argument("--reference", default=str(demo_file("sample_meeting.jsonl")),
                   help="its reference transcript, interchange JSONL with speakers (default: the sample meeting's)")
    p.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    p.set_defaults(func=guarded(run, (ServeBenchError,)))
