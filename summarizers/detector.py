"""What the learned ledger detector sees of each utterance: the features a live transcript has.

For utterance i of a meeting (segments in time order): its sentence embedding (all-MiniLM-L6-v2 of the
words alone, without the speaker), the mean embedding of the `CONTEXT` utterances before it and of the
`CONTEXT` after it, and a few scalars: length, duration, a question mark, where it falls in the meeting,
whether the speaker changes before and after it, and the English rules' cues (decision, commitment, open
question, question, fact, non-answer). AMI's dialogue-act labels are never used: a live transcript has none.

The same function builds the training rows (`meetmem train ledger`) and the rows scored at run time, so
the two cannot drift apart. Only English utterances are scored; Chinese keeps its rules.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import ledger_en

if TYPE_CHECKING:
    import numpy as np

    from meetmem.store.records import Segment

#: Utterances of context on each side.
CONTEXT = 3
#: The names of the scalar features, in their order after the three embeddings.
SCALARS = (
    "log_words", "log_duration", "question_mark", "position", "log_minutes", "same_speaker_before",
    "same_speaker_after", "log_turn_words", "rule_decision", "rule_todo", "rule_open_question", "rule_asks",
    "rule_fact", "rule_non_answer", "first_person_future", "we_modal", "agree_word", "backchannel",
)
_FIRST_FUTURE = re.compile(r"\b(?:I'll|I will|I'm going to|I am going to|I can|I'd|I should|I need to|I have to)\b",
                           re.I)
_WE_MODAL = re.compile(r"\b(?:we'll|we will|we should|let's|let us|we're going to|we are going to|we need|"
                       r"we have to|we must|we can|we could|we'd)\b", re.I)
_AGREE = re.compile(r"\b(?:agree[ds]?|decided?|decision|settled?|go with|going with|fixed|final|sure|okay|"
                    r"alright|fine|right|yes|yeah)\b", re.I)
_BACKCHANNEL = re.compile(r"^\W*(?:(?:um+|uh+|mm+|hmm+|yeah|yes|yep|okay|ok|right|oh|ah|so|well|no|mm-hmm|uh-huh)"
                          r"\W*)+$", re.I)
_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def is_english(segment: Segment) -> bool:
    """Whether the detector scores the segment (English, by its `lang` or its characters)."""
    lang = (segment.lang or "").lower()
    if lang:
        return lang.startswith("en")
    return _CJK_RE.search(segment.text) is None


def feature_count(dim: int) -> int:
    return 3 * dim + len(SCALARS)


def _cues(text: str) -> list[float]:
    sentences = [text[a:b] for a, b in ledger_en.sentences(text)] or [text]
    decision = any(ledger_en.decision(s) for s in sentences)
    todo = any(ledger_en.todo(s) is not None for s in sentences)
    open_q = any(ledger_en.open_question(s) for s in sentences)
    asks = any(ledger_en.asks(s) for s in sentences)
    fact = any(ledger_en.facts(s) for s in sentences)
    return [float(decision), float(todo), float(open_q), float(asks), float(fact), float(ledger_en.non_answer(text)),
            float(_FIRST_FUTURE.search(text) is not None), float(_WE_MODAL.search(text) is not None),
            float(_AGREE.search(text) is not None), float(_BACKCHANNEL.match(text) is not None)]


def features(segments: Sequence[Segment], vectors: np.ndarray) -> np.ndarray:
    """One row per segment (in the order given, which must be time order): embeddings, context, scalars.

    Args:
        segments: the meeting's segments in time order.
        vectors: their unit embeddings (rows in the same order), of the words alone.
    """
    import numpy as np

    n = len(segments)
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    out = np.zeros((n, feature_count(dim)), dtype=np.float32)
    if n == 0:
        return out
    vectors = np.asarray(vectors, dtype=np.float32)
    out[:, :dim] = vectors
    csum = np.vstack([np.zeros((1, dim), dtype=np.float64), np.cumsum(vectors, axis=0, dtype=np.float64)])
    for i in range(n):
        a, b = max(0, i - CONTEXT), i
        if b > a:
            out[i, dim:2 * dim] = (csum[b] - csum[a]) / (b - a)
        a, b = i + 1, min(n, i + 1 + CONTEXT)
        if b > a:
            out[i, 2 * dim:3 * dim] = (csum[b] - csum[a]) / (b - a)
    t0 = min(s.start for s in segments)
    t1 = max(s.end for s in segments)
    span = max(t1 - t0, 1.0)
    words = [len(s.text.split()) for s in segments]
    # The words of the speaker's whole turn (the run of consecutive segments by one speaker).
    turn = [0] * n
    i = 0
    while i < n:
        j = i
        while j + 1 < n and segments[j + 1].speaker == segments[i].speaker:
            j += 1
        total = sum(words[i:j + 1])
        for k in range(i, j + 1):
            turn[k] = total
        i = j + 1
    base = 3 * dim
    for i, seg in enumerate(segments):
        text = seg.text.strip()
        row = [
            float(np.log1p(words[i])), float(np.log1p(max(seg.end - seg.start, 0.0))),
            float(text.endswith("?")), (seg.start - t0) / span, float(np.log1p((seg.start - t0) / 60.0)),
            float(i > 0 and segments[i - 1].speaker == seg.speaker),
            float(i + 1 < n and segments[i + 1].speaker == seg.speaker), float(np.log1p(turn[i])),
            *_cues(text),
        ]
        out[i, base:] = row
    return out
