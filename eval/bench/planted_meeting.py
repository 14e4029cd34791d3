"""The generated meeting of `meetmem bench summaries`: hours of multi-speaker talk with planted facts.

Seeded and deterministic. The meeting moves through topics (a product's casing, firmware, suppliers,
certification, launch, budget, hiring, battery tests), each held for 5 to 15 minutes with its own
vocabulary, so topic sections mean something. Within a topic people backchannel, chat, digress and now
and then state a fact: an owner with a task and a due date, an amount, or when an event takes place. Each
planted fact records its segment and its values (owner, task, due, amount, date, time) exactly as said, so
a summary can be checked for keeping them word for word. Distractor talk mentions the same kinds of values
(an old quote, a past date) without stating a fact.

Pacing: about 0.28 s a word, short gaps between turns, ~950 segments an hour.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .store_corpus import COMPANIES, MONTHS, NAMES, WEEKDAYS

BACKCHANNEL = (
    "Yeah.", "Mm-hmm.", "Right.", "Okay.", "Sure.", "Yep.", "Right, right.", "Uh-huh.", "Got it.", "Exactly.",
    "Okay, yeah.", "True.", "Fair enough.", "Hmm.", "Makes sense.",
)
FILLER = (
    "Sorry, you cut out for a second there.", "Can everyone see my screen now?", "Let me pull up the sheet.",
    "Sorry, I was on mute.", "Let's park that and come back to it.", "Okay, let's keep moving.",
    "Can you say that again, the audio dropped?", "Hold on, someone's at my door.", "I'll drop the link in the chat.",
    "We're a bit over time on this one.", "Does anyone have anything else on this?", "Good point, I hadn't thought "
    "of that.", "Um, where was I?", "Let me just check my notes.", "I think we covered most of it.",
)


@dataclass(frozen=True, slots=True)
class Topic:
    """A subject of the meeting: its chatter, the tasks, amounts and events its facts are about."""

    name: str
    chatter: tuple[str, ...]
    tasks: tuple[str, ...]
    amounts: tuple[str, ...]
    events: tuple[str, ...]


TOPICS = (
    Topic("casing", (
        "The casing samples came back and the matte finish scratches way too easily.",
        "I held the new casing yesterday and the seam near the hinge is still visible.",
        "If we go thinner on the casing walls we risk warping in the mould.",
        "The hinge feels stiff on the second batch of casings, stiffer than the first.",
        "Honestly the casing colour looked different under the office lights.",
        "We could try a soft-touch coating on the casing but it adds a step.",
        "The screw bosses inside the casing cracked on two of the drop samples.",
        "Do we still have the old casing moulds or were they scrapped?",
    ), ("send the casing drawings", "update the hinge tolerances", "order new casing samples"),
        ("tooling quote", "mould repair cost", "casing sample invoice"), ("casing design review", "mould trial")),
    Topic("firmware", (
        "The firmware build from last night crashes when you pair a second phone.",
        "Boot time went up again after the logging change, I need to profile it.",
        "We should freeze the feature list before we add anything else to the firmware.",
        "The over-the-air update failed on three units in the field test.",
        "I think the wake word model is too large for the flash we have.",
        "The audio driver still drops frames when the battery is low.",
        "Can we get crash logs from the beta testers automatically?",
        "The Bluetooth stack update fixed the reconnect bug, at least on my unit.",
    ), ("fix the pairing crash", "write the update notes", "profile the boot sequence"),
        ("firmware contractor invoice", "code signing certificate"), ("firmware freeze", "beta release call")),
    Topic("suppliers", (
        "The supplier in Shenzhen keeps pushing the delivery date back.",
        "Their sales contact changed again, so we lost the discount we negotiated.",
        "The sample shipment got stuck in customs for almost a week.",
        "I'd like a second source for the lenses, one supplier is too risky.",
        "Their quality report had the wrong part numbers on half the pages.",
        "We need the supplier to confirm the packaging spec in writing.",
        "Freight costs are up because everyone is shipping before the holidays.",
        "The factory audit went fine apart from the storage conditions.",
    ), ("confirm the packaging spec", "chase the customs broker", "book the factory audit"),
        ("freight quote", "lens order deposit", "customs fee"), ("supplier visit", "factory audit")),
    Topic("certification", (
        "The radio test lab wants the final antenna layout before they book us in.",
        "We failed the emissions scan at one frequency, just barely.",
        "The battery transport paperwork is a separate certificate, don't forget that.",
        "If the lab slips we miss the retail window, simple as that.",
        "They asked for twenty units for the certification run, not ten.",
        "I'm worried about the drop test since the hinge change.",
        "The test report template from the lab is missing our model number.",
        "Someone has to sign the declaration of conformity, probably legal.",
    ), ("send the antenna layout", "prepare the test units", "fill in the lab forms"),
        ("lab booking fee", "certification budget"), ("emissions retest", "lab slot")),
    Topic("launch", (
        "The launch video still shows the old prototype, we need new footage.",
        "Retail wants the box art finalised before they commit to shelf space.",
        "I don't love the product name, it sounds like a vacuum cleaner.",
        "The press embargo has to line up with the store listings going live.",
        "Our reviewers list is mostly the same people as last year.",
        "The landing page copy is too long, nobody reads past the first screen.",
        "Can we get a few units to influencers before launch?",
        "Marketing thinks the accessories bundle will sell better than the base model.",
    ), ("draft the press release", "finalise the box art", "send units to reviewers"),
        ("launch event budget", "video production quote", "retail listing fee"),
        ("launch rehearsal", "press briefing")),
    Topic("budget", (
        "We're already over on prototyping and it's only the second quarter.",
        "Finance wants a revised forecast, the old one assumed a bigger first batch.",
        "The exchange rate moved against us, so the component costs went up.",
        "If we cut the second pilot build we save money but we lose a lot of data.",
        "I'd rather pay for the faster tooling than slip the schedule.",
        "Travel is the easiest line to cut, honestly.",
        "The contingency line is nearly gone after the mould repair.",
        "Can we move some of the marketing budget to next year?",
    ), ("update the forecast", "send the cost breakdown", "review the travel spend"),
        ("pilot build cost", "contingency reserve", "component price increase"), ("budget review", "finance sync")),
    Topic("hiring", (
        "We still don't have anyone for the test engineering role.",
        "The candidate from last week was great but wants to stay remote.",
        "Onboarding took three weeks last time, that's too slow.",
        "Could we borrow someone from the phone team for a couple of months?",
        "The recruiter keeps sending us people with only software experience.",
        "I think we need a second firmware person more than a designer.",
        "Interviews are eating half my week at this point.",
        "The contractor could start right away if we sign this month.",
    ), ("schedule the final interviews", "write the job description", "call the recruiter"),
        ("recruiter fee", "contractor day rate", "relocation package"), ("interview panel", "onboarding session")),
    Topic("battery", (
        "The battery swelled on one unit after the heat soak, we should look at that.",
        "Standby drain is better but still not where we promised.",
        "The charging case gets warm when you use a fast charger.",
        "We measured eight hours of mixed use, but that's with the display dimmed.",
        "The cells from the new supplier hold less charge after a hundred cycles.",
        "I'd like more units in the cycle test, four is not a sample.",
        "The fuel gauge jumps from twenty percent to empty on some units.",
        "Heat at the temple is what users noticed most in the field test.",
    ), ("rerun the heat soak test", "send the cycle data", "order new battery cells"),
        ("battery cell quote", "test chamber rental"), ("battery review", "cycle test readout")),
)

TODO_FORMS = (
    "{owner} will {task} by {due}.",
    "Okay, so {owner} will {task} by {due}.",
    "Action for {owner}: {owner} will {task} by {due}.",
    "Right, {owner} will {task} by {due}, and we'll look at it after that.",
)
AMOUNT_FORMS = (
    "The {what} is {amount}.",
    "Just so everyone knows, the {what} is {amount}.",
    "I checked this morning and the {what} is {amount}.",
    "Okay, the {what} came in at {amount}, that's the final number.",
)
EVENT_FORMS = (
    "The {event} is on {date} at {time}.",
    "Let's put the {event} on {date} at {time}.",
    "Just confirming, the {event} is on {date} at {time}.",
)
DISTRACTORS = (
    "Last year the {what} was around {amount}, but that was a different supplier.",
    "{name} was out on {weekday}, so nothing moved on that.",
    "I think the old plan said {date}, but that plan is dead.",
    "Didn't {name} mention a number like {amount} at some point? Never mind.",
    "We talked about {date} before, I don't remember why.",
)


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """A fact stated in one segment, with its values exactly as said (each a substring of the text)."""

    index: int
    kind: str  # todo, amount or event
    topic: str
    text: str
    values: dict[str, str]
    question: str
    answer: str  # the value a correct answer to `question` contains


@dataclass
class PlantedMeeting:
    texts: list[str] = field(default_factory=list)
    speakers: list[str] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    topics: list[tuple[str, float, float]] = field(default_factory=list)  # (topic, start, end)
    facts: list[PlantedFact] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)


def _date(rng: random.Random) -> str:
    day = rng.randint(1, 28)
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{rng.choice(MONTHS)} {day}{suffix}"


def _amount(rng: random.Random) -> str:
    return f"${rng.choice((rng.randint(4, 199) * 25, rng.randint(2, 90) * 250, rng.randint(1, 60) * 1000)):,}"


def _clock(rng: random.Random) -> str:
    hour = rng.randint(8, 17)
    return f"{hour if hour <= 12 else hour - 12}:{rng.choice(('00', '15', '30', '45'))} {'am' if hour < 12 else 'pm'}"


class _Values:
    """Draws values never said before in the meeting, so each planted value points at one fact."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def fresh(self, draw: str) -> str:
        maker = {"date": _date, "amount": _amount, "time": _clock}[draw]
        for _ in range(1000):
            value = maker(self.rng)
            if value not in self.used:
                self.used.add(value)
                return value
        raise RuntimeError(f"ran out of distinct {draw} values")


def _fact(rng: random.Random, values: _Values, topic: Topic, speakers: list[str]) -> tuple[str, str, dict, str, str]:
    """(kind, text, values, question, answer) of one planted fact about `topic`."""
    kind = rng.choice(("todo", "todo", "amount", "event"))
    if kind == "todo":
        owner, task, due = rng.choice(speakers), rng.choice(topic.tasks), values.fresh("date")
        text = rng.choice(TODO_FORMS).format(owner=owner, task=task, due=due)
        return kind, text, {"owner": owner, "task": task, "due": due}, f"When will {owner} {task}?", due
    if kind == "amount":
        what, amount = rng.choice(topic.amounts), values.fresh("amount")
        text = rng.choice(AMOUNT_FORMS).format(what=what, amount=amount)
        return kind, text, {"what": what, "amount": amount}, f"How much is the {what}?", amount
    event, date, clock = rng.choice(topic.events), values.fresh("date"), values.fresh("time")
    text = rng.choice(EVENT_FORMS).format(event=event, date=date, time=clock)
    return kind, text, {"event": event, "date": date, "time": clock}, f"When is the {event}?", date


def generate_meeting(hours: float, seed: int) -> PlantedMeeting:
    """A deterministic meeting of about `hours` hours; the same (hours, seed) always gives the same one."""
    rng = random.Random(f"meetmem-bench-summaries:{seed}:{hours}")
    values = _Values(rng)
    speakers = rng.sample(NAMES, 5)
    meeting = PlantedMeeting()
    clock = 1.0
    total = hours * 3600.0
    previous: Topic | None = None
    while clock < total:
        topic = rng.choice([t for t in TOPICS if t is not previous])
        previous = topic
        block_end = min(total, clock + rng.uniform(5 * 60, 15 * 60))
        block_start = clock
        # About one fact every two and a half minutes, at random points of the block.
        n_facts = max(1, round((block_end - clock) / 150.0))
        fact_times = sorted(rng.uniform(clock + 20, max(clock + 21, block_end - 20)) for _ in range(n_facts))
        while clock < block_end:
            speaker = rng.choice(speakers)
            planted = None
            if fact_times and clock >= fact_times[0]:
                fact_times.pop(0)
                kind, text, fact_values, question, answer = _fact(rng, values, topic, speakers)
                if rng.random() < 0.3:  # said together with some lead-in talk
                    text = f"{rng.choice(('Um, one more thing.', 'Okay.', 'Before I forget.'))} {text}"
                planted = (kind, fact_values, question, answer)
            else:
                roll = rng.random()
                if roll < 0.22:
                    text = rng.choice(BACKCHANNEL)
                elif roll < 0.32:
                    text = rng.choice(FILLER)
                elif roll < 0.37:
                    text = rng.choice(DISTRACTORS).format(
                        what=rng.choice(topic.amounts), amount=values.fresh("amount"), name=rng.choice(speakers),
                        weekday=rng.choice(WEEKDAYS), date=values.fresh("date"))
                elif roll < 0.40:
                    text = f"{rng.choice(COMPANIES)} called about the {rng.choice(topic.amounts)} again."
                else:
                    text = rng.choice(topic.chatter)
                    if rng.random() < 0.25:
                        text = f"{text} {rng.choice(topic.chatter)}"
            duration = 0.28 * len(text.split()) + 0.2 + rng.random() * 0.4
            index = len(meeting.texts)
            meeting.texts.append(text)
            meeting.speakers.append(speaker)
            meeting.starts.append(round(clock, 2))
            meeting.ends.append(round(clock + duration, 2))
            if planted is not None:
                kind, fact_values, question, answer = planted
                meeting.facts.append(PlantedFact(index, kind, topic.name, text, fact_values, question, answer))
            gap = rng.uniform(0.1, 0.6) if rng.random() > 0.03 else rng.uniform(2.0, 6.0)
            clock += duration + gap
        meeting.topics.append((topic.name, round(block_start, 2), round(clock, 2)))
    return meeting


#: The device id a planted meeting is appended as.
DEVICE = "glasses-01"


def append_range(log: Any, meeting_id: str, tenant: str, meeting: PlantedMeeting, lo: int, hi: int) -> None:
    """Append segments lo..hi-1 of the generated meeting (seq = their position) from one device."""
    from meetmem.store.records import SegmentInput

    items = [SegmentInput(seq=i, start=meeting.starts[i], end=meeting.ends[i], text=meeting.texts[i],
                          speaker=meeting.speakers[i], lang="en") for i in range(lo, hi)]
    result = log.append(meeting_id, DEVICE, items, tenant=tenant)
    if result.new != len(items):
        raise RuntimeError(f"append stored {result.new} of {len(items)} segments of {meeting_id}")
