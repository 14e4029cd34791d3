"""The voice encoder: utterance audio -> a 256-d speaker embedding, in numpy, without torch.

The embedding model is Resemblyzer's voice encoder (GE2E: a 3-layer LSTM over 40-band mel frames, 256-d
unit vectors), whose trained weights ship inside the `resemblyzer` package on PyPI (`pretrained.pt`, 17 MB).
That package imports torch and librosa, which the edge never installs, so it is installed without its
dependencies (`pip install --no-deps resemblyzer==0.1.4`) and only its weights file is read here: the
checkpoint's own serialisation (PyTorch's legacy pickle format) is parsed with the standard library and the
network runs in numpy. tests/edge/test_voice_labels.py checks the embeddings against torch's own LSTM.

Where the voice changes inside an utterance is `speaker_turns`; the labels given to the embeddings, `speakers`.
"""

from __future__ import annotations

import importlib.util
import pickle
import struct
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
PARTIAL_FRAMES = 160  # 1.6 s per partial utterance
WEIGHTS_PACKAGE = "resemblyzer"
INSTALL_HINT = "pip install --no-deps resemblyzer==0.1.4 (its weights only; the edge needs no torch)"


class SpeakerModelMissing(RuntimeError):
    """The speaker-embedding weights are not installed."""


def weights_path() -> Path:
    """The encoder's weights file inside the installed `resemblyzer` package (found without importing it:
    its `__init__` imports torch)."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SpeakerModelMissing(f"speaker labels need the voice encoder's weights: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"
    if not path.is_file():
        raise SpeakerModelMissing(f"{path} is missing: reinstall it with {INSTALL_HINT}")
    return path


# -- PyTorch's legacy checkpoint format, read without torch ---------------------------------------------

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_STORAGE_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
                   "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
                   "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_}


@dataclass
class _Storage:
    dtype: type
    numel: int
    data: np.ndarray | None = None


@dataclass
class _LazyTensor:
    storage: _Storage
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]

    def array(self) -> np.ndarray:
        assert self.storage.data is not None
        item = self.storage.data.itemsize
        base = self.storage.data[self.offset:]
        return np.lib.stride_tricks.as_strided(base, self.size, tuple(s * item for s in self.stride)).copy()


def _rebuild_tensor(storage: _Storage, offset: int, size: tuple, stride: tuple, *_: object) -> _LazyTensor:
    return _LazyTensor(storage, int(offset), tuple(size), tuple(stride))


class _Opaque:
    """Any other class in the checkpoint (optimiser state): kept as nothing."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __setstate__(self, state: object) -> None:
        pass


class _CheckpointUnpickler(pickle.Unpickler):
    def __init__(self, handle, storages: dict[str, _Storage]) -> None:
        super().__init__(handle)
        self.storages = storages

    def find_class(self, module: str, name: str):  # noqa: ANN201 - pickle's protocol
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return name
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        return _Opaque

    def persistent_load(self, saved_id: tuple):  # noqa: ANN201 - pickle's protocol
        if saved_id[0] != "storage":
            return None
        storage_type, key, _location, numel = saved_id[1:5]
        if key not in self.storages:
            self.storages[key] = _Storage(_STORAGE_DTYPES[storage_type], int(numel))
        return self.storages[key]


def load_legacy_checkpoint(path: Path) -> dict:
    """A checkpoint written by `torch.save` in the legacy (pre-1.6) format, tensors as numpy arrays.

    Raises:
        ValueError: the file is not such a checkpoint.
    """
    storages: dict[str, _Storage] = {}
    with open(path, "rb") as handle:
        if pickle.load(handle) != _LEGACY_MAGIC:
            raise ValueError(f"{path} is not a legacy PyTorch checkpoint")
        pickle.load(handle)  # protocol version
        pickle.load(handle)  # system info
        result = _CheckpointUnpickler(handle, storages).load()
        keys = pickle.load(handle)
        for key in keys:
            storage = storages[key]
            (numel,) = struct.unpack("<q", handle.read(8))
            if numel != storage.numel:
                raise ValueError(f"{path}: storage {key} holds {numel} items, expected {storage.numel}")
            raw = handle.read(numel * np.dtype(storage.dtype).itemsize)
            storage.data = np.frombuffer(raw, dtype=storage.dtype)

    def materialise(value: object) -> object:
        if isinstance(value, _LazyTensor):
            return value.array()
        if isinstance(value, dict):
            return {k: materialise(v) for k, v in value.items()}
        return value

    return materialise(result)  # type: ignore[return-value]


# -- the encoder -----------------------------------------------------------------------------------------

def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (linear below 1 kHz, logarithmic above), as librosa's default."""
    hz = np.asarray(hz, dtype=np.float64)
    mel = hz / (200.0 / 3)
    log_part = hz >= 1000.0
    mel[log_part] = 15.0 + np.log(hz[log_part] / 1000.0) / (np.log(6.4) / 27.0)
    return mel


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    hz = mel * (200.0 / 3)
    log_part = mel >= 15.0
    hz[log_part] = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mel[log_part] - 15.0))
    return hz


def mel_filterbank(sr: int = SAMPLE_RATE, n_fft: int = N_FFT, n_mels: int = N_MELS) -> np.ndarray:
    """Triangular mel filters with Slaney's area normalisation, shape (n_mels, n_fft // 2 + 1)."""
    fft_freqs = np.fft.rfftfreq(n_fft, 1.0 / sr)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(np.array([0.0]))[0], _hz_to_mel(np.array([sr / 2.0]))[0],
                                   n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]
    return weights.astype(np.float32)


def raised_level(wav: np.ndarray) -> np.ndarray:
    """float32 audio raised to -30 dBFS RMS (never lowered), the level the encoder was trained at.

    Raises:
        ValueError: there is no audio.
    """
    wav = np.asarray(wav, dtype=np.float32)
    if wav.size == 0:
        raise ValueError("no audio to embed")
    rms = float(np.sqrt(np.mean(wav.astype(np.float64) ** 2)))
    if rms > 0:
        gain = 10 ** ((-30.0 - 20 * np.log10(rms)) / 20)
        if gain > 1:
            wav = wav * gain
    return wav


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)


class VoiceEncoder:
    """Utterance audio (16 kHz mono float32) -> a 256-d unit speaker embedding, in numpy.

    Args:
        path: the weights file (default: the one in the installed `resemblyzer` package).
    """

    def __init__(self, path: Path | None = None) -> None:
        state = load_legacy_checkpoint(path or weights_path())["model_state"]
        self.layers = []
        for i in range(3):
            w_ih = state[f"lstm.weight_ih_l{i}"].astype(np.float32)
            w_hh = state[f"lstm.weight_hh_l{i}"].astype(np.float32)
            bias = (state[f"lstm.bias_ih_l{i}"] + state[f"lstm.bias_hh_l{i}"]).astype(np.float32)
            self.layers.append((np.ascontiguousarray(w_ih.T), np.ascontiguousarray(w_hh.T), bias))
        self.linear_w = np.ascontiguousarray(state["linear.weight"].T.astype(np.float32))
        self.linear_b = state["linear.bias"].astype(np.float32)
        self.filters = mel_filterbank()
        n = np.arange(N_FFT)
        self.window = (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # periodic Hann

    def mel_frames(self, wav: np.ndarray) -> np.ndarray:
        """Mel power frames (not log), shape (frames, 40): centred STFT frames, zero padded."""
        padded = np.pad(wav.astype(np.float32), N_FFT // 2)
        count = 1 + (len(padded) - N_FFT) // HOP
        frames = np.lib.stride_tricks.as_strided(padded, (count, N_FFT), (padded.strides[0] * HOP,
                                                                             padded.strides[0]))
        spectrum = np.abs(np.fft.rfft(frames * self.window, axis=1)) ** 2
        return (spectrum.astype(np.float32) @ self.filters.T).astype(np.float32)

    def forward(self, mels: np.ndarray) -> np.ndarray:
        """Partial utterances (batch, frames, 40) -> unit embeddings (batch, 256).

        numpy's BLAS runs on one thread here: its products are small (a few partials by 256 by 1024, 480
        steps in a row), and a second BLAS thread only spins between them (measured: 18 times the CPU on
        2 threads, with the recogniser's threads competing for the same cores).
        """
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return self._forward(mels)

    def _forward(self, mels: np.ndarray) -> np.ndarray:
        x = mels.astype(np.float32)
        batch, steps, _ = x.shape
        for w_ih, w_hh, bias in self.layers:
            hidden = w_hh.shape[0]
            gates_in = x @ w_ih + bias  # (batch, steps, 4 * hidden)
            h = np.zeros((batch, hidden), dtype=np.float32)
            c = np.zeros((batch, hidden), dtype=np.float32)
            out = np.empty((batch, steps, hidden), dtype=np.float32)
            for t in range(steps):
                g = gates_in[:, t] + h @ w_hh
                i, f = _sigmoid(g[:, :hidden]), _sigmoid(g[:, hidden:2 * hidden])
                cell, o = np.tanh(g[:, 2 * hidden:3 * hidden]), _sigmoid(g[:, 3 * hidden:])
                c = f * c + i * cell
                h = o * np.tanh(c)
                out[:, t] = h
            x = out
        raw = np.maximum(0.0, x[:, -1] @ self.linear_w + self.linear_b)
        return raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-9)

    @staticmethod
    def partial_slices(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> list[slice]:
        """Frame ranges of the 1.6 s partial utterances covering `n_samples` (1.3 per second)."""
        n_frames = int(np.ceil((n_samples + 1) / HOP))
        step = int(np.round((SAMPLE_RATE / rate) / HOP))
        slices = [slice(i, i + PARTIAL_FRAMES) for i in range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step)]
        last = slices[-1]
        coverage = (n_samples - last.start * HOP) / (PARTIAL_FRAMES * HOP)
        if coverage < min_coverage and len(slices) > 1:
            slices = slices[:-1]
        return slices

    def embed(self, wav: np.ndarray) -> np.ndarray:
        """The utterance's embedding: its partials' embeddings averaged, unit length.

        The audio's level is raised to -30 dBFS first (never lowered), as the encoder was trained.
        """
        return self.embed_many([wav])[0]

    def _partials(self, wav: np.ndarray, repeat_short: bool) -> np.ndarray:
        wav = raised_level(wav)
        if repeat_short and len(wav) < PARTIAL_FRAMES * HOP:
            wav = np.tile(wav, -(-PARTIAL_FRAMES * HOP // len(wav)))[:PARTIAL_FRAMES * HOP]
        slices = self.partial_slices(len(wav))
        need = slices[-1].stop * HOP
        if need > len(wav):
            wav = np.pad(wav, (0, need - len(wav)))
        mels = self.mel_frames(wav)
        return np.stack([mels[s] for s in slices])

    def embed_many(self, wavs: Sequence[np.ndarray], *, repeat_short: bool = False) -> list[np.ndarray]:
        """`embed` of each piece of audio, all their partials run through the network in one batch (the
        LSTM's 480 steps cost about the same for one partial as for a hundred).

        Args:
            wavs: pieces of 16 kHz mono float32 audio.
            repeat_short: a piece shorter than one partial (1.6 s) is repeated to fill it instead of padded
                with silence: a short turn's embedding then ends on its voice, not on a second of silence
                (measured on the real clips: same-person pieces of 0.6-1.2 s 0.70-0.72 alike on average
                against 0.58-0.70 padded, other people 0.44-0.46 either way).
        """
        batches = [self._partials(np.asarray(w, dtype=np.float32), repeat_short) for w in wavs]
        partials = self.forward(np.concatenate(batches))
        out, at = [], 0
        for batch in batches:
            mean = partials[at:at + len(batch)].mean(axis=0)
            at += len(batch)
            out.append((mean / np.linalg.norm(mean)).astype(np.float32))
        return out
