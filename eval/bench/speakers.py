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


@dataclass(frozen=True)
class Cutting:
    """How utterances are cut where the voice changes inside them (`edge.speaker_turns.speaker_turns`)."""

    change: float
    short: float | None
    max_turns: int
    candidates: int

    def public(self) -> dict[str, Any]:
        return {"change_threshold": self.change, "short_change_threshold": self.short,
                "max_turns": self.max_turns, "candidates": self.candidates}


def edge_cutting(change: float | None = None, short: float | None = -1.0) -> Cutting:
    """The edge's cutting today (`edge.speaker_turns` defaults), a threshold changed where given."""
    from meetmem.edge import speaker_turns as sp

    return Cutting(sp.CHANGE_THRESHOLD if change is None else change,
                   sp.SHORT_CHANGE_THRESHOLD if short == -1.0 else short, sp.MAX_TURNS, sp.CHANGE_CANDIDATES)


#: The cut before more than one cut per utterance: once at most, both sides 1.6 s or more, 3 pauses tried.
SINGLE_CUT = Cutting(0.8, None, 2, 3)


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


#: The real people among the shared English clips, each with its clips (FLEURS en_us test rows 002-004 are
#: one person: their embeddings are 0.82-0.92 alike, every other pair 0.46-0.72).
REAL_SPEAKERS = {"jfk": ("en/jfk.wav",), "librispeech-1995": ("en/librispeech-1995-1837-0001.wav",),
                 "ljspeech": ("en/ljspeech-LJ050-0131.wav",), "fleurs-a": ("en/fleurs-en_us-test-000.ogg",),
                 "fleurs-b": ("en/fleurs-en_us-test-001.ogg",),
                 "fleurs-c": tuple(f"en/fleurs-en_us-test-00{i}.ogg" for i in (2, 3, 4)),
                 "earnings22": ("en/earnings22_1_4482311_3_62.wav",)}


def _speech_span(piece: np.ndarray) -> tuple[int, int]:
    """The first and last sample of speech in a piece: its 10 ms frames within 30 dB of its loud frames."""
    frames = len(piece) // 160
    if frames < 2:
        return 0, len(piece)
    energy = (piece[:frames * 160].astype(np.float64) ** 2).reshape(frames, 160).mean(axis=1)
    loud = np.flatnonzero(energy > np.percentile(energy, 95) * 1e-3)
    return int(loud[0]) * 160, (int(loud[-1]) + 1) * 160


def _pieces(speech: np.ndarray, rng: random.Random) -> list[np.ndarray]:
    """A real utterance cut at its quietest 50 ms near lengths drawn as a conversation's: two in five short
    (0.6-1.5 s: "yes.", "no, Tuesday."), the rest 1.5-4 s; a tail under 0.6 s joins the last piece."""
    out = []
    window = int(0.05 * SR)
    while len(speech) > 0.6 * SR:
        target = rng.uniform(0.6, 1.5) if rng.random() < 0.4 else rng.uniform(1.5, 4.0)
        lo, hi = int(0.8 * target * SR), int(1.2 * target * SR)
        if hi + int(0.6 * SR) >= len(speech):
            out.append(speech)
            return out
        energy = [float(np.mean(speech[i:i + window].astype(np.float64) ** 2)) for i in range(lo, hi, window)]
        cut = lo + window * int(np.argmin(energy)) + window // 2
        out.append(speech[:cut])
        speech = speech[cut:]
    if out and len(speech):
        out[-1] = np.concatenate([out[-1], speech])
    return out


def rapid_meetings(data: Path, count: int, seed: int) -> list[Meeting]:
    """Conversations of 3 or 4 real people (`REAL_SPEAKERS`), quick exchanges: each person's clips cut into
    short and long pieces (`_pieces`); turns follow each other mostly within 0.1-0.45 s (under the VAD's
    closing pause: one utterance holds several people), a fifth 0.8-1.5 s apart, a tenth overlapping the
    one before by 0.1-0.4 s (mixed). Reference turns: each piece's speech (`_speech_span`)."""
    from meetmem.edge.audio import decode_file
    from meetmem.edge.vad import segment

    voices: dict[str, list[np.ndarray]] = {}
    for who, clips in REAL_SPEAKERS.items():
        utterances = []
        for clip in clips:
            if not (data / clip).exists():
                raise FileNotFoundError(f"{data / clip} is missing: --data must be the shared data's audio folder")
            utterances += [(u.audio * 32768).astype(np.int16) for u in segment(decode_file(str(data / clip)))]
        voices[who] = utterances
    meetings = []
    for m in range(count):
        rng = random.Random(seed * 1000 + m)
        people = rng.sample(sorted(voices), 3 + m % 2)
        left = {who: [p for u in voices[who] for p in _pieces(u, rng)] for who in people}
        for pieces in left.values():
            rng.shuffle(pieces)
        out = np.zeros(int(0.5 * SR), dtype=np.int32)
        at = len(out)
        reference: list[Turn] = []
        last = None
        for _ in range(24):
            choices = [w for w in people if left[w] and w != last]
            if not choices:
                break
            who = rng.choice(choices)
            piece = left[who].pop()
            roll = rng.random()
            gap = rng.uniform(-0.4, -0.1) if roll < 0.1 and reference else (
                rng.uniform(0.8, 1.5) if roll < 0.3 else rng.uniform(0.1, 0.45))
            start = max(int(0.5 * SR), at + int(gap * SR))
            end = start + len(piece)
            if end > len(out):
                out = np.concatenate([out, np.zeros(end - len(out), dtype=np.int32)])
            out[start:end] += piece
            a, b = _speech_span(piece)
            reference.append(((start + a) / SR, (start + b) / SR, who))
            at = max(at, end)
            last = who
        samples = np.clip(np.concatenate([out, np.zeros(int(0.5 * SR), np.int32)]), -32768, 32767).astype(np.int16)
        meetings.append(Meeting(f"rapid-real-{m + 1}-{len(people)}spk", samples, sorted(reference), "rapid"))
    return meetings


def read_rttm(path: Path) -> dict[str, list[Turn]]:
    """An RTTM file's SPEAKER lines as turns, by recording.

    Raises:
        ValueError: a line that is not an RTTM SPEAKER line (names the file and line).
    """
    out: dict[str, list[Turn]] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        fields = line.split()
        if not fields or fields[0] != "SPEAKER":
            continue
        try:
            start, duration = float(fields[3]), float(fields[4])
            out.setdefault(fields[1], []).append((start, start + duration, fields[7]))
        except (IndexError, ValueError) as exc:
            raise ValueError(f"{path}:{number} is not an RTTM SPEAKER line: {line!r}") from exc
    return out


def rttm_meetings(folder: Path) -> list[Meeting]:
    """Every recording `NAME.wav` under `folder` with its reference turns in `NAME.rttm` beside it.

    Raises:
        FileNotFoundError: the folder holds no such pair.
    """
    from meetmem.edge.audio import decode_file

    meetings = []
    for rttm in sorted(Path(folder).rglob("*.rttm")):
        wav = rttm.with_suffix(".wav")
        if not wav.exists():
            continue
        turns = read_rttm(rttm).get(rttm.stem) or [t for ts in read_rttm(rttm).values() for t in ts]
        samples = (decode_file(str(wav)) * 32768).astype(np.int16)
        meetings.append(Meeting(f"rttm-{rttm.stem}", samples, sorted(turns), "recorded"))
    if not meetings:
        raise FileNotFoundError(f"{folder} holds no NAME.wav with its NAME.rttm")
    return meetings


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
                  change_threshold: float | None = None, cutting: Cutting | None = None) -> Embedded:
    """The edge's VAD utterances embedded; with `oracle`, the reference turns instead (what the clustering
    alone gets right, when no utterance holds two speakers); with `cutting` (or `change_threshold`, the
    edge's cutting at that threshold), each utterance cut where the voice changes inside it first, as the
    edge does (`edge.speaker_turns.speaker_turns`)."""
    from meetmem.edge.speaker_turns import speaker_turns
    from meetmem.edge.vad import segment

    if cutting is None and change_threshold is not None:
        cutting = edge_cutting(change_threshold)

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
            if cutting is None:
                spans.append((utterance.start, utterance.end))
                embeddings.append(encoder.embed(utterance.audio))
                continue
            turns.append((utterance.start, speaker_turns(encoder, utterance.audio, cutting.change, cutting.short,
                                                         max_turns=cutting.max_turns,
                                                         candidates=cutting.candidates)))
    return Embedded(meeting, spans, embeddings, time.process_time() - started,
                    turns if cutting is not None else None)


def label(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None) -> list[Turn]:
    """The tracker's labels for the embedded utterances, in order (the encoder is not run again)."""
    return _labelled(embedded, threshold, wearer)[0]


#: The clustering before a short turn needed less likeness to join a voice: one threshold for every turn of
#: 1 s or more (`edge.speakers.SpeakerOptions.new_voice_seconds` 0), scored beside the edge's rule.
ONE_THRESHOLD_RULE: dict[str, Any] = {"new_voice_seconds": 0.0}


def _labelled(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None,
              rule: dict[str, Any] | None = None) -> tuple[list[Turn], list[tuple[float, float]], list[float]]:
    """`label`'s turns, the utterances' spans, and where an utterance was cut (seconds); `rule`: other
    `SpeakerOptions` fields than the edge's defaults."""
    from meetmem.edge.speakers import SpeakerOptions, SpeakerTracker

    options = SpeakerOptions(threshold=threshold, wearer_threshold=threshold, **(rule or {}))
    tracker = SpeakerTracker(encoder=None, options=options, wearer=wearer)  # type: ignore[arg-type]
    if embedded.turns is not None:
        out, spans, cuts = [], [], []
        for at, candidates in embedded.turns:
            spans.append((at + candidates[0].start / SR, at + candidates[-1].end / SR))
            for i, turn in enumerate(tracker.merge_same(candidates)):
                start, end = at + turn.start / SR, at + turn.end / SR
                out.append((start, end, tracker.assign(turn.embedding, end - start)))
                if i:
                    cuts.append(start)
        return out, spans, cuts
    turns = [(start, end, tracker.assign(e, end - start))
             for (start, end), e in zip(embedded.spans, embedded.embeddings, strict=True)]
    return turns, list(embedded.spans), []


#: A cut this close to a change of speaker in the reference found it.
CUT_TOLERANCE_S = 0.25


def changes(reference: Sequence[Turn]) -> list[tuple[float, float]]:
    """Where the reference's speaker changes, as intervals: the gap between two people's turns, or the
    overlap when the second starts before the first ends."""
    ordered = sorted(reference)
    return [(min(end, start), max(end, start))
            for (_, end, who), (start, _, nxt) in zip(ordered, ordered[1:], strict=False) if who != nxt]


def cut_stats(reference: Sequence[Turn], spans: Sequence[tuple[float, float]], cuts: Sequence[float]) -> dict[str, Any]:
    """How the cuts inside utterances match the reference's changes of speaker: a cut further than
    `CUT_TOLERANCE_S` from every change (`changes`) is false (one person's speech split in two); a change
    inside an utterance (its middle not within the tolerance of the utterance's ends) is found when a cut
    is that close. An utterance of one voice (no change inside) that was cut is counted too."""
    moments = changes(reference)

    def near(cut: float, change: tuple[float, float]) -> bool:
        return change[0] - CUT_TOLERANCE_S <= cut <= change[1] + CUT_TOLERANCE_S

    inside = [c for c in moments
              if any(a + CUT_TOLERANCE_S < (c[0] + c[1]) / 2 < b - CUT_TOLERANCE_S for a, b in spans)]
    false = [c for c in cuts if not any(near(c, m) for m in moments)]
    one_voice = [(a, b) for a, b in spans if not any(a < (m[0] + m[1]) / 2 < b for m in moments)]
    return {"cuts": len(cuts), "false_cuts": len(false),
            "changes_inside_utterances": len(inside),
            "changes_found": sum(any(near(c, m) for c in cuts) for m in inside),
            "one_voice_utterances": len(one_voice),
            "one_voice_utterances_cut": sum(any(a < c < b for c in cuts) for a, b in one_voice)}


def score(embedded: Embedded, threshold: float, wearer: np.ndarray | None = None,
          rule: dict[str, Any] | None = None) -> dict[str, Any]:
    hypothesis, spans, cuts = _labelled(embedded, threshold, wearer, rule)
    reference = embedded.meeting.reference
    result = diarization_error(reference, hypothesis)
    no_collar = diarization_error(reference, hypothesis, collar=0.0)
    ref_count = len({t[2] for t in reference})
    hyp_count = len({t[2] for t in hypothesis})
    return {"meeting": embedded.meeting.name, "kind": embedded.meeting.kind,
            "seconds": round(embedded.meeting.seconds, 1), "utterances": len(hypothesis),
            "speakers": ref_count, "labels": hyp_count, "count_right": ref_count == hyp_count,
            **result.public(), "der_no_collar": round(no_collar.der, 4),
            "no_collar_errors_s": round(no_collar.missed + no_collar.false_alarm + no_collar.confusion, 2),
            "no_collar_scored_s": round(no_collar.scored, 2), **cut_stats(reference, spans, cuts)}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = sum(r["scored_s"] for r in rows)
    errors = sum(r["missed_s"] + r["false_alarm_s"] + r["confusion_s"] for r in rows)
    loose = sum(r["no_collar_scored_s"] for r in rows)
    cuts = sum(r["cuts"] for r in rows)
    inside = sum(r["changes_inside_utterances"] for r in rows)
    one_voice = sum(r["one_voice_utterances"] for r in rows)
    return {"meetings": len(rows), "der_pooled": round(errors / scored, 4) if scored else None,
            "der_pooled_no_collar": round(sum(r["no_collar_errors_s"] for r in rows) / loose, 4) if loose else None,
            "der_mean": round(float(np.mean([r["der"] for r in rows])), 4),
            "cuts": cuts, "false_cuts": sum(r["false_cuts"] for r in rows),
            "false_cut_rate": round(sum(r["false_cuts"] for r in rows) / cuts, 3) if cuts else None,
            "changes_inside_utterances": inside,
            "change_recall": round(sum(r["changes_found"] for r in rows) / inside, 3) if inside else None,
            "one_voice_utterances_cut": f"{sum(r['one_voice_utterances_cut'] for r in rows)}/{one_voice}",
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
            rows[way] = {"at_default_threshold": _summary(at_default),
                         "at_best_threshold": _summary([score(e, best) for e in embedded]),
                         "meetings_at_default": [{k: v for k, v in r.items() if k != "mapping"} for r in at_default]}
            one = [score(e, args.default_threshold, rule=ONE_THRESHOLD_RULE) for e in embedded]
            rows[way]["one_threshold_rule_at_default"] = _summary(one)  # the clustering before, same turns
            rows[way]["one_threshold_rule_labels"] = [r["labels"] for r in one]
        out["groups"][group] = rows
    out["embed_cpu_s_per_audio_s_in_process"] = {way: round(c / seconds, 4) for way, c in cpu.items()}
    sweep: dict[str, Any] = {}
    for short in (float(t) for t in args.short_change_thresholds.split(",") if t.strip()):
        cutting = edge_cutting(short=short)
        sweep[str(short)] = {group: _summary([score(embed_meeting(m, encoder, cutting=cutting), args.default_threshold)
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
            sweep[threshold] = _summary([score(e, threshold) for e in tuning])
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
                "generated_summary": _summary([score(e, best) for e in oracle[:len(tuning)]]),
                "held_out": [score(e, best) for e in oracle[len(tuning):]],
                "generated_summary_at_default": _summary([score(e, args.default_threshold)
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
