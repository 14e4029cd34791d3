"""The ledger with a learned detector beside the rules: decisions, todos and open problems as people say them.

Hand-written patterns find "X will do Y by Z"; they cannot find "yeah, let's go for the rubber one then".
A small logistic head (`meetmem.learned`, trained by `meetmem train ledger` on AMI meetings whose people
marked the utterances behind each decision, action item and problem) scores every English utterance from
its sentence embedding, its neighbours' and the rules' cues (`detector.features`). Utterances scoring
over the kind's threshold are grouped when they fall within `gap_s` of each other; each group becomes one
item citing its best `cite` utterances, its text their cleaned words (fillers out; numbers, names and
negations kept: `edge.cleaning`), so an item never says what the meeting did not.

`LearnedLedger` is a ledger extractor (`MeetingDigester(extract_ledger=...)`): the rules' items (read
incrementally), those of the rules' decisions, todos and open questions that the detector does not score
below the kind's `gate` (kick-off chatter the rules took for a decision; a todo said with its due date and a
decision said as one, "we decided ...", are always kept), and the detector's items that no kept rules item
already covers. Each item records what made it (`origin`: rules, detector or both) and the detector's
version. Thresholds, gaps, gates and the head were all chosen on the tune half of AMI dev.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from meetmem.store.records import LedgerItem, Segment, Source

from . import ledger_en
from .dates import find_due, resolve_due
from .detector import features, is_english
from .ledger import IncrementalLedger, item_id

if TYPE_CHECKING:
    import numpy as np

    from meetmem.learned.heads import LinearHeads

log = logging.getLogger(__name__)

#: The head's labels and the ledger kind each becomes.
LABEL_KINDS = {"decision": "decision", "action": "todo", "problem": "open_question"}
#: The shipped head's file name (in `meetmem/learned/weights/`).
HEAD_NAME = "ledger_detector"
#: The embedder the head was trained on.
EMBEDDER = "minilm"


class TextEmbedder(Protocol):
    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class KindSettings:
    """How one kind's items are made from its scores (chosen on the tune half when the head was trained)."""

    threshold: float
    gap_s: float
    cite: int
    gate: float  # a rules item whose cited utterances all score below this is dropped (0: keep every one)

    @staticmethod
    def of(raw: dict[str, Any]) -> KindSettings:
        return KindSettings(float(raw["threshold"]), float(raw["gap_s"]), int(raw["cite"]), float(raw.get("gate", 0)))


class UtteranceScorer:
    """The head's probability per label for each segment of a meeting; embeddings cached by their text.

    Args:
        embedder: encodes texts into the head's space (all-MiniLM-L6-v2); loaded lazily when not given.
        heads: the head (the shipped one when not given).
        cache: how many utterance embeddings to keep between calls (a live meeting re-reads its segments;
            20,000 MiniLM vectors are 31 MB).
    """

    def __init__(self, embedder: TextEmbedder | None = None, heads: LinearHeads | None = None, *,
                 cache: int = 20_000) -> None:
        self._embedder = embedder
        self._heads = heads
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._limit = cache
        self._lock = threading.Lock()

    @property
    def heads(self) -> LinearHeads:
        if self._heads is None:
            from meetmem.learned.heads import load_heads

            self._heads = load_heads(HEAD_NAME)
        return self._heads

    @property
    def embedder(self) -> TextEmbedder:
        if self._embedder is None:
            from meetmem.store.index.embedders import LazyEmbedder

            self._embedder = LazyEmbedder(EMBEDDER)
        return self._embedder

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit embeddings of `texts`, from the cache where already made."""
        import numpy as np

        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        with self._lock:
            found = {k: self._cache[k] for k in keys if k in self._cache}
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:  # embedded outside the lock: another meeting's digest need not wait for this one
            made = self.embedder.encode(list(missing.values()))
            found.update((k, np.asarray(v, dtype=np.float32)) for k, v in zip(missing, made, strict=True))
        with self._lock:
            for key in keys:
                self._cache[key] = found[key]
                self._cache.move_to_end(key)
            while len(self._cache) > self._limit:
                self._cache.popitem(last=False)
        return np.vstack([found[k] for k in keys]) if keys else np.zeros((0, 0), dtype=np.float32)

    def scores(self, segments: Sequence[Segment]) -> dict[str, np.ndarray]:
        """Each label's score per segment (0 for segments the detector does not read: not English)."""
        import numpy as np

        english = [s for s in segments if is_english(s)]
        out = {label: np.zeros(len(segments), dtype=np.float32) for label in self.heads.labels}
        if not english:
            return out
        rows = features(english, self.vectors([s.text for s in english]))
        got = self.heads.scores(rows)
        where = {s.segment_id: i for i, s in enumerate(segments)}
        at = np.array([where[s.segment_id] for s in english])
        for label, values in got.items():
            out[label][at] = values
        return out


def clean_words(text: str) -> str:
    """The words as said, less fillers and stutters (`edge.cleaning`): numbers, names and negations kept."""
    from meetmem.edge.cleaning import clean

    cleaned = clean(text).text.strip()
    return cleaned or text.strip()


_FIRST_PERSON = re.compile(r"\b(?:I'll|I will|I'm going to|I am going to|I can|I'd|I should|I need to|I have to|"
                           r"I'm gonna|let me)\b", re.I)
_DECIDED = re.compile(r"\b(?:we|I|they|you)\s+(?:have\s+|'ve\s+|all\s+)?(?:decided|agreed)\b|\bthe decision is\b|"
                      r"\bit'?s (?:been )?decided\b", re.I)
_SECOND_PERSON = re.compile(r"\b(?:you|you'll|you could|can you|could you|would you)\b", re.I)


def _owner(cited: Sequence[Segment], segments: Sequence[Segment], last: int) -> tuple[str | None, str | None]:
    """(owner, task) of a todo: the rules' reading where they match, else who commits or who is addressed."""
    for seg in cited:
        for a, b in ledger_en.sentences(seg.text):
            sentence = seg.text[a:b]
            found = ledger_en.todo(sentence)
            if found is None:
                continue
            task = sentence[found.task[0]:found.task[1]]
            if found.owner_role == "speaker":
                return seg.speaker, task
            if found.owner_role == "name" and found.owner:
                return sentence[found.owner[0]:found.owner[1]], task
            if found.owner_role == "addressee":
                named = ledger_en.addressee(sentence)
                if named:
                    return sentence[named[0]:named[1]], task
            return None, task
    for seg in cited:
        if _FIRST_PERSON.search(seg.text):
            return seg.speaker, None
    for seg in cited:
        named = ledger_en.addressee(seg.text)
        if named:
            return seg.text[named[0]:named[1]], None
    # "could you ..." answered by another speaker: the one who answers takes it.
    for seg in cited:
        if _SECOND_PERSON.search(seg.text):
            for nxt in segments[last + 1:last + 4]:
                if nxt.speaker and nxt.speaker != seg.speaker:
                    return nxt.speaker, None
    return None, None


def detect_items(segments: Sequence[Segment], scores: dict[str, np.ndarray], settings: dict[str, KindSettings], *,
                 meeting_date: dt.date | None, version: str) -> list[LedgerItem]:
    """The detector's items: per kind, utterances over the threshold grouped by time, best ones cited."""
    items: list[LedgerItem] = []
    for label, kind in LABEL_KINDS.items():
        if label not in scores or kind not in settings:
            continue
        conf = settings[kind]
        values = scores[label]
        hits = [i for i in range(len(segments)) if values[i] >= conf.threshold]
        groups: list[list[int]] = []
        for i in hits:
            if groups and segments[i].start - segments[groups[-1][-1]].end <= conf.gap_s:
                groups[-1].append(i)
            else:
                groups.append([i])
        for group in groups:
            best = sorted(sorted(group, key=lambda i: -float(values[i]))[: conf.cite])
            cited = [segments[i] for i in best]
            text = " ".join(clean_words(s.text) for s in cited)
            item = LedgerItem("", kind, text, Source.of(cited), origin="detector", version=version)
            if kind == "todo":
                owner, task = _owner(cited, segments, best[-1])
                due_spans = [d for d in find_due(text) if not d.kind.endswith("next_week")]
                due = due_spans[0].text if due_spans else None
                item = replace(item, owner=owner, task=task or text, due=due,
                               due_date=resolve_due(due, meeting_date) if due else None)
            items.append(replace(item, id=item_id(kind, item.source.segment_ids, text)))
    return items


def combine(rules: Sequence[LedgerItem], detected: Sequence[LedgerItem], scores: dict[str, np.ndarray],
            positions: dict[str, int], settings: dict[str, KindSettings], *, version: str) -> list[LedgerItem]:
    """Rules' items (gated by the detector's scores) with the detector's items no kept rules item covers.

    `positions` maps the ids of the segments the detector read (English) to their rows in `scores`; an
    item citing none of them (a Chinese one) is never gated."""
    label_of = {kind: label for label, kind in LABEL_KINDS.items()}
    replaced = {it.superseded_by for it in rules if it.superseded_by}
    out: list[LedgerItem] = []
    covered: dict[str, list[int]] = {}  # kind -> indices in `out` of the kept rules items a detection may cover
    for item in rules:
        conf = settings.get(item.kind)
        if conf is None or item.kind not in label_of or label_of[item.kind] not in scores:
            out.append(item)
            continue
        values = scores[label_of[item.kind]]
        read = [positions[i] for i in item.source.segment_ids if i in positions]
        best = max((float(values[at]) for at in read), default=0.0)
        # An item in a chain of changes stays, so no superseded item points at one that is gone; so do a
        # commitment said with its date ("X will do Y by Z") and a decision said as one ("we decided to go
        # with ..."): the rules' most precise readings.
        precise = ((item.kind == "todo" and item.due is not None)
                   or (item.kind == "decision" and _DECIDED.search(item.text) is not None))
        if read and not precise and best < conf.gate and item.status == "current" and item.id not in replaced:
            continue
        covered.setdefault(item.kind, []).append(len(out))
        out.append(item)
    for item in detected:
        gap = settings[item.kind].gap_s
        near = [at for at in covered.get(item.kind, ())
                if set(out[at].source.segment_ids) & set(item.source.segment_ids)
                or (out[at].source.start - gap <= item.source.end and item.source.start <= out[at].source.end + gap)]
        for at in near:
            if out[at].origin == "rules":
                out[at] = replace(out[at], origin="both", version=version)
        if not near:
            out.append(item)
    return sorted(out, key=lambda it: (it.source.start, it.source.end))


class LearnedLedger:
    """A ledger extractor: the rules and the learned detector together (see the module's docstring).

    Args:
        scorer: scores utterances (made with the shipped head and a lazily loaded MiniLM when not given).
        mode: `combined` (the default), `detector` (the detector's decisions, todos and open questions with the
            rules' other kinds) or `rules` (the rules alone, as `IncrementalLedger`).
    """

    MODES = ("combined", "detector", "rules")

    def __init__(self, scorer: UtteranceScorer | None = None, *, mode: str = "combined") -> None:
        if mode not in self.MODES:
            raise ValueError(f"unknown ledger mode {mode!r}: choose one of {', '.join(self.MODES)}")
        self.scorer = scorer or UtteranceScorer()
        self.mode = mode
        self.rules = IncrementalLedger()
        self.last_notes: list[str] = []

    def __call__(self, segments: Sequence[Segment], *, meeting_date: dt.date | None = None) -> list[LedgerItem]:
        self.last_notes = []
        rules = self.rules(segments, meeting_date=meeting_date)
        if self.mode == "rules" or not segments:
            return rules
        try:
            heads = self.scorer.heads
            scores = self.scorer.scores(segments)
        except Exception as exc:  # a missing model or head leaves the rules' ledger, said in the notes
            log.warning("ledger detector not used: %s", exc)
            self.last_notes = [f"ledger detector not used: {exc}"]
            return rules
        settings = {kind: KindSettings.of(raw) for kind, raw in heads.settings["kinds"].items()}
        detected = detect_items(segments, scores, settings, meeting_date=meeting_date, version=heads.version)
        if self.mode == "detector":
            kinds = set(LABEL_KINDS.values())
            return sorted([it for it in rules if it.kind not in kinds] + detected,
                          key=lambda it: (it.source.start, it.source.end))
        positions = {s.segment_id: i for i, s in enumerate(segments) if is_english(s)}
        return combine(rules, detected, scores, positions, settings, version=heads.version)
