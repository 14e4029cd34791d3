"""Who spoke: speaker embeddings on the edge, labels that stay stable through a meeting, the wearer's voice.

The embedding model is Resemblyzer's voice encoder (GE2E: a 3-layer LSTM over 40-band mel frames, 256-d
unit vectors), whose trained weights ship inside the `resemblyzer` package on PyPI (`pretrained.pt`, 17 MB).
That package imports torch and librosa, which the edge never installs, so it is installed without its
dependencies (`pip install --no-deps resemblyzer==0.1.4`) and only its weights file is read here: the
checkpoint's own serialisation (PyTorch's legacy pickle format) is parsed with the standard library and the
network runs in numpy. tests/edge/test_speakers.py checks the embeddings against torch's own LSTM.

Labels: the enrolled wearer is `WEARER_LABEL`; everyone else gets `S1`, `S2`, ... in order of first
speech. Each utterance's embedding joins the nearest voice whose centroid is at least `threshold` alike
(cosine), else starts a new voice; a label never changes once given (online clustering, no relabelling).
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import struct
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16000
N_FFT = 400  # 25 ms
HOP = 160  # 10 ms
N_MELS = 40
PARTIAL_FRAMES = 160  # 1.6 s per partial utterance
WEARER_LABEL = "wearer"
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


# -- a speaker change inside one utterance -----------------------------------------------------------------

#: Where a new voice may start: the middle of a pause, 10 ms frames at least `PAUSE_DB` below the
#: utterance's loud frames (its 95th percentile) for at least `PAUSE_MIN_S` (a gap between two words).
PAUSE_DB = 25.0
PAUSE_MIN_S = 0.05
#: The longest pauses of a stretch tried as the change (all sides embedded in one batch).
CHANGE_CANDIDATES = 6
#: A side of a cut holding one of the encoder's 1.6 s partial utterances is compared at `change_threshold`.
MIN_TURN_SAMPLES = PARTIAL_FRAMES * HOP
#: A shorter side ("yes." "no, Tuesday.") down to this long is compared at `short_change_threshold`.
MIN_SHORT_TURN_SAMPLES = int(0.6 * SAMPLE_RATE)
#: The default `SpeakerOptions.change_threshold` (tuned with `meetmem bench speakers`).
CHANGE_THRESHOLD = 0.8
#: The default `SpeakerOptions.short_change_threshold`.
SHORT_CHANGE_THRESHOLD = 0.45
#: The default `SpeakerOptions.new_voice_change`.
NEW_VOICE_CHANGE = 0.7
#: The most turns one utterance is cut into.
MAX_TURNS = 8


@dataclass(frozen=True, eq=False)
class SpeakerTurn:
    """One voice's stretch of an utterance: samples `[start, end)` of its audio, and its embedding."""

    start: int
    end: int
    embedding: np.ndarray


def speaker_turns(encoder: VoiceEncoder, audio: np.ndarray, change_threshold: float | None,
                  short_change_threshold: float | None = SHORT_CHANGE_THRESHOLD, *,
                  max_turns: int = MAX_TURNS, candidates: int = CHANGE_CANDIDATES) -> list[SpeakerTurn]:
    """An utterance's audio as the turns of the voices in it, in order (one turn when nobody took over).

    People who answer each other with less than the VAD's closing pause between them arrive as one
    utterance, which one label would cover. A new voice starts in a pause (`pauses`). The utterance is cut
    greedily, again and again: in a stretch, the `candidates` longest pauses with enough speech on either
    side are tried, the audio before and after each embedded as an utterance of its own (all in one batch,
    `VoiceEncoder.embed_many`); the pair furthest below its threshold is where the stretch is cut, and each
    side is searched again the same way, so a third voice, or a short answer between two long turns, gets
    its own turn. Sides holding a 1.6 s partial are compared at `change_threshold`; a side of 0.6 to
    1.6 s, repeated to fill a partial, at the lower `short_change_threshold` (two short pieces of one
    voice are less alike than two long ones). Comparing sliding 1.6 s partials' means instead put the cut
    up to a second off on espeak-ng voices: the mean of a few partials of one voice varies nearly as much
    as two voices differ.

    Args:
        encoder: the voice encoder.
        audio: one utterance, 16 kHz mono float32.
        change_threshold: the cosine between two sides of 1.6 s or more below which the voice changed; None
            never cuts.
        short_change_threshold: the same for a side shorter than 1.6 s; None: no side shorter than 1.6 s.
        max_turns: the most turns returned (2: one cut at most).
        candidates: pauses tried per stretch.
    """
    audio = np.asarray(audio, dtype=np.float32)
    n = len(audio)
    shortest = MIN_TURN_SAMPLES if short_change_threshold is None else MIN_SHORT_TURN_SAMPLES
    if change_threshold is None or max_turns < 2 or n < 2 * shortest:
        return [SpeakerTurn(0, n, encoder.embed(audio))]
    cuts = sorted(((length, middle * HOP) for length, middle in pauses(raised_level(audio))), reverse=True)
    done: list[SpeakerTurn] = []
    todo: list[tuple[int, int, np.ndarray | None]] = [(0, n, None)]
    while todo:
        lo, hi, embedding = todo.pop()
        tried = [] if len(done) + len(todo) + 1 >= max_turns else [
            cut for _, cut in cuts
            if min(cut - lo, hi - cut) >= shortest][:candidates]
        if not tried:
            done.append(SpeakerTurn(lo, hi, embedding if embedding is not None else encoder.embed(audio[lo:hi])))
            continue
        sides = encoder.embed_many([piece for cut in tried for piece in (audio[lo:cut], audio[cut:hi])],
                                   repeat_short=True)
        best: tuple[float, int, np.ndarray, np.ndarray] | None = None
        for i, cut in enumerate(tried):
            left, right = sides[2 * i], sides[2 * i + 1]
            long_sides = min(cut - lo, hi - cut) >= MIN_TURN_SAMPLES
            below = (change_threshold if long_sides else short_change_threshold) - float(left @ right)  # type: ignore[operator]
            if below > 0 and (best is None or below > best[0]):
                best = (below, cut, left, right)
        if best is None:
            done.append(SpeakerTurn(lo, hi, embedding if embedding is not None else encoder.embed(audio[lo:hi])))
            continue
        _, cut, left, right = best
        todo.extend([(cut, hi, right), (lo, cut, left)])  # the earlier stretch is searched first
    return sorted(done, key=lambda t: t.start)


def pauses(wav: np.ndarray) -> list[tuple[int, int]]:
    """The pauses in an utterance as (length, middle) in 10 ms frames: runs of at least `PAUSE_MIN_S` of
    frames `PAUSE_DB` below its loud frames."""
    frames = len(wav) // HOP
    if frames < 2:
        return []
    energy = (wav[:frames * HOP].astype(np.float64) ** 2).reshape(frames, HOP).mean(axis=1)
    quiet = energy <= np.percentile(energy, 95) * 10 ** (-PAUSE_DB / 10)
    out: list[tuple[int, int]] = []
    run_start = None
    for i, still in enumerate([*quiet, False]):
        if still and run_start is None:
            run_start = i
        elif not still and run_start is not None:
            if (i - run_start) * HOP >= PAUSE_MIN_S * SAMPLE_RATE:
                out.append((i - run_start, (run_start + i) // 2))
            run_start = None
    return out


# -- labels ----------------------------------------------------------------------------------------------

@dataclass
class SpeakerOptions:
    """The clustering policy.

    Args:
        threshold: least cosine similarity between an utterance and a voice's centroid to join it.
        wearer_threshold: least similarity to the enrolled wearer's voice to be labelled the wearer.
        min_seconds: an utterance shorter than this joins the nearest voice (even below the threshold) and
            never starts one or moves a centroid: too short to trust.
        change_threshold: inside one utterance, the cosine between the voices before and after a pause
            below which it is cut into turns with their own labels (`speaker_turns`); None: never cut.
        short_change_threshold: the same where a side is shorter than 1.6 s (down to 0.6 s); None: no turn
            shorter than 1.6 s is cut out.
        new_voice_change: a cut is kept where the two sides would get two known labels; where a side would
            start a new voice, only when their cosine is below this (a short side of one person's utterance
            looks new more often than a new person starts speaking without a pause).
        max_turns: the most turns one utterance is cut into (2: at most once).
    """

    threshold: float = 0.75
    wearer_threshold: float = 0.75
    min_seconds: float = 1.0
    change_threshold: float | None = CHANGE_THRESHOLD
    short_change_threshold: float | None = SHORT_CHANGE_THRESHOLD
    new_voice_change: float = NEW_VOICE_CHANGE
    max_turns: int = MAX_TURNS


@dataclass
class _Voice:
    label: str
    total: np.ndarray
    count: int = 0

    @property
    def centroid(self) -> np.ndarray:
        return self.total / max(np.linalg.norm(self.total), 1e-9)


@dataclass
class SpeakerTracker:
    """Online clustering of utterance embeddings into labels that never change.

    Args:
        encoder: the voice encoder.
        options: the thresholds.
        wearer: the enrolled wearer's embedding (None: not enrolled).
    """

    encoder: VoiceEncoder
    options: SpeakerOptions = field(default_factory=SpeakerOptions)
    wearer: np.ndarray | None = None
    voices: list[_Voice] = field(default_factory=list)
    embed_time: float = 0.0  # seconds spent embedding (process time)
    utterances: int = 0

    def label(self, audio: np.ndarray) -> str:
        """The speaker label of one utterance's audio."""
        import time

        started = time.process_time()
        embedding = self.encoder.embed(audio)
        self.embed_time += time.process_time() - started
        self.utterances += 1
        return self.assign(embedding, len(audio) / SAMPLE_RATE)

    def turns(self, audio: np.ndarray) -> list[SpeakerTurn]:
        """One utterance's audio as its speakers' turns (`speaker_turns`, then `merge_same`), each with its
        embedding; label them with `assign`."""
        import time

        started = time.process_time()
        found = speaker_turns(self.encoder, audio, self.options.change_threshold,
                              self.options.short_change_threshold, max_turns=self.options.max_turns)
        self.embed_time += time.process_time() - started
        return self.merge_same(found)

    def peek(self, embedding: np.ndarray, seconds: float | None = None) -> str | None:
        """The label `assign` would give an embedding of `seconds` (None: trusted) now, without changing
        anything (None: a new voice)."""
        if self.wearer is not None and float(embedding @ self.wearer) >= self.options.wearer_threshold:
            return WEARER_LABEL
        sims = [float(embedding @ voice.centroid) for voice in self.voices]
        trusted = seconds is None or seconds >= self.options.min_seconds
        if sims and (max(sims) >= self.options.threshold or not trusted):
            return self.voices[int(np.argmax(sims))].label
        return None

    def merge_same(self, turns: list[SpeakerTurn]) -> list[SpeakerTurn]:
        """Neighbouring turns that would get the same label joined again: a cut is kept only where the labels
        differ (two voices heard before), or where a side would start a new voice and the sides are unlike
        (`new_voice_change`), so a change of tone inside one person's utterance does not split it. A turn too
        short to start a voice (`min_seconds`) counts as the voice it would join. A joined turn's embedding is
        its parts' weighted by length."""
        out = list(turns[:1])
        for turn in turns[1:]:
            last = out[-1]
            before = self.peek(last.embedding, (last.end - last.start) / SAMPLE_RATE)
            after = self.peek(turn.embedding, (turn.end - turn.start) / SAMPLE_RATE)
            if before is not None and after is not None:
                same = before == after
            else:  # a side would start a voice: cut only when the two sides are far apart
                same = float(last.embedding @ turn.embedding) >= self.options.new_voice_change
            if same:
                total = last.embedding * (last.end - last.start) + turn.embedding * (turn.end - turn.start)
                unit = (total / max(np.linalg.norm(total), 1e-9)).astype(np.float32)
                out[-1] = SpeakerTurn(last.start, turn.end, unit)
            else:
                out.append(turn)
        return out

    def assign(self, embedding: np.ndarray, seconds: float) -> str:
        """The label for an embedding of an utterance `seconds` long (the clustering alone)."""
        if self.wearer is not None and float(embedding @ self.wearer) >= self.options.wearer_threshold:
            return WEARER_LABEL
        trusted = seconds >= self.options.min_seconds
        best: _Voice | None = None
        best_sim = -1.0
        for voice in self.voices:
            sim = float(embedding @ voice.centroid)
            if sim > best_sim:
                best, best_sim = voice, sim
        if best is not None and (best_sim >= self.options.threshold or not trusted):
            if trusted:
                best.total = best.total + embedding
                best.count += 1
            return best.label
        voice = _Voice(f"S{len(self.voices) + 1}", embedding.astype(np.float64).copy(), 1)
        self.voices.append(voice)
        return voice.label


# -- the wearer's enrolled voice -------------------------------------------------------------------------

def default_enrollment_path() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("meetmem", appauthor=False)) / "wearer-voice.json"


def save_enrollment(path: Path, embedding: np.ndarray, *, seconds: float, source: str) -> None:
    """Store the wearer's embedding (written to a temporary file, then renamed: never half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps({"model": "resemblyzer-0.1.4-ge2e", "seconds": round(seconds, 2), "source": source,
                               "embedding": [round(float(v), 7) for v in embedding]}))
    tmp.replace(path)


def load_enrollment(path: Path) -> np.ndarray:
    """The wearer's stored embedding.

    Raises:
        ValueError: the file is not an enrollment this version wrote (says which file and what to do).
    """
    try:
        data = json.loads(Path(path).read_text())
        vector = np.asarray(data["embedding"], dtype=np.float32)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a wearer enrollment ({exc}); run `meetmem edge enroll` again") from exc
    if vector.shape != (256,) or not np.isfinite(vector).all() or np.linalg.norm(vector) == 0:
        raise ValueError(f"{path} holds no usable voice embedding; run `meetmem edge enroll` again")
    return vector / np.linalg.norm(vector)
