"""What a question asks for, read from its words: an overview or exact words, the kind of value wanted
("when" -> a date, "how much" -> an amount), whether it asks for a changed value, whether it asks what
someone said. Pure regular expressions, in English and Chinese; the plan (`plan.py`) and the verbatim
route's sentence choice (`extractive.py`) read them.
"""

from __future__ import annotations

import re
from typing import Literal

AnswerKind = Literal["verbatim", "overview"]

_OVERVIEW_RE = re.compile(
    r"\b(summar\w*|overview|recap|gist|key points|main points|highlights|what (?:was|is) (?:the|this) meeting about"
    r"|what did we (?:decide|agree)|what (?:was|were|has been|have been) (?:decided|agreed)|decisions?"
    r"|action items?|to-?dos?|next steps|pending|outstanding|open questions|what do i owe|follow[- ]ups?"
    r"|what (?:does|did|will) \w+(?: \w+)? owe|what (?:is|are|was|were) \w+(?: \w+)? (?:supposed|meant) to do"
    r"|who (?:is|was) (?:doing|taking|handling) what)\b"
    r"|总结|概括|概述|要点|决定了什么|做了哪些决定|有哪些决定|待办|哪些任务|行动项|主要(?:讲|讨论)了?什么|还有哪些问题",
    re.IGNORECASE,
)

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december"
    "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
ANSWER_TYPES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "time": (
        re.compile(r"\bwhat time\b|\bat what hour\b|几点|什么时间点", re.I),
        re.compile(
            r"\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)|\bnoon\b|\bmidnight\b|[点點]半?|\d+点", re.I
        ),
    ),
    "date": (
        re.compile(
            r"\bwhen\b|\bwhat (?:day|date)\b|\bdeadline\b|\bdue\b|\bby when\b|\bhow long\b|什么时候|哪天|几号|截止|"
            r"期限|哪一天|多久|星期几|周几|礼拜几",
            re.I,
        ),
        re.compile(
            rf"\b(?:{_MONTHS})\b|\b(?:{_DAYS})\b|\b\d{{1,2}}(?:st|nd|rd|th)\b|\b(?:today|tomorrow|tonight|yesterday"
            r"|next week|this week|end of (?:the )?(?:day|week|month|quarter|year)|eod|q[1-4])\b"
            r"|\b\d{4}-\d{2}-\d{2}\b|周[一二三四五六日天末]|星期[一二三四五六日天]|\d+月|[一二三四五六七八九十]+月|\d+[号日]"
            r"|月底|月初|下周|本周|这周|明天|今天|后天|年底",
            re.I,
        ),
    ),
    "money": (
        re.compile(
            r"\bhow much\b|\bcost\b|\bprice\b|\bpriced\b|\bbudget\b|\bquote\b|\bfee\b|\bcharge\b|\bspend\b|\bpay\b"
            r"|多少钱|价格|价钱|报价|预算|费用|成本|花了",
            re.I,
        ),
        re.compile(
            r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(?:dollars?|euros?|pounds?|bucks|usd|eur|k)\b|\d+\s?(?:元|块|万|美元|欧元)"
            r"|[一二三四五六七八九十百千万两]+(?:元|块|万)",
            re.I,
        ),
    ),
    "quantity": (
        re.compile(
            r"\bhow many\b|\bnumber of\b|\bquantity\b|\bhow much\b|多少|几[个台批次件天人家种副片]|数量"
            r"|多[高重大长宽厚远]",
            re.I,
        ),
        re.compile(r"\d|[一二三四五六七八九十百千万两]+[个台批次件]", re.I),
    ),
    "code": (
        re.compile(r"\bpart number\b|\bmodel\b|\bcode\b|\bwhich\b|型号|编号|代号|哪款|哪个型号", re.I),
        re.compile(r"\b[A-Z]{1,5}-?\d{2,}\b|\bv\d+(?:\.\d+)+\b"),
    ),
    "person": (
        re.compile(r"\bwho\b|\bwhom\b|\bwhose\b|\bwhich person\b|\bowner\b|谁|哪位|负责人", re.I),
        # 周 is a surname but also the week (周一, 下周三, 周末): a weekday is not a person.
        re.compile(
            r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+\b|由.{1,4}(?:负责|跟进|来)|[小老][张王李赵刘陈杨黄周吴林]"
            r"|[张王李赵刘陈杨黄吴林][\u4e00-\u9fff]{1,2}|周(?![一二三四五六日天末内])[\u4e00-\u9fff]{1,2}"
        ),
    ),
}
CJK_NAME_RE = re.compile(r"[\u4e00-\u9fff]")
# "What time was the workshop moved to?" asks for the value after a change; the sentence that makes the
# change ("we changed it to 12:55 pm, not 9:10 am") beats the one it replaced.
ASKS_CHANGE_RE = re.compile(
    r"\b(?:revised|revision|new|now|moved|changed|updated|update|corrected|correction|final|finally|end(?:ed)? up|"
    r"after all|instead|actually)\b|改到|改成|改为|现在|最后|调整|更正|修改后|新的",
    re.IGNORECASE,
)
STATES_CHANGE_RE = re.compile(
    r"\b(?:correction|changed|moved|updated?|revised|instead|actually|rather)\b|,\s*not\s+\S|\bnot\s+\S+.*\bas\s+I\s+said"
    r"|改到|改成|改为|更正|不是",
    re.IGNORECASE,
)
# "What did Dana say about the budget?" asks for Dana's own words; "By when does Bob owe us the quote?"
# names Bob as the subject, and someone else may well have said it.
SPEECH_VERB_RE = re.compile(
    r"\b(?:say|says|said|saying|mention\w*|tell|tells|told|ask|asks|asked|propos\w*|suggest\w*|claim\w*|"
    r"think|thinks|thought|according to|quote\w*|words?|explain\w*|promis\w*|comment\w*|argu\w*|"
    r"recommend\w*|point\w* out)\b|说|提到|讲|问|建议|认为|表示|提出",
    re.IGNORECASE,
)



def question_kind(question: str) -> AnswerKind:
    """`overview` for questions about decisions, todos and the gist; `verbatim` for exact words and values."""
    return "overview" if _OVERVIEW_RE.search(question) else "verbatim"


def expected_answer_types(question: str) -> list[str]:
    """Which kinds of value the question asks for ("when" -> date, "how much" -> money, ...)."""
    return [name for name, (asks, _) in ANSWER_TYPES.items() if asks.search(question)]
