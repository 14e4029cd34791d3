"""Who spoke: labels that stay stable through a meeting, and the wearer's voice.

Each utterance is embedded by the voice encoder (`voice_encoder.VoiceEncoder`). Labels: the enrolled wearer
is `WEARER_LABEL`; everyone else gets `S1`, `S2`, ... in order of first speech. Each utterance's embedding
joins the nearest voice whose centroid is at least `threshold` alike (cosine), else starts a new voice; a
label never changes once given (online clustering, no relabelling). A short turn needs less likeness to
join (`SpeakerTracker.join_threshold`): a 1-3 s piece of a known person is often less alike to that person's
centroid than `threshold`, and would otherwise start a voice nobody else has.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .speaker_turns import CHANGE_THRESHOLD, MAX_TURNS, SHORT_CHANGE_THRESHOLD, SpeakerTurn, speaker_turns
from .voice_encoder import SAMPLE_RATE, VoiceEncoder

WEARER_LABEL = "wearer"
#: The default `SpeakerOptions.new_voice_change`.
NEW_VOICE_CHANGE = 0.7
#: The defaults of `SpeakerOptions.new_voice_seconds` and `short_threshold` (tuned with `meetmem bench
#: speakers` on the quick real conversations; the espeak-ng meetings' labels barely move).
NEW_VOICE_SECONDS = 3.0
SHORT_THRESHOLD = 0.55


# -- labels ----------------------------------------------------------------------------------------------

@dataclass
class SpeakerOptions:
    """The clustering policy.

    Args:
        threshold: least cosine similarity between an utterance and a voice's centroid to join it.
        wearer_threshold: least similarity to the enrolled wearer's voice to be labelled the wearer.
        min_seconds: an utterance shorter than this joins the nearest voice (even below the threshold) and
            never starts one or moves a centroid: too short to trust.
        new_voice_seconds: an utterance shorter than this (and not shorter than `min_seconds`) joins the
            nearest voice at a lower similarity than `threshold`: the least similarity falls in a straight line
            from `threshold` at this length to `short_threshold` at `min_seconds`. Below it, it starts a voice
            (it is that unlike everyone heard). `min_seconds` or less: one threshold for every length.
        short_threshold: the least similarity to join at `min_seconds` (see `new_voice_seconds`).
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
    new_voice_seconds: float = NEW_VOICE_SECONDS
    short_threshold: float = SHORT_THRESHOLD
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
        if sims and (max(sims) >= self.join_threshold(seconds) or not trusted):
            return self.voices[int(np.argmax(sims))].label
        return None

    def join_threshold(self, seconds: float | None) -> float:
        """The least similarity to a voice's centroid for an utterance of `seconds` (None: long) to join it:
        `threshold`, falling for an utterance shorter than `new_voice_seconds` to `short_threshold` at
        `min_seconds`. A short piece of a known voice is less alike to it than a long one, so at `threshold`
        alone 1-3 s turns started voices of their own."""
        o = self.options
        if seconds is None or seconds >= o.new_voice_seconds or o.new_voice_seconds <= o.min_seconds:
            return o.threshold
        short = (o.new_voice_seconds - max(seconds, o.min_seconds)) / (o.new_voice_seconds - o.min_seconds)
        return o.threshold - max(0.0, o.threshold - o.short_threshold) * short

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
        if best is not None and (best_sim >= self.join_threshold(seconds) or not trusted):
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
