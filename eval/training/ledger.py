"""`meetmem train ledger`: rebuild the ledger detector's head from AMI dev, seeded, and print what it reaches.

Data: each AMI meeting's dialogue acts as segments (`corpora.ami_ledger.ami_segments`: id, speaker,
times, words; never `da_type`). An act is a positive for `decision`, `action` or `problem` when it is in
the `evidence_da_ids` of one of the meeting's human decision, action or problem sentences ("NA."
skipped), and for `summary` when the annotators chose it for the extractive summary.

Everything is trained and chosen on the tune half (`ami_split`), by series:
1. each label's regularisation by grouped cross-validation (folds by series) on the tune half, the one
   with the best out-of-fold average precision;
2. each kind's item settings (threshold, grouping gap, utterances cited, and the gate on the rules'
   items) on those out-of-fold scores, scored as `meetmem bench ledger` scores (evidence overlap), for
   the best of min(P / 0.5, R / 0.6): the issue's targets, reached together;
3. the head refit on the whole tune half and written with those settings.
Then, once, the report half: rules, detector and combination, todos, decisions and open problems.

The embeddings (all-MiniLM-L6-v2 of each act's words) are cached per meeting under `--cache`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.cli.options import JSON, flags
from meetmem.cli.output import emit_figures

from ..corpora.ami_ledger import ami_segments, figures, load_meetings, match_counts
from ..harness import BenchDataError, guarded
from . import lazy_encoder
from .ami_split import REPORT_SERIES, half, series

if TYPE_CHECKING:
    import numpy as np

    from meetmem.cli.context import CommandContext
    from meetmem.store.records import LedgerItem, Segment

SEED = 20261203
LABELS = ("decision", "action", "problem", "summary")
#: The gold sentence lists of the abstractive summary behind each ledger label.
GOLD_KEYS = {"decision": "decisions", "action": "actions", "problem": "problems"}
C_GRID = (0.001, 0.003, 0.01, 0.05)
FOLDS = 4
GAPS = (0.0, 10.0, 30.0, 60.0)
CITES = (1, 2, 3)
GATES = (0.0, 0.02, 0.05, 0.1, 0.2)
#: The shipped head's version: bump when the features or the item rules change.
VERSION_BASE = "ledger-detector-1"


def _say(line: str) -> None:
    sys.stderr.write(f"train ledger: {line}\n")
    sys.stderr.flush()


class Meeting:
    """One AMI meeting ready to train on: its segments, labels, gold sentences and (later) features."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.id: str = raw["meeting_id"]
        self.segments: list[Segment] = ami_segments(raw)
        summary = raw.get("abstractive_summary") or {}
        self.gold = {label: [g for g in summary.get(key, []) if g["text"].strip() != "NA."]
                     for label, key in GOLD_KEYS.items()}
        chosen = set(raw.get("extractive_summary_da_ids") or [])
        self.labels: dict[str, list[int]] = {}
        for label in LABELS:
            if label == "summary":
                positive = chosen
            else:
                positive = {da for g in self.gold[label] for da in g["evidence_da_ids"]}
            self.labels[label] = [int(s.segment_id in positive) for s in self.segments]
        self.x: np.ndarray | None = None

    @property
    def series(self) -> str:
        return series(self.id)

    @property
    def hours(self) -> float:
        return (self.segments[-1].end - self.segments[0].start) / 3600 if self.segments else 0.0


def embed_meetings(meetings: Sequence[Meeting], cache: Path, embed: Callable[[list[str]], np.ndarray]) -> None:
    """Set each meeting's feature rows, embedding its acts once (cached by the hash of its texts)."""
    import numpy as np

    from meetmem.summarizers.detector import features

    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    made = 0
    for n, meeting in enumerate(meetings, start=1):
        texts = [s.text for s in meeting.segments]
        key = hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()[:16]
        path = cache / f"{meeting.id}.minilm.{key}.npy"
        if path.is_file():
            vectors = np.load(path)
        else:
            vectors = np.asarray(embed(texts), dtype=np.float32)
            np.save(path, vectors)
            made += len(texts)
            if n % 10 == 0:
                _say(f"embedded {n}/{len(meetings)} meetings ({made} acts, {time.perf_counter() - t0:.0f} s)")
        meeting.x = features(meeting.segments, vectors)


def _stack(meetings: Sequence[Meeting], label: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    import numpy as np

    x = np.vstack([m.x for m in meetings])
    y = np.concatenate([np.asarray(m.labels[label]) for m in meetings])
    groups = np.concatenate([np.full(len(m.segments), m.series) for m in meetings])
    return x, y, groups


def _fit(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(mean, scale, coef, intercept) of a standardised L2 logistic regression."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-6] = 1.0
    model = LogisticRegression(C=c, max_iter=2000, random_state=SEED)
    model.fit((x - mean) / scale, y)
    return mean, scale, model.coef_[0].astype(np.float32), float(model.intercept_[0])


def out_of_fold(meetings: Sequence[Meeting], label: str, c: float) -> list[np.ndarray]:
    """Each tune meeting's scores from a head fitted on the other folds' series."""
    import numpy as np

    names = sorted({m.series for m in meetings})
    folds = [names[i::FOLDS] for i in range(FOLDS)]
    out: dict[str, np.ndarray] = {}
    for held in folds:
        train = [m for m in meetings if m.series not in held]
        x, y, _ = _stack(train, label)
        mean, scale, coef, intercept = _fit(x, y, c)
        for m in meetings:
            if m.series in held:
                z = ((m.x - mean) / scale) @ coef + intercept
                out[m.id] = 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
    return [out[m.id] for m in meetings]


def _average_precision(y: np.ndarray, p: np.ndarray) -> float:
    from sklearn.metrics import average_precision_score

    return float(average_precision_score(y, p)) if y.any() else 0.0


def score_items(meetings: Sequence[Meeting], items: Sequence[Sequence[LedgerItem]], label: str) -> dict[str, Any]:
    """`bench ledger`'s figures (evidence and text) of one kind's items against the label's gold."""
    totals: dict[str, int] = {}
    for meeting, found in zip(meetings, items, strict=True):
        for name, value in match_counts(found, meeting.gold[label]).items():
            totals[name] = totals.get(name, 0) + value
    return figures(totals)


def _objective(fig: dict[str, Any]) -> tuple[float, float]:
    p = fig["evidence"]["precision"] or 0.0
    r = fig["evidence"]["recall"] or 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return min(p / 0.5, r / 0.6), f1


def _kind_items(meetings: Sequence[Meeting], scores: Sequence[dict[str, np.ndarray]], kind: str,
                conf: Any, version: str) -> list[list[LedgerItem]]:
    from meetmem.summarizers.ledger_learned import detect_items

    return [[it for it in detect_items(m.segments, s, {kind: conf}, meeting_date=None, version=version)
             if it.kind == kind] for m, s in zip(meetings, scores, strict=True)]


def choose_settings(meetings: Sequence[Meeting], scores: Sequence[dict[str, np.ndarray]],
                    rules: Sequence[Sequence[LedgerItem]]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Each kind's threshold, gap, citations and gate, chosen on the tune half's out-of-fold scores."""
    import numpy as np

    from meetmem.summarizers.detector import is_english
    from meetmem.summarizers.ledger_learned import LABEL_KINDS, KindSettings, combine

    chosen: dict[str, dict[str, Any]] = {}
    trace: dict[str, Any] = {}
    for label, kind in LABEL_KINDS.items():
        pooled = np.concatenate([s[label] for s in scores])
        thresholds = sorted({float(np.quantile(pooled, 1 - q)) for q in
                             (0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.06, 0.08)})
        best: tuple[tuple[float, float], KindSettings, dict[str, Any]] | None = None
        for threshold in thresholds:
            for gap in GAPS:
                for cite in CITES:
                    conf = KindSettings(threshold, gap, cite, 0.0)
                    fig = score_items(meetings, _kind_items(meetings, scores, kind, conf, "tune"), label)
                    key = _objective(fig)
                    if best is None or key > best[0]:
                        best = (key, conf, fig)
        assert best is not None
        _, conf, fig = best
        # The gate on the rules' items of this kind, for the combination, with the detector settings above.
        detected = _kind_items(meetings, scores, kind, conf, "tune")
        best_gate: tuple[tuple[float, float], float, dict[str, Any]] | None = None
        for gate in GATES:
            gated = KindSettings(conf.threshold, conf.gap_s, conf.cite, gate)
            combined = []
            for m, s, r, d in zip(meetings, scores, rules, detected, strict=True):
                positions = {seg.segment_id: i for i, seg in enumerate(m.segments) if is_english(seg)}
                merged = combine([it for it in r if it.kind == kind], d, s, positions, {kind: gated}, version="tune")
                combined.append([it for it in merged if it.kind == kind])
            cfig = score_items(meetings, combined, label)
            key = _objective(cfig)
            if best_gate is None or key > best_gate[0]:
                best_gate = (key, gate, cfig)
        assert best_gate is not None
        chosen[kind] = {"threshold": round(conf.threshold, 6), "gap_s": conf.gap_s, "cite": conf.cite,
                        "gate": best_gate[1]}
        trace[kind] = {"detector_out_of_fold": _brief(fig), "combined_out_of_fold": _brief(best_gate[2])}
        _say(f"{kind}: threshold {conf.threshold:.4f}, gap {conf.gap_s:.0f} s, cite {conf.cite}, gate {best_gate[1]}; "
             f"out of fold P {fig['evidence']['precision']} R {fig['evidence']['recall']}, combined P "
             f"{best_gate[2]['evidence']['precision']} R {best_gate[2]['evidence']['recall']}")
    return chosen, trace


def _brief(fig: dict[str, Any]) -> dict[str, Any]:
    return {"evidence": {k: fig["evidence"][k] for k in ("precision", "recall")},
            "text": fig["text"], "extracted": fig["counts"]["extracted"], "gold": fig["counts"]["gold"]}


def evaluate(meetings: Sequence[Meeting], ledger_for: Callable[[str], Any]) -> dict[str, Any]:
    """Rules, detector and combination on `meetings`: figures per kind, seconds per meeting-hour."""
    from meetmem.summarizers.ledger_learned import LABEL_KINDS

    report: dict[str, Any] = {}
    hours = sum(m.hours for m in meetings)
    for mode in ("rules", "detector", "combined"):
        extractor = ledger_for(mode)
        found: list[list[LedgerItem]] = []
        t0 = time.perf_counter()
        for m in meetings:
            found.append(extractor(m.segments, meeting_date=None))
        seconds = time.perf_counter() - t0
        row: dict[str, Any] = {}
        for label, kind in LABEL_KINDS.items():
            name = {"todo": "todos", "decision": "decisions", "open_question": "open_problems"}[kind]
            row[name] = _brief(score_items(meetings, [[it for it in f if it.kind == kind] for f in found], label))
        row["seconds_per_meeting_hour"] = round(seconds / hours, 2) if hours else None
        report[mode] = row
    return report


def train(data_dir: Path, out_dir: Path, cache: Path, *, threads: int | None = None) -> dict[str, Any]:
    """Train, choose, write the head to `out_dir`, and report on the report half; returns the JSON report."""
    import numpy as np

    from meetmem.learned.heads import LinearHeads
    from meetmem.summarizers.detector import SCALARS
    from meetmem.summarizers.ledger import extract_ledger
    from meetmem.summarizers.ledger_learned import EMBEDDER, HEAD_NAME, LearnedLedger, UtteranceScorer

    t_start = time.perf_counter()
    raw = load_meetings(Path(data_dir), "dev")
    meetings = [Meeting(r) for r in raw]
    meetings = [m for m in meetings if m.segments]
    tune = [m for m in meetings if half(m.id) == "tune"]
    report_half = [m for m in meetings if half(m.id) == "report"]
    if not tune or not report_half:
        raise BenchDataError(f"{data_dir}/dev does not hold both halves of AMI dev (tune {len(tune)}, report "
                             f"{len(report_half)} meetings)")
    _say(f"{len(tune)} tune and {len(report_half)} report meetings; embedding with {EMBEDDER}")
    embed = lazy_encoder(EMBEDDER, threads)
    embed_meetings(meetings, cache, embed)
    t_embedded = time.perf_counter()

    # 1. Regularisation per label, by grouped cross-validation on the tune half.
    chosen_c: dict[str, float] = {}
    oof: dict[str, list[np.ndarray]] = {}
    cv: dict[str, dict[str, float]] = {}
    for label in LABELS:
        y = np.concatenate([np.asarray(m.labels[label]) for m in tune])
        best = None
        for c in C_GRID:
            scores = out_of_fold(tune, label, c)
            ap = _average_precision(y, np.concatenate(scores))
            cv.setdefault(label, {})[str(c)] = round(ap, 4)
            if best is None or ap > best[0]:
                best = (ap, c, scores)
        assert best is not None
        chosen_c[label] = best[1]
        oof[label] = best[2]
        _say(f"{label}: C {best[1]} (out-of-fold average precision {best[0]:.3f}; "
             f"positives {int(y.sum())} of {len(y)})")

    # 2. Item settings on the out-of-fold scores.
    tune_scores = [{label: oof[label][i] for label in LABELS} for i in range(len(tune))]
    tune_rules = [extract_ledger(m.segments) for m in tune]
    kinds, trace = choose_settings(tune, tune_scores, tune_rules)

    # 3. The head refit on the whole tune half.
    means, scales, coefs, intercepts = [], [], [], []
    for label in LABELS:
        x, y, _ = _stack(tune, label)
        mean, scale, coef, intercept = _fit(x, y, chosen_c[label])
        means.append(mean)
        scales.append(scale)
        coefs.append(coef)
        intercepts.append(intercept)
    # One standardisation for all heads: each label's is the same (same rows), so the first is kept.
    coef = np.stack(coefs, axis=1).astype(np.float32)
    intercept = np.asarray(intercepts, dtype=np.float32)
    digest = hashlib.sha256(coef.tobytes() + intercept.tobytes() + json.dumps(kinds, sort_keys=True).encode())
    version = f"{VERSION_BASE}+{digest.hexdigest()[:8]}"
    heads = LinearHeads(version, LABELS, means[0].astype(np.float32), scales[0].astype(np.float32), coef, intercept,
                        {"embedder": EMBEDDER, "features": {"context": "mean of 3 before, 3 after",
                                                            "scalars": list(SCALARS)},
                         "kinds": kinds, "regularisation_C": chosen_c, "seed": SEED,
                         "trained_on": {"data": "AMI dev, tune half", "series": sorted({m.series for m in tune}),
                                        "meetings": len(tune)}})
    arrays, meta = heads.save(out_dir, HEAD_NAME)
    t_trained = time.perf_counter()
    _say(f"wrote {arrays} ({arrays.stat().st_size} bytes) and {meta}, version {version}")

    # 4. Once: the report half.
    scorer = UtteranceScorer(heads=heads, embedder=_Cached(meetings, embed))
    report = evaluate(report_half, lambda mode: LearnedLedger(scorer, mode=mode))
    return {
        "command": "train ledger",
        "version": version,
        "seed": SEED,
        "weights": {"npz": str(arrays), "npz_bytes": arrays.stat().st_size, "json": str(meta)},
        "split": {"by": "series", "tune_series": sorted({m.series for m in tune}), "tune_meetings": len(tune),
                  "report_series": sorted(REPORT_SERIES), "report_meetings": len(report_half),
                  "report_hours": round(sum(m.hours for m in report_half), 2)},
        "cross_validation": {"folds": FOLDS, "by": "series", "average_precision_by_C": cv, "chosen_C": chosen_c},
        "kinds": kinds,
        "tune_out_of_fold": trace,
        "report": report,
        "seconds": {"embed": round(t_embedded - t_start, 1), "train_and_choose": round(t_trained - t_embedded, 1),
                    "report": round(time.perf_counter() - t_trained, 1)},
    }


class _Cached:
    """An embedder over the training cache: the report half's acts are embedded once, not again."""

    def __init__(self, meetings: Sequence[Meeting], embed: Callable[[list[str]], np.ndarray]) -> None:
        self._embed = embed
        self._known: dict[str, np.ndarray] = {}
        self._meetings = meetings

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        import numpy as np

        if not self._known:
            from meetmem.summarizers.detector import feature_count

            for m in self._meetings:
                assert m.x is not None
                dim = (m.x.shape[1] - (feature_count(0))) // 3
                for s, row in zip(m.segments, m.x, strict=True):
                    self._known[s.text] = row[:dim]
        missing = [t for t in texts if t not in self._known]
        if missing:
            for t, v in zip(missing, self._embed(missing), strict=True):
                self._known[t] = np.asarray(v, dtype=np.float32)
        return np.vstack([self._known[t] for t in texts])


def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.learned.heads import WEIGHTS_DIR

    out = Path(args.out) if args.out else WEIGHTS_DIR
    cache = Path(args.cache).expanduser()
    report = train(Path(args.data), out, cache, threads=args.threads)
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(train_sub: argparse._SubParsersAction) -> None:
    p = train_sub.add_parser(
        "ledger", parents=flags(JSON), help="rebuild the ledger detector from AMI dev (seeded) and print its figures",
        description="Train the ledger's decision, action item, open-problem and summary detector on the tune half "
                    "of AMI dev (split by meeting series), choose its settings by cross-validation there, write the "
                    "head over the shipped one (or to --out), and report once on the report half: rules, detector "
                    "and combination. Its figures on stdout (one JSON object with --json); progress on stderr.")
    p.add_argument("--data", required=True, metavar="DIR", help="the AMI folder (dev/*.json), e.g. ../shared/data/ami")
    p.add_argument("--out", default=None, metavar="DIR", help="write the head here instead of over the shipped one")
    p.add_argument("--cache", default="~/.cache/meetmem/train", metavar="DIR",
                   help="where the acts' embeddings are kept between runs (default ~/.cache/meetmem/train)")
    p.add_argument("--threads", type=int, default=None, help="the embedder's threads (default: all cores)")
    p.set_defaults(func=guarded(run_command))
