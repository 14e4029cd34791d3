"""Rule-based filler cleaning of recognised speech, English and Chinese: pure functions, no I/O.

Removes fillers ("um", "uh", "you know" used as a filler, 嗯, 呃, 啊 and 那个 / 就是 used as fillers) and
collapses stutters and repeats ("I I I think" -> "I think", "我们我们" -> "我们") and drops false starts, the
cut-off start of the next word ("Custome Customers" -> "Customers", "rem- remote" -> "remote"), then repairs
the spacing, commas and capital letter the removal leaves behind ("Um, we ship" -> "We ship").

The rules are deliberately conservative, because a wrong deletion loses meaning while a kept filler only
costs a little readability. Whatever the input:

- digits are never removed or changed, and numeric tokens are never collapsed ("5 5" stays, "一一" stays);
- negations (not, no, never, don't, ..., 不, 没, 别, 未, ...) are never removed, not even as repeats;
- glossary names (the meeting's people and products) are never touched;
- "like" is never removed: as a filler it is indistinguishable from the verb and the preposition.

The raw text is kept beside the clean text (`CleanedText.raw_text`), so the transcript's `raw_text` field
always holds what the recogniser said.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

logger = logging.getLogger(__name__)

#: English negations: never removed, never collapsed when repeated ("no, no" stays).
ENGLISH_NEGATIONS = frozenset({
    "not", "no", "never", "nor", "neither", "none", "nobody", "nothing", "nowhere", "cannot", "nope",
    "without",
})
#: Chinese negation characters: never removed, and no repeat containing one is collapsed.
CHINESE_NEGATIONS = frozenset("不没別别未无無非莫勿甭")

# "mm" is left out: it is also millimetres ("5 mm").
_ENGLISH_FILLER = re.compile(r"u+m+|u+h+m+|u+h+|e+r+m+|er|e+h+m+|h+m+", re.IGNORECASE)
# Words after which the comma before a filler is the speaker's own ("No, um, we don't" -> "No, we don't").
_DISCOURSE_MARKERS = frozenset({"no", "yes", "yeah", "so", "well", "okay", "ok", "right", "now", "sure", "oh"})
_NUMBER_WORDS = frozenset({
    "zero", "oh", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty",
    "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "million",
    "billion", "first", "second", "third", "half", "double", "triple",
})
# Repeats that are grammatical or deliberate ("that that", "had had", "bye bye", "very very").
_KEEP_REPEATS = frozenset({"that", "had", "is", "do", "did", "bye", "so", "very", "really", "ha", "knock", "tut"})
# Whole words that begin a longer word ("the there", "use user", "for forty", "may maybe"): said before it,
# they are a word of their own, never a false start (see `_false_start`).
_PREFIX_WORDS = frozenset("""
a about above after again against all also am an and another any anyway are as at away back be been before
being below between both but by can could day did do does done down each either else even ever every far few
for from get give go going good got had has have he her here hers him his how if in into is it its just know
last less let like long lot made make man many may me might more most much must my near need new next no nor
not now of off old on once one only onto or other our ours out over own part per put real right same say see
set she should show so some still such sure take than that the their them then there these they this those
though through thus till to too two under until up upon us use very was way we well were what when where which
while who whom whose why will win with within work would yes yet you your yours
""".split())

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CHINESE_NUMERALS = frozenset("〇零一二三四五六七八九十百千万萬亿億两兩半几幾")
# Characters stammered twice that are never a reduplicated word ("我我觉得", but keep "谢谢", "看看").
_STAMMER_CHARS = frozenset("我你他她它这那就")
# Verbs whose ABAB reduplication is grammatical ("研究研究" = look into it a bit).
_REDUPLICATED_VERBS = frozenset({
    "研究", "讨论", "商量", "考虑", "休息", "学习", "介绍", "准备", "整理", "检查", "打扫", "活动", "锻炼",
    "收拾", "练习", "了解", "体验", "尝试", "思考", "交流", "沟通", "打听", "比较", "联系",
    "討論", "考慮", "學習", "介紹", "準備", "檢查", "鍛煉", "練習", "嘗試", "溝通", "聯繫", "比較",
})
_ZH_CLAUSE_END = "。！？!?"
_ZH_COMMA = "，,、；;：:"
_ZH_PAUSE = "，,、…"

# Numbers are whole tokens ("4,500", "10:30", "12th"), so that no rule sees their commas or points.
_TOKEN = re.compile(r"\d+(?:[.,:/-]\d+)*\w*(?:['’-]\w+)*|\w+(?:['’-]\w+)*|\s+|\.\.\.|.", re.DOTALL)
_ENGLISH_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
_MAX_PASSES = 4
_SENTENCE_END = frozenset({".", "!", "?"})
_PAUSE_PUNCT = frozenset({",", "…", "...", "-", "—", "–", ";"})


@dataclass(frozen=True, slots=True)
class CleanedText:
    """The cleaned text of one utterance beside the recogniser's raw text.

    `text` is empty when the utterance was nothing but fillers: the caller drops it (the raw text is
    still there to log).
    """

    text: str
    raw_text: str

    @property
    def changed(self) -> bool:
        return self.text != self.raw_text


class FillerCleaner:
    """Cleans utterances of one meeting; the glossary (names that must never change) is compiled once.

    Args:
        glossary: names and terms (people, products, codes) that are kept exactly as recognised, even
            when they look like a filler or a repeat. Matched case-insensitively.
    """

    def __init__(self, glossary: Iterable[str] = ()) -> None:
        terms = sorted({t.strip() for t in glossary if t and t.strip()}, key=len, reverse=True)
        self.glossary: tuple[str, ...] = tuple(terms)
        self._glossary_re = re.compile("|".join(_term_pattern(t) for t in terms), re.IGNORECASE) if terms else None

    def clean(self, text: str) -> CleanedText:
        """Clean one utterance. Returns the cleaned text with the raw text kept beside it."""
        return CleanedText(text=self.clean_text(text), raw_text=text)

    def clean_text(self, text: str) -> str:
        """The cleaned text alone (see the module docstring for what is and is never removed)."""
        working, protected = self._protect(text)
        # Each pass can expose another filler to the other language's rules ("，um 那个，"); a few
        # passes reach a text that cleaning leaves as it is.
        for _ in range(_MAX_PASSES):
            before = working
            if _has_cjk(working):
                working = _clean_chinese(working)
            if re.search(r"[A-Za-z]", working):
                working = _clean_english(working)
            if working == before:
                break
        for placeholder, original in protected.items():
            working = working.replace(placeholder, original)
        working = working.strip()
        if not re.search(r"\w", working):
            return ""  # nothing but fillers and the punctuation around them
        return working

    def _protect(self, text: str) -> tuple[str, dict[str, str]]:
        """Replace each glossary match by a private-use character the rules cannot touch."""
        if self._glossary_re is None:
            return text, {}
        used = set(text)
        free = (chr(c) for c in range(0xE000, 0xF900) if chr(c) not in used)
        protected: dict[str, str] = {}

        def swap(match: re.Match[str]) -> str:
            placeholder = next(free, None)
            if placeholder is None:  # more glossary hits than private-use characters: leave the rest
                return match.group(0)
            protected[placeholder] = match.group(0)
            return placeholder

        return self._glossary_re.sub(swap, text), protected


def clean(text: str, glossary: Sequence[str] = ()) -> CleanedText:
    """Clean one utterance with a one-off cleaner (build a `FillerCleaner` once for a whole meeting)."""
    return FillerCleaner(glossary).clean(text)


def _term_pattern(term: str) -> str:
    pattern = re.escape(term)
    if re.match(r"\w", term) and not _has_cjk(term[0]):
        pattern = r"(?<!\w)" + pattern
    if re.search(r"\w$", term) and not _has_cjk(term[-1]):
        pattern += r"(?!\w)"
    return pattern


def _has_cjk(text: str) -> bool:
    return re.search(f"[{_CJK}]", text) is not None


# --- English -------------------------------------------------------------------------------------------


def _clean_english(text: str) -> str:
    tokens = _TOKEN.findall(text)
    cleaned = tokens
    while True:  # a removal can set off another filler ("..., you know um" -> "..., you know")
        previous, cleaned = cleaned, _collapse_english_repeats(_drop_english_fillers(cleaned))
        if cleaned == previous:
            break
    if cleaned == tokens:
        return text
    return _tidy_english("".join(cleaned))


def _is_word(token: str) -> bool:
    return _ENGLISH_WORD.fullmatch(token) is not None


def _is_negation(word: str) -> bool:
    lowered = word.lower().replace("’", "'")
    return lowered in ENGLISH_NEGATIONS or lowered.endswith("n't")


def _collapsible(word: str) -> bool:
    lowered = word.lower()
    return _is_word(word) and not _is_negation(word) and lowered not in _NUMBER_WORDS and lowered not in _KEEP_REPEATS


def _next_index(tokens: list[str | None], i: int, step: int) -> int | None:
    """Index of the nearest kept, non-space token from `i` in direction `step`."""
    i += step
    while 0 <= i < len(tokens):
        token = tokens[i]
        if token is not None and not token.isspace():
            return i
        i += step
    return None


def _drop_english_fillers(source: list[str]) -> list[str]:
    tokens: list[str | None] = list(source)
    capitalise: set[int] = set()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        span_end = None
        if token is not None and _ENGLISH_FILLER.fullmatch(token) and not (len(token) > 1 and token.isupper()):
            span_end = i  # "UM", "ER" in capitals are acronyms (the ER), not fillers
        elif token is not None and token.lower() == "you":
            span_end = _you_know_filler(tokens, i)
        if token is None or span_end is None:
            i += 1
            continue
        before = _next_index(tokens, i, -1)
        sentence_start = before is None or tokens[before] in _SENTENCE_END
        for j in range(i, span_end + 1):
            tokens[j] = None
        after = _next_index(tokens, span_end, 1)
        own_pause = False
        # The filler's own pause mark goes with it, unless it is a sign ("um -5 degrees").
        if after is not None and tokens[after] in _PAUSE_PUNCT and _followed_by_space(tokens, after):
            tokens[after] = None
            own_pause = True
            after = _next_index(tokens, after, 1)
        if before is not None and tokens[before] == ",":
            # ", um, we" and ", um." leave no comma behind; ", um we" keeps the speaker's comma, and so
            # does "No, um, we" (the comma after "No" belongs to it).
            word_before = _next_index(tokens, before, -1)
            marker = word_before is not None and (tokens[word_before] or "").lower() in _DISCOURSE_MARKERS
            at_end = after is None or tokens[after] in _SENTENCE_END
            if at_end or (own_pause and not marker):
                tokens[before] = None
        # A capital letter passes to the next word ("Um, uh, we" -> "We").
        if sentence_start and (token[:1].isupper() or i in capitalise) and after is not None:
            capitalise.add(after)
        i = span_end + 1
    out: list[str] = []
    for index, kept in enumerate(tokens):
        if kept is None:
            continue
        if index in capitalise and _is_word(kept) and kept[1:] == kept[1:].lower():
            kept = kept[0].upper() + kept[1:]
        out.append(kept)
    return out


def _followed_by_space(tokens: list[str | None], i: int) -> bool:
    for token in tokens[i + 1:]:
        if token is not None:
            return token.isspace()
    return True


def _you_know_filler(tokens: list[str | None], i: int) -> int | None:
    """End index of "you know" at `i` when it is set off as a filler ("You know, ...", ", you know,")."""
    gap = tokens[i + 1] if i + 1 < len(tokens) else None
    if gap is None or not gap.isspace() or i + 2 >= len(tokens) or (tokens[i + 2] or "").lower() != "know":
        return None
    before = _next_index(tokens, i, -1)
    after = _next_index(tokens, i + 2, 1)
    after_token = tokens[after] if after is not None else None
    if before is None or tokens[before] in _SENTENCE_END or tokens[before] == ";":
        # Sentence-initial: only "You know, ..." ("You know the answer" is a statement).
        return i + 2 if after_token == "," else None
    if tokens[before] == ",":
        # A mid-sentence aside or a trailing tag; "you know?" is a real question and stays.
        return i + 2 if after_token in {",", ".", "!", "…", "...", None} else None
    return None


def _collapse_english_repeats(source: list[str]) -> list[str]:
    tokens = list(source)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        # "sup- supplier", "we- we": a cut-off start of the next word.
        if (_is_word(token) and not _is_negation(token) and i + 3 < len(tokens) and tokens[i + 1] == "-"
                and tokens[i + 2].isspace() and _is_word(tokens[i + 3])
                and tokens[i + 3].lower().startswith(token.lower())):
            i += 3
            continue
        # "Custome Customers", "rem remote": the same cut-off start, written without its hyphen.
        if _false_start(tokens, i):
            before = _last_mark(out)
            if token[:1].isupper() and (before is None or before in _SENTENCE_END):
                tokens[i + 2] = tokens[i + 2][:1].upper() + tokens[i + 2][1:]  # "Rub rubber" -> "Rubber"
            i += 2
            continue
        out.append(token)
        i += 1
    while (cut := _find_repeat(out)) is not None:
        del out[cut[0]:cut[1]]
    return out


def _false_start(tokens: list[str], i: int) -> bool:
    """Whether the word at `i` is a false start: three letters or more that begin the next word, which
    follows after a space alone ("rem remote", "Custome Customers", "tha that's").

    Never a negation or a number word, nor a whole word of its own (`_PREFIX_WORDS`: "the there", "use
    user"); a glossary name is a placeholder by now, so it never matches.
    """
    token = tokens[i]
    if len(token) < 3 or i + 2 >= len(tokens) or not tokens[i + 1].isspace() or not _is_word(token):
        return False
    lowered = token.lower()
    following = tokens[i + 2]
    if lowered in _PREFIX_WORDS or lowered in _NUMBER_WORDS or _is_negation(token) or not _is_word(following):
        return False
    return len(following) > len(token) and following.lower().startswith(lowered)


def _last_mark(tokens: list[str]) -> str | None:
    """The last non-space token, or None."""
    return next((t for t in reversed(tokens) if not t.isspace()), None)


def _find_repeat(tokens: list[str]) -> tuple[int, int] | None:
    """The token range to delete for the first immediate repeat of one to three words, or None.

    Handles "I I I think", "we should we should ship" and "I, I think"; the first copy is kept (with
    its capital letter).
    """
    words = [i for i, t in enumerate(tokens) if not t.isspace()]
    for n in (3, 2, 1):
        for p in range(len(words) - n):
            first = words[p:p + n]
            if not all(_collapsible(tokens[k]) for k in first) or not _spaced(tokens, first):
                continue
            key = [tokens[k].lower() for k in first]
            second = words[p + n:p + 2 * n]
            if [tokens[k].lower() for k in second] == key and _spaced(tokens, [first[-1], second[0]]):
                return first[-1] + 1, second[-1] + 1
            if (n == 1 and p + 2 < len(words) and words[p + 1] == first[0] + 1 and tokens[words[p + 1]] == ","
                    and tokens[words[p + 2]].lower() == key[0] and _spaced(tokens, words[p + 1:p + 3])):
                return first[0] + 1, words[p + 2] + 1
    return None


def _spaced(tokens: list[str], indices: list[int]) -> bool:
    """True when consecutive token indices are separated by whitespace alone (and some of it)."""
    for a, b in zip(indices, indices[1:], strict=False):
        between = tokens[a + 1:b]
        if not between or not all(t.isspace() for t in between):
            return False
    return True


def _tidy_english(text: str) -> str:
    """Repair the spacing and commas a removal leaves behind."""
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r"\s+([,.!?;:…])(?=\s|$)", r"\1", text)
    text = re.sub(r",\s*(?=[.!?]|$)", "", text)
    return re.sub(r"^[\s,;:]+", "", text)


# --- Chinese -------------------------------------------------------------------------------------------


def _clean_chinese(text: str) -> str:
    text = _drop_chinese_fillers(text)
    text = _collapse_chinese_repeats(text)
    return text


def _drop_chinese_fillers(text: str) -> str:
    # A removed filler first becomes a marker, so that the next pattern still sees where a clause opens
    # and, at the end, a run of removals between two Latin words or numbers becomes one space.
    marker = next(chr(c) for c in range(0xF8FF, 0xE000, -1) if chr(c) not in text)
    start = rf"(?:^|(?<=[{_ZH_CLAUSE_END}{_ZH_COMMA}\s{marker}]))"
    pause = rf"[{_ZH_PAUSE}]"
    # 嗯 and 呃 are fillers wherever they stand; 啊 only when it opens a clause (at the end of one it is a
    # sentence particle: 好啊); 那个 / 就是(说) only when they open a clause and a pause follows them
    # ("那个，我们..."), since elsewhere they mean "that" and "exactly".
    patterns = [
        r"[嗯呃]+",
        rf"{start}啊+(?=[\s{marker}]*(?:[{_ZH_PAUSE}{_ZH_CLAUSE_END}{_CJK}]|$))",
        rf"{start}(?:那个|那個|就是说|就是說|就是)(?={pause})",
    ]

    def replace(match: re.Match[str]) -> str:
        whole, after = match.group(0), match.group("after")
        # "，呃，" keeps one comma: it often ends a clause, and joining two clauses can change the meaning
        # ("不是，呃，我们" is not "不是我们"); a filler before the end of a sentence takes its comma along.
        if whole[:1] in _ZH_COMMA and (after is None or after.strip()):
            return whole[0] + marker
        return marker

    cleaned = text
    for pattern in patterns:
        cleaned = re.sub(rf"(?:[{_ZH_COMMA}]\s*)?(?:{pattern})(?P<after>\s*{pause}+\s*|\s*(?=[{_ZH_CLAUSE_END}]|$))?",
                         replace, cleaned)
    if cleaned == text:
        return text

    def close_gap(match: re.Match[str]) -> str:
        whole, begin, end = match.string, match.start(), match.end()
        if 0 < begin and end < len(whole) and _joinable(whole[begin - 1]) and _joinable(whole[end]):
            return " "  # "no嗯I" -> "no I", "4嗯5" -> "4 5": never glue two words or two numbers together
        return ""

    cleaned = re.sub(rf"{marker}[{marker}\s]*", close_gap, cleaned)
    cleaned = re.sub(rf"^[\s{_ZH_COMMA}…]+", "", cleaned)
    return re.sub(rf"[{_ZH_COMMA}]+(?=[{_ZH_CLAUSE_END}])", "", cleaned)


def _joinable(char: str) -> bool:
    """A character that would fuse with a like neighbour if the text between them went: a Latin letter, a
    digit, a word-joining mark (' ’ -) or a protected glossary name (a private-use placeholder); not CJK,
    space or other punctuation."""
    word_part = char.isalnum() or char in "_'’-" or "\ue000" <= char <= "\uf8ff"
    return word_part and not _has_cjk(char)


def _collapse_chinese_repeats(text: str) -> str:
    def block(match: re.Match[str]) -> str:
        unit = match.group(1)
        if _protected_chinese(unit) or unit in _REDUPLICATED_VERBS:
            return match.group(0)
        return unit

    def single(match: re.Match[str]) -> str:
        char, whole = match.group(1), match.group(0)
        if _protected_chinese(char) or (len(whole) == 2 and char not in _STAMMER_CHARS):
            return whole
        return char

    text = re.sub(rf"([{_CJK}]{{2,4}})\1+", block, text)
    return re.sub(rf"([{_CJK}])\1+", single, text)


def _protected_chinese(unit: str) -> bool:
    return any(c in CHINESE_NEGATIONS or c in _CHINESE_NUMERALS or c.isdigit() for c in unit)
