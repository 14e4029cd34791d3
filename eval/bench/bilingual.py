"""A bilingual meeting for the edge's language policy: two English speakers and a Mandarin speaker.

The meeting is rendered with espeak-ng: the English lines in two English voices, the Mandarin lines through
pypinyin (numbered-tone pinyin) in espeak-ng's `cmn-latn-pinyin` voice, which reads pinyin far better than
characters. Turns are joined with the sample meeting's seeded pauses (0.3 to 1.2 s, so some turns run into the
next for the VAD, and the capture's turn cutter has to split them). Every reference row has its speaker, its
language, its text and its exact times in the audio.

`bilingual_part` runs the edge's file path (VAD, speaker turns, Whisper, cleaning, the outbox) on it twice in
one process with the same model: the language detected once a minute for the meeting (as before speakers
were told apart), and per speaker turn. Each stored segment's right language is the one of the reference row
it overlaps most; WER is scored on the English rows, CER on the Mandarin ones, each against the text of the
segments stored over them.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_RATE = 16000
SEED = 20261201

#: (speaker, language, text). Mandarin numbers are written out in characters, as they are said.
SCRIPT: tuple[tuple[str, str, str], ...] = (
    ("Alice", "en", "Good morning everyone, let's start with the supplier update for the new frames."),
    ("Li Na", "zh", "我们和工厂谈过了，第一批货下个月十五号可以发出。"),
    ("Bob", "en", "That works for us, as long as the hinges pass the drop test this week."),
    ("Li Na", "zh", "测试报告明天上午给大家，价格还是每副三十二欧元。"),
    ("Alice", "en", "Thirty two euros is fine. Can we get the battery samples at the same time?"),
    ("Li Na", "zh", "电池样品要晚一周，供应商说原材料不够。"),
    ("Bob", "en", "Then we move the battery review to the following Tuesday afternoon."),
    ("Alice", "en", "Agreed. Bob, please send the new schedule to the whole team today."),
    ("Li Na", "zh", "好的，我也会把会议记录翻译成中文发给工厂。"),
    ("Bob", "en", "One more thing: the customer in Munich wants two hundred units before the trade fair."),
    ("Li Na", "zh", "两百副没有问题，但是包装要提前确认。"),
    ("Alice", "en", "I will confirm the packaging design with marketing by Friday."),
    ("Li Na", "zh", "另外，工厂希望我们下周去参观新的生产线。"),
    ("Bob", "en", "I can travel on Wednesday. Who else wants to join the visit?"),
    ("Alice", "en", "I will join you. We should also check the quality of the lenses while we are there."),
    ("Li Na", "zh", "镜片的质量上次有一些问题，这次他们换了新的机器。"),
    ("Bob", "en", "Good. Please ask them for the test results before we fly."),
    ("Li Na", "zh", "没问题，我今天下午就给他们发邮件。"),
    ("Alice", "en", "Next topic is the software. The app crashed twice during the demo last week."),
    ("Bob", "en", "We found the bug. It was the Bluetooth connection, and the fix is ready for testing."),
    ("Li Na", "zh", "工厂那边也需要新版本的软件来测试眼镜。"),
    ("Bob", "en", "I will send them the new version on Thursday morning."),
    ("Alice", "en", "Let's also talk about the budget. We have spent sixty percent so far."),
    ("Li Na", "zh", "运费比我们预计的高了很多，大概多了两千欧元。"),
    ("Alice", "en", "Two thousand more is a problem. Can we ship by train instead of by air?"),
    ("Li Na", "zh", "火车要慢两个星期，但是可以省一半的钱。"),
    ("Bob", "en", "Two weeks is too late for the trade fair, so the first batch goes by air."),
    ("Alice", "en", "All right, the first batch by air and everything after that by train."),
    ("Li Na", "zh", "好的，我会告诉工厂和物流公司。"),
    ("Bob", "en", "Last point: we need a name for the new colour before the brochure is printed."),
    ("Alice", "en", "Marketing suggested ocean blue. I like it, but let's vote on Friday."),
    ("Li Na", "zh", "那我们周五下午再开一次短会，确认所有的细节。"),
    ("Bob", "en", "Friday at three o'clock then. Thanks everyone, that's all for today."),
)
#: espeak-ng voice, pitch, words per minute per speaker: two English voices and the Mandarin one, chosen far
#: enough apart for the voice encoder (mean cosine between two speakers' lines 0.56 to 0.68, within a voice
#: 0.95). Whisper base detects 9 of the 13 Mandarin lines as Mandarin when it hears one alone (espeak-ng's
#: Mandarin sounds to it like Thai or Vietnamese as often as Mandarin); slower speech did not help.
VOICES: dict[str, tuple[str, int, int]] = {"Alice": ("en+Tweaky", 55, 160), "Bob": ("en-us+m7", 48, 150),
                                           "Li Na": ("cmn-latn-pinyin+f2", 60, 130)}
PAUSE_SECONDS = (0.3, 1.2)
LEAD_SECONDS = 0.5


def pinyin(text: str) -> str:
    """Mandarin text as numbered-tone pinyin for espeak-ng's `cmn-latn-pinyin` voice (punctuation as pauses).

    Raises:
        RuntimeError: pypinyin is not installed (a dev dependency).
    """
    try:
        from pypinyin import Style, lazy_pinyin
    except ImportError as exc:
        raise RuntimeError("the Mandarin lines need pypinyin (pip install 'meetmem[dev]')") from exc
    syllables = lazy_pinyin(text, style=Style.TONE3, neutral_tone_with_five=True)
    spoken = " ".join(s for s in syllables)
    for mark, pause in (("，", ","), ("。", "."), ("：", ","), ("？", "?"), ("！", ".")):
        spoken = spoken.replace(mark, pause)
    return spoken


@dataclass(frozen=True)
class BilingualMeeting:
    """The rendered meeting: its WAV file, samples (int16) and reference rows with exact times."""

    path: Path
    samples: np.ndarray
    rows: list[dict[str, Any]]


def _speak(text: str, voice: tuple[str, int, int], out: Path) -> np.ndarray:
    """One line spoken by espeak-ng, 16 kHz mono int16, trimmed to its loud samples (-60 dBFS)."""
    raw = out.with_suffix(".raw.wav")
    name, pitch, wpm = voice
    said = pinyin(text) if name.startswith("cmn") else text
    subprocess.run(["espeak-ng", "-v", name, "-p", str(pitch), "-s", str(wpm), "-w", str(raw), "--stdin"],
                   input=said, text=True, check=True, capture_output=True)
    subprocess.run(["sox", "-V1", "-R", "-D", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(out)],
                   check=True, capture_output=True)
    with wave.open(str(out), "rb") as reader:
        samples = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > 32)
    return samples[loud[0]:loud[-1] + 1] if len(loud) else samples


def render(folder: Path, script: Sequence[tuple[str, str, str]] = SCRIPT, *, seed: int = SEED) -> BilingualMeeting:
    """Speak `script` into `folder/bilingual.wav` with seeded pauses between the turns."""
    folder.mkdir(parents=True, exist_ok=True)
    pauses = random.Random(seed)
    parts = [np.zeros(int(LEAD_SECONDS * SAMPLE_RATE), dtype=np.int16)]
    at = len(parts[0])
    rows: list[dict[str, Any]] = []
    for index, (speaker, lang, text) in enumerate(script):
        if index:
            gap = np.zeros(int(pauses.uniform(*PAUSE_SECONDS) * SAMPLE_RATE), dtype=np.int16)
            parts.append(gap)
            at += len(gap)
        speech = _speak(text, VOICES[speaker], folder / f"line-{index:02d}.wav")
        parts.append(speech)
        rows.append({"start": round(at / SAMPLE_RATE, 3), "end": round((at + len(speech)) / SAMPLE_RATE, 3),
                     "speaker": speaker, "lang": lang, "text": text})
        at += len(speech)
    parts.append(np.zeros(int(LEAD_SECONDS * SAMPLE_RATE), dtype=np.int16))
    samples = np.concatenate(parts)
    path = folder / "bilingual.wav"
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(SAMPLE_RATE)
        writer.writeframes(samples.astype("<i2").tobytes())
    return BilingualMeeting(path, samples, rows)


def score(rows: Sequence[dict[str, Any]], segments: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each stored segment against the reference row it overlaps most: the share stored with that row's
    language, and WER (English) / CER (Mandarin) of the segments over each language's rows."""
    from ..harness import error_rate

    def row_of(segment: dict[str, Any]) -> int:
        overlaps = [max(0.0, min(segment["end"], r["end"]) - max(segment["start"], r["start"])) for r in rows]
        return max(range(len(rows)), key=lambda i: overlaps[i])

    owner = [row_of(s) for s in segments]
    right = [segments[i].get("lang") == rows[owner[i]]["lang"] for i in range(len(segments))]
    out: dict[str, Any] = {"segments_scored": len(segments), "right_lang": sum(right),
                           "right_lang_share": round(sum(right) / len(segments), 3) if segments else None,
                           "segments_by_lang": {}}
    for lang, unit in (("en", "word"), ("zh", "char")):
        reference = " ".join(r["text"] for r in rows if r["lang"] == lang)
        hypothesis = " ".join(s["text"] for s, o in zip(segments, owner, strict=True) if rows[o]["lang"] == lang)
        scored = error_rate(reference, hypothesis, unit)
        out["wer" if lang == "en" else "cer"] = scored["rate"]
        stored = [s for s, o in zip(segments, owner, strict=True) if rows[o]["lang"] == lang]
        out["segments_by_lang"][lang] = {"segments": len(stored),
                                         "stored_as": {str(k): sum(1 for s in stored if s.get("lang") == k)
                                                       for k in sorted({str(s.get("lang")) for s in stored})}}
    return out


def capture(meeting: BilingualMeeting, asr: Any, tracker_factory: Callable[[], Any] | None, *, per_speaker: bool,
            folder: Path) -> dict[str, Any]:
    """The edge's file path over the meeting (fresh outbox and speaker tracker); its segments and figures."""
    from meetmem.edge import audio
    from meetmem.edge.agent import CaptureAgent, CaptureOptions, source_id
    from meetmem.edge.language import LanguageOptions
    from meetmem.edge.outbox import Outbox

    name = f"{'per-speaker' if per_speaker else 'per-minute'}-{'labels' if tracker_factory else 'none'}"
    outbox = Outbox(folder / f"{name}.db")
    stored: list[dict[str, Any]] = []
    options = CaptureOptions(meeting_id="bilingual", language_policy=LanguageOptions(per_speaker=per_speaker))
    agent = CaptureAgent(asr, outbox, options, speakers=tracker_factory() if tracker_factory else None,
                         on_segment=lambda s: stored.append({"start": s.start, "end": s.end, "text": s.text,
                                                             "lang": s.lang, "speaker": s.speaker}))
    began, cpu0 = time.perf_counter(), time.process_time()
    try:
        status = agent.run(audio.read_file(str(meeting.path)), source=source_id(str(meeting.path)))
    finally:
        outbox.close()
    return {"segments": stored, "language_detections": status.language_detections,
            "recogniser_calls": status.recogniser_calls, "speaker_turns_split": status.speaker_turns_split,
            "wall_s": round(time.perf_counter() - began, 2), "cpu_s": round(time.process_time() - cpu0, 2),
            "speakers": sorted({str(s["speaker"]) for s in stored})}


def bilingual_part(note: Callable[[str], None], *, model: str = "base", threads: int = 2,
                   folder: Path | None = None) -> dict[str, Any]:
    """The bilingual meeting through the edge: the language once a minute against per speaker turn (same
    model, same process), and without a speaker model; figures per configuration."""
    from meetmem.edge import speakers, voice_encoder
    from meetmem.edge.asr import ASROptions, WhisperASR

    with tempfile.TemporaryDirectory(prefix="meetmem-bench-bilingual-") as tmp:
        work = folder or Path(tmp)
        note("bilingual: rendering the meeting (espeak-ng, pypinyin) ...")
        meeting = render(work)
        asr = WhisperASR(ASROptions(model=model, cpu_threads=threads))
        encoder = voice_encoder.VoiceEncoder()

        def tracker() -> Any:
            return speakers.SpeakerTracker(encoder)

        runs: dict[str, Any] = {}
        for name, factory, per_speaker in (("per_minute_with_labels", tracker, False),
                                           ("per_speaker_turn", tracker, True),
                                           ("no_speaker_model", None, True)):
            note(f"bilingual: {name} ...")
            result = capture(meeting, asr, factory, per_speaker=per_speaker, folder=work)
            result.update(score(meeting.rows, result["segments"]))
            runs[name] = result
            note(f"  detections {result['language_detections']}, right lang {result['right_lang_share']}, "
                 f"WER en {result['wer']}, CER zh {result['cer']}, calls {result['recogniser_calls']}")
        return {"model": model, "threads": threads, "audio_s": round(len(meeting.samples) / SAMPLE_RATE, 2),
                "rows": len(meeting.rows), "rows_by_lang": {k: sum(r["lang"] == k for r in meeting.rows)
                                                            for k in ("en", "zh")},
                "voices": {k: v[0] for k, v in VOICES.items()}, "runs": runs}
