"""Checking a model's summary line against the transcript it cites, before anything is stored.

Pure: `check_line(text, cited_segments)` returns None when every fact the line states occurs in the
segments it cites, else the reason in words ("states '15' which its cited segments do not hold").
`check_citations(cited_ids, known_ids)` checks that a line cites something, and only segments it may.

What counts as a fact the line states:
- numbers, in digits ("40,000", "1.5", "3万", "40k") or words ("twelve fifty", "forty thousand", "两万",
  "一万五"), compared by value: "$40,000" matches "forty thousand dollars" and "4万"; "twelve fifty" may
  be 1250, 12.50 or 12:50, and matches any of them;
- money: the currency of an amount ("$", "euros", "元"/"块") must be said too;
- dates and times: months ("March", "3月"), weekdays ("Friday", "周五", "星期五"), clock times ("3:30",
  "3pm", "三点半"), quarters ("Q3"), and relative days and weeks ("tomorrow", "next week", "明天", "下周",
  "月底"), compared by meaning across languages ("周五" matches "Friday");
- proper names: a capitalised word that does not open a sentence ("... owned by Zhang San"), a capitalised
  word opening one unless it is a common sentence opener ("The", "We", "Budget"), and Chinese names with a
  common surname ("张三", "小王", "王总").

What it catches: a changed or invented number, amount, currency, date, weekday, time or name ("12" for
"15", "Li Si owns it" for "Zhang San owns it", "Thursday" for "Wednesday", "this week" for "Wednesday").

What it cannot catch (a presence check knows nothing of meaning):
- a fact moved between roles when both are in the cited text ("Zhang San pays Li Si" -> "Li Si pays Zhang
  San"), or a number attached to the wrong thing ("5 servers, 3 racks" -> "3 servers");
- a flipped negation or modality ("will not ship" -> "will ship", "might" -> "will");
- a vaguer word that is not a date ("by Wednesday" -> "soon", "later"), an omission, or a wrong verb;
- ordinal words ("the third"), and names written in lower case or in Chinese without a common surname.
A line that states no fact at all ("The team discussed the roadmap.") passes. So the check bounds drift of
the values people ask for; it does not prove a line true. It errs towards rejection: a line that says a
fact in different words than the transcript ("shipping" for "ship" is allowed at a sentence start, but
"$40k" for "forty grand" is not) sends the section to the extractive fallback, which cannot drift.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from .mentions import mentions, normalise

_ASCII_WORD_RE = re.compile(r"[A-Za-z]+(?:['-][A-Za-z]+)*")


def _source_keys(texts: Iterable[str]) -> tuple[set[str], set[str]]:
    """Every key the cited texts support, generously, and their ASCII words (lower-cased)."""
    keys: set[str] = set()
    words: set[str] = set()
    for text in texts:
        for mention in mentions(text):
            keys |= mention.keys
            for key in mention.keys:
                if key.startswith("month:"):
                    keys.add("n:" + key[6:])  # "3/12" in a line, "March 12" in the transcript
                elif key.startswith("t:"):
                    hour, minute = key[2:].split(":")
                    keys |= {"n:" + hour, "n:" + str(int(minute)), "n:" + str(int(hour) + 12)}
        for m in _ASCII_WORD_RE.finditer(text):
            word = m[0].lower()
            words.add(word)
            words.add(re.sub(r"'s$", "", word))
    keys |= {"w:" + w for w in words}
    return keys, words


def _text_of(segment: Any) -> str:
    """A cited segment's words: a string, or a `Segment`'s text together with its raw (uncleaned) text."""
    if isinstance(segment, str):
        return segment
    return " \n".join(t for t in (getattr(segment, "text", None), getattr(segment, "raw_text", None)) if t)


def check_line(text: str, cited_segments: Sequence[Any]) -> str | None:
    """Whether every number, amount, date, time and name `text` states occurs in the segments it cites.

    Args:
        text: one summary line.
        cited_segments: the segments the line cites, as `Segment`s (their text and raw text are searched)
            or as plain strings.

    Returns:
        None when the line is supported, else the reason, worded to follow "line 2 ..." ("states '15'
        which its cited segments do not hold", "cites no segment").
    """
    if not cited_segments:
        return "cites no segment"
    if not text.strip():
        return "is empty"
    sources = [normalise(_text_of(s)) for s in cited_segments]
    keys, words = _source_keys(sources)
    joined = "\n".join(sources).casefold()
    for mention in mentions(normalise(text)):
        if mention.kind == "value":
            supported = bool(mention.keys & keys) or mention.literal.casefold() in joined
        elif mention.kind == "opener":
            word = mention.literal.lower()
            stem = word if len(word) <= 3 else word[:4]
            supported = word in words or (len(word) > 3 and any(w.startswith(stem) for w in words))
        elif mention.keys:
            supported = bool(mention.keys & keys)
        else:
            supported = mention.literal in joined
        if not supported:
            return f"states {mention.literal!r} which its cited segments do not hold"
    return None


def check_citations(cited_ids: Sequence[str], known_ids: Collection[str]) -> str | None:
    """Whether a line cites at least one segment, and only segments of `known_ids` (the section's or the
    meeting's). Returns None when it does, else the reason, worded to follow "line 2 ..."."""
    if not cited_ids:
        return "cites no segment"
    unknown = [sid for sid in cited_ids if sid not in known_ids]
    if unknown:
        return f"cites {unknown[0]!r} which is not one of the segments it was given"
    return None
