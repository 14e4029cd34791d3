"""`meetmem bench speakers`: how well the edge tells speakers apart, and what it costs.

The edge's own path, minus the recogniser (which does not change a label): the meeting's audio through the
edge's VAD (`edge.vad.segment`), each utterance embedded by `edge.speakers.VoiceEncoder` and labelled by
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
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..harness.der import Turn, diarization_error

SR = 16000
#: espeak-ng voices for the generated meetings: none of the demo meeting's four (en-us+f3, en-gb+m3, en-us+m7,
#: en-gb+f4), so the demo stays held out.
GENERATED_VOICES = (("en-us", 50, 160), ("en+f2", 60, 165), ("en+Andy", 40, 155), ("en-us+klatt", 50, 150),
                    ("en+Tweaky", 55, 160), ("en+f4", 75, 170), ("en+croak", 35, 150))
MIXED_VOICES = (("en+f2", 60, 165), ("en+Andy", 40, 155))
REAL_CLIPS = ("en/jfk.wav", "en/librispeech-1995-1837-0001.wav", "en/ljspeech-LJ050-0131.wav",
              "en/fleurs-en_us-test-000.ogg")
ENROLL_LINES = ("I usually take the early train, so I can be at my desk before eight.",
                "Could you send me the numbers when you have them, and I will go through them tonight.")
DEFAULT_THRESHOLDS = (0.70, 0.75, 0.80, 0.84, 0.86, 0.88, 0.90, 0.92, 0.94)


@dataclass
class Meeting:
    name: str
    samples: np.ndarray  # int16
    reference: list[Turn]
    kind: str

    @property
    def seconds(self) -> float:
        return len(self.samples) / SR


@dataclass
class Embedded:
    """The edge's utterances of a meeting, each with its embedding."""

    meeting: Meeting
    spans: list[tuple[float, float]]
    embeddings: list[np.ndarray]
    cpu_seconds: float
    #: With a change threshold: each utterance's start (s) and its candidate turns, which the tracker joins
    #: again where their labels would be the same (`SpeakerTracker.merge_same`); `spans` are then unused.
    turns: list[tuple[float, list[Any]]] | None = None


# -- meetings ---------------------------------------------------------------------------------------------

def _render(text: str, voice: tuple[str, int, int], workdir: Path, index: int) -> np.ndarray:
    from ..sample_meeting import Utterance, Voice, render_utterance

    speech = render_utterance(Utterance("x", text), index, workdir, Voice(*voice))
    return np.frombuffer(speech.tobytes(), dtype=np.int16).copy()


def _join(turns: Sequence[tuple[str, np.ndarray]], rng: random.Random, name: str, kind: str,
          pause: tuple[float, float] = (0.3, 1.2)) -> Meeting:
    parts = [np.zeros(int(0.5 * SR), dtype=np.int16)]
    at = len(parts[0])
    reference: list[Turn] = []
    for i, (who, speech) in enumerate(turns):
        if i:
            gap = np.zeros(int(rng.uniform(*pause) * SR), dtype=np.int16)
            parts.append(gap)
            at += len(gap)
        reference.append((at / SR, (at + len(speech)) / SR, who))
        parts.append(speech)
        at += len(speech)
    parts.append(np.zeros(int(0.5 * SR), dtype=np.int16))
    return Meeting(name, np.concatenate(parts), reference, kind)


def _order(pool: dict[str, list[np.ndarray]], rng: random.Random) -> list[tuple[str, np.ndarray]]:
    """Every piece once, shuffled so that no speaker talks twice in a row where it can be avoided."""
    left = {who: list(pieces) for who, pieces in pool.items()}
    out: list[tuple[str, np.ndarray]] = []
    last = None
    while any(left.values()):
        choices = [w for w, p in left.items() if p and w != last] or [w for w, p in left.items() if p]
        weights = [len(left[w]) for w in choices]
        who = rng.choices(choices, weights)[0]
        out.append((who, left[who].pop(0)))
        last = who
    return out


def generated_meetings(count: int, seed: int, workdir: Path) -> list[Meeting]:
    from ..sample_meeting import MEETING

    lines = [u.text for u in MEETING]
    meetings = []
    for m in range(count):
        rng = random.Random(seed + m)
        n = 2 + m % 4  # 2, 3, 4, 5 speakers
        voices = rng.sample(GENERATED_VOICES, n)
        turns: list[tuple[str, np.ndarray]] = []
        last = None
        for t in range(14 + 2 * n):
            who = rng.choice([v for v in range(n) if v != last])
            last = who
            turns.append((f"spk{who}", _render(rng.choice(lines), voices[who], workdir, t)))
        meetings.append(_join(turns, rng, f"generated-{m + 1}-{n}spk", "generated"))
    return meetings


def _demo_lines() -> list[str]:
    from importlib.resources import files

    return (files("meetmem.demo_data") / "sample_meeting.jsonl").read_text().splitlines()


def demo_meeting() -> Meeting:
    from importlib.resources import files

    from meetmem.edge.audio import decode_file

    folder = files("meetmem.demo_data")
    samples = (decode_file(str(folder / "sample_meeting.ogg")) * 32768).astype(np.int16)
    lines = (folder / "sample_meeting.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines if line.strip()]
    reference = [(float(r["start"]), float(r["end"]), str(r["speaker"])) for r in rows]
    return Meeting("demo", samples, reference, "demo")


def mixed_meeting(data: Path, seed: int, workdir: Path) -> Meeting:
    from meetmem.edge.audio import decode_file
    from meetmem.edge.vad import segment

    from ..sample_meeting import MEETING

    rng = random.Random(seed)
    pool: dict[str, list[np.ndarray]] = {}
    for clip in REAL_CLIPS:
        path = data / clip
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing: --data must be the shared data's audio folder")
        samples = decode_file(str(path))
        pieces = [(u.audio * 32768).astype(np.int16) for u in segment(samples)]
        pool[Path(clip).stem.split("-")[0]] = [p for piece in pieces for p in _cut(piece)]
    lines = [u.text for u in MEETING]
    for i, voice in enumerate(MIXED_VOICES):
        pool[f"espeak-{voice[0]}"] = [_render(rng.choice(lines), voice, workdir, 100 * i + k) for k in range(3)]
    return _join(_order(pool, rng), rng, "mixed-real-and-espeak", "mixed", pause=(0.8, 1.5))


def _cut(speech: np.ndarray, longest: float = 4.0) -> list[np.ndarray]:
    """A real utterance as turns of at most `longest` seconds, cut at the quietest 50 ms in each turn's
    second half (so more turns change speaker)."""
    out = []
    while len(speech) > longest * SR:
        window = int(0.05 * SR)
        half, end = int(longest * SR / 2), int(longest * SR)
        energy = [float(np.mean(speech[i:i + window].astype(np.float64) ** 2)) for i in range(half, end - window,
                                                                                                window)]
        cut = half + window * int(np.argmin(energy)) + window // 2
        out.append(speech[:cut])
        speech = speech[cut:]
    return [*out, speech]


# -- the edge's labels --------------------------------------------------------------------------------------

def embed_meeting(meeting: Meeting, encoder: Any, *, oracle: bool = False,
                  change_threshold: float | None = None) -> Embedded:
    """The edge's VAD utterances embedded; with `oracle`, the reference turns instead (what the clustering
    alone gets right, when no utterance holds two speakers); with `change_threshold`, each utterance cut
    where the voice changes inside it first, as the edge does (`edge.speakers.speaker_turns`)."""
    from meetmem.edge.speakers import speaker_turns
    from meetmem.edge.vad import segment

    spans, embeddings = [], []
    turns: list[tuple[float, list[Any]]] = []
    started = time.process_time()
    if oracle:
        for start, end, _ in meeting.reference:
            spans.append((start, end))
            audio = meeting.samples[int(start * SR):int(end * SR)].astype(np.float32) / 32768.0
            embeddings.append(encoder.embed(audio))
    else:
        for utterance in segment(meeting.samples):
            if change_threshold is None:
                spans.append((utterance.start, utterance.end))
                embeddings.append(encoder.embed(utterance.audio))
                continue
            turns.append((utterance.start, speaker_turns(encoder, utterance.audio, change_threshold)))
    return Embedded(meeting, spans, embeddings, time.process_time() - started,
                    turns if change_threshold is not None else None)


def label(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None) -> list[Turn]:
    """The tracker's labels for the embedded utterances, in order (the encoder is not run again)."""
    from meetmem.edge.speakers import SpeakerOptions, SpeakerTracker

    tracker = SpeakerTracker(encoder=None, options=SpeakerOptions(threshold=threshold, wearer_threshold=threshold),
                             wearer=wearer)  # type: ignore[arg-type]
    if embedded.turns is not None:
        out = []
        for at, candidates in embedded.turns:
            for turn in tracker.merge_same(candidates):
                start, end = at + turn.start / SR, at + turn.end / SR
                out.append((start, end, tracker.assign(turn.embedding, end - start)))
        return out
    return [(start, end, tracker.assign(e, end - start))
            for (start, end), e in zip(embedded.spans, embedded.embeddings, strict=True)]


def score(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None) -> dict[str, Any]:
    hypothesis = label(embedded, threshold, wearer)
    result = diarization_error(embedded.meeting.reference, hypothesis)
    ref_count = len({t[2] for t in embedded.meeting.reference})
    hyp_count = len({t[2] for t in hypothesis})
    return {"meeting": embedded.meeting.name, "kind": embedded.meeting.kind,
            "seconds": round(embedded.meeting.seconds, 1), "utterances": len(hypothesis),
            "speakers": ref_count, "labels": hyp_count, "count_right": ref_count == hyp_count,
            **result.public()}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = sum(r["scored_s"] for r in rows)
    errors = sum(r["missed_s"] + r["false_alarm_s"] + r["confusion_s"] for r in rows)
    return {"meetings": len(rows), "der_pooled": round(errors / scored, 4) if scored else None,
            "der_mean": round(float(np.mean([r["der"] for r in rows])), 4),
            "speaker_count_accuracy": round(sum(r["count_right"] for r in rows) / len(rows), 3),
            "speaker_count_abs_error_mean": round(float(np.mean([abs(r["labels"] - r["speakers"]) for r in rows])), 2)}


def wearer_check(embedded: Embedded, encoder: Any, threshold: float, workdir: Path) -> dict[str, Any]:
    """The demo meeting with Alice enrolled from two sentences she does not say in it: how many of her
    utterances are labelled the wearer, and how many of the others' are."""
    from meetmem.edge.speakers import WEARER_LABEL

    from ..sample_meeting import VOICES

    voice = VOICES["Alice"]
    enroll = np.concatenate([_render(line, (voice.name, voice.pitch, voice.words_per_minute), workdir, 900 + i)
                             for i, line in enumerate(ENROLL_LINES)]).astype(np.float32) / 32768.0
    wearer = encoder.embed(enroll)
    hypothesis = label(embedded, threshold, wearer)

    def owner(start: float, end: float) -> str | None:
        best, most = None, 0.0
        for a, b, who in embedded.meeting.reference:
            shared = min(b, end) - max(a, start)
            if shared > most:
                best, most = who, shared
        return best

    hers = [h for h in hypothesis if owner(h[0], h[1]) == "Alice"]
    others = [h for h in hypothesis if owner(h[0], h[1]) != "Alice"]
    return {"enrolled_seconds": round(len(enroll) / SR, 1),
            "wearer_utterances_labelled_wearer": f"{sum(h[2] == WEARER_LABEL for h in hers)}/{len(hers)}",
            "other_utterances_labelled_wearer": f"{sum(h[2] == WEARER_LABEL for h in others)}/{len(others)}",
            **{f"with_wearer_{k}": v for k, v in score(embedded, threshold, wearer).items()
               if k in ("der", "labels", "speakers")}}


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
    from meetmem.edge.speakers import VoiceEncoder

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
    speech = sum(len(u.audio) for u in utterances) / SR
    audio = len(samples) / SR
    return {"audio_s": round(audio, 1), "speech_s": round(speech, 1), "utterances": len(utterances),
            "load_cpu_s": round(load_cpu, 2), "rss_before_mb": round(before, 1),
            "added_rss_loaded_mb": round(loaded - before, 1), "added_rss_peak_mb": round(peak - before, 1),
            "embed_cpu_s": round(cpu, 2), "embed_wall_s": round(wall, 2),
            "cpu_pct_of_one_core": round(100 * cpu / audio, 2),
            "ms_per_utterance": round(1000 * cpu / max(1, len(utterances)), 1),
            "cpu_s_per_speech_s": round(cpu / speech, 4) if speech else None}


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
    """DER with each utterance cut where the voice changes (`edge.speakers.speaker_turns`): the change
    thresholds swept on the generated meetings, and the held-out meetings at the edge's defaults."""
    sweep: dict[str, Any] = {}
    for change in (float(t) for t in args.change_thresholds.split(",") if t.strip()):
        embedded = [embed_meeting(m, encoder, change_threshold=change) for m in generated]
        sweep[str(change)] = {"at_best_threshold": _summary([score(e, best) for e in embedded]),
                              "at_default_threshold": _summary([score(e, args.default_threshold) for e in embedded])}
    tuning = [embed_meeting(m, encoder, change_threshold=args.change_threshold) for m in generated]
    held_out = [embed_meeting(m, encoder, change_threshold=args.change_threshold) for m in others]
    seconds = sum(e.meeting.seconds for e in tuning + held_out)
    return {"change_threshold": args.change_threshold, "change_threshold_sweep_generated": sweep,
            "generated_summary": _summary([score(e, best) for e in tuning]),
            "generated_summary_at_default": _summary([score(e, args.default_threshold) for e in tuning]),
            "held_out": [score(e, best) for e in held_out],
            "held_out_at_default": [score(e, args.default_threshold) for e in held_out],
            "embed_cpu_s_per_audio_s_in_process": round(sum(e.cpu_seconds for e in tuning + held_out) / seconds, 4)}


# -- the command ------------------------------------------------------------------------------------------

def run(args: argparse.Namespace, ctx: Any = None) -> int:
    from meetmem.edge.speakers import VoiceEncoder

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    thresholds = tuple(float(t) for t in args.thresholds.split(","))
    if args.change_threshold is None:
        from meetmem.edge.speakers import CHANGE_THRESHOLD

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
            sweep[threshold] = _summary([score(e, threshold) for e in tuning])
        best = min(thresholds, key=lambda t: (sweep[t]["der_pooled"], -sweep[t]["speaker_count_accuracy"]))
        say(f"threshold {best} is best on the generated meetings")
        report: dict[str, Any] = {
            "encoder": "resemblyzer 0.1.4 GE2E weights, numpy (edge/speakers.py)",
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
                "generated_summary": _summary([score(e, best) for e in oracle[:len(tuning)]]),
                "held_out": [score(e, best) for e in oracle[len(tuning):]],
                "generated_summary_at_default": _summary([score(e, args.default_threshold)
                                                          for e in oracle[:len(tuning)]]),
                "held_out_at_default": [score(e, args.default_threshold) for e in oracle[len(tuning):]]},
            "embed_cpu_s_per_audio_s_in_process": round(sum(e.cpu_seconds for e in tuning + held_out)
                                                        / sum(e.meeting.seconds for e in tuning + held_out), 4),
        }
        report["split_at_voice_change"] = split_report(args, encoder, generated, others, best)
        if args.asr:
            from meetmem.edge.asr import ASROptions, WhisperASR

            say(f"the whole edge with Whisper {args.asr}: with and without cutting at voice changes ...")
            asr = WhisperASR(ASROptions(model=args.asr, cpu_threads=args.asr_threads, beam_size=1))
            demo = others[0]
            references = {demo.name: " ".join(json.loads(line)["text"] for line in
                                               _demo_lines() if line.strip())}
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
    print(json.dumps(report, indent=1))
    return 0


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "speakers", parents=[common], help="speaker labels: DER, speaker counts, the encoder's CPU and memory",
        description="Label generated espeak-ng meetings, the demo meeting and (with --data) a meeting of real "
                    "recorded speakers mixed with espeak-ng voices the way the edge does (VAD utterances, "
                    "voice embeddings, online clustering); print DER (collar 0.25 s), speaker-count accuracy, "
                    "the threshold tuned on the generated meetings, the enrolled wearer's labels, and the "
                    "encoder's added CPU and RSS on 1 and 2 threads. One JSON object on stdout.")
    p.add_argument("--data", default=None, help="the shared data's audio folder (for the mixed real meeting)")
    p.add_argument("--meetings", type=int, default=8, help="generated meetings (default 8)")
    p.add_argument("--seed", type=int, default=19, help="seed of the generated meetings (default 19)")
    p.add_argument("--thresholds", default=",".join(str(t) for t in DEFAULT_THRESHOLDS),
                   help="cosine thresholds to try on the generated meetings")
    p.add_argument("--default-threshold", type=float, default=0.75,
                   help="the edge's default threshold, also scored on the held-out meetings (default 0.75)")
    p.add_argument("--change-threshold", type=float, default=None, metavar="COSINE",
                   help="the cosine between the two sides of a pause below which an utterance is cut into two "
                        "speakers' turns (default: the edge's, edge.speakers.CHANGE_THRESHOLD)")
    p.add_argument("--change-thresholds", default="0.7,0.75,0.8,0.85",
                   help="change thresholds tried on the generated meetings ('' to skip the sweep)")
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
