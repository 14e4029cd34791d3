"""Synthesise the sample product meeting used by the README demo.

The demo needs a meeting whose exact words, names, numbers, dates and timestamps are known in advance, so
that "what exactly did she say the deadline was?" has a checkable answer. Rather than ship a recording of
real people, the meeting is generated here from a script held as data: each utterance is spoken by
espeak-ng in a per-speaker voice, resampled to 16 kHz mono 16-bit with sox, trimmed of leading and
trailing silence, and joined with short seeded pauses. Segment timestamps are computed from the rendered
sample counts, so they match the audio to the sample.

Outputs (in --out):
  sample_meeting.jsonl    transcript interchange format, one segment per line
  sample_meeting.ogg      the whole meeting, Ogg Vorbis
  sample_questions.jsonl  paraphrased questions with the exact expected value and the answer's start

Standalone on purpose: standard library plus the ``espeak-ng`` and ``sox`` commands.

    python -m meetmem.eval.sample_meeting --out meetmem/demo_data
    python eval/sample_meeting.py --out meetmem/demo_data
"""

from __future__ import annotations

import argparse
import array
import json
import logging
import random
import re
import shutil
import subprocess
import sys
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("meetmem.eval.sample_meeting")

SAMPLE_RATE = 16_000
SAMPLE_WIDTH = 2  # bytes, 16-bit signed PCM
PAUSE_SECONDS = (0.3, 1.2)
LEAD_IN_SECONDS = 0.5
TAIL_SECONDS = 0.5
# About -60 dBFS. espeak-ng pads with near-digital silence, but quiet word-final consonants (the "ch"
# of "batch") sit near -45 dBFS, so a higher threshold would clip real speech off the end.
SILENCE_THRESHOLD = 32
PAUSE_SEED = 20250304
OGG_QUALITY = 0  # Vorbis quality -1..10; 0 is plenty for 16 kHz speech
OGG_SIZE_LIMIT = 1_000_000

TRANSCRIPT_FILE = "sample_meeting.jsonl"
AUDIO_FILE = "sample_meeting.ogg"
QUESTIONS_FILE = "sample_questions.jsonl"


@dataclass(frozen=True)
class Voice:
    """How espeak-ng speaks for one meeting participant."""

    name: str  # espeak-ng voice with variant, e.g. "en-us+f3"
    pitch: int  # 0..99
    words_per_minute: int


@dataclass(frozen=True)
class Utterance:
    speaker: str
    text: str


@dataclass(frozen=True)
class Segment:
    """An utterance placed on the meeting timeline, in seconds."""

    start: float
    end: float
    speaker: str
    text: str


@dataclass(frozen=True)
class Question:
    """A user question; ``anchor`` picks the segment holding the answer (defaults to ``expected``)."""

    question: str
    expected: str
    anchor: str = ""


# --------------------------------------------------------------------------------------------------
# The meeting script (data).
# --------------------------------------------------------------------------------------------------

VOICES: dict[str, Voice] = {
    "Alice": Voice("en-us+f3", pitch=62, words_per_minute=160),
    "Bob": Voice("en-gb+m3", pitch=38, words_per_minute=155),
    "Chen Wei": Voice("en-us+m7", pitch=48, words_per_minute=150),
    "Dana": Voice("en-gb+f4", pitch=70, words_per_minute=165),
}

MEETING: tuple[Utterance, ...] = tuple(
    Utterance(speaker, text)
    for speaker, text in (
        ("Alice", "Okay, I think everyone's here. Good morning Bob, Chen Wei, Dana."),
        ("Bob", "Morning. Sorry I'm a couple of minutes late, the train was slow again."),
        ("Dana", "No worries, we only just started."),
        ("Alice", "Today is all about the launch hardware for the new glasses. Let's start with the casing."),
        (
            "Chen Wei",
            "We tested both samples last week. The aluminium one survived every drop, "
            "the plastic one cracked twice.",
        ),
        ("Bob", "Aluminium is more expensive, though. The supplier quoted $4,250 for the tooling."),
        ("Alice", "Is that a one-off cost, or per unit?"),
        ("Bob", "One-off. Per unit it's about two dollars more than plastic."),
        ("Dana", "Honestly, customers will notice the metal. It feels premium when you pick it up."),
        ("Alice", "Okay. So we decided to go with the aluminium casing. Everyone fine with that?"),
        ("Chen Wei", "Fine by me."),
        ("Bob", "Yes, agreed."),
        (
            "Chen Wei",
            "Related to that, we are not using the plastic hinge anymore. "
            "It wore out after about three thousand folds.",
        ),
        ("Dana", "What are we using instead?"),
        ("Chen Wei", "A steel hinge from the same supplier. It adds about four grams, which is acceptable."),
        ("Alice", "Good. Next, the sensor board. Chen Wei, where are we?"),
        ("Chen Wei", "We have two candidates, the TS-204 board and the older TS-180."),
        ("Chen Wei", "The TS-204 uses less power, so we gain roughly forty minutes of battery life."),
        ("Bob", "The TS-204 has a twelve week lead time, though. That worries me a bit."),
        ("Alice", "Can we order early to cover that?"),
        ("Bob", "If we place the order this month, yes. The first batch would be 500 units."),
        ("Alice", "Then let's go with the TS-204 and order 500 units for the first batch."),
        ("Alice", "Bob will send the revised quote to the supplier by March 12th."),
        ("Bob", "Got it. I'll copy Dana on that email."),
        ("Dana", "Thanks. Can I bring up the marketing budget now?"),
        ("Alice", "Go ahead."),
        ("Dana", "Marketing has 12,000 dollars for the launch. Most of that goes to the demo videos."),
        ("Bob", "Is that enough for the trade show booth as well?"),
        ("Dana", "Not really. The booth alone is around eight thousand."),
        ("Alice", "Let's keep the booth out of this budget for now, and I'll talk to finance separately."),
        ("Alice", "Dana, can you draft the launch press release by April 2nd?"),
        ("Dana", "Sure, I'll have the press release draft out by April 2nd and send it round for comments."),
        ("Alice", "On pricing, let's go with $349 for the base model. That was where we landed last time."),
        ("Bob", "At that price we still keep a decent margin, even with the aluminium."),
        (
            "Chen Wei",
            "One thing nobody has answered yet. Will the battery pass the European safety "
            "certification on the first try?",
        ),
        ("Alice", "Good question. I don't think we know yet."),
        ("Bob", "The test lab hasn't given us a date either."),
        ("Alice", "Let's keep that as an open question and come back to it next week."),
        ("Alice", "Chen Wei, can you finish the drop tests on the steel hinge by March 20th?"),
        ("Chen Wei", "Yes, the hinge drop tests will be done by March 20th."),
        ("Alice", "Now, the design review. I had it down for Wednesday."),
        ("Dana", "I'm travelling on Wednesday, sorry."),
        (
            "Alice",
            "Okay, correction then. The design review moves to Friday, not Wednesday. Friday at 10:30.",
        ),
        ("Bob", "Friday at 10:30 works for me."),
        ("Chen Wei", "Same here."),
        ("Alice", "I'll book the big meeting room and send the invite by end of day today."),
        ("Alice", "Bob, could you also confirm the shipping cost with the freight company by next Tuesday?"),
        ("Bob", "Sure, I'll confirm the shipping cost by next Tuesday."),
        (
            "Alice",
            "Let me recap. Aluminium casing, steel hinge, the TS-204 board, 500 units, and $349 at launch.",
        ),
        ("Dana", "And the certification question stays open."),
        ("Alice", "Right. Thanks everyone, see you on Friday."),
        ("Bob", "Thanks, bye."),
    )
)

QUESTIONS: tuple[Question, ...] = (
    Question("By when does Bob owe the supplier the revised quote?", "March 12th"),
    Question("What does the tooling for the aluminium version cost?", "$4,250"),
    Question(
        "What did we decide for the casing?",
        "aluminium casing",
        anchor="decided to go with the aluminium casing",
    ),
    Question("Which sensor board are we ordering?", "TS-204", anchor="let's go with the TS-204"),
)


# --------------------------------------------------------------------------------------------------
# Rendering utterances.
# --------------------------------------------------------------------------------------------------


def spoken_form(text: str) -> str:
    """Text as espeak-ng should say it; it reads "$4,250" as "dollar four thousand ...", so reorder."""
    return re.sub(r"\$(\d[\d,]*)", r"\1 dollars", text)


def synthesise_utterance(utterance: Utterance, raw_wav: Path, voice: Voice | None = None,
                         spoken: str | None = None) -> None:
    """Speak `utterance` into `raw_wav` in `voice` (default: the demo speaker's), saying `spoken` if given
    (default: `spoken_form` of its text)."""
    voice = voice or VOICES[utterance.speaker]
    command = [
        "espeak-ng",
        "-v",
        voice.name,
        "-p",
        str(voice.pitch),
        "-s",
        str(voice.words_per_minute),
        "-w",
        str(raw_wav),
        "--stdin",
    ]
    said = spoken_form(utterance.text) if spoken is None else spoken
    subprocess.run(command, input=said, text=True, check=True)


def resample_utterance(raw_wav: Path, clip_wav: Path) -> None:
    """16 kHz mono 16-bit; -D (no dither) and -R (repeatable) keep the output byte-identical."""
    command = ["sox", "-V1", "-R", "-D", str(raw_wav), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(clip_wav)]
    subprocess.run(command, check=True)


def read_samples(path: Path) -> array.array[int]:
    with wave.open(str(path), "rb") as reader:
        if (reader.getframerate(), reader.getnchannels(), reader.getsampwidth()) != (
            SAMPLE_RATE,
            1,
            SAMPLE_WIDTH,
        ):
            raise ValueError(f"{path}: expected {SAMPLE_RATE} Hz mono 16-bit")
        samples = array.array("h", reader.readframes(reader.getnframes()))
    if sys.byteorder == "big":
        samples.byteswap()
    return samples


def trim_silence(samples: array.array[int]) -> array.array[int]:
    """Drop leading and trailing samples quieter than SILENCE_THRESHOLD, so timestamps are tight."""
    loud = [i for i, value in enumerate(samples) if abs(value) >= SILENCE_THRESHOLD]
    if not loud:
        raise ValueError("utterance rendered as silence")
    return samples[loud[0] : loud[-1] + 1]


def render_utterance(utterance: Utterance, index: int, workdir: Path, voice: Voice | None = None,
                     spoken: str | None = None) -> array.array[int]:
    raw_wav = workdir / f"utterance-{index:03d}-raw.wav"
    clip_wav = workdir / f"utterance-{index:03d}.wav"
    synthesise_utterance(utterance, raw_wav, voice, spoken)
    resample_utterance(raw_wav, clip_wav)
    speech = trim_silence(read_samples(clip_wav))
    raw_wav.unlink()
    clip_wav.unlink()
    return speech


# --------------------------------------------------------------------------------------------------
# Assembling the meeting.
# --------------------------------------------------------------------------------------------------


def silence(seconds: float) -> array.array[int]:
    return array.array("h", bytes(SAMPLE_WIDTH * round(seconds * SAMPLE_RATE)))


def assemble_meeting(
    utterances: tuple[Utterance, ...], renderings: list[array.array[int]], seed: int
) -> tuple[array.array[int], list[Segment]]:
    """Join renderings with seeded pauses; place each utterance on the timeline by sample count."""
    pauses = random.Random(seed)
    audio = silence(LEAD_IN_SECONDS)
    segments: list[Segment] = []
    for position, (utterance, speech) in enumerate(zip(utterances, renderings, strict=True)):
        if position:
            audio.extend(silence(pauses.uniform(*PAUSE_SECONDS)))
        start = len(audio)
        audio.extend(speech)
        segments.append(
            Segment(start / SAMPLE_RATE, len(audio) / SAMPLE_RATE, utterance.speaker, utterance.text)
        )
    audio.extend(silence(TAIL_SECONDS))
    return audio, segments


def write_wav(path: Path, samples: array.array[int]) -> None:
    frames = array.array("h", samples)
    if sys.byteorder == "big":
        frames.byteswap()
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(SAMPLE_WIDTH)
        writer.setframerate(SAMPLE_RATE)
        writer.writeframes(frames.tobytes())


def encode_meeting(meeting_wav: Path, ogg: Path) -> None:
    subprocess.run(["sox", "-R", str(meeting_wav), "-C", str(OGG_QUALITY), str(ogg)], check=True)


# --------------------------------------------------------------------------------------------------
# Transcript and questions.
# --------------------------------------------------------------------------------------------------


def segment_record(segment: Segment) -> dict[str, object]:
    return {
        "start": round(segment.start, 2),
        "end": round(segment.end, 2),
        "speaker": segment.speaker,
        "text": segment.text,
        "lang": "en",
    }


def check_timeline(records: list[dict[str, object]]) -> None:
    previous_start = -1.0
    for record in records:
        start, end = float(record["start"]), float(record["end"])  # type: ignore[arg-type]
        if not 0 <= start <= end or start <= previous_start:
            raise ValueError(f"segment timeline out of order at {record}")
        previous_start = start


def answer_segment(question: Question, segments: list[Segment]) -> Segment:
    """The first segment holding the anchor; it must also hold the exact expected value."""
    anchor = (question.anchor or question.expected).lower()
    for segment in segments:
        if anchor in segment.text.lower():
            if question.expected not in segment.text:
                raise ValueError(f"{question.expected!r} not verbatim in {segment.text!r}")
            return segment
    raise ValueError(f"no segment holds {anchor!r}")


def question_record(question: Question, segments: list[Segment]) -> dict[str, object]:
    answer = answer_segment(question, segments)
    return {
        "question": question.question,
        "expected": question.expected,
        "answer_start": round(answer.start, 2),
    }


def write_jsonl(path: Path, records: list[dict[str, object]]) -> None:
    lines = (json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    path.write_text("".join(lines), encoding="utf-8")


# --------------------------------------------------------------------------------------------------
# Entry point.
# --------------------------------------------------------------------------------------------------


def require_tools() -> None:
    missing = [tool for tool in ("espeak-ng", "sox") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"missing commands: {', '.join(missing)} (apt-get install espeak-ng sox)")


def build_meeting(out: Path, seed: int) -> None:
    require_tools()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="meetmem-sample-meeting-") as tmp:
        workdir = Path(tmp)
        renderings = []
        for index, utterance in enumerate(MEETING):
            renderings.append(render_utterance(utterance, index, workdir))
            log.info("rendered utterance %d/%d (%s)", index + 1, len(MEETING), utterance.speaker)
        audio, segments = assemble_meeting(MEETING, renderings, seed)
        meeting_wav = workdir / "meeting.wav"
        write_wav(meeting_wav, audio)
        encode_meeting(meeting_wav, out / AUDIO_FILE)

    records = [segment_record(segment) for segment in segments]
    check_timeline(records)
    write_jsonl(out / TRANSCRIPT_FILE, records)
    write_jsonl(out / QUESTIONS_FILE, [question_record(question, segments) for question in QUESTIONS])

    ogg_bytes = (out / AUDIO_FILE).stat().st_size
    if ogg_bytes >= OGG_SIZE_LIMIT:
        log.warning("%s is %d bytes, over the %d byte budget", AUDIO_FILE, ogg_bytes, OGG_SIZE_LIMIT)
    speech_seconds = sum(segment.end - segment.start for segment in segments)
    log.info(
        "wrote %s: %d utterances, %d speakers, %.2f s meeting (%.2f s speech), ogg %d bytes",
        out,
        len(segments),
        len({s.speaker for s in segments}),
        len(audio) / SAMPLE_RATE,
        speech_seconds,
        ogg_bytes,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Synthesise the sample meeting for the README demo.")
    parser.add_argument("--out", type=Path, required=True, help="directory for the meeting files")
    parser.add_argument("--seed", type=int, default=PAUSE_SEED, help="seed for the pauses between utterances")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    build_meeting(args.out, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
