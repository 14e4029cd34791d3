"""Diarization error rate, as NIST's md-eval scores it: (missed + false alarm + confusion) / reference speech.

Scored on a 10 ms grid. Around every reference turn's start and end a `collar` (0.25 s each side, the
usual setting) is not scored. Overlapping speech counts each speaker: in a frame with reference speakers R
and system speakers H, missed = max(0, |R| - |H|), false alarm = max(0, |H| - |R|), confusion = min(|R|, |H|)
minus the pairs the speaker mapping makes correct. The mapping of system labels to reference speakers is
one to one and maximises the time they share (the Hungarian algorithm), over the whole recording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Turn = tuple[float, float, str]  # start, end (seconds), speaker
STEP = 0.01


@dataclass(frozen=True)
class DERResult:
    der: float
    missed: float  # seconds
    false_alarm: float
    confusion: float
    scored: float  # seconds of reference speech scored (outside the collars)
    mapping: dict[str, str]  # system label -> reference speaker

    def public(self) -> dict[str, object]:
        return {"der": round(self.der, 4), "missed_s": round(self.missed, 2),
                "false_alarm_s": round(self.false_alarm, 2), "confusion_s": round(self.confusion, 2),
                "scored_s": round(self.scored, 2), "mapping": self.mapping}


def _frames(turns: Sequence[Turn], labels: list[str], n: int) -> np.ndarray:
    grid = np.zeros((len(labels), n), dtype=bool)
    index = {label: i for i, label in enumerate(labels)}
    for start, end, who in turns:
        a, b = int(round(start / STEP)), int(round(end / STEP))
        grid[index[who], max(0, a):min(n, b)] = True
    return grid


def diarization_error(reference: Sequence[Turn], hypothesis: Sequence[Turn], *, collar: float = 0.25) -> DERResult:
    """DER of `hypothesis` against `reference` (see the module's doc)."""
    from scipy.optimize import linear_sum_assignment

    for start, end, _ in (*reference, *hypothesis):
        if not (0 <= start <= end):
            raise ValueError(f"a turn must have 0 <= start <= end, not {start}..{end}")
    ref_labels = sorted({t[2] for t in reference})
    hyp_labels = sorted({t[2] for t in hypothesis})
    end = max((t[1] for t in (*reference, *hypothesis)), default=0.0)
    n = int(round(end / STEP)) + 1
    ref = _frames(reference, ref_labels, n)
    hyp = _frames(hypothesis, hyp_labels, n)
    scored = np.ones(n, dtype=bool)
    width = int(round(collar / STEP))
    for start, stop, _ in reference:
        for edge in (int(round(start / STEP)), int(round(stop / STEP))):
            scored[max(0, edge - width):min(n, edge + width)] = False
    ref, hyp = ref[:, scored], hyp[:, scored]
    shared = ref.astype(np.int64) @ hyp.T.astype(np.int64)  # frames each (reference, system) pair share
    mapping: dict[str, str] = {}
    correct = 0
    if ref_labels and hyp_labels:
        rows, cols = linear_sum_assignment(-shared)
        for r, c in zip(rows, cols, strict=True):
            if shared[r, c] > 0:
                mapping[hyp_labels[c]] = ref_labels[r]
                correct += int(shared[r, c])
    n_ref, n_hyp = ref.sum(axis=0), hyp.sum(axis=0)
    missed = float(np.maximum(0, n_ref - n_hyp).sum())
    false_alarm = float(np.maximum(0, n_hyp - n_ref).sum())
    confusion = float(np.minimum(n_ref, n_hyp).sum()) - correct
    total = float(n_ref.sum())
    der = (missed + false_alarm + confusion) / total if total else 0.0
    return DERResult(der, missed * STEP, false_alarm * STEP, confusion * STEP, total * STEP, mapping)
