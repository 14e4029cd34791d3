"""The generated meeting of `meetmem bench store`: seeded, templated utterances with names, owners, dates,
money, product codes, negations and filler talk, and the questions made from its facts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_MEETING_S = 6 * 24 * 3600.0

# ------------------------------------------------------------------------------------------------------
# The generated meeting: templated utterances with names, owners, dates, money, product codes and filler.
# ------------------------------------------------------------------------------------------------------

NAMES = (
    "Alice", "Bob", "Chen Wei", "Dana", "Priya", "Mateo", "Sofia", "Olusegun", "Hiroshi", "Fatima", "Lars",
    "Ingrid", "Rahul", "Mei Lin", "Tomasz", "Aisha", "Diego", "Hannah", "Kwame", "Yuki", "Nadia", "Omar",
    "Elena", "Jonas", "Zara", "Felix", "Amara", "Ravi", "Lucia", "Sven", "Grace", "Mohammed",
)
COMPANIES = (
    "Northwind", "Contoso", "Fabrikam", "Tailspin", "Globex", "Initech", "Umbrella Labs", "Acme Optics",
    "Vandelay", "Stark Components", "Wayne Plastics", "Hooli", "Soylent", "Cyberdyne", "Tyrell",
    "Oceanic Logistics", "Blue Harbor", "Kestrel Metals", "Lumen Glass", "Orbit Freight", "Shenzhen Brightway",
    "Nordic Precision",
)
PARTS = (
    "hinge", "casing", "lens", "battery", "sensor board", "camera module", "charging case", "nose pad",
    "temple arm", "speaker grille", "microphone array", "antenna", "display driver", "frame", "flex cable",
    "USB-C port", "thermal pad", "button cap", "packaging insert", "charging dock",
)
MATERIALS = ("aluminium", "titanium", "steel", "polycarbonate", "magnesium", "nylon", "acetate", "carbon fibre")
DOCS = {
    "revised quote": "updated pricing",
    "test report": "test results",
    "purchase order": "PO",
    "spec sheet": "specification",
    "cost breakdown": "cost numbers",
    "risk assessment": "risk review",
    "compliance file": "compliance paperwork",
    "shipping plan": "logistics plan",
    "press release draft": "announcement text",
    "budget forecast": "spending projection",
}
EVENTS = (
    "design review", "supplier call", "pilot build", "firmware freeze", "launch rehearsal", "budget review",
    "drop test session", "customer demo", "retro", "board meeting",
)
CERTS = ("CE", "FCC", "UL", "RoHS", "IP54", "Bluetooth SIG", "KC", "TELEC")
METRICS = (
    "battery life", "boot time", "crash rate", "return rate", "audio latency", "word error rate",
    "pairing success", "yield",
)
CODE_PREFIXES = ("TS", "AX", "MK", "QX", "LN", "BT", "RZ", "HV", "PX", "GL", "ZK", "VR")
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
FILLER = (
    "Yeah, agreed.", "Makes sense to me.", "Can everyone see my screen?", "Sorry, you cut out for a second.",
    "Let's come back to that later.", "Okay, next item.", "Can you repeat the last part?",
    "Give me a second to find the link.", "Who's taking notes today?", "We're running a bit over, let's speed up.",
    "I think that's fair.", "Hmm, not sure about that one.", "Right, right.", "Okay, go ahead.",
    "Sorry, I was on mute.", "That's a good point.", "Let's park that for now.", "Any objections? No? Good.",
    "I'll put it in the chat.", "Can we take this offline?", "Uh, where were we?", "Yes, exactly.",
    "Okay, thanks everyone.", "Let me share the deck again.", "Is that the latest version?",
    "I can hear an echo, can someone mute?", "Good morning everyone.", "Sounds good.",
)
FILLER_WITH_NAME = (
    "Sorry {name}, you cut out for a second.", "Let me check with {name} and get back to you.",
    "{name}, do you want to add anything?", "Thanks {name}, that's helpful.", "{name}, you're on mute.",
    "I'll sync with {name} after this call.",
)
CHATTER = (
    "I looked at the {part} samples for the {code} yesterday, they look okay but the finish is a bit rough.",
    "{name} mentioned the {company} team is short-staffed this month.",
    "We should probably loop in {name} on the {event} for the {code}.",
    "The {part} on the {code} still feels heavy to me.",
    "Honestly the {metric} numbers on the {code} are not where I want them yet.",
    "I talked to {company} on {weekday}, they were vague about the {part}.",
    "Do we have spare {part} units left from the {code} pilot?",
    "I think {name} has the latest drawings for the {code} {part}.",
    "The {code} prototype is on my desk if anyone wants to try it.",
    "Last time we used {company} for the {part} it went fine.",
)


@dataclass(frozen=True, slots=True)
class Fact:
    """A segment that answers a question: its position in the meeting, its text and the question."""

    index: int
    text: str
    question: str
    kind: str


@dataclass
class Corpus:
    texts: list[str]
    speakers: list[str]
    starts: list[float]
    ends: list[float]
    facts: list[Fact] = field(default_factory=list)
    codes: int = 0

    def __len__(self) -> int:
        return len(self.texts)


def _date(rng: random.Random) -> str:
    day = rng.randint(1, 28)
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{rng.choice(MONTHS)} {day}{suffix}"


def _money(rng: random.Random) -> str:
    value = rng.choice((rng.randint(3, 95) * 50, rng.randint(10, 900) * 25, rng.randint(1, 120) * 1000))
    return f"${value:,}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(8, 17)}:{rng.choice(('00', '15', '30', '45'))}"


def _fact(rng: random.Random, codes: Sequence[str]) -> tuple[str, str, str]:
    """One fact-bearing utterance and a paraphrased question it answers: (kind, text, question)."""
    code = rng.choice(codes)
    company = rng.choice(COMPANIES)
    part = rng.choice(PARTS)
    owner = rng.choice(NAMES)
    kind = rng.choice(("action", "money", "decision", "units", "schedule", "metric", "negation", "open", "price"))
    v = rng.random() < 0.5
    q = rng.random() < 0.5
    if kind == "action":
        doc = rng.choice(list(DOCS))
        date = _date(rng)
        text = (f"{owner} will send the {doc} for the {code} to {company} by {date}." if v else
                f"Okay, action item: {owner} gets the {doc} on {code} over to {company} before {date}.")
        question = (f"When is {owner} supposed to get the {DOCS[doc]} for {code} to {company}?" if q else
                    f"Who is sending {company} the {DOCS[doc]} for the {code}, and by when?")
    elif kind == "money":
        money = _money(rng)
        text = (f"{company} quoted {money} for the {part} tooling on the {code}." if v else
                f"The tooling for the {code} {part} comes to {money}, that's the {company} number.")
        question = (f"How much did {company} want for the {code} {part} tooling?" if q else
                    f"What was the one-time tooling cost for the {part} on {code}?")
    elif kind == "decision":
        material, other = rng.sample(MATERIALS, 2)
        text = (f"So we decided to go with the {material} {part} for the {code}. Everyone fine with that?" if v else
                f"Decision then: {material} for the {code} {part}, not {other}.")
        question = (f"What material did we pick for the {part} on {code}?" if q else
                    f"Which option did the team settle on for the {code} {part}?")
    elif kind == "units":
        units = rng.choice((rng.randint(1, 40) * 50, rng.randint(2, 90) * 100))
        weeks = rng.randint(2, 20)
        text = f"The first {code} batch is {units:,} units with a {weeks} week lead time from {company}."
        question = (f"How many units are in the first {code} order?" if q else
                    f"What lead time did {company} give us for the {code} batch?")
    elif kind == "schedule":
        event = rng.choice(EVENTS)
        day, other = rng.sample(WEEKDAYS, 2)
        clock = _time(rng)
        text = (f"Correction, the {code} {event} moves to {day} at {clock}, not {other}." if v else
                f"Let's put the {event} for {code} on {day} at {clock}.")
        question = (f"When is the {event} for {code} now?" if q else
                    f"What day and time did we pick for the {code} {event}?")
    elif kind == "metric":
        metric = rng.choice(METRICS)
        a, b = rng.randint(1, 99), rng.randint(1, 99)
        text = f"{metric.capitalize()} on the {code} went from {a}% to {b}% after the last firmware update."
        question = (f"What happened to {metric} on {code} after the firmware update?" if q else
                    f"How much did the {code} {metric} change with the new firmware?")
    elif kind == "negation":
        cycles = rng.randint(2, 60) * 500
        text = f"We are not using the {company} {part} on the {code} anymore, it failed after {cycles:,} cycles."
        question = (f"Why did we stop using the {company} {part} on {code}?" if q else
                    f"How many cycles did the {company} {part} survive before we dropped it?")
    elif kind == "open":
        cert = rng.choice(CERTS)
        text = (f"Nobody has answered this yet: will the {code} pass {cert} certification on the first try?" if v else
                f"{owner} is still waiting on {company} about the {cert} test slot for the {code}.")
        question = (f"Is the {cert} certification question for {code} still open?" if q else
                    f"Has anyone heard back about {cert} testing for the {code}?")
    else:
        price = f"${rng.randint(149, 899)}"
        text = f"{owner} said the {code} should launch at {price} for the base model."
        question = (f"What launch price did {owner} suggest for the {code}?" if q else
                    f"How much will the base {code} cost at launch?")
    return kind, text, question


def _utterance(rng: random.Random, codes: Sequence[str]) -> tuple[str, tuple[str, str] | None]:
    """One utterance: (text, (kind, question) if it states a fact)."""
    roll = rng.random()
    if roll < 0.18:
        return rng.choice(FILLER), None
    if roll < 0.25:
        return rng.choice(FILLER_WITH_NAME).format(name=rng.choice(NAMES)), None
    if roll < 0.45:
        text = rng.choice(CHATTER).format(
            part=rng.choice(PARTS), code=rng.choice(codes), name=rng.choice(NAMES), company=rng.choice(COMPANIES),
            event=rng.choice(EVENTS), metric=rng.choice(METRICS), weekday=rng.choice(WEEKDAYS),
        )
        return text, None
    kind, text, question = _fact(rng, codes)
    return text, (kind, question)


def generate_corpus(size: int, seed: int, distinct_texts: int | None = None) -> Corpus:
    """A deterministic meeting of `size` segments; with `distinct_texts`, drawn from that many utterances."""
    rng = random.Random(f"meetmem-bench-store:{seed}:{size}")
    n_codes = max(30, min(3000, size // 40))
    codes: list[str] = []
    seen: set[str] = set()
    while len(codes) < n_codes:
        code = f"{rng.choice(CODE_PREFIXES)}-{rng.randint(100, 9999)}"
        if code not in seen:
            seen.add(code)
            codes.append(code)
    pool_size = size if distinct_texts is None else min(size, distinct_texts)
    pool = [_utterance(rng, codes) for _ in range(pool_size)]
    order = list(range(pool_size))
    if pool_size < size:
        order += [rng.randrange(pool_size) for _ in range(size - pool_size)]
        rng.shuffle(order)
    speakers = rng.sample(NAMES, 8)
    corpus = Corpus([], [], [], [], codes=len(codes))
    clock = 0.5
    first_use: set[int] = set()
    for i, j in enumerate(order):
        text, fact = pool[j]
        duration = 0.4 + 0.33 * len(text.split()) + rng.random() * 0.6
        corpus.texts.append(text)
        corpus.speakers.append(rng.choice(speakers))
        corpus.starts.append(clock)
        corpus.ends.append(clock + duration)
        clock += duration + rng.uniform(0.1, 0.9)
        if fact is not None and j not in first_use:
            first_use.add(j)
            corpus.facts.append(Fact(i, text, fact[1], fact[0]))
    # The log refuses timestamps past a week (a unit mistake, not a meeting): a 100k-segment "meeting" is
    # squeezed into six days if its natural pace would not fit.
    scale = min(1.0, MAX_MEETING_S / corpus.ends[-1]) if corpus.ends else 1.0
    corpus.starts = [round(t * scale, 2) for t in corpus.starts]
    corpus.ends = [max(round(t * scale, 2), b) for t, b in zip(corpus.ends, corpus.starts, strict=True)]
    return corpus


def pick_questions(corpus: Corpus, n: int, seed: int) -> list[Fact]:
    """`n` facts spread over the meeting (with repeats only if the meeting has fewer facts than `n`)."""
    rng = random.Random(f"meetmem-bench-store-questions:{seed}:{len(corpus)}")
    facts = corpus.facts
    if not facts:
        return []
    if len(facts) >= n:
        return sorted(rng.sample(facts, n), key=lambda f: f.index)
    return [rng.choice(facts) for _ in range(n)]

