"""`meetmem train retrieval`: the query adapter on the frozen English embedder, from the dev corpora's tune halves.

Pairs of a question (or summary sentence) in other words and the utterances that answer it:
- QMSum val specific queries -> the turns inside their `relevant_turn_spans_inclusive`;
- AMI dev abstractive sentences (abstract, actions, decisions, problems; "NA." skipped) -> their
  `evidence_da_ids` acts;
- LoCoMo answerable questions -> their evidence turns.
Hard negatives: the meeting's best BM25 matches for the question (the project's own BM25 and tokenizer),
positives excluded. Passages are embedded exactly as the search index embeds them (`embedded_text`, with the
speaker), questions as the search embeds a question.

Only tune halves are read for training, and a meeting is left out when any meeting of its series is in a
report half, since the phases of one series share their team and product:
- QMSum by `dev_part` of the meeting id (the rule `bench qmsum --part tune` uses), but QMSum's AMI series
  straddle the halves (ES2006a is tune, ES2006b-d report), so a QMSum meeting trains only when every QMSum
  meeting of its series (AMI: the id less its phase letter; ICSI: the meeting type, Bed/Bmr/Bro; committee:
  the meeting) is tune. No QMSum AMI meeting qualifies.
- AMI dev by series (`ami_split`), less any series QMSum's report half holds (TS3009).
- LoCoMo by `dev_part` of each question (as `bench locomo --part tune`): its conversations are shared by
  both halves; only tune questions are pairs.
The needle generator's meetings are never read.

The adapter (`learned.query_adapter`): W (d x d) from the identity, trained with a softmax over in-batch
and hard negatives (MultipleNegativesRankingLoss, Henderson et al. 2017) plus `reg * |W - I|^2`. Epochs,
temperature and `reg` are chosen by cross-validation grouped by series (LoCoMo: by conversation) on the
tune pairs: the setting whose out-of-fold ranking of each corpus's positives among its meeting's candidates
gains the most on the corpus it gains least on (a change counts when it helps every corpus at once).
Embeddings are cached under `--cache`; training is seeded and single-threaded, so two runs write the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.cli.options import JSON, MODEL, flags
from meetmem.cli.output import emit_figures

from ..harness import BenchDataError, guarded
from . import lazy_encoder

if TYPE_CHECKING:
    import numpy as np

    from meetmem.cli.context import CommandContext

SEED = 20261204
#: The shipped adapter's version: bump when the pairs, the loss or the text form change.
VERSION_BASE = "query-adapter-1"
HARD_NEGATIVES = 20  # BM25 negatives mined per question (training samples from them; all are candidates)
RANDOM_CANDIDATES = 30  # random acts per meeting added to the candidates the folds are scored on
MAX_POSITIVES = 8  # a QMSum span can hold 40 turns: at most this many pairs per question, sampled
NEGATIVES_PER_PAIR = 4
BATCH = 64
LEARNING_RATE = 1e-3
FOLDS = 4
EPOCHS = (1, 3, 6)
TEMPERATURES = (0.05, 0.1)
REGS = (0.01, 0.1, 1.0)


def _say(line: str) -> None:
    sys.stderr.write(f"train retrieval: {line}\n")
    sys.stderr.flush()


@dataclass
class Passage:
    speaker: str | None
    text: str


@dataclass
class Unit:
    """One meeting (or conversation) with its trainable questions: passages, pairs and mined negatives."""

    corpus: str
    meeting: str
    group: str  # the cross-validation group: series, or conversation
    passages: list[Passage]
    questions: list[str] = field(default_factory=list)
    positives: list[list[int]] = field(default_factory=list)  # per question: passage indexes
    negatives: list[list[int]] = field(default_factory=list)  # per question: BM25-mined, positives excluded
    candidates: list[int] = field(default_factory=list)  # passages embedded (positives, negatives, random)


# -- the pairs ----------------------------------------------------------------------------------------------
def qmsum_series(meeting_id: str, domain: str) -> str:
    """A QMSum meeting's series: AMI's id less the phase letter, ICSI's meeting type, a committee meeting itself."""
    from .ami_split import series

    if domain == "AMI":
        return series(meeting_id)
    if domain == "ICSI":
        return meeting_id[:3]
    return meeting_id


def qmsum_units(folder: Path) -> tuple[list[Unit], set[str]]:
    """QMSum val's trainable meetings, and the series its report half holds (never trained on anywhere)."""
    from ..corpora.qmsum import load_qmsum, qmsum_segments
    from ..harness.runs import dev_part

    meetings, queries = load_qmsum(folder, "val")
    series_of = {m.meeting_id: qmsum_series(m.meeting_id, m.domain) for m in meetings}
    held = {series_of[m.meeting_id] for m in meetings if dev_part(m.meeting_id) == "report"}
    units = []
    for m in meetings:
        if series_of[m.meeting_id] in held:
            continue
        segments, _ = qmsum_segments(m)
        unit = Unit("qmsum", m.meeting_id, f"qmsum:{series_of[m.meeting_id]}",
                    [Passage(s.speaker, s.text) for s in segments])
        doc_of = {s.seq: i for i, s in enumerate(segments)}
        for q in queries:
            if q.meeting_id != m.meeting_id:
                continue
            pos = sorted({doc_of[t] for a, b in q.spans for t in range(a, b + 1) if t in doc_of})
            if pos:
                unit.questions.append(q.query)
                unit.positives.append(pos)
        units.append(unit)
    return units, held


def ami_units(folder: Path, held: set[str]) -> list[Unit]:
    """AMI dev's tune-half meetings (less the `held` series) with their summary sentences as questions."""
    from ..corpora.ami_ledger import ami_segments, load_meetings
    from .ami_split import half, series

    units = []
    for raw in load_meetings(folder, "dev"):
        mid = raw["meeting_id"]
        if half(mid) != "tune" or series(mid) in held:
            continue
        segments = ami_segments(raw)
        unit = Unit("ami", mid, f"ami:{series(mid)}", [Passage(s.speaker, s.text) for s in segments])
        doc_of = {s.segment_id: i for i, s in enumerate(segments)}
        summary = raw.get("abstractive_summary") or {}
        for key in ("abstract", "actions", "decisions", "problems"):
            for sentence in summary.get(key) or []:
                text = (sentence.get("text") or "").strip()
                pos = sorted({doc_of[d] for d in sentence.get("evidence_da_ids") or [] if d in doc_of})
                if text and text != "NA." and pos:
                    unit.questions.append(text)
                    unit.positives.append(pos)
        if unit.questions:
            units.append(unit)
    return units


def locomo_units(folder: Path) -> list[Unit]:
    """LoCoMo's conversations with their tune-half answerable questions."""
    from ..corpora.locomo import ANSWERABLE, conversation_segments, load_locomo
    from ..harness.runs import dev_part

    units = []
    for conv in load_locomo(folder):
        segments, dia_ids, _ = conversation_segments(conv)
        unit = Unit("locomo", conv.sample_id, f"locomo:{conv.sample_id}",
                    [Passage(s.speaker, s.text) for s in segments])
        doc_of = {d: i for i, d in enumerate(dia_ids)}
        for q in conv.questions:
            if q.category not in ANSWERABLE or dev_part(f"{conv.sample_id}:{q.question}") != "tune":
                continue
            pos = sorted({doc_of[e] for e in q.evidence if e in doc_of})
            if pos:
                unit.questions.append(q.question)
                unit.positives.append(pos)
        units.append(unit)
    return units


def mine(units: Sequence[Unit], seed: int = SEED) -> None:
    """Each question's BM25 negatives from its own meeting, and the candidates each meeting is embedded for."""
    from meetmem.store.index.bm25 import BM25Index
    from meetmem.store.index.tokenize import MeetingTokenizer

    tokenizer = MeetingTokenizer()
    rng = random.Random(seed)
    for unit in units:
        index = BM25Index()
        for p in unit.passages:
            index.add(tokenizer.tokens(p.text))
        chosen: set[int] = set()
        unit.negatives = []
        for question, pos in zip(unit.questions, unit.positives, strict=True):
            wanted = set(pos)
            hits = index.top(tokenizer.tokens(question), HARD_NEGATIVES + len(wanted))
            neg = [d for d, _ in hits if d not in wanted][:HARD_NEGATIVES]
            unit.negatives.append(neg)
            chosen.update(pos)
            chosen.update(neg)
        n = len(unit.passages)
        chosen.update(rng.sample(range(n), min(RANDOM_CANDIDATES, n)))
        unit.candidates = sorted(chosen)


# -- embeddings ---------------------------------------------------------------------------------------------
def embed_units(units: Sequence[Unit], embedder_name: str, cache: Path, embed: Callable[[list[str]], np.ndarray],
                speaker: bool = True) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per unit: question vectors (as the search embeds a question) and candidate passage vectors (as the index
    embeds a segment), cached per unit by the hash of its texts."""
    import numpy as np

    from meetmem.store.index.search_types import embedded_text

    cache.mkdir(parents=True, exist_ok=True)
    questions, passages = [], []
    for unit in units:
        texts = [embedded_text(unit.passages[i], speaker=speaker) for i in unit.candidates]  # type: ignore[arg-type]
        for kind, batch, out in (("q", unit.questions, questions), ("p", texts, passages)):
            key = hashlib.sha256("\n".join(batch).encode("utf-8")).hexdigest()[:16]
            path = cache / f"{unit.corpus}.{unit.meeting}.{kind}.{embedder_name}.{key}.npy"
            if path.is_file():
                vectors = np.load(path)
            else:
                vectors = np.asarray(embed(list(batch)), dtype=np.float32)
                np.save(path, vectors)
            out.append(vectors)
    return questions, passages


# -- training -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    epochs: int
    temperature: float
    reg: float

    def public(self) -> dict[str, float]:
        return {"epochs": self.epochs, "temperature": self.temperature, "reg": self.reg}


@dataclass
class Pairs:
    """Every unit's questions and candidates stacked: what one training or scoring run reads."""

    q: np.ndarray  # (questions, d)
    p: np.ndarray  # (candidates, d)
    question_unit: list[int]
    positives: list[list[int]]  # per question: rows of `p`
    negatives: list[list[int]]
    pool: list[list[int]]  # per question: rows of `p` ranked against (its unit's candidates)


def stack(units: Sequence[Unit], qv: Sequence[np.ndarray], pv: Sequence[np.ndarray]) -> Pairs:
    import numpy as np

    rows_q, rows_p, unit_of, positives, negatives, pool = [], [], [], [], [], []
    offset = 0
    for u, (unit, q, p) in enumerate(zip(units, qv, pv, strict=True)):
        row = {doc: offset + i for i, doc in enumerate(unit.candidates)}
        rows = list(range(offset, offset + len(unit.candidates)))
        for i in range(len(unit.questions)):
            unit_of.append(u)
            positives.append([row[d] for d in unit.positives[i]])
            negatives.append([row[d] for d in unit.negatives[i]])
            pool.append(rows)
        rows_q.append(q)
        rows_p.append(p)
        offset += len(unit.candidates)
    dim = (rows_q[0] if rows_q else np.zeros((0, 384))).shape[1]
    return Pairs(np.vstack(rows_q) if rows_q else np.zeros((0, dim), np.float32),
                 np.vstack(rows_p) if rows_p else np.zeros((0, dim), np.float32), unit_of, positives, negatives, pool)


def fit(pairs: Pairs, setting: Setting, seed: int = SEED) -> np.ndarray:
    """The adapter matrix trained on `pairs` with `setting` (seeded, one thread: the same bytes every run)."""
    import numpy as np
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        rng = random.Random(seed)
        dim = pairs.q.shape[1]
        q_all = torch.from_numpy(np.ascontiguousarray(pairs.q, dtype=np.float32))
        p_all = torch.from_numpy(np.ascontiguousarray(pairs.p, dtype=np.float32))
        eye = torch.eye(dim)
        w = torch.nn.Parameter(eye.clone())
        optimiser = torch.optim.Adam([w], lr=LEARNING_RATE)
        examples: list[tuple[int, int]] = []
        for qi, pos in enumerate(pairs.positives):
            chosen = pos if len(pos) <= MAX_POSITIVES else rng.sample(pos, MAX_POSITIVES)
            examples.extend((qi, pi) for pi in chosen)
        for _ in range(setting.epochs):
            rng.shuffle(examples)
            for start in range(0, len(examples), BATCH):
                batch = examples[start:start + BATCH]
                qi = [e[0] for e in batch]
                cands = [e[1] for e in batch]
                for q in qi:
                    neg = pairs.negatives[q]
                    cands.extend(rng.sample(neg, min(NEGATIVES_PER_PAIR, len(neg))))
                q = q_all[qi] @ w
                q = q / q.norm(dim=1, keepdim=True).clamp_min(1e-12)
                logits = q @ p_all[cands].T / setting.temperature
                # Another pair's positive is not a negative when it answers this question too.
                cand_rows = np.asarray(cands)
                mask = np.stack([np.isin(cand_rows, pairs.positives[question]) for question in qi])
                mask[np.arange(len(batch)), np.arange(len(batch))] = False
                logits = logits.masked_fill(torch.from_numpy(mask), -1e4)
                loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
                loss = loss + setting.reg * ((w - eye) ** 2).sum()
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        return w.detach().numpy().astype(np.float32).copy()
    finally:
        torch.set_num_threads(threads)


def rank_figures(pairs: Pairs, matrix: np.ndarray | None, keep: Sequence[int]) -> dict[str, float]:
    """Over questions `keep`: the first positive's reciprocal rank among the question's meeting candidates and
    recall@5 of its positives, the question adapted by `matrix` (None: as embedded)."""
    import numpy as np

    rr, recall = [], []
    for qi in keep:
        q = pairs.q[qi]
        if matrix is not None:
            q = q @ matrix
            q = q / max(float(np.linalg.norm(q)), 1e-12)
        pool = pairs.pool[qi]
        scores = pairs.p[pool] @ q
        order = [pool[i] for i in np.argsort(-scores, kind="stable")]
        wanted = set(pairs.positives[qi])
        first = next(r for r, doc in enumerate(order, start=1) if doc in wanted)
        rr.append(1.0 / first)
        recall.append(len(wanted & set(order[:5])) / len(wanted))
    return {"mrr": round(float(np.mean(rr)), 4) if rr else 0.0,
            "recall@5": round(float(np.mean(recall)), 4) if recall else 0.0, "questions": len(keep)}


def cross_validate(units: Sequence[Unit], pairs: Pairs, settings: Sequence[Setting]
                   ) -> tuple[Setting, dict[str, Any]]:
    """Each setting's out-of-fold figures per corpus (folds by group); the setting that gains most on the corpus
    it gains least on (MRR against the embedder alone)."""
    corpora = sorted({u.corpus for u in units})
    groups = sorted({u.group for u in units})
    folds = [set(groups[i::FOLDS]) for i in range(FOLDS)]
    per_corpus = {c: [qi for qi, u in enumerate(pairs.question_unit) if units[u].corpus == c] for c in corpora}
    baseline = {c: rank_figures(pairs, None, per_corpus[c]) for c in corpora}
    table: dict[str, Any] = {"identity": baseline}
    best: tuple[float, Setting] | None = None
    for setting in settings:
        oof: dict[int, Any] = {}
        for held in folds:
            train_q = [qi for qi, u in enumerate(pairs.question_unit) if units[u].group not in held]
            matrix = fit(_subset(pairs, train_q), setting)
            for qi, u in enumerate(pairs.question_unit):
                if units[u].group in held:
                    oof[qi] = matrix
        figures = {c: _oof_figures(pairs, oof, per_corpus[c]) for c in corpora}
        gain = min(figures[c]["mrr"] / baseline[c]["mrr"] if baseline[c]["mrr"] else 0.0 for c in corpora)
        name = f"epochs={setting.epochs},temperature={setting.temperature},reg={setting.reg}"
        table[name] = {**figures, "least_mrr_ratio": round(gain, 4)}
        _say(f"{name}: " + ", ".join(f"{c} MRR {figures[c]['mrr']} (alone {baseline[c]['mrr']})" for c in corpora))
        if best is None or gain > best[0]:
            best = (gain, setting)
    assert best is not None
    return best[1], table


def _subset(pairs: Pairs, questions: Sequence[int]) -> Pairs:
    return Pairs(pairs.q[list(questions)], pairs.p, [pairs.question_unit[i] for i in questions],
                 [pairs.positives[i] for i in questions], [pairs.negatives[i] for i in questions],
                 [pairs.pool[i] for i in questions])


def _oof_figures(pairs: Pairs, matrices: dict[int, np.ndarray], keep: Sequence[int]) -> dict[str, float]:
    """Out-of-fold figures: each question adapted by the matrix of the fold that held it out."""
    import numpy as np

    parts = [rank_figures(pairs, matrices[qi], [qi]) for qi in keep]
    return {"mrr": round(float(np.mean([p["mrr"] for p in parts])), 4),
            "recall@5": round(float(np.mean([p["recall@5"] for p in parts])), 4), "questions": len(keep)}


# -- the command --------------------------------------------------------------------------------------------
def load_units(data_dir: Path) -> tuple[list[Unit], dict[str, Any]]:
    """Every trainable unit of the three corpora under `data_dir` and a description of the split."""
    qmsum, held = qmsum_units(data_dir / "qmsum")
    ami = ami_units(data_dir / "ami", held)
    locomo = locomo_units(data_dir / "locomo")
    units = [u for u in (*qmsum, *ami, *locomo) if u.questions]
    split = {
        "qmsum": {"meetings": sorted(u.meeting for u in qmsum if u.questions),
                  "held_out_series": sorted(held)},
        "ami": {"meetings": len(ami), "series": sorted({u.group.split(":")[1] for u in ami})},
        "locomo": {"conversations": sorted(u.meeting for u in locomo), "by": "question (dev_part)"},
        "questions": {c: sum(len(u.questions) for u in units if u.corpus == c) for c in ("qmsum", "ami", "locomo")},
    }
    if not all(split["questions"].values()):
        raise BenchDataError(f"{data_dir} lacks pairs of some corpus: {split['questions']}")
    return units, split


def train(data_dir: Path, out_dir: Path, cache: Path, *, embedder_name: str = "minilm", threads: int | None = None,
          settings: Sequence[Setting] | None = None, units: Sequence[Unit] | None = None,
          embed: Callable[[list[str]], np.ndarray] | None = None) -> dict[str, Any]:
    """Mine, embed, cross-validate, fit on every tune pair and write the adapter; returns the JSON report.

    Args:
        units: the units to train on instead of those read from `data_dir` (a test's tiny corpus).
        embed: the text embedder instead of `embedder_name`'s model.
    """
    from meetmem.learned.query_adapter import QueryAdapter

    t_start = time.perf_counter()
    if units is None:
        units, split = load_units(Path(data_dir))
    else:
        split = {"given": len(units)}
    units = list(units)
    mine(units)
    _say(f"{sum(len(u.questions) for u in units)} questions in {len(units)} meetings; "
         f"{sum(len(u.candidates) for u in units)} passages to embed with {embedder_name}")
    if embed is None:
        embed = lazy_encoder(embedder_name, threads)
    qv, pv = embed_units(units, embedder_name, cache / "retrieval", embed)
    t_embedded = time.perf_counter()
    pairs = stack(units, qv, pv)
    grid = list(settings) if settings is not None else [Setting(e, t, r) for e in EPOCHS for t in TEMPERATURES
                                                         for r in REGS]
    chosen, table = cross_validate(units, pairs, grid)
    matrix = fit(pairs, chosen)
    version = f"{VERSION_BASE}+{hashlib.sha256(matrix.tobytes()).hexdigest()[:8]}"
    adapter = QueryAdapter(version, embedder_name, matrix, {
        "embedded_text": "speaker: text", "seed": SEED, "setting": chosen.public(),
        "trained_on": {"data": "QMSum val, AMI dev and LoCoMo dev tune halves, by series", **split},
    })
    arrays, meta = adapter.save(out_dir)
    t_trained = time.perf_counter()
    _say(f"wrote {arrays} ({arrays.stat().st_size} bytes) and {meta}, version {version}")
    return {
        "command": "train retrieval",
        "version": version,
        "embedder": embedder_name,
        "seed": SEED,
        "weights": {"npz": str(arrays), "npz_bytes": arrays.stat().st_size, "json": str(meta),
                    "sha256": hashlib.sha256(arrays.read_bytes()).hexdigest()},
        "split": split,
        "pairs": {"questions": len(pairs.positives), "passages": int(pairs.p.shape[0])},
        "cross_validation": {"folds": FOLDS, "by": "series (LoCoMo: conversation)", "metric": "MRR of the first "
                             "positive among the meeting's candidates (positives, BM25 negatives, random acts)",
                             "figures": table, "chosen": chosen.public()},
        "tune_in_sample": {c: rank_figures(pairs, matrix, [qi for qi, u in enumerate(pairs.question_unit)
                                                          if units[u].corpus == c])
                           for c in sorted({u.corpus for u in units})},
        "seconds": {"embed": round(t_embedded - t_start, 1), "train_and_choose": round(t_trained - t_embedded, 1)},
    }


def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.learned.heads import WEIGHTS_DIR

    out = Path(args.out) if args.out else WEIGHTS_DIR
    report = train(Path(args.data), out, Path(args.cache).expanduser(), embedder_name=args.embedder or "minilm",
                   threads=args.threads)
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(train_sub: argparse._SubParsersAction) -> None:
    p = train_sub.add_parser(
        "retrieval", parents=flags(MODEL, JSON),
        help="rebuild the query adapter from the dev corpora's tune halves (seeded) and print its figures",
        description="Train the query-side adapter of the English embedder on question/evidence pairs of the tune "
                    "halves of QMSum val, AMI dev and LoCoMo dev (split by meeting series), with BM25-mined hard "
                    "negatives; choose epochs, temperature and regularisation by cross-validation grouped by "
                    "series; write it over the shipped one (or to --out). --embedder names the frozen embedder to "
                    "adapt (default minilm). Its figures on stdout (one JSON object with --json); progress on "
                    "stderr. The report halves are never read for training.")
    p.add_argument("--data", required=True, metavar="DIR",
                   help="the folder holding qmsum/, ami/ and locomo/, e.g. ../shared/data")
    p.add_argument("--out", default=None, metavar="DIR", help="write the adapter here instead of over the shipped one")
    p.add_argument("--cache", default="~/.cache/meetmem/train", metavar="DIR",
                   help="where the texts' embeddings are kept between runs (default ~/.cache/meetmem/train)")
    p.add_argument("--threads", type=int, default=None, help="the embedder's threads (default: all cores)")
    p.set_defaults(func=guarded(run_command))
