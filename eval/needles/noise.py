"""ASR-like noise for needle meetings: what a recogniser does to speech, laid over the generated text.

Fillers, homophone swaps and dropped short words, at a rate, never inside a protected span (a needle's
values), so a noisy meeting asks the same questions with the same answers as the clean one.
"""

from __future__ import annotations

import random
import re

# ------------------------------------------------------------------------------------------------------
# ASR-like noise. The homophone tables are small on purpose: the swaps a recogniser makes on common words.
# ------------------------------------------------------------------------------------------------------
EN_HOMOPHONES = {"their": "there", "there": "their", "to": "too", "too": "to", "your": "you're", "then": "than",
                 "than": "then", "know": "no", "no": "know", "here": "hear", "right": "write", "our": "are",
                 "for": "four", "its": "it's", "weather": "whether", "whole": "hole", "would": "wood"}
EN_FILLERS = ("um", "uh", "um,", "uh,", "you know,", "like,")
EN_DROPPABLE = frozenset({"a", "the", "to", "of", "and", "is", "it", "so", "we", "that", "in", "on"})
ZH_HOMOPHONES = {"的": "得", "得": "的", "在": "再", "再": "在", "做": "作", "他": "她", "那": "哪", "已": "以",
                 "是": "事",
                 "会": "汇", "试": "事"}
ZH_FILLERS = ("嗯", "呃", "那个", "就是")
ZH_DROPPABLE = frozenset("了的吧呢啊也就")


def add_noise(text: str, rate: float, rng: random.Random, lang: str, protected: tuple[str, ...] = ()) -> str:
    """`text` as an imperfect recogniser might give it: at `rate` per word (per character for Chinese, at
    half the rate), a filler inserted, a homophone swapped or a short word dropped. Spans equal to any of
    `protected` are left exactly as they are."""
    if rate <= 0.0:
        return text
    spans = _protected_spans(text, protected)
    pieces: list[str] = []
    last = 0
    for lo, hi in spans:
        pieces.append(_noisy(text[last:lo], rate, rng, lang, first=last == 0, last=False))
        pieces.append(text[lo:hi])
        last = hi
    pieces.append(_noisy(text[last:], rate, rng, lang, first=last == 0, last=True))
    noisy = "".join(pieces)
    if not lang.startswith("zh"):  # a dropped word leaves no stray space or leading comma behind
        noisy = re.sub(r" +([,.?!;:])", r"\1", re.sub(r"^[\s,;:.]+", "", noisy))
    return noisy if noisy.strip() else text


def _protected_spans(text: str, protected: tuple[str, ...]) -> list[tuple[int, int]]:
    marks = [False] * len(text)
    for value in protected:
        if not value:
            continue
        start = text.find(value)
        while start >= 0:
            for i in range(start, start + len(value)):
                marks[i] = True
            start = text.find(value, start + 1)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        if marks[i]:
            j = i
            while j < len(text) and marks[j]:
                j += 1
            spans.append((i, j))
            i = j
        else:
            i += 1
    return spans


def _noisy(piece: str, rate: float, rng: random.Random, lang: str, *, first: bool, last: bool) -> str:
    """Noise on an unprotected piece; `first`/`last` say whether it begins or ends the text (if not, it
    touches a protected span there, and the word touching it is left alone)."""
    if not piece:
        return piece
    if lang.startswith("zh"):
        out: list[str] = []
        for i, char in enumerate(piece):
            roll = rng.random()
            if (i == 0 and first or i > 0 and piece[i - 1] in "，。？！：") and roll < rate * 0.3:
                out.append(rng.choice(ZH_FILLERS))  # fillers come between clauses, not inside words
            elif (not first and i == 0) or (not last and i == len(piece) - 1):
                pass
            elif char in ZH_DROPPABLE and roll < rate * 0.5:
                continue
            elif char in ZH_HOMOPHONES and roll < rate * 0.5:
                char = ZH_HOMOPHONES[char]
            out.append(char)
        return "".join(out)
    tokens = re.split(r"(\s+)", piece)
    out = []
    for i, token in enumerate(tokens):
        core = token.rstrip(".,?!:;")
        touching = (i == 0 and not first) or (i == len(tokens) - 1 and not last)
        if touching or not re.search(r"[A-Za-z]", core):
            out.append(token)
            continue
        tail = token[len(core):]
        roll = rng.random()
        if roll < rate * 0.3:
            out.append(rng.choice(EN_FILLERS) + " " + token)
        elif core.lower() in EN_DROPPABLE and roll < rate:
            out.append(tail)
        elif core.lower() in EN_HOMOPHONES and roll < rate:
            swap = EN_HOMOPHONES[core.lower()]
            out.append((swap[0].upper() + swap[1:] if core[:1].isupper() else swap) + tail)
        else:
            out.append(token)
    return re.sub(r" {2,}", " ", "".join(out))
