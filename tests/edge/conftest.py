"""Edge fixtures: real speech made once per session with espeak-ng and sox, and each Whisper model loaded
once per session.

Speech is rendered to 16 kHz mono 16-bit WAV (`sox -R -D`: repeatable, no dither, so the same text gives
the same bytes). The speech boundaries a test checks against are measured on the clean synthetic signal:
espeak-ng pads with near-digital silence, so the first and last samples above about -60 dBFS are where the
speech is.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import textwrap
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from meetmem.edge.asr import ASROptions, WhisperASR

SAMPLE_RATE = 16000
SILENCE_THRESHOLD = 32  # about -60 dBFS, as eval/sample_meeting.py measures espeak-ng's speech


def _require(*tools: str) -> None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"needs the {', '.join(missing)} command(s) (apt-get install espeak-ng sox)")


def run_sox(*args: str) -> None:
    """Run sox repeatably (-R) and fail the test with sox's message if it fails."""
    _require("sox")
    proc = subprocess.run(["sox", "-R", *args], capture_output=True, text=True)
    assert proc.returncode == 0, f"sox {' '.join(args)}: {proc.stderr}"


@pytest.fixture(scope="session")
def sox() -> Callable[..., None]:
    """`sox(*args)`: run the sox command (repeatably), failing with its message."""
    return run_sox


def read_wav(path: Path) -> np.ndarray:
    """A 16-bit mono WAV's samples as int16."""
    with wave.open(str(path), "rb") as reader:
        assert reader.getsampwidth() == 2 and reader.getnchannels() == 1
        return np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2").astype(np.int16)


def speech_bounds(samples: np.ndarray) -> tuple[float, float]:
    """Seconds of the first and last sample louder than the silence threshold."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > SILENCE_THRESHOLD)
    assert len(loud), "no speech in the clip"
    return loud[0] / SAMPLE_RATE, (loud[-1] + 1) / SAMPLE_RATE


@dataclass(frozen=True)
class Speech:
    """One rendered clip: its file, samples, text and where the speech lies in it."""

    path: Path
    samples: np.ndarray
    text: str
    bounds: tuple[float, float]

    @property
    def duration(self) -> float:
        return len(self.samples) / SAMPLE_RATE


@pytest.fixture(scope="session")
def speech_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("speech")


@pytest.fixture(scope="session")
def make_speech(speech_dir: Path) -> Callable[..., Speech]:
    """`make_speech(text, voice="en-us", speed=160)`: the text spoken by espeak-ng, 16 kHz mono, cached."""
    cache: dict[tuple[str, str, int], Speech] = {}

    def render(text: str, voice: str = "en-us", speed: int = 160) -> Speech:
        key = (text, voice, speed)
        if key not in cache:
            _require("espeak-ng", "sox")
            name = hashlib.sha1(repr(key).encode()).hexdigest()[:12]
            raw, clip = speech_dir / f"{name}.raw.wav", speech_dir / f"{name}.wav"
            subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), "--stdin"],
                           input=text, text=True, check=True, capture_output=True)
            run_sox("-D", str(raw), "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(clip))
            samples = read_wav(clip)
            cache[key] = Speech(clip, samples, text, speech_bounds(samples))
        return cache[key]

    return render


@dataclass(frozen=True)
class Conversation:
    """Clips joined with known gaps: the file, its samples and the true speech span of each clip."""

    path: Path
    samples: np.ndarray
    spans: tuple[tuple[float, float], ...]
    texts: tuple[str, ...]


@pytest.fixture(scope="session")
def join_speech(speech_dir: Path) -> Callable[..., Conversation]:
    """`join_speech(clips, gap=1.5, lead=0.5)`: clips separated by `gap` s of silence, after `lead` s."""

    def join(clips: Sequence[Speech], gap: float = 1.5, lead: float = 0.5, name: str = "joined") -> Conversation:
        def silence(seconds: float) -> np.ndarray:
            return np.zeros(int(round(seconds * SAMPLE_RATE)), dtype=np.int16)

        parts, spans, at = [silence(lead)], [], lead
        for index, clip in enumerate(clips):
            if index:
                parts.append(silence(gap))
                at += gap
            spans.append((at + clip.bounds[0], at + clip.bounds[1]))
            parts.append(clip.samples)
            at += clip.duration
        parts.append(silence(lead))
        samples = np.concatenate(parts)
        path = speech_dir / f"{name}.wav"
        with wave.open(str(path), "wb") as writer:
            writer.setnchannels(1)
            writer.setsampwidth(2)
            writer.setframerate(SAMPLE_RATE)
            writer.writeframes(samples.astype("<i2").tobytes())
        return Conversation(path, samples, tuple(spans), tuple(clip.text for clip in clips))

    return join


#: A sentence with a name, money and a date, as the edge must get them right.
BUDGET_SENTENCE = "Priya will send the budget of 4,500 dollars by March 12th."
SECOND_SENTENCE = "The supplier wants the final order by Friday morning."


@pytest.fixture(scope="session")
def budget_speech(make_speech: Callable[..., Speech]) -> Speech:
    return make_speech(BUDGET_SENTENCE)


@pytest.fixture(scope="session")
def two_sentences(make_speech: Callable[..., Speech], join_speech: Callable[..., Conversation]) -> Conversation:
    """Two sentences by two voices, 1.5 s of silence between them."""
    first = make_speech(BUDGET_SENTENCE, voice="en-us")
    second = make_speech(SECOND_SENTENCE, voice="en-us+f3")
    return join_speech([first, second], gap=1.5, name="two_sentences")


@pytest.fixture(scope="session")
def base_asr(tmp_path_factory: pytest.TempPathFactory) -> WhisperASR:
    """The real multilingual base model (its parts joined into a session cache), loaded once."""
    cache = tmp_path_factory.mktemp("model-cache")
    return WhisperASR(ASROptions(model="base", cache_dir=str(cache), cpu_threads=2))


@pytest.fixture(scope="session")
def tiny_asr() -> WhisperASR:
    """The real English tiny model, loaded once."""
    return WhisperASR(ASROptions(model="tiny.en", cpu_threads=2))


#: `meetmem` with the cloud's and the index's packages blocked from import, as on a board with the `edge`
#: extra alone; it also fails if any of them was imported by the end.
BLOCKED_CLI = textwrap.dedent('''
    import importlib.abc, sys
    BLOCKED = ("torch", "fastapi", "faiss", "sentence_transformers", "transformers", "uvicorn", "starlette",
               "meetmem.cloud", "meetmem.store.index", "jieba", "rank_bm25")

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ImportError(f"{name} is blocked on the edge")
            return None

    sys.meta_path.insert(0, Block())
    from meetmem.cli import main
    code = main(sys.argv[1:])
    loaded = [m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED)]
    assert not loaded, loaded
    sys.exit(code)
''')


@pytest.fixture
def blocked_cli() -> list[str]:
    """The command line that starts `meetmem` with the cloud's packages blocked (append its arguments)."""
    return [sys.executable, "-c", BLOCKED_CLI]
