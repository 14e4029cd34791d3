"""Scoring the needle evaluation: when an answer holds the expected value, each question's outcome under
every method, and the shares, means and groups `needle_eval.evaluate` reports from them.

Pure functions of the outcomes (no log, no search), so the running of the methods (`needle_eval`) and the
counting stay apart.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .records import NEEDLE_KINDS, Needle

#: Methods in the order of the comparison table; `dense` is left out when there is no model.
METHODS = ("meetmem", "meetmem_prompt", "bm25", "dense", "sliding_window", "rolling_summary", "full_transcript")
LAYERS = ("raw_retrieval", "l1", "l2", "raw_log")
#: Answers drawn from one layer alone (`layer_answers`), beside `raw_retrieval`.
LAYER_ANSWERS = ("l1_answer", "l2_answer")

_SPACE_RE = re.compile(r"\s+")
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def normalised(text: str, lang: str = "en") -> str:
    """Text folded for "contains the expected value": case-folded, whitespace collapsed, and for Chinese
    (or any text with CJK characters) whitespace removed, since Chinese is written without spaces."""
    folded = text.casefold().strip()
    if lang.startswith("zh") or _CJK_RE.search(folded):
        return _SPACE_RE.sub("", folded)
    return _SPACE_RE.sub(" ", folded)


def holds(text: str, expected: str, lang: str = "en") -> bool:
    """Whether `text` contains `expected`, compared as `normalised`."""
    want = normalised(expected, lang)
    return bool(want) and want in normalised(text, lang)


@dataclass(slots=True)
class QuestionOutcome:
    """One question's outcome under every method."""

    needle: Needle
    question: str
    expected: str
    reworded: bool = False
    hit: dict[str, bool | None] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    exact: bool = False
    answer: str = ""
    cited: tuple[int, ...] = ()
    first: int = -1  # the row index of the answer's first citation


def share(count: int, total: int) -> float | None:
    return round(count / total, 4) if total else None


def recall(rows: Sequence[QuestionOutcome], method: str) -> float | None:
    outcomes = [r.hit.get(method) for r in rows]
    known = [o for o in outcomes if o is not None]
    return share(sum(known), len(known)) if known else None


def mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 1) if values else None


def kind_order(kind: str) -> tuple[int, str]:
    return (NEEDLE_KINDS.index(kind) if kind in NEEDLE_KINDS else len(NEEDLE_KINDS), kind)


def groups(rows: Sequence[QuestionOutcome], key: Callable[[QuestionOutcome], str], methods: Sequence[str],
            order: Callable[[str], Any] = str) -> dict[str, Any]:
    grouped: dict[str, list[QuestionOutcome]] = {}
    for row in rows:
        grouped.setdefault(key(row), []).append(row)
    return {
        name: {"questions": len(members),
               "recall_at_k": {m: recall(members, m) for m in methods},
               "exact_answer_rate": share(sum(r.exact for r in members), len(members)),
               "layers": {layer: recall(members, layer) for layer in (*LAYERS, *LAYER_ANSWERS)}}
        for name, members in sorted(grouped.items(), key=lambda item: order(item[0]))
    }


def ledger_todos(digest: Any, needles: Sequence[Needle], ids: Sequence[str]) -> dict[str, Any]:
    """Todo needles against the ledger's todos: an item matches a needle when it cites the needle's segment."""
    todo_needles = [n for n in needles if n.kind == "todo"]
    items = [i for i in digest.ledger if i.kind == "todo"]
    targets = {id(n): {ids[i] for i in n.segments} for n in todo_needles}
    wanted = set().union(*targets.values()) if targets else set()
    matched_items = [i for i in items if wanted.intersection(i.source.segment_ids)]
    found = [n for n in todo_needles if any(targets[id(n)].intersection(i.source.segment_ids) for i in items)]
    # Of the needles found, those whose every planted value is in a matching item's fields, as said.
    exact = 0
    for needle in found:
        text = " | ".join(v for i in items if targets[id(needle)].intersection(i.source.segment_ids)
                          for v in (i.text, i.owner, i.task, i.due) if v)
        exact += all(holds(text, v, needle.lang) for v in needle.values.values())
    return {"needles": len(todo_needles), "ledger_todos": len(items), "matched_items": len(matched_items),
            "found_needles": len(found), "precision": share(len(matched_items), len(items)),
            "recall": share(len(found), len(todo_needles)),
            "values_verbatim_share_of_found": share(exact, len(found))}


def kept_comparison(rows: Sequence[QuestionOutcome], layer: str, answer_key: str) -> dict[str, Any]:
    """Raw retrieval against answering from `layer`, on the questions whose value the layer keeps.

    A layer cannot answer what it dropped; what it keeps it should answer as well as raw retrieval does.
    `rows` are the evaluation's per-question outcomes (`hit[layer]`: the value is in the layer anywhere;
    `hit["raw_retrieval"]`, `hit[answer_key]`: the value is in that answer's first k).
    """
    kept = [r for r in rows if r.hit.get(layer)]
    raw = sum(bool(r.hit.get("raw_retrieval")) for r in kept)
    from_layer = sum(bool(r.hit.get(answer_key)) for r in kept)
    return {"questions": len(kept),
            "raw_retrieval": share(raw, len(kept)), f"{layer}_answer": share(from_layer, len(kept)),
            "gap_points": round(100 * (raw - from_layer) / len(kept), 1) if kept else None}
