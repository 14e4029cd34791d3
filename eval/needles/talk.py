"""What is said in a needle meeting around the needles: ordinary talk on the meeting's topics.

The words and templates the needles themselves are said and asked in are `needle_vocab.VOCAB`; the
ASR-like noise laid over all of it is `needle_noise.add_noise`.

Background talk is composed from templates and slot fillers (per topic: the things talked about and what
is wrong with them), so an 8-hour meeting does not repeat the same few sentences. It holds no digits,
amounts, dates or clock times, so it never says a needle's value by accident. Real AMI dialogue acts can
stand in for it (English only).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

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
