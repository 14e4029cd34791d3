"""Chinese ledger patterns: 决定、待办（谁、做什么、何时）、待定问题、数字事实、人名术语和变更.

Same contract as `ledger_en`: every value is a span of the sentence given. Patterns are everyday
Mandarin meeting phrasing ("我们决定", "就这么定了", "由小王负责", "下周五之前完成", "还不确定").
"""

from __future__ import annotations

import re

from .dates import find_due
from .ledger_rules import ChangeMatch, FactMatch, Span, TodoMatch

lang = "zh"

#: A person as usually named in meetings: 小王 / 老李 / 王总 / 张经理 / a two- or three-character name
#: before a role verb. Bare pronouns are handled separately.
_NAME = r"(?:[小老][\u4e00-\u9fff]|[\u4e00-\u9fff]{1,2}(?:总|经理|老师|工|姐|哥)|[A-Z][a-z]+)"
# A weekday's digit is not a surname: "每周四小李负责" is 小李's, not 四小李's.
_PERSON = rf"(?:{_NAME}|(?<![周期拜])[\u4e00-\u9fff]{{2,3}}(?=负责|来负责|牵头|跟进))"

_DECISION_RES = tuple(re.compile(p) for p in (
    r"(?:我们|大家|会上|最后|最终)?(?:一致)?(?:决定|确定|同意|商定|敲定)(?:了)?(?:用|采用|选|做|把|就|先|：|:|，|,|下来)",
    r"就这么(?:定|办)了?",
    r"(?:那|那就|就)(?:这样|这么)(?:定|办)(?:了|吧)?",
    r"确定(?:用|采用|选|是)",
    r"(?:最终|最后的?)(?:方案|决定|结论)(?:是|为|：|:)",
    r"(?:那就|就|还是)(?:用|选|采用|按)[^，。？?]{1,20}(?:吧|了)",
    r"定下来了?",
    r"(?:不用|不要|不做|不考虑|去掉|砍掉)[^，。？?]{1,15}了",
    # "我们决定外壳颜色定为深灰色": a decision that names what is fixed, "定为 / 定成 / 改为".
    r"(?:决定|确定|同意|商定|敲定)[^，。？?]{0,20}(?:定为|定成|定在|改为|改成|用|选)",
    r"[^，。？?]{1,20}(?:定为|定成)[^，。？?]{1,20}",
    r"(?:我们|大家)(?:不用|不要|不做|不选|不采用)[^，。？?]{1,15}",
))
_DECISION_BLOCK = re.compile(r"(?:是否|要不要|能不能|可不可以|会不会|吗|呢|？|\?|如果|或许|也许|可能|不确定|还没)")

_TODO_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("action", re.compile(r"(?:行动项|待办(?:事项)?|任务|TODO|todo)\s*[:：]\s*(?P<task>\S.*)")),
    ("name", re.compile(rf"(?:由|让|请)(?P<who>{_PERSON}|[\u4e00-\u9fff]{{2,3}})(?:来)?(?:负责|牵头|跟进|去|来)"
                        r"(?P<task>[^，。？?！!；;]{2,})")),
    ("name", re.compile(rf"(?P<who>{_PERSON})(?:来|去|会|要|负责|牵头|跟进|(?=下周|明天|后天|周[一二三四五六日]|"
                        r"[0-9一二三四五六七八九十]+月|月底))"
                        r"(?P<task>[^。？?！!；;]{2,})")),
    ("speaker", re.compile(r"(?P<who>我)(?:来|去|会|负责|回头|稍后|下来|待会儿?)(?P<task>[^。？?！!；;]{2,})")),
    ("addressee", re.compile(r"(?P<who>你|你们)(?:来|去|负责|帮忙|帮我|记得)(?P<task>[^。？?！!；;]{2,})")),
    ("addressee", re.compile(r"(?:麻烦|请)(?P<who>你|你们)(?P<task>[^。？?！!；;]{2,})")),
    ("group", re.compile(r"(?P<task>[^。？?！!；;]{2,}(?:之前|以前|前)(?:要|得|必须|需要)?"
                         r"(?:完成|搞定|做完|提交|交|发|给)"
                         r"[^。？?！!；;]*)")),
)
_TODO_BLOCK = re.compile(r"(?:吗|呢|？|\?|如果|我觉得|我认为|可能|是不是|我来说|我来讲|我来介绍|我去年|我来自)")

_OPEN_RES = tuple(re.compile(p) for p in (
    r"还不(?:确定|清楚|知道)", r"待定", r"待确认", r"还没(?:有)?(?:定|决定|确定|想好|商量好)", r"悬而未决",
    r"(?:还|仍然|仍)需要?(?:确认|讨论|研究|商量)", r"有待(?:确认|讨论|决定|商榷)",
    r"(?:下次|以后|回头)再(?:讨论|议|定)",
    r"开放(?:问题|议题)", r"(?:没有|没)结论",
))
_QUESTION_RE = re.compile(r"(?:谁|什么时候|怎么|如何|哪个|哪家|多少|要不要|是否|能不能)[^？?]{2,}[？?]\s*$")
_NON_ANSWER_RE = re.compile(r"^\W*(?:嗯|呃|这个)?\W*(?:我也?不(?:知道|清楚|确定)|不好说|说不好|不太清楚|好问题|"
                            r"没想好|不知道)")

_CN_NUM = r"[0-9０-９零〇一二两三四五六七八九十百千万亿点.,]+"
_MONEY_RE = re.compile(rf"(?:[¥￥$]\s?{_CN_NUM}|{_CN_NUM}(?:多|余)?(?:万|千|百|亿)?"
                       r"(?:元|块钱?|人民币|美元|美金|欧元|英镑|刀))")
_QUANTITY_RE = re.compile(
    rf"(?:{_CN_NUM}%|百分之{_CN_NUM}|{_CN_NUM}(?:多|余)?(?:个|台|人|位|份|件|套|张|条|天|周|小时|分钟|公斤|吨|米|"
    r"公里|用户|家|批|次|页))")
_WHAT_RE = re.compile(r"(?P<what>[\u4e00-\u9fffA-Za-z]{1,8}?)(?:是|为|定在|定为|大概|大约|约|在|共|一共|总共|控制在|"
                      r"不超过|有|要)+$")
_EVENT_WORDS = re.compile(r"(?:上线|发布|截止|会议|开会|评审|演示|交付|发货|启动|培训|面试|验收|汇报|deadline)")
_TIME_RE = re.compile(r"(?:上午|下午|晚上|早上)?[0-9一二两三四五六七八九十]{1,3}点(?:半|[0-9]{1,2}分)?")

_PRODUCT_RES = (
    re.compile(r"《(?P<term>[^》]{1,20})》"),
    re.compile(r"(?:项目|代号|产品)(?:叫|是|名叫)?[“\"「]?(?P<term>[A-Za-z][\w-]*|[\u4e00-\u9fff]{2,4}(?=项目))"),
    re.compile(r"(?P<term>[A-Z]{1,5}-\d{1,5}[A-Z]?)"),
)
_TERM_RE = re.compile(r"(?<![A-Za-z])(?P<term>[A-Z][A-Za-z0-9]{1,15}|[a-z]+[A-Z][A-Za-z]+)(?![A-Za-z])")
_PERSON_RE = re.compile(rf"(?P<term>{_NAME})")
_NOT_PERSON = frozenset({"小时", "小组", "小心", "小的", "老师", "老是", "老板", "小于", "小结", "老版", "小程"})
_LEADING_FUNCTION_CHARS = frozenset("给跟和与让请把被对向找问叫由")
#: English words mixed into Chinese talk that are talk, not terms ("OK", "But", "So").
_NOT_TERMS = frozenset("""ok okay yes yeah no so and but or the a an if then also well right sure hi hello bye
thanks sorry anyway actually basically like just maybe fine good nice cool great""".split())

_CHANGE_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("owner", re.compile(rf"(?:改|换)(?:由|成|给|让)(?P<new>{_PERSON}|[\u4e00-\u9fff]{{2,3}}?|我)(?:来)?"
                         r"(?:负责|做|跟进|处理)?")),
    ("owner", re.compile(rf"(?:还是|其实)(?P<new>{_PERSON}|我)来(?:负责|做|吧)")),
    ("due", re.compile(r"(?P<topic>[\u4e00-\u9fff]{0,8}?)(?:改到|改成|改在|推迟到|推到|延到|延期到|挪到|提前到|调整到)"
                       r"(?P<new>.+)$")),
    ("due", re.compile(r"不是(?P<old>[^，,]+?)[，,]\s*(?:是|改成|而是)?(?P<new>.+)$")),
    ("decision", re.compile(r"(?:改用|改成|换成|还是用|不用[^，。]{1,10}了|算了)")),
)
_STOP_CHARS = set("的了是在和我们你他她它这那就也都还要会把被给一个吧呢吗啊嗯呃个来去到改由成")
_SENTENCE_RE = re.compile(r"[^。！？!?；;]+(?:[。！？!?；;]+|$)")


def sentences(text: str) -> list[Span]:
    """Spans of the sentences of an utterance (split at 。！？；), trimmed."""
    out = []
    for m in _SENTENCE_RE.finditer(text):
        start, end = m.start(), m.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            out.append((start, end))
    return out


def decision(sentence: str) -> bool:
    """Whether the sentence states a decision (not a question or a maybe)."""
    if not any(p.search(sentence) for p in _DECISION_RES):
        return False
    return _DECISION_BLOCK.search(sentence) is None


def todo(sentence: str) -> TodoMatch | None:
    """The commitment in the sentence, if any: who takes it and the task as said."""
    if _TODO_BLOCK.search(sentence):
        return None
    for role, pattern in _TODO_RES:
        m = pattern.search(sentence)
        if m is None:
            continue
        task = _trim_task(sentence, m.start("task"), m.end("task"))
        if task is None:
            continue
        if role == "name":
            who = m.group("who")
            if who in _NOT_PERSON or who in ("我们", "大家", "你们", "他们"):
                continue
            return TodoMatch("name", task, (m.start("who"), m.end("who")))
        if role == "speaker":
            return TodoMatch("speaker", task)
        if role == "addressee":
            return TodoMatch("addressee", task)
        if role == "group" and not find_due(sentence):
            continue
        return TodoMatch("group", task)
    return None


def _trim_task(sentence: str, start: int, end: int) -> Span | None:
    while end > start and (sentence[end - 1] in "，,。！？!?；;、 吧啊哈"):
        end -= 1
    while start < end and sentence[start] in "，, ":
        start += 1
    # "下周五之前把报告发给大家": the due phrase is `due`, not part of the task.
    lead = re.match(r"(?:在)?", sentence[start:end])
    spans = find_due(sentence[start:end])
    if lead is not None and spans and spans[0].start == lead.end():
        after = re.match(r"(?:之前|以前|前)[，, ]*", sentence[start + spans[0].end:end])
        if after is not None and end - (start + spans[0].end + after.end()) >= 2:
            start += spans[0].end + after.end()
    if end - start < 2:
        return None
    return (start, end)


def open_question(sentence: str) -> bool:
    """A sentence that flags something as still open (还不确定、待定、还没定…)."""
    return any(p.search(sentence) for p in _OPEN_RES)


def asks(sentence: str) -> bool:
    """A real question (谁/什么时候/怎么/要不要 … ？)."""
    return _QUESTION_RE.search(sentence) is not None


def non_answer(text: str) -> bool:
    """A reply that leaves the question open (不知道、不好说、好问题)."""
    return _NON_ANSWER_RE.search(text) is not None


def facts(sentence: str) -> list[FactMatch]:
    """Amounts (五万元), quantities (200台, 百分之十五) and the dates/times of named events (下周五上线)."""
    out: list[FactMatch] = []
    taken: list[Span] = []

    def add(start: int, end: int, category: str, what: Span | None) -> None:
        if any(start < b and a < end for a, b in taken):
            return
        taken.append((start, end))
        out.append(FactMatch((start, end), what, category))

    def what_before(start: int) -> Span | None:
        head = sentence[:start]
        m = _WHAT_RE.search(head)
        return (m.start("what"), m.end("what")) if m else None

    for m in _MONEY_RE.finditer(sentence):
        if re.search(r"[0-9０-９零〇一二两三四五六七八九十百千万]", m.group(0)):
            add(m.start(), m.end(), "amount", what_before(m.start()))
    for m in _QUANTITY_RE.finditer(sentence):
        if re.search(r"[0-9０-９零〇一二两三四五六七八九十百千万]", m.group(0)) and m.group(0) not in ("一个", "一下"):
            add(m.start(), m.end(), "quantity", what_before(m.start()))
    event = _EVENT_WORDS.search(sentence)
    if event:
        times = list(_TIME_RE.finditer(sentence))
        for span in find_due(sentence):
            if span.kind.endswith("next_week"):
                continue
            joined = next((t for t in times if t.start() == span.end), None)  # 周三下午3点: one value
            add(span.start, joined.end() if joined else span.end, "date", (event.start(), event.end()))
        for m in _TIME_RE.finditer(sentence):
            add(m.start(), m.end(), "date", (event.start(), event.end()))
    return out


def glossary(sentence: str) -> list[tuple[Span, str]]:
    """People (小王、王总), products (《…》、项目代号) and terms (Latin-script words in Chinese talk)."""
    out: list[tuple[Span, str]] = []
    products: list[Span] = []
    for pattern in _PRODUCT_RES:
        for m in pattern.finditer(sentence):
            products.append((m.start("term"), m.end("term")))
            out.append(((m.start("term"), m.end("term")), "product"))
    for m in _PERSON_RE.finditer(sentence):
        name = m.group("term")
        start = m.start("term")
        # "发给王总": 给 is the verb's, not the name's (a title takes a one-character surname here).
        if len(name) == 3 and name[0] in _LEADING_FUNCTION_CHARS and re.search(r"(?:总|工|姐|哥)$", name):
            name, start = name[1:], start + 1
        if name in _NOT_PERSON or not re.search(r"[\u4e00-\u9fff]", name):
            continue
        if not re.match(r"^[小老]", name) and not re.search(r"(?:总|经理|老师)$", name):
            continue
        out.append(((start, start + len(name)), "person"))
    for m in _TERM_RE.finditer(sentence):
        if any(a <= m.start() < b for a, b in products) or m.group("term").casefold() in _NOT_TERMS:
            continue
        out.append(((m.start("term"), m.end("term")), "term"))
    return out


def addressee(sentence: str) -> Span | None:
    """The person spoken to, when named before the request ("小王，你来…")."""
    m = re.match(rf"^(?P<name>{_NAME}|[\u4e00-\u9fff]{{2,3}})[，,]\s*(?:你|麻烦你|请你)", sentence)
    if m and m.group("name") not in _NOT_PERSON:
        return (m.start("name"), m.end("name"))
    return None


def change(sentence: str) -> ChangeMatch | None:
    """A statement that changes an earlier item: 改由小王负责 (owner), 改到周五 (date), 改用… (decision)."""
    for kind, pattern in _CHANGE_RES:
        m = pattern.search(sentence)
        if m is None:
            continue
        if kind == "owner":
            return ChangeMatch("owner", (m.start("new"), m.end("new")))
        if kind == "due":
            new = _first_due(sentence, m.start("new"), m.end("new"))
            if new is None:
                continue
            old = None
            if "old" in pattern.groupindex:
                old = _first_due(sentence, m.start("old"), m.end("old"))
                if old is None:
                    continue
            topic = (m.start("topic"), m.end("topic")) if "topic" in pattern.groupindex and m.group("topic") else None
            return ChangeMatch("due", new, old, topic)
        return ChangeMatch("decision", None)
    return None


def _first_due(sentence: str, start: int, end: int) -> Span | None:
    spans = find_due(sentence[start:end])
    if not spans:
        return None
    return (start + spans[0].start, start + spans[0].end)


def content_words(text: str) -> set[str]:
    """Character bigrams without function characters: enough to link 评审改到周五 to the review's item."""
    chars = [c for c in text if "\u4e00" <= c <= "\u9fff"]
    grams = {a + b for a, b in zip(chars, chars[1:], strict=False) if a not in _STOP_CHARS and b not in _STOP_CHARS}
    grams |= {w.lower() for w in re.findall(r"[A-Za-z]{3,}", text)}
    return grams
