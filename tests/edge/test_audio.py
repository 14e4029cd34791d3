"""Audio in: files in several formats, rates and channel counts made with sox; bad files; PCM streams;
real-time pacing on a manual clock."""

from __future__ import annotations

import io
import logging
import wave
from pathlib import Path

import numpy as np
import pytest

from meetmem.edge.audio import SAMPLE_RATE, ManualClock, decode_file, paced, read_file, read_pcm_stream
from meetmem.edge.errors import AudioError


@pytest.fixture(scope="session")
def audio_files(budget_speech, sox, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The budget sentence as sox writes it in each format: made once per session."""
    folder = tmp_path_factory.mktemp("formats")
    source = str(budget_speech.path)
    files = {
        "wav-16k-mono": folder / "speech.wav",
        "wav-44k-stereo": folder / "stereo44.wav",
        "flac-44k-stereo": folder / "stereo44.flac",
        "flac-48k": folder / "speech48.flac",
        "ogg-8k": folder / "speech8.ogg",
        "wav-8k-8bit": folder / "speech8bit.wav",
    }
    sox("-D", source, str(files["wav-16k-mono"]))
    sox("-D", source, "-r", "44100", "-c", "2", str(files["wav-44k-stereo"]))
    sox("-D", source, "-r", "44100", "-c", "2", str(files["flac-44k-stereo"]))
    sox("-D", source, "-r", "48000", str(files["flac-48k"]))
    sox("-D", source, "-r", "8000", str(files["ogg-8k"]))
    sox("-D", source, "-r", "8000", "-b", "8", str(files["wav-8k-8bit"]))
    # Speech on the left channel only, silence on the right: the downmix must keep it.
    left_only = folder / "left_only.flac"
    silence = folder / "silence.wav"
    sox("-n", "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", str(silence), "trim", "0", f"{budget_speech.duration:.4f}")
    sox("-D", "-M", source, str(silence), "-r", "44100", str(left_only))
    files["flac-left-only"] = left_only
    return files


def _decode(path: Path, **kwargs) -> np.ndarray:
    chunks = list(read_file(path, **kwargs))
    assert all(chunk.dtype == np.int16 and chunk.ndim == 1 for chunk in chunks)
    return np.concatenate(chunks)


@pytest.mark.parametrize("kind", ["wav-44k-stereo", "flac-44k-stereo", "flac-48k", "ogg-8k", "wav-8k-8bit",
                                  "flac-left-only"])
def test_other_formats_rates_and_channels_decode_to_16k_mono(kind: str, audio_files, budget_speech) -> None:
    decoded = _decode(audio_files[kind]).astype(np.float64)
    reference = budget_speech.samples.astype(np.float64)
    assert abs(len(decoded) - len(reference)) <= SAMPLE_RATE // 100  # within 10 ms
    n = min(len(decoded), len(reference))
    assert np.corrcoef(decoded[:n], reference[:n])[0, 1] > 0.95  # 8 kHz Ogg and 8-bit lose some detail


def test_16k_mono_wav_decodes_sample_exact(audio_files, budget_speech) -> None:
    np.testing.assert_array_equal(_decode(audio_files["wav-16k-mono"]), budget_speech.samples)


def test_chunks_are_the_size_asked_for(audio_files, budget_speech) -> None:
    chunks = list(read_file(audio_files["flac-44k-stereo"], chunk_seconds=0.5))
    assert [len(c) for c in chunks[:-1]] == [SAMPLE_RATE // 2] * (len(chunks) - 1)
    assert 0 < len(chunks[-1]) <= SAMPLE_RATE // 2
    assert len(chunks) == int(np.ceil(len(budget_speech.samples) / (SAMPLE_RATE / 2)))


def test_a_long_file_streams_without_being_decoded_whole(sox, tmp_path: Path) -> None:
    """The first chunk of a two-minute file arrives before the rest is decoded (a generator, not a list)."""
    long_file = tmp_path / "long.flac"
    sox("-n", "-r", "16000", "-c", "1", "-b", "16", str(long_file), "synth", "120", "sine", "440", "vol", "0.1")
    stream = read_file(long_file, chunk_seconds=1.0)
    first = next(stream)
    assert len(first) == SAMPLE_RATE
    stream.close()  # closes the container too


def test_decode_file_gives_float32(audio_files, budget_speech) -> None:
    audio = decode_file(audio_files["wav-16k-mono"])
    assert audio.dtype == np.float32 and len(audio) == len(budget_speech.samples)
    assert float(np.max(np.abs(audio))) <= 1.0


# --- bad files: a clear AudioError naming the file, never PyAV's traceback --------------------------


def _empty_wav(path: Path) -> None:
    """A well-formed WAV header with no samples."""
    with wave.open(str(path), "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(SAMPLE_RATE)


def _truncate(source: Path, target: Path, keep: float) -> Path:
    data = source.read_bytes()
    target.write_bytes(data[: int(len(data) * keep)])
    return target


@pytest.mark.parametrize(("name", "make", "problem"), [
    ("empty.wav", lambda d, f: (d / "empty.wav").write_bytes(b""), "empty"),
    ("notes.wav", lambda d, f: (d / "notes.wav").write_text("Meeting notes: ship on March 3rd.\n"),
     "not a readable audio file"),
    ("random.flac", lambda d, f: (d / "random.flac").write_bytes(np.random.default_rng(1).bytes(5000)),
     "not a readable audio file"),
    ("cut.wav", lambda d, f: _truncate(f["wav-44k-stereo"], d / "cut.wav", 0.3), "truncated"),
    ("cut.flac", lambda d, f: _truncate(f["flac-44k-stereo"], d / "cut.flac", 0.3), "truncated"),
    ("nothing.wav", lambda d, f: _empty_wav(d / "nothing.wav"), "no audio samples"),
    ("missing.wav", lambda d, f: None, "no such file"),
])
def test_bad_files_raise_a_clear_audio_error(name: str, make, problem: str, audio_files, tmp_path: Path) -> None:
    make(tmp_path, audio_files)
    path = tmp_path / name
    with pytest.raises(AudioError) as caught:
        _decode(path)
    assert str(path) in str(caught.value) and problem in str(caught.value)
    assert caught.value.source == str(path)


def test_a_picture_has_no_audio_stream(audio_files, sox, tmp_path: Path) -> None:
    picture = tmp_path / "spectrogram.png"
    sox(str(audio_files["wav-16k-mono"]), "-n", "spectrogram", "-o", str(picture))
    with pytest.raises(AudioError, match="no audio stream"):
        read_file(picture)


def test_a_directory_is_not_an_audio_file(tmp_path: Path) -> None:
    with pytest.raises(AudioError, match="not a regular file"):
        read_file(tmp_path)


def test_a_truncated_file_still_hands_over_what_it_decoded(audio_files, tmp_path: Path) -> None:
    """Never lose words: the audio before the cut is yielded, then the error is raised."""
    cut = _truncate(audio_files["wav-44k-stereo"], tmp_path / "cut.wav", 0.5)
    got: list[np.ndarray] = []
    with pytest.raises(AudioError, match="truncated"):
        for chunk in read_file(cut, chunk_seconds=0.25):
            got.append(chunk)
    assert sum(len(c) for c in got) / SAMPLE_RATE > 1.5  # about half of 4.7 s


def test_a_truncated_ogg_gives_audio_or_a_clear_error(audio_files, tmp_path: Path) -> None:
    """Ogg states no length up front, so a cut file may simply be shorter; it must never be a traceback."""
    cut = _truncate(audio_files["ogg-8k"], tmp_path / "cut.ogg", 0.5)
    try:
        decoded = _decode(cut)
    except AudioError as exc:
        assert str(cut) in str(exc)
    else:
        assert 0 < len(decoded) < SAMPLE_RATE * 5


# --- raw PCM streams -------------------------------------------------------------------------------------


class TrickleReader(io.RawIOBase):
    """A pipe that hands over at most `step` bytes a read (odd sizes split samples across reads)."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data, self._at, self._step = data, 0, step

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        take = self._step if size < 0 else min(size, self._step)
        piece = self._data[self._at:self._at + take]
        self._at += len(piece)
        return piece


@pytest.mark.parametrize("step", [1, 7, 3201, 1 << 20])
def test_pcm_stream_is_read_whole_whatever_the_read_sizes(budget_speech, step: int) -> None:
    data = budget_speech.samples.astype("<i2").tobytes()
    chunks = list(read_pcm_stream(TrickleReader(data, step), chunk_seconds=0.1))
    np.testing.assert_array_equal(np.concatenate(chunks), budget_speech.samples)


def test_pcm_stream_drops_a_final_half_sample_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="meetmem.edge.audio"):
        chunks = list(read_pcm_stream(io.BytesIO(b"\x01\x00\x02\x00\x03")))
    np.testing.assert_array_equal(np.concatenate(chunks), np.array([1, 2], dtype=np.int16))
    assert "odd byte" in caplog.text


def test_an_empty_pcm_stream_gives_nothing() -> None:
    assert list(read_pcm_stream(io.BytesIO(b""))) == []


# --- real-time pacing ------------------------------------------------------------------------------------


def test_paced_releases_each_chunk_once_it_has_been_spoken(budget_speech) -> None:
    clock = ManualClock(start=100.0)
    chunks = [budget_speech.samples[i:i + 1600] for i in range(0, len(budget_speech.samples), 1600)]
    released_at = []
    for chunk in paced(chunks, clock):
        released_at.append(clock.now())
        assert len(chunk)
    total = len(budget_speech.samples) / SAMPLE_RATE
    assert released_at[0] == pytest.approx(100.1)
    assert released_at[-1] == pytest.approx(100.0 + total)
    assert sum(clock.slept) == pytest.approx(total)


def test_paced_does_not_slow_a_consumer_that_is_already_behind() -> None:
    clock = ManualClock()
    chunks = [np.zeros(SAMPLE_RATE, dtype=np.int16)] * 5
    for _ in paced(chunks, clock):
        clock.advance(1.5)  # recognition slower than real time
    assert clock.slept == [1.0]  # only the first chunk had to wait to be "spoken"
