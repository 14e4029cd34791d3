"""`meetmem bench speakers`: how well the edge tells speakers apart, and what it costs.

The edge's own path, minus the recogniser (which does not change a label): the meeting's audio through the
edge's VAD (`edge.vad.segment`), each utterance embedded by `edge.voice_encoder.VoiceEncoder` and labelled by
`SpeakerTracker` (online, in order, labels never changed). The system's turns are the VAD's utterances with
their labels; they are scored against reference turns with `eval/harness/der.py` (collar 0.25 s).

Meetings, all with exact reference turns:
- **generated**: seeded espeak-ng meetings of 2 to 5 speakers drawn from `GENERATED_VOICES` (voices,
  variants and pitches), lines from the demo meeting's script, pauses of 0.3 to 1.2 s (as the demo's);
  reference turns from the rendered sample counts. They tune the threshold (`--thresholds`).
- **demo**: the demo meeting (`meetmem/demo_data/sample_meeting.ogg`, 4 espeak-ng voices the generated
  meetings do not use) with its transcript's turns: held out from tuning. Also scored with the first
  speaker (Alice) enrolled as the wearer from two sentences she does not say in the meeting.
- **mixed** (with `--data`): real recorded speakers from the shared audio clips (JFK, LibriSpeech,
  LJ Speech, one FLEURS speaker: four different people), each clip cut into its VAD utterances, interleaved
  with two espeak-ng voices; reference turns are the utterances' VAD bounds (the real clips have no
  reference timing of their own). Held out.

Resources: a fresh process per thread count (pinned to that many cores, BLAS limited to them) loads the
encoder and embeds the demo meeting's utterances: added resident memory and CPU seconds per audio second.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from meetmem.cli.options import JSON, flags
from meetmem.cli.output import emit_figures

from ..harness.der import diarization_error
from .speaker_meetings import (
    SR,
    Meeting,
    demo_lines,
    demo_meeting,
    generated_meetings,
    mixed_meeting,
    rapid_meetings,
    rttm_meetings,
)
from .speaker_scoring import (
    CUT_TOLERANCE_S,
    ONE_THRESHOLD_RULE,
    SINGLE_CUT,
    Cutting,
    edge_cutting,
    embed_meeting,
    score,
    summary,
    wearer_check,
)

DEFAULT_THRESHOLDS = (0.70, 0.75, 0.80, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94)


# -- the whole edge: recognised segments, split where the voice changes ------------------------------------

def capture(meeting: Meeting, asr: Any, encoder: Any, *, threshold: float,
            change_threshold: float | None) -> tuple[list[Any], Any, float]:
    """The meeting through the edge's capture agent (VAD, speaker turns, Whisper, cleaning) into a
    temporary outbox: its segments, the capture's status and the process CPU seconds it took."""
    from meetmem.edge.agent import CaptureAgent, CaptureOptions
    from meetmem.edge.outbox import Outbox
    from meetmem.edge.speakers import SpeakerOptions, SpeakerTracker

    tracker = SpeakerTracker(encoder, SpeakerOptions(threshold=threshold, wearer_threshold=threshold,
                                                     change_threshold=change_threshold))
    chunks = (meeting.samples[i:i + SR // 2] for i in range(0, len(meeting.samples), SR // 2))
    started = time.process_time()
    with tempfile.TemporaryDirectory(prefix="bench-speakers-capture-") as tmp, Outbox(Path(tmp) / "o.db") as outbox:
        agent = CaptureAgent(asr, outbox, CaptureOptions(meeting_id=meeting.name, language="en"), speakers=tracker)
        status = agent.run(chunks, source=f"bench:{meeting.name}")
        stored = outbox.pending(100_000)
    return stored, status, time.process_time() - started


def edge_run(meetings: Sequence[Meeting], asr: Any, encoder: Any, *, threshold: float,
             change_threshold: float, references: dict[str, str]) -> dict[str, Any]:
    """Each meeting captured twice, without and with cutting utterances where the voice changes: DER of the
    stored segments and, where the meeting's words are known, WER (same run, same recogniser)."""
    from ..harness.asr_scoring import error_rate

    out: dict[str, Any] = {}
    for meeting in meetings:
        rows = {}
        for name, change in (("whole_utterances", None), ("split_at_voice_change", change_threshold)):
            stored, status, cpu = capture(meeting, asr, encoder, threshold=threshold, change_threshold=change)
            hypothesis = [(s.start, s.end, s.speaker or "?") for s in stored]
            der = diarization_error(meeting.reference, hypothesis).public()
            row = {"segments": len(stored), "utterances_split": status.speaker_turns_split,
                   "labels": len({h[2] for h in hypothesis}), "der": der["der"],
                   "confusion_s": der["confusion_s"], "cpu_s": round(cpu, 1),
                   "recogniser_calls": status.recogniser_calls, "merged_by_whisper": status.merged}
            if meeting.name in references:
                row["wer"] = error_rate(references[meeting.name], " ".join(s.text for s in stored))["rate"]
            rows[name] = row
        out[meeting.name] = rows
    return out


# -- resources --------------------------------------------------------------------------------------------

def _rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _worker(wav: str) -> dict[str, Any]:
    """In a fresh process: load the encoder and embed every utterance of `wav`."""
    from meetmem.edge.audio import decode_file
    from meetmem.edge.vad import segment

    samples = decode_file(wav)
    utterances = segment(samples)
    before = _rss_mb()
    started = time.process_time()
    from meetmem.edge.voice_encoder import VoiceEncoder

    encoder = VoiceEncoder()
    load_cpu = time.process_time() - started
    loaded = _rss_mb()
    peak = loaded
    cpu = time.process_time()
    wall = time.perf_counter()
    for utterance in utterances:
        encoder.embed(utterance.audio)
        peak = max(peak, _rss_mb())
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    from meetmem.edge.speaker_turns import speaker_turns

    cut_cpu: dict[str, float] = {}
    turns: dict[str, int] = {}
    for way, cutting in (("single_cut", SINGLE_CUT), ("multi_cut", edge_cutting())):
        started = time.process_time()
        turns[way] = sum(len(speaker_turns(encoder, u.audio, cutting.change, cutting.short,
                                           max_turns=cutting.max_turns, candidates=cutting.candidates))
                         for u in utterances)
        cut_cpu[way] = time.process_time() - started
        peak = max(peak, _rss_mb())
    speech = sum(len(u.audio) for u in utterances) / SR
    audio = len(samples) / SR
    return {"audio_s": round(audio, 1), "speech_s": round(speech, 1), "utterances": len(utterances),
            "load_cpu_s": round(load_cpu, 2), "rss_before_mb": round(before, 1),
            "added_rss_loaded_mb": round(loaded - before, 1), "added_rss_peak_mb": round(peak - before, 1),
            "embed_cpu_s": round(cpu, 2), "embed_wall_s": round(wall, 2),
            "cpu_pct_of_one_core": round(100 * cpu / audio, 2),
            "ms_per_utterance": round(1000 * cpu / max(1, len(utterances)), 1),
            "cpu_s_per_speech_s": round(cpu / speech, 4) if speech else None,
            **{f"{way}_cpu_s": round(c, 2) for way, c in cut_cpu.items()},
            **{f"{way}_cpu_pct_of_one_core": round(100 * c / audio, 2) for way, c in cut_cpu.items()},
            **{f"{way}_turns": n for way, n in turns.items()}}


def resources(wav: Path, threads: int) -> dict[str, Any]:
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads))
    cores = sorted(os.sched_getaffinity(0))[:threads] if hasattr(os, "sched_getaffinity") else None

    def pin() -> None:
        if cores:
            os.sched_setaffinity(0, cores)

    proc = subprocess.run([sys.executable, "-m", "meetmem.eval.bench.speakers", "--worker", str(wav)],
                          capture_output=True, text=True, env=env, preexec_fn=pin, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"the resource worker failed: {proc.stderr[-2000:]}")
    return {"threads": threads, **json.loads(proc.stdout)}


def split_report(args: argparse.Namespace, encoder: Any, generated: list[Meeting], others: list[Meeting],
                 best: float) -> dict[str, Any]:
    """DER with each utterance cut where the voice changes (`edge.speaker_turns.speaker_turns`): the change
    thresholds swept on the generated meetings, and the held-out meetings at the edge's defaults."""
    sweep: dict[str, Any] = {}
    for change in (float(t) for t in args.change_thresholds.split(",") if t.strip()):
        embedded = [embed_meeting(m, encoder, change_threshold=change) for m in generated]
        sweep[str(change)] = {"at_best_threshold": summary([score(e, best) for e in embedded]),
                              "at_default_threshold": summary([score(e, args.default_threshold) for e in embedded])}
    tuning = [embed_meeting(m, encoder, change_threshold=args.change_threshold) for m in generated]
    held_out = [embed_meeting(m, encoder, change_threshold=args.change_threshold) for m in others]
    seconds = sum(e.meeting.seconds for e in tuning + held_out)
    return {"change_threshold": args.change_threshold, "change_threshold_sweep_generated": sweep,
            "generated_summary": summary([score(e, best) for e in tuning]),
            "generated_summary_at_default": summary([score(e, args.default_threshold) for e in tuning]),
            "held_out": [score(e, best) for e in held_out],
            "held_out_at_default": [score(e, args.default_threshold) for e in held_out],
            "embed_cpu_s_per_audio_s_in_process": round(sum(e.cpu_seconds for e in tuning + held_out) / seconds, 4)}


def cutting_report(args: argparse.Namespace, encoder: Any, groups: dict[str, list[Meeting]],
                   best: float) -> dict[str, Any]:
    """Before and after more than one cut per utterance: each group of meetings whole (no cut), cut once at
    most (`SINGLE_CUT`), and cut as the edge cuts now (`edge_cutting`), at the edge's default clustering
    threshold and at the one best on the generated meetings; each way's turns also clustered with one threshold
    for every length (`ONE_THRESHOLD_RULE`, the edge's clustering before), at the default; the short-turn
    threshold swept on the tuning groups (generated, rapid)."""
    after = edge_cutting()
    ways: dict[str, Cutting | None] = {"whole_utterances": None, "single_cut": SINGLE_CUT, "multi_cut": after}
    out: dict[str, Any] = {"single_cut": SINGLE_CUT.public(), "multi_cut": after.public(),
                           "one_threshold_rule": ONE_THRESHOLD_RULE,
                           "cut_tolerance_s": CUT_TOLERANCE_S, "groups": {}}
    cpu: dict[str, float] = {}
    seconds = sum(m.seconds for ms in groups.values() for m in ms)
    for group, meetings in groups.items():
        rows: dict[str, Any] = {}
        for way, cutting in ways.items():
            embedded = [embed_meeting(m, encoder, cutting=cutting) for m in meetings]
            cpu[way] = cpu.get(way, 0.0) + sum(e.cpu_seconds for e in embedded)
            at_default = [score(e, args.default_threshold) for e in embedded]
            rows[way] = {"at_default_threshold": summary(at_default),
                         "at_best_threshold": summary([score(e, best) for e in embedded]),
                         "meetings_at_default": [{k: v for k, v in r.items() if k != "mapping"} for r in at_default]}
            one = [score(e, args.default_threshold, rule=ONE_THRESHOLD_RULE) for e in embedded]
            rows[way]["one_threshold_rule_at_default"] = summary(one)  # the clustering before, same turns
            rows[way]["one_threshold_rule_labels"] = [r["labels"] for r in one]
        out["groups"][group] = rows
    out["embed_cpu_s_per_audio_s_in_process"] = {way: round(c / seconds, 4) for way, c in cpu.items()}
    sweep: dict[str, Any] = {}
    for short in (float(t) for t in args.short_change_thresholds.split(",") if t.strip()):
        cutting = edge_cutting(short=short)
        sweep[str(short)] = {group: summary([score(embed_meeting(m, encoder, cutting=cutting), args.default_threshold)
                                              for m in groups[group]])
                             for group in ("generated", "rapid") if group in groups}
    out["short_change_threshold_sweep_at_default"] = sweep
    return out


# -- the command ------------------------------------------------------------------------------------------

def run(args: argparse.Namespace, ctx: Any = None) -> int:
    from meetmem.edge.voice_encoder import VoiceEncoder

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    thresholds = tuple(float(t) for t in args.thresholds.split(","))
    if args.change_threshold is None:
        from meetmem.edge.speaker_turns import CHANGE_THRESHOLD

        args.change_threshold = CHANGE_THRESHOLD
    encoder = VoiceEncoder()
    with tempfile.TemporaryDirectory(prefix="bench-speakers-") as tmp:
        workdir = Path(tmp)
        say(f"rendering {args.meetings} generated meetings ...")
        generated = generated_meetings(args.meetings, args.seed, workdir)
        tuning = [embed_meeting(m, encoder) for m in generated]
        others = [demo_meeting()]
        if args.data:
            say("mixing the real clips ...")
            others.append(mixed_meeting(Path(args.data), args.seed, workdir))
        held_out = [embed_meeting(m, encoder) for m in others]
        say("the same meetings cut at their reference turns ...")
        oracle = [embed_meeting(m, encoder, oracle=True) for m in generated + others]
        sweep = {}
        for threshold in thresholds:
            sweep[threshold] = summary([score(e, threshold) for e in tuning])
        best = min(thresholds, key=lambda t: (sweep[t]["der_pooled"], -sweep[t]["speaker_count_accuracy"]))
        say(f"threshold {best} is best on the generated meetings")
        report: dict[str, Any] = {
            "encoder": "resemblyzer 0.1.4 GE2E weights, numpy (edge/voice_encoder.py)",
            "collar_s": 0.25,
            "threshold_sweep_generated": {str(t): s for t, s in sweep.items()},
            "threshold": best,
            "generated": {"summary": sweep[best], "meetings": [score(e, best) for e in tuning]},
            "held_out": [score(e, best) for e in held_out],
            "held_out_at_default": [score(e, args.default_threshold) for e in held_out],
            "default_threshold": args.default_threshold,
            "threshold_sweep_held_out": {e.meeting.name: {str(t): {k: v for k, v in score(e, t).items()
                                                                   if k in ("der", "labels", "speakers")}
                                                          for t in thresholds} for e in held_out},
            "wearer_demo": wearer_check(held_out[0], encoder, best, workdir),
            "reference_turns_as_utterances": {
                "why": "the clustering alone: the edge's VAD joins turns with pauses under 0.6 s into one "
                       "utterance, which can then carry one label only",
                "generated_summary": summary([score(e, best) for e in oracle[:len(tuning)]]),
                "held_out": [score(e, best) for e in oracle[len(tuning):]],
                "generated_summary_at_default": summary([score(e, args.default_threshold)
                                                          for e in oracle[:len(tuning)]]),
                "held_out_at_default": [score(e, args.default_threshold) for e in oracle[len(tuning):]]},
            "embed_cpu_s_per_audio_s_in_process": round(sum(e.cpu_seconds for e in tuning + held_out)
                                                        / sum(e.meeting.seconds for e in tuning + held_out), 4),
        }
        report["split_at_voice_change"] = split_report(args, encoder, generated, others, best)
        groups: dict[str, list[Meeting]] = {"generated": generated, "demo": others[:1], "mixed": others[1:]}
        if args.data and args.rapid:
            say(f"{args.rapid} quick conversations of real recorded people ...")
            groups["rapid"] = rapid_meetings(Path(args.data), args.rapid, args.seed)
        if args.rttm:
            groups["recorded"] = rttm_meetings(Path(args.rttm))
        say("whole utterances, one cut, several cuts ...")
        report["turn_cutting"] = cutting_report(args, encoder, {g: ms for g, ms in groups.items() if ms}, best)
        if args.asr:
            from meetmem.edge.asr import ASROptions, WhisperASR

            say(f"the whole edge with Whisper {args.asr}: with and without cutting at voice changes ...")
            asr = WhisperASR(ASROptions(model=args.asr, cpu_threads=args.asr_threads, beam_size=1))
            demo = others[0]
            references = {demo.name: " ".join(json.loads(line)["text"] for line in
                                               demo_lines() if line.strip())}
            report["edge_with_asr"] = {
                "model": args.asr, "threads": args.asr_threads, "threshold": args.default_threshold,
                "change_threshold": args.change_threshold,
                "meetings": edge_run([*others, *generated[:args.asr_generated]], asr, encoder,
                                     threshold=args.default_threshold, change_threshold=args.change_threshold,
                                     references=references)}
        if args.threads:
            wav = workdir / "demo.wav"
            import wave

            with wave.open(str(wav), "wb") as writer:
                writer.setnchannels(1)
                writer.setsampwidth(2)
                writer.setframerate(SR)
                writer.writeframes(held_out[0].meeting.samples.astype("<i2").tobytes())
            report["resources"] = []
            for threads in (int(t) for t in args.threads.split(",")):
                say(f"resources on {threads} thread(s) ...")
                report["resources"].append(resources(wav, threads))
    report["load_average"] = list(os.getloadavg())
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "speakers", parents=flags(JSON), help="speaker labels: DER, speaker counts, the encoder's CPU and memory",
        description="Label generated espeak-ng meetings, the demo meeting and (with --data) a meeting of real "
                    "recorded speakers mixed with espeak-ng voices the way the edge does (VAD utterances, "
                    "voice embeddings, online clustering); print DER (collar 0.25 s), speaker-count accuracy, "
                    "the threshold tuned on the generated meetings, the enrolled wearer's labels, and the "
                    "encoder's added CPU and RSS on 1 and 2 threads. The figures on stdout (one JSON object "
                    "with --json).")
    p.add_argument("--data", default=None, help="the shared data's audio folder (for the mixed real meeting)")
    p.add_argument("--meetings", type=int, default=8, help="generated meetings (default 8)")
    p.add_argument("--seed", type=int, default=19, help="seed of the generated meetings (default 19)")
    p.add_argument("--thresholds", default=",".join(str(t) for t in DEFAULT_THRESHOLDS),
                   help="cosine thresholds to try on the generated meetings")
    p.add_argument("--default-threshold", type=float, default=0.75,
                   help="the edge's default threshold, also scored on the held-out meetings (default 0.75)")
    p.add_argument("--change-threshold", type=float, default=None, metavar="COSINE",
                   help="the cosine between the two sides of a pause below which an utterance is cut into two "
                        "speakers' turns (default: the edge's, edge.speaker_turns.CHANGE_THRESHOLD)")
    p.add_argument("--change-thresholds", default="0.7,0.75,0.8,0.85",
                   help="change thresholds tried on the generated meetings ('' to skip the sweep)")
    p.add_argument("--rapid", type=int, default=6,
                   help="with --data: quick conversations of 3-4 real recorded people built from the clips "
                        "(short turns, turns 0.1-0.45 s apart, some overlapping; default 6, 0 to skip)")
    p.add_argument("--rttm", default=None, metavar="DIR",
                   help="recordings with reference turns: every NAME.wav under DIR with NAME.rttm beside it")
    p.add_argument("--short-change-thresholds", default="0.35,0.45,0.55",
                   help="short-turn change thresholds tried on the generated and quick meetings ('' to skip)")
    p.add_argument("--asr", default=None, metavar="MODEL",
                   help="also run the whole edge (VAD, speaker turns, Whisper MODEL, cleaning) on the held-out "
                        "meetings and --asr-generated generated ones, without and with the cut: DER of the stored "
                        "segments and the demo meeting's WER, in the same run")
    p.add_argument("--asr-threads", type=int, default=2, help="Whisper's threads with --asr (default 2)")
    p.add_argument("--asr-generated", type=int, default=2, help="generated meetings run with --asr (default 2)")
    p.add_argument("--threads", default="1,2", help="thread counts for the resource runs ('' to skip; default 1,2)")
    p.set_defaults(func=run)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(_worker(sys.argv[2])))
    else:
        sys.exit("usage: python -m meetmem.eval.bench.speakers --worker WAV (use `meetmem bench speakers`)")
