"""Scoring speech recognition: WER and CER by edit distance, glossary hits, where speech really ended.

Pure functions over text and times, no models: `bench edge` scores with them and tests/eval checks them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

_DIGIT_GROUP = re.compile(r"(?<=\d)[,.](?=\d{3}\b)")  # 4,250 -> 4250 (but 10.5 stays two numbers)
_APOSTROPHE = re.compile(r"['’]")


def normalise(text: str) -> str:
    """Case-folded, width-folded text with punctuation replaced by spaces (apostrophes and the separators of
    digit groups are removed instead, so "everyone's" and "4,250" stay one token)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _APOSTROPHE.sub("", _DIGIT_GROUP.sub("", text))
    return " ".join("".join(c if c.isalnum() else " " for c in text).split())


def tokens(text: str, unit: str) -> list[str]:
    """The scored units of a text: its words (`word`) or its characters without spaces (`char`)."""
    norm = normalise(text)
    if unit == "word":
        return norm.split()
    if unit == "char":
        return [c for c in norm if not c.isspace()]
    raise ValueError(f"unit must be 'word' or 'char', not {unit!r}")


def edit_distance(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Levenshtein distance between two token sequences (substitutions, deletions, insertions all cost 1)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref in enumerate(reference, 1):
        current = [i]
        for j, hyp in enumerate(hypothesis, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ref != hyp)))
        previous = current
    return previous[-1]


def error_rate(reference: str, hypothesis: str, unit: str = "word") -> dict[str, Any]:
    """WER (`word`) or CER (`char`): edits / reference tokens, with both counts for pooling over clips."""
    ref, hyp = tokens(reference, unit), tokens(hypothesis, unit)
    errors = edit_distance(ref, hyp)
    return {"errors": errors, "ref_tokens": len(ref), "rate": round(errors / len(ref), 4) if ref else None}


def pooled(scores: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Errors over reference tokens of several scores together (a long clip weighs more than a short one)."""
    errors, ref = sum(s["errors"] for s in scores), sum(s["ref_tokens"] for s in scores)
    return {"errors": errors, "ref_tokens": ref, "rate": round(errors / ref, 4) if ref else None}


_CODE = re.compile(r"\b[A-Z][A-Z0-9]*-\d+\b")  # product codes: TS-204


def meeting_glossary(segments: Sequence[dict[str, Any]]) -> list[str]:
    """The terms a meeting's organiser would list: the speakers' names and the product codes in the text."""
    names = [s["speaker"] for s in segments if s.get("speaker")]
    codes = [code for s in segments for code in _CODE.findall(s["text"])]
    return list(dict.fromkeys(names + codes))


def term_hits(reference: str, hypothesis: str, terms: Sequence[str]) -> dict[str, Any]:
    """How many of the terms' occurrences in the reference the hypothesis has (counts clipped per term)."""
    ref, hyp = tokens(reference, "word"), tokens(hypothesis, "word")

    def count(words: list[str], term: list[str]) -> int:
        return sum(1 for i in range(len(words) - len(term) + 1) if words[i:i + len(term)] == term)

    wanted = found = 0
    for term in terms:
        key = tokens(term, "word")
        if key:
            wanted += count(ref, key)
            found += min(count(ref, key), count(hyp, key))
    return {"found": found, "occurrences": wanted, "rate": round(found / wanted, 4) if wanted else None}


def spoken_end(start: float, end: float, reference: Sequence[tuple[float, float]], *,
               slack: float = 0.3) -> float | None:
    """Where the speech of a segment ended, from the reference utterances (start, end): the last reference end
    inside the segment (the VAD's end is its hangover after the last voiced frame, and webrtcvad may hear a
    quiet last consonant as silence: `slack`). None when the segment ends inside a reference utterance (the
    VAD cut the speech at a pause or at its length limit, and the speech went on)."""
    if any(r_start < end and r_end > end + slack for r_start, r_end in reference):
        return None
    inside = [r_end for r_start, r_end in reference if start < r_end <= end + slack]
    return max(inside) if inside else None
