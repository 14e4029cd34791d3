"""A tokenizer made for meeting transcripts, for BM25.

People ask for exact values, so numbers, money, dates, times and product codes stay whole: "4,250" and
"$4,250" both become "4250", "3rd" stays "3rd" (and also gives "3", so "March 3" finds "March 3rd"),
"10:30" stays "10:30", "TS-204" stays "ts-204" (and gives "ts" and "204"). English words are case-folded,
reduced to their Snowball stems and stripped of function words,
but never of negations. Chinese runs are cut by jieba in search mode, which also emits the shorter words
inside long ones.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from functools import lru_cache

log = logging.getLogger(__name__)

_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(
    r"""
    (?P<cjk>[""" + _CJK + r"""]+)
    | (?P<date>\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4})
    | (?P<time>\d{1,2}:\d{2}(?::\d{2})?)
    | (?P<number>[$€£¥]?\d+(?:,\d{3})+(?:\.\d+)?%?|[$€£¥]?\d+(?:\.\d+)?%?)(?P<suffix>st|nd|rd|th|s|k|m|am|pm)?
      (?![a-z0-9])
    | (?P<code>[a-z0-9]+(?:[-_./][a-z0-9]+)+)
    | (?P<word>[a-z0-9]+(?:'[a-z]+)?)
    """,
    re.VERBOSE,
)

# Function words that carry no content in questions or answers. Negations are deliberately absent:
# "we are not using X" must stay findable as a negation.
ENGLISH_STOPWORDS = frozenset(
    """
    a an the and or but if then else of at by for with about against between into through during before
    after above below to from up down in out on off over under again further once here there all any both
    each few more most other some such only own same so than too very s t can will just should now i me my
    myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
    it its itself they them their theirs themselves what which who whom this that these those am is are was
    were be been being have has had having do does did doing would could ought i'm you're he's she's it's
    we're they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll
    they'll let's that's who's what's here's there's when's where's why's how's how when where why also
    um uh er erm ah oh mm hmm yeah okay ok like well
    """.split()
)
CHINESE_STOPWORDS = frozenset(
    "的 了 是 在 吗 呢 吧 啊 呀 嗯 呃 和 与 及 或 也 都 就 还 又 把 被 让 给 对 从 向 这 那 这个 那个 "
    "什么 怎么 哪 哪个 哪些 谁 多少 几 一个 一下 我 你 他 她 它 我们 你们 他们 她们 说 说过 提到 过 "
    "， 。 ？ ！ 、 ： ； “ ” ‘ ’ （ ） 《 》".split()
)
NEGATIONS = frozenset(
    "not no never don't doesn't didn't won't isn't aren't wasn't weren't can't cannot shouldn't "
    "wouldn't couldn't haven't hasn't hadn't nor none nothing 不 没 没有 别 未 不要 不是 无".split()
)


# One Snowball stemmer per thread: its object keeps the word being stemmed in its own fields, so two threads
# stemming at once (the indexer and the digest worker) corrupt each other's state.
_STEMMERS = threading.local()


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The Snowball (Porter2) English stem of a word; negations, numbers and codes pass through.

    Questions and answers differ most by inflection ("ships" / "shipped" / "shipping"), which stemming
    folds. Cached: a meeting repeats its vocabulary, and Snowball costs tens of microseconds a word.
    """
    if len(word) <= 3 or not word.isalpha() or word in NEGATIONS:
        return word
    stemmer = getattr(_STEMMERS, "english", None)
    if stemmer is None:
        try:
            import snowballstemmer
        except ImportError as exc:
            from .errors import MissingDependency

            raise MissingDependency("snowballstemmer") from exc
        stemmer = _STEMMERS.english = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)


class MeetingTokenizer:
    """Turns a segment or a question into BM25 terms (English and Chinese).

    jieba is imported and its dictionary loaded on first use of Chinese text, not at import time.
    """

    def __init__(self, *, stopwords: bool = True, stemming: bool = True) -> None:
        self.stopwords = stopwords
        self.stemming = stemming
        self._jieba = None

    def _cut_chinese(self, run: str) -> list[str]:
        if self._jieba is None:
            try:
                import jieba
            except ImportError as exc:
                from .errors import MissingDependency

                raise MissingDependency("jieba") from exc
            jieba.setLogLevel(logging.WARNING)
            self._jieba = jieba
        words = [w for w in self._jieba.lcut_for_search(run) if w.strip()]
        # Every character as well: questions paraphrase ("合格率" for "良率", "样品制作费" for "打样费") and jieba
        # cuts the same text differently in different contexts ("恒通报的" -> 恒 / 通报), but characters still
        # match. Words keep their weight: a matched word also matches its characters.
        if len(run) > 1:
            words.extend(run)
        return words

    def __call__(self, text: str) -> list[str]:
        return self.tokens(text)

    def tokens(self, text: str) -> list[str]:
        """The BM25 terms of `text`, in order (repeats kept: BM25 counts them)."""
        text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'").replace("‘", "'")
        out: list[str] = []
        for match in _TOKEN_RE.finditer(text):
            kind = match.lastgroup
            if match.group("cjk"):
                for word in self._cut_chinese(match.group("cjk")):
                    if not (self.stopwords and word in CHINESE_STOPWORDS):
                        out.append(word)
            elif match.group("date"):
                out.append(match.group("date"))
            elif match.group("time"):
                out.append(match.group("time"))
            elif match.group("number"):
                out.extend(_number_terms(match.group("number"), match.group("suffix")))
            elif match.group("code"):
                code = match.group("code").strip("._/-")
                out.append(code)
                parts = [p for p in re.split(r"[-_./]", code) if p]
                if len(parts) > 1:
                    out.extend(self._word_terms(p) for p in parts if p not in ENGLISH_STOPWORDS)
            elif kind == "word" or match.group("word"):
                word = match.group("word")
                if self.stopwords and word in ENGLISH_STOPWORDS:
                    continue
                out.append(self._word_terms(word))
        return out

    def _word_terms(self, word: str) -> str:
        if word.endswith("'s"):
            word = word[:-2]
        return stem(word) if self.stemming else word


def _number_terms(number: str, suffix: str | None) -> list[str]:
    """"$4,250" -> ["4250"]; "3rd" -> ["3rd", "3"]; "20%" -> ["20%", "20"]; "10am" -> ["10", "am"]."""
    bare = number.lstrip("$€£¥").replace(",", "")
    terms: list[str] = []
    if bare.endswith("%"):
        terms.extend([bare, bare[:-1]])
    else:
        terms.append(bare)
    if suffix in ("st", "nd", "rd", "th"):
        terms.insert(0, bare + suffix)
    elif suffix in ("k", "m"):
        terms.insert(0, bare + suffix)
    elif suffix in ("am", "pm"):
        terms.append(suffix)
    return terms
