"""What is said in a needle meeting: the ordinary talk around the needles, the words and templates the
needles themselves are said and asked in (`VOCAB`), and the ASR-like noise laid over all of it.

Background talk is composed from templates and slot fillers (per topic: the things talked about and what
is wrong with them), so an 8-hour meeting does not repeat the same few sentences. It holds no digits,
amounts, dates or clock times, so it never says a needle's value by accident. Real AMI dialogue acts can
stand in for it (English only). Noise mimics what a recogniser does to speech: fillers, homophone swaps
and dropped short words, never inside a protected span (a needle's values).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPEAKERS = {
    "en": ("Alice", "Bob", "Priya", "Mateo", "Sofia", "Hiroshi", "Fatima", "Lars", "Ingrid", "Rahul", "Dana",
           "Kwame"),
    "zh": ("张伟", "李娜", "王芳", "刘洋", "陈静", "杨磊", "赵敏", "黄强"),
}


@dataclass(frozen=True, slots=True)
class TalkTopic:
    """A subject of the meeting: the things people mention and the trouble they report about them."""

    name: str
    things: tuple[str, ...]
    problems: tuple[str, ...]


EN_TOPICS = (
    TalkTopic("casing", ("casing", "hinge", "matte finish", "screw bosses", "mould", "colour sample"),
              ("scratches too easily", "still shows a seam", "warps when it cools", "feels too stiff",
               "looks different under the office lights", "cracked in the drop test")),
    TalkTopic("firmware", ("firmware build", "boot sequence", "update server", "audio driver", "Bluetooth stack",
                           "wake word model"),
              ("crashes when a second phone pairs", "got slower after the logging change", "drops frames",
               "fails on some units in the field", "does not fit in flash", "needs another round of profiling")),
    TalkTopic("suppliers", ("supplier", "sample shipment", "quality report", "packaging spec", "freight booking",
                            "factory audit"),
              ("keeps slipping", "got stuck in customs", "has the wrong part numbers", "is still not in writing",
               "changed contact again", "raised questions about storage")),
    TalkTopic("certification", ("radio test", "antenna layout", "emissions scan", "lab booking",
                                "transport paperwork", "conformity declaration"),
              ("is waiting on the final layout", "failed at one frequency", "is missing our model number",
               "needs a signature from legal", "might slip past the retail window",
               "needs more units than we thought")),
    TalkTopic("launch", ("launch video", "box art", "landing page", "press embargo", "reviewer list",
                         "accessories bundle"),
              ("still shows the old prototype", "is not final", "is too long", "does not line up with retail",
               "is the same as last year", "needs sign-off from marketing")),
    TalkTopic("budget", ("forecast", "prototyping line", "contingency", "travel spend", "marketing budget",
                         "exchange rate"),
              ("is already over", "assumed a bigger first batch", "is nearly gone", "moved against us",
               "is the easiest thing to cut", "needs another look from finance")),
    TalkTopic("hiring", ("test engineering role", "recruiter", "onboarding plan", "job description",
                         "interview loop", "contractor"),
              ("is still open", "keeps sending the wrong profiles", "takes too long", "is out of date",
               "eats half my week", "wants to stay remote")),
    TalkTopic("battery", ("battery", "charging case", "fuel gauge", "cycle test", "heat soak", "standby drain"),
              ("swelled after the heat soak", "gets warm on a fast charger", "jumps to empty", "needs more units",
               "is better but not where we promised", "is what users noticed most")),
)
EN_TEAMS = ("hardware", "firmware", "quality", "supply chain", "marketing", "finance", "test", "design")
EN_WHEN = ("this morning", "yesterday", "last week", "over the weekend", "after the last call", "on the bench",
           "on Monday", "before lunch")
EN_CLAUSES = (
    "I looked at the {thing} again {when} and it {problem}.",
    "The {thing} {problem}, so we should talk about it.",
    "{name}, did you see that the {thing} {problem}?",
    "We could ask the {team} team to take another look at the {thing}.",
    "My worry with the {thing} is that it {problem}.",
    "I'm not sure the {thing} is ready, it {problem}.",
    "Can we get a second opinion on the {thing} from the {team} people?",
    "Honestly I think the {thing} is fine for now.",
    "The {team} team said the {thing} {problem} on their side too.",
    "If the {thing} {problem} again we need a plan B.",
    "Let me share what I found on the {thing} {when}.",
    "{name} had some notes on the {thing}, I'll forward them.",
    "We keep going around in circles on the {thing}.",
    "Has anyone actually tried the {thing} {when}?",
    "I'd rather fix the {thing} properly than patch it again.",
    "Who owns the {thing} at this point, is it still the {team} team?",
    "The {thing} is what I'm most worried about this week.",
    "Last I heard the {thing} {problem}, but that might be old news.",
)
EN_OPENERS = ("", "", "", "So ", "I mean, ", "Honestly, ", "Yeah, ", "Okay, so ", "Well, ", "To be fair, ")
EN_BACKCHANNEL = (
    "Yeah.", "Mm-hmm.", "Right.", "Okay.", "Sure.", "Yep.", "Right, right.", "Uh-huh.", "Got it.", "Exactly.",
    "Okay, yeah.", "True.", "Fair enough.", "Hmm.", "Makes sense.", "Agreed.", "Yeah, totally.", "I see.",
)
EN_LOGISTICS = (
    "Sorry, you cut out for a second there.", "Can everyone see my screen now?", "Let me pull up the sheet.",
    "Sorry, I was on mute.", "Let's park that and come back to it.", "Okay, let's keep moving.",
    "Can you say that again, the audio dropped?", "Hold on, someone's at my door.", "I'll drop the link in the chat.",
    "We're a bit over time on this one.", "Does anyone have anything else on this?",
    "Good point, I hadn't thought of that.", "Um, where was I?", "Let me just check my notes.",
    "I think we covered most of it.", "{name}, you're on mute.", "Thanks {name}, that's helpful.",
    "{name}, do you want to add anything?", "I'll sync with {name} after this call.", "Is that the latest version?",
)

ZH_TOPICS = (
    TalkTopic("外壳", ("外壳", "铰链", "哑光涂层", "螺丝柱", "模具", "色板"),
              ("容易刮花", "接缝还是很明显", "冷却以后会变形", "手感太硬", "在办公室灯光下颜色不对",
               "跌落测试的时候开裂了")),
    TalkTopic("固件", ("固件版本", "启动流程", "升级服务器", "音频驱动", "蓝牙协议栈", "唤醒词模型"),
              ("连第二台手机就崩溃", "加了日志以后变慢了", "会丢帧", "在外场有些机器升级失败", "闪存放不下",
               "还要再做性能分析")),
    TalkTopic("供应商", ("供应商", "样品快递", "质量报告", "包装规格", "货运安排", "验厂"),
              ("又往后拖了", "卡在海关了", "料号写错了", "还没有书面确认", "对接人又换了", "仓储条件有问题")),
    TalkTopic("认证", ("射频测试", "天线布局", "辐射扫描", "实验室排期", "运输文件", "符合性声明"),
              ("还在等最终布局", "有个频点没过", "缺了我们的型号", "需要法务签字", "可能赶不上零售窗口",
               "要的样机比预想的多")),
    TalkTopic("发布", ("发布视频", "包装设计", "落地页", "媒体禁发期", "评测名单", "配件套装"),
              ("还是旧样机的画面", "还没定稿", "文案太长", "跟零售上架对不上", "跟去年差不多", "还要市场部签字")),
    TalkTopic("预算", ("预测表", "打样费用", "备用金", "差旅开支", "市场预算", "汇率"),
              ("已经超了", "按更大的首批量算的", "快用完了", "对我们不利", "最容易砍", "财务还要再看")),
    TalkTopic("招聘", ("测试工程师岗位", "猎头", "入职计划", "职位描述", "面试安排", "外包人员"),
              ("还空着", "老是推荐不合适的人", "太慢了", "已经过时了", "占了我一半的时间", "想远程办公")),
    TalkTopic("电池", ("电池", "充电盒", "电量计", "循环测试", "高温浸泡", "待机功耗"),
              ("高温之后鼓包了", "快充的时候发热", "电量会突然掉到零", "样机数量不够", "好了一些但还没达到承诺",
               "是用户反馈最多的问题")),
)
ZH_TEAMS = ("硬件组", "固件组", "质量部", "供应链", "市场部", "财务", "测试组", "设计组")
ZH_WHEN = ("今天上午", "昨天", "上周", "周末", "上次开完会以后", "周五", "周一", "午饭前")
ZH_CLAUSES = (
    "我{when}又看了看{thing}，还是{problem}。",
    "{thing}{problem}，这个得讨论一下。",
    "{name}，你看到没有，{thing}{problem}。",
    "要不请{team}再看看{thing}？",
    "我担心的是{thing}{problem}。",
    "{thing}我觉得还没准备好，{problem}。",
    "{team}那边说{thing}在他们那儿也{problem}。",
    "要是{thing}又{problem}，我们得有备选方案。",
    "{name}对{thing}有些意见，我会后转给大家。",
    "我们在{thing}这件事上一直在绕圈子。",
    "{when}以后有人实际试过{thing}吗？",
    "{thing}是我这周最担心的事。",
    "我觉得{thing}暂时没问题。",
    "{thing}我宁愿好好修，不想再打补丁了。",
    "{thing}现在归谁管，还是{team}吗？",
    "我听说{thing}{problem}，不过可能是老消息了。",
)
ZH_OPENERS = ("", "", "", "那个，", "说实话，", "嗯，", "另外，", "对了，", "其实")
ZH_BACKCHANNEL = ("嗯。", "对。", "好的。", "是的。", "明白。", "可以。", "行。", "对对对。", "嗯嗯。", "没问题。",
                  "有道理。",
                  "好。", "了解。", "是这样。")
ZH_LOGISTICS = (
    "你刚才卡了一下。", "大家能看到我的屏幕吗？", "我把链接发到群里。", "不好意思，我刚才静音了。",
    "这个我们先放一放，回头再说。",
    "我们稍微超时了。", "还有别的补充吗？", "我看一下我的笔记。", "声音断了，你能再说一遍吗？", "稍等，有人敲门。",
    "{name}，你静音了。", "谢谢{name}，这个很有帮助。", "{name}，你要补充吗？", "会后我跟{name}再对一下。",
    "这是最新版本吗？",
)

TALK = {
    "en": (EN_TOPICS, EN_TEAMS, EN_WHEN, EN_CLAUSES, EN_OPENERS, EN_BACKCHANNEL, EN_LOGISTICS),
    "zh": (ZH_TOPICS, ZH_TEAMS, ZH_WHEN, ZH_CLAUSES, ZH_OPENERS, ZH_BACKCHANNEL, ZH_LOGISTICS),
}


def topics(lang: str) -> tuple[TalkTopic, ...]:
    return TALK[lang][0]


def background_line(rng: random.Random, lang: str, topic: TalkTopic, speakers: tuple[str, ...]) -> str:
    """One ordinary utterance on `topic`: a backchannel, meeting logistics, or topic talk (sometimes two
    sentences), composed from templates so long meetings rarely repeat a sentence."""
    _, teams, when, clauses, openers, backchannel, logistics = TALK[lang]
    roll = rng.random()
    if roll < 0.22:
        return rng.choice(backchannel)
    if roll < 0.31:
        return rng.choice(logistics).format(name=rng.choice(speakers))
    sentences = [_clause(rng, lang, topic, speakers, teams, when, clauses, openers)
                 for _ in range(2 if rng.random() < 0.12 else 1)]
    return ("" if lang == "zh" else " ").join(sentences)


def _clause(rng: random.Random, lang: str, topic: TalkTopic, speakers: tuple[str, ...], teams: tuple[str, ...],
            when: tuple[str, ...], clauses: tuple[str, ...], openers: tuple[str, ...]) -> str:
    text = rng.choice(clauses).format(thing=rng.choice(topic.things), problem=rng.choice(topic.problems),
                                      name=rng.choice(speakers), team=rng.choice(teams), when=rng.choice(when))
    opener = rng.choice(openers)
    if not opener or text.startswith(("I ", "I'", *speakers)):
        return text
    return opener + (text if lang == "zh" else text[0].lower() + text[1:])


def ami_lines(folder: Path) -> list[tuple[str, str]]:
    """(AMI speaker letter, text) of every dialogue act in `folder`'s dev/*.json, meeting by meeting in time
    order; acts with no words are skipped."""
    files = sorted((folder / "dev").glob("*.json")) or sorted(folder.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no AMI meetings (dev/*.json) under {folder}")
    lines: list[tuple[str, str]] = []
    for path in files:
        acts = json.loads(path.read_text(encoding="utf-8"))["dialogue_acts"]
        for act in sorted(acts, key=lambda a: (a["start"], a["id"])):
            text = " ".join(str(act.get("text") or "").split())
            if re.search(r"\w", text):
                lines.append((str(act.get("speaker") or "A"), text))
    return lines


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


# ------------------------------------------------------------------------------------------------------
# The words needles are made of: subjects (a part plus what about it), name parts, sayings, and the
# templates a needle is said in and asked by. Questions name the subject, not the sentence's other words.
# ------------------------------------------------------------------------------------------------------
_EN_TEMPLATES: dict[str, dict[str, Any]] = {
    "todo": {"task": "{verb} the {obj}",
             "said": ("{owner}, can you {verb} the {obj} by {due}?", "{owner} will {verb} the {obj} by {due}.",
                      "Action item: {owner} to {verb} the {obj}, due {due}.",
                      "Okay {owner}, please {verb} the {obj} by {due}."),
             "asked": (("What's the deadline for the {obj}?", "due"), ("By when does {owner} owe us the {obj}?",
                                                                       "due"))},
    "money": {"said": ("The {subject} came in at {amount}.", "Just got the {subject} back, it's {amount} all in.",
                       "For the record, the {subject} is {amount}.", "Finance confirmed the {subject}: {amount}."),
              "asked": (("What figure did we get for the {subject}?", "amount"),
                        ("How much money are we looking at for the {subject}?", "amount"),
                        ("What does the {subject} add up to?", "amount"))},
    "quantity": {"said": ("We're putting in {quantity} {unit} for the {subject}.",
                          "Let's size the {subject} at {quantity} {unit}.",
                          "The {subject} will be {quantity} {unit}, that's settled."),
                 "asked": (("How many go into the {subject}?", "quantity"),
                           ("What count did we agree on for the {subject}?", "quantity"))},
    "datetime": {"said": ("The {subject} is on {date} at {time}.", "We've booked the {subject} for {date}, {time}.",
                          "Put the {subject} in your calendars: {date} at {time}."),
                 "asked": (("What day does the {subject} happen?", "date"), ("When is the {subject} scheduled?",
                                                                             "date"),
                           ("What time does the {subject} start?", "time"))},
    "name": {"said": ("Internally the {subject} is going to be called {name}.",
                      "We'll use the code name {name} for the {subject}.", "From now on the {subject} goes by {name}."),
             "asked": (("What should we say when we mean the {subject}?", "name"),
                       ("What is the {subject} known as inside the team?", "name"))},
    "contact": {"said": ("Our new {role} at {org} is {name}, taking over from the last one.",
                         "Heads up, {org} changed people: the {role} there is now {name}."),
                "asked": (("Who is the {role} at {org} these days?", "name"),
                          ("Whom do we deal with as {role} at {org}?", "name"))},
    "quote": {"said": ('On the {subject}, I\'ll say it again: "{quote}".',
                       "My view on the {subject}, word for word: {quote}.",
                       "About the {subject}, write this down: {quote}."),
              "asked": (("What exact words did {speaker} use regarding the {subject}?", "quote"),
                        ("How did {speaker} put it when the {subject} came up?", "quote"))},
    "negation": {"said": ("Just to be clear, we're not going with {vendor} as the {subject}.",
                          "{vendor} is out, we won't use them as the {subject}.",
                          "We decided against {vendor} for the {subject}."),
                 "asked": (("Which company did we reject as the {subject}?", "vendor"),
                           ("Who did we drop from the running for {subject}?", "vendor"))},
}
_EN_CORRECTED = ("Correction on the {subject}: it's {new}, not {old}.",
                 "Sorry, I had the {subject} wrong earlier, it's {new}, not {old}.",
                 "Update on the {subject}: we changed it to {new}, not {old} as I said.")
for _what, _earlier, _asked in (
    ("date", "The {subject} is on {old}.", (("Which day did the {subject} end up on?", "new"),
                                            ("After the change, when does the {subject} take place?", "new"))),
    ("money", "The {subject} is {old}.", (("What's the revised number for the {subject}?", "new"),)),
    ("quantity", "The {subject} is {old} pieces.", (("After the revision, how many are in the {subject}?", "new"),)),
    ("time", "The {subject} starts at {old}.", (("What time was the {subject} moved to?", "new"),)),
):
    _EN_TEMPLATES[f"correction_{_what}"] = {"earlier": (_earlier,), "said": _EN_CORRECTED, "asked": _asked}

_ZH_TEMPLATES: dict[str, dict[str, Any]] = {
    "todo": {"task": "把{obj}{verb}",
             "said": ("{owner}，你{due}之前把{obj}{verb}吧。", "{owner}负责把{obj}{verb}，{due}前完成。",
                      "行动项：{owner}，{due}之前把{obj}{verb}。"),
             "asked": (("{obj}的截止日期是哪天？", "due"), ("{owner}最晚什么时候要交{obj}？", "due"))},
    "money": {"said": ("{subject}报过来了，是{amount}。", "{subject}确认下来是{amount}。",
                       "跟大家同步一下，{subject}一共{amount}。",
                       "财务那边说{subject}是{amount}。"),
              "asked": (("{subject}最后要花多少钱？", "amount"), ("我们在{subject}上要付多少？", "amount"))},
    "quantity": {"said": ("{subject}就按{quantity}{unit}来下。", "{subject}我们定成{quantity}{unit}。",
                          "{subject}先备{quantity}{unit}。"),
                 "asked": (("{subject}一共要多少？", "quantity"), ("{subject}的规模有多大？", "quantity"))},
    "datetime": {"said": ("{subject}定在{date}{time}。", "{subject}安排在{date}{time}，大家记一下。",
                          "大家把{subject}放进日历：{date}{time}。"),
                 "asked": (("{subject}是哪天？", "date"), ("{subject}在什么日子举行？", "date"), ("{subject}几点开始？",
                                                                                      "time"))},
    "name": {"said": ("以后{subject}的代号就叫{name}。", "{subject}内部就叫{name}吧。",
                      "我们给{subject}起了个代号，叫{name}。"),
             "asked": (("{subject}在团队里叫什么名字？", "name"), ("大家私下怎么称呼{subject}？", "name"))},
    "contact": {"said": ("{org}那边新的{role}是{name}，以后找他就行。", "{org}换人了，现在的{role}是{name}。"),
                "asked": (("目前{org}的{role}由谁担任？", "name"), ("跟{org}打交道该找哪位{role}？", "name"))},
    "quote": {"said": ("关于{subject}，我再说一遍：“{quote}”。", "{subject}这件事，我的原话是：“{quote}”。",
                       "{subject}，大家记住：“{quote}”。"),
              "asked": (("{speaker}谈到{subject}时具体怎么讲的？", "quote"), ("{speaker}就{subject}用了哪句口号？",
                                                                    "quote"))},
    "negation": {"said": ("说清楚，{subject}我们不用{vendor}。", "{vendor}出局了，{subject}不找他们。",
                          "我们决定{subject}不考虑{vendor}了。"),
                 "asked": (("{subject}排除了哪家公司？", "vendor"), ("哪家公司被拿掉了{subject}的资格？", "vendor"))},
}
_ZH_CORRECTED = ("更正一下，{subject}改成{new}了，不是{old}。", "我刚才说错了，{subject}是{new}，不是{old}。",
                 "{subject}有变化：{new}，不是之前说的{old}。")
for _what, _earlier, _asked in (
    ("date", "{subject}定在{old}。", (("{subject}改到哪天了？", "new"), ("调整以后{subject}在哪天举行？", "new"))),
    ("money", "{subject}是{old}。", (("{subject}更新后的金额是多少？", "new"),)),
    ("quantity", "{subject}定了{old}个。", (("{subject}调整后要多少？", "new"),)),
    ("time", "{subject}{old}开始。", (("{subject}现在几点开始？", "new"),)),
):
    _ZH_TEMPLATES[f"correction_{_what}"] = {"earlier": (_earlier,), "said": _ZH_CORRECTED, "asked": _asked}

VOCAB: dict[str, dict[str, Any]] = {
    "en": {
        "templates": _EN_TEMPLATES,
        "parts": ("hinge", "casing", "lens", "battery", "sensor board", "camera module", "charging case", "nose pad",
                  "temple arm", "speaker grille", "microphone array", "antenna", "display driver", "frame",
                  "flex cable", "USB-C port", "thermal pad", "button cap", "packaging insert", "charging dock",
                  "main board", "screen", "power adapter", "carry pouch", "strap", "gasket", "touch pad",
                  "status light", "vibration motor", "lens cover"),
        "docs": ("drawings", "test report", "cost sheet", "spec", "risk list", "checklist", "slides",
                 "tolerance table", "supplier list", "packing list"),
        "verbs": ("send out", "finish", "update", "review", "redo", "clean up", "sign off", "circulate", "rewrite",
                  "double-check"),
        "money": ("tooling quote", "repair estimate", "sample invoice", "freight charge", "certification fee",
                  "design fee", "deposit", "licence fee", "test budget", "packaging cost", "rework bill",
                  "insurance premium"),
        "batches": ("pilot order", "sample batch", "spare stock", "first production run", "test batch", "reorder",
                    "warehouse stock", "certification set"),
        "units": ("units", "pieces", "sets"),
        "events": ("design review", "supplier call", "drop test", "sign-off meeting", "customer demo", "workshop",
                   "retro", "audit", "walkthrough", "training session"),
        "projects": ("redesign", "prototype", "upgrade", "cost-down effort", "variant", "refresh"),
        "orgs": ("the test lab", "the freight forwarder", "the law firm", "the bank", "the design agency",
                 "the distributor", "the recruiting agency", "the packaging plant", "the mould shop",
                 "the certification body"),
        "contact_roles": ("contact", "account manager", "project lead", "engineer", "buyer", "sales rep"),
        "issues": ("schedule", "quality problems", "cost overrun", "supplier delay", "test plan"),
        "roles": ("supplier", "coating vendor", "test lab", "assembler", "packaging vendor"),
        "syllables": ("ka", "vo", "ren", "ta", "mor", "li", "zan", "bel", "qui", "dor", "sa", "tek", "vi", "lo", "mar",
                      "nex", "ju", "pa", "ros", "fi", "gal", "ter", "os", "ul", "bri", "cav", "den", "hal", "kor"),
        "given": ("Marguerite", "Tobias", "Ines", "Callum", "Yara", "Dmitri", "Leonie", "Anders", "Noor", "Bastian",
                  "Camille", "Emeka", "Greta", "Idris", "Juno", "Kasimir", "Linnea", "Malik", "Odette", "Piet"),
        "surnames": ("Okafor", "Lindqvist", "Moreau", "Haddad", "Kowalski", "Brennan", "Sato", "Quintero", "Varga",
                     "Achterberg", "Novak", "Delacroix", "Mwangi", "Castellano", "Petrov", "Yilmaz", "Fairbanks",
                     "Oyelaran", "Strand", "Albescu"),
        "quote_first": tuple((x, "") for x in ("tooling", "shipping", "launch", "purchase order", "firmware release",
                                                "press release", "price change", "factory visit", "sample order",
                                                "contract")),
        "quote_second": tuple((x, "") for x in ("signed drawings", "a test report", "a second quote",
                                                 "a rollback plan", "written approval", "a budget line",
                                                 "two suppliers", "real data", "a dry run", "a named owner")),
        "quote_rather": ("boring", "slow", "plain", "small", "cheap", "late", "humble", "dull"),
        "quote_than": tuple((adj, noun) for adj in ("clever", "fast", "pretty", "big", "shiny", "flashy")
                            for noun in ("prototype", "plan", "fix", "launch", "quote", "schedule")),
        "leads": ("Before I forget, ", "One more thing, ", "Okay, ", "Quick note, ", "Um, so "),
    },
    "zh": {
        "templates": _ZH_TEMPLATES,
        "parts": ("铰链", "外壳", "镜片", "电池", "传感器板", "摄像头模组", "充电盒", "鼻托", "镜腿", "扬声器网罩",
                  "麦克风阵列", "天线", "显示驱动", "镜框", "排线", "USB-C接口", "散热垫", "按键帽", "包装内衬",
                  "充电底座", "主板", "屏幕", "电源适配器", "保护套", "挂绳", "密封圈", "触控板", "指示灯",
                  "振动马达", "镜片保护盖"),
        "docs": ("图纸", "测试报告", "成本表", "规格书", "风险清单", "检查表", "幻灯片", "公差表", "供应商名单",
                 "装箱单"),
        "verbs": ("发出去", "做完", "更新好", "审一遍", "重做", "整理好", "确认好", "发给大家", "改写好", "核对好"),
        "money": ("模具报价", "维修估价", "样品发票", "运费", "认证费", "设计费", "定金", "授权费", "测试预算",
                  "包装成本", "返工费用",
                  "保险费"),
        "batches": ("试产订单", "样品批次", "备货", "首批量产", "测试批次", "补货订单", "仓库库存", "认证样机"),
        "units": ("个", "台", "套", "件"),
        "events": ("设计评审", "供应商电话会", "跌落测试", "签核会", "客户演示", "研讨会", "复盘会", "审核", "走查",
                   "培训"),
        "projects": ("改版", "原型", "升级方案", "降本项目", "新款", "换代"),
        "orgs": ("测试实验室", "货代公司", "律所", "银行", "设计公司", "经销商", "猎头公司", "包装厂", "模具厂",
                 "认证机构"),
        "contact_roles": ("对接人", "客户经理", "项目负责人", "工程师", "采购", "销售代表"),
        "issues": ("进度", "质量问题", "成本超支", "供应商延期", "测试计划"),
        "roles": ("供应商", "涂层厂", "测试机构", "组装厂", "包装商"),
        "code_first": tuple("青赤玄白银星云海山风雷松竹梅兰霜雪月晨夜"),
        "code_second": tuple("岚隼鲸狐鹤豹川原峰鸢麟鹰驹蝶萤澜"),
        "surnames": tuple("周吴郑孙马朱胡郭何高林罗梁宋谢唐韩冯邓曹彭曾肖田董袁潘蒋蔡"
                          "余杜叶程魏苏吕丁任沈姚卢姜崔钟谭陆汪范"),
        "given": ("子涵", "浩然", "雨桐", "思远", "嘉怡", "俊杰", "欣怡", "宇航", "梓萱", "明轩", "晓峰", "佳琪",
                  "志强", "海燕",
                  "文博", "若曦"),
        "vendor_chars": tuple("恒华信达宏润盛泰鑫安博嘉瑞联创通益永凯德"),
        "vendor_suffixes": ("科技", "精密", "电子", "材料", "塑胶", "光学"),
        "quote_first": (("图纸", "冻结"), ("样品", "确认"), ("测试", "通过"), ("预算", "批准"), ("合同", "签字"),
                        ("数据", "齐全"), ("方案", "评审"), ("风险", "评估"), ("需求", "澄清"), ("报价", "对比")),
        "quote_second": (("模具", "开工"), ("产品", "发货"), ("工厂", "量产"), ("市场", "宣传"), ("采购", "下单"),
                         ("版本", "发布"), ("我们", "承诺"), ("客户", "演示")),
        "quote_rather": ("晚一周发货", "多花一点钱", "多测一轮", "少做一个功能", "砍掉一个配色"),
        "quote_than": ("让用户退货", "砸了口碑", "带着问题上市", "拖垮团队", "赌运气"),
        "leads": ("还有一件事，", "对了，", "顺便说一下，", "好，"),
    },
}
