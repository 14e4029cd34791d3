"""`bench speakers`' meetings, every one with exact reference turns: generated espeak-ng meetings, the demo
meeting, real recorded clips mixed with espeak-ng voices, quick conversations of real people, and recordings
with RTTM files beside them (the kinds are described in `speakers`)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..harness.der import Turn

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


@dataclass
class Meeting:
    name: str
    samples: np.ndarray  # int16
    reference: list[Turn]
    kind: str

    @property
    def seconds(self) -> float:
        return len(self.samples) / SR


def render_line(text: str, voice: tuple[str, int, int], workdir: Path, index: int) -> np.ndarray:
    from ..sample_meeting import Utterance, Voice, render_utterance

    speech = render_utterance(Utterance("x", text), index, workdir, Voice(*voice))
    return np.frombuffer(speech.tobytes(), dtype=np.int16).copy()


def join_turns(turns: Sequence[tuple[str, np.ndarray]], rng: random.Random, name: str, kind: str,
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


def order_turns(pool: dict[str, list[np.ndarray]], rng: random.Random) -> list[tuple[str, np.ndarray]]:
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
            turns.append((f"spk{who}", render_line(rng.choice(lines), voices[who], workdir, t)))
        meetings.append(join_turns(turns, rng, f"generated-{m + 1}-{n}spk", "generated"))
    return meetings


def demo_lines() -> list[str]:
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
        pool[Path(clip).stem.split("-")[0]] = [p for piece in pieces for p in cut_turns(piece)]
    lines = [u.text for u in MEETING]
    for i, voice in enumerate(MIXED_VOICES):
        pool[f"espeak-{voice[0]}"] = [render_line(rng.choice(lines), voice, workdir, 100 * i + k) for k in range(3)]
    return join_turns(order_turns(pool, rng), rng, "mixed-real-and-espeak", "mixed", pause=(0.8, 1.5))


#: The real people among the shared English clips, each with its clips (FLEURS en_us test rows 002-004 are
#: one person: their embeddings are 0.82-0.92 alike, every other pair 0.46-0.72).
REAL_SPEAKERS = {"jfk": ("en/jfk.wav",), "librispeech-1995": ("en/librispeech-1995-1837-0001.wav",),
                 "ljspeech": ("en/ljspeech-LJ050-0131.wav",), "fleurs-a": ("en/fleurs-en_us-test-000.ogg",),
                 "fleurs-b": ("en/fleurs-en_us-test-001.ogg",),
                 "fleurs-c": tuple(f"en/fleurs-en_us-test-00{i}.ogg" for i in (2, 3, 4)),
                 "earnings22": ("en/earnings22_1_4482311_3_62.wav",)}


def speech_span(piece: np.ndarray) -> tuple[int, int]:
    """The first and last sample of speech in a piece: its 10 ms frames within 30 dB of its loud frames."""
    frames = len(piece) // 160
    if frames < 2:
        return 0, len(piece)
    energy = (piece[:frames * 160].astype(np.float64) ** 2).reshape(frames, 160).mean(axis=1)
    loud = np.flatnonzero(energy > np.percentile(energy, 95) * 1e-3)
    return int(loud[0]) * 160, (int(loud[-1]) + 1) * 160


def conversation_pieces(speech: np.ndarray, rng: random.Random) -> list[np.ndarray]:
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
    short and long pieces (`conversation_pieces`); turns follow each other mostly within 0.1-0.45 s (under the VAD's
    closing pause: one utterance holds several people), a fifth 0.8-1.5 s apart, a tenth overlapping the
    one before by 0.1-0.4 s (mixed). Reference turns: each piece's speech (`speech_span`)."""
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
        left = {who: [p for u in voices[who] for p in conversation_pieces(u, rng)] for who in people}
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
            a, b = speech_span(piece)
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


def cut_turns(speech: np.ndarray, longest: float = 4.0) -> list[np.ndarray]:
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
