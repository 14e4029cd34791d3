"""What a needle meeting is made of: the records the generator writes and the evaluation runner reads.

A needle is one planted fact in a generated meeting (an owner and a due date, an amount, a code name, a
negation, a correction...). It lives in one segment, and one or more questions ask for it in other words
than the meeting used; the expected answer is the value a correct answer must contain.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: The kinds of needle, as the issue lists them.
NEEDLE_KINDS = (
    "todo",  # an owner, a task and a due date
    "money",
    "quantity",
    "datetime",  # the date and time of an event
    "name",  # a person's or product's name, a code name
    "quote",  # words said verbatim
    "negation",  # "we are not using X"
    "correction",  # "moved to Friday, not Wednesday": the later value is the answer
)


@dataclass(frozen=True, slots=True)
class NeedleQuestion:
    """A question about a needle, worded unlike the meeting, and the value a right answer contains.

    `reworded`: the question also names the needle's subject in other words than the meeting did
    (`needle_rewording`), as someone recalling it later would.
    """

    question: str
    expected: str
    reworded: bool = False


@dataclass(frozen=True, slots=True)
class Needle:
    """One planted fact: where it is (segment index in the meeting), what it says, how to ask for it.

    `values` holds the fact's parts as said (`owner`, `task`, `due`, `amount`, ...). A correction's
    `segment_index` is the correcting segment; `corrects` is the index of the segment it corrects. A
    distractor is not a needle: it is listed in `NeedleMeeting.distractors` by segment index. `also` names
    further segments that carry the fact, when it is split over several (an audio meeting's recognised
    segments that overlap the planted one in time); citing any of them recalls the needle.
    """

    kind: str
    lang: str
    segment_index: int
    text: str
    values: dict[str, str]
    questions: tuple[NeedleQuestion, ...]
    corrects: int | None = None
    also: tuple[int, ...] = ()

    @property
    def segments(self) -> tuple[int, ...]:
        """Every segment index that carries the fact, the main one first."""
        return (self.segment_index, *(i for i in self.also if i != self.segment_index))


@dataclass(frozen=True, slots=True)
class NeedleMeeting:
    """A generated meeting: its segments (CONTRACT interchange rows, in time order) and its needles."""

    lang: str
    seed: int
    hours: float
    segments: tuple[dict[str, Any], ...]
    needles: tuple[Needle, ...]
    distractors: tuple[int, ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)

    def write(self, folder: Path, name: str = "meeting") -> tuple[Path, Path]:
        """Write `<name>.jsonl` (interchange, one segment a line) and `<name>.needles.json`; returns both."""
        folder.mkdir(parents=True, exist_ok=True)
        transcript = folder / f"{name}.jsonl"
        transcript.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in self.segments),
                              encoding="utf-8")
        needles = folder / f"{name}.needles.json"
        meta = {"lang": self.lang, "seed": self.seed, "hours": self.hours, "distractors": list(self.distractors),
                "notes": self.notes, "needles": [asdict(n) for n in self.needles]}
        needles.write_text(json.dumps(meta, ensure_ascii=False, indent=1), encoding="utf-8")
        return transcript, needles

    @staticmethod
    def read(folder: Path, name: str = "meeting") -> NeedleMeeting:
        rows = [json.loads(line) for line in (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()]
        meta = json.loads((folder / f"{name}.needles.json").read_text(encoding="utf-8"))
        needles = tuple(
            Needle(n["kind"], n["lang"], n["segment_index"], n["text"], dict(n["values"]),
                   tuple(NeedleQuestion(q["question"], q["expected"], bool(q.get("reworded", False)))
                         for q in n["questions"]), n.get("corrects"),
                   tuple(n.get("also", ())))
            for n in meta["needles"]
        )
        return NeedleMeeting(meta["lang"], meta["seed"], meta["hours"], tuple(rows), needles,
                             tuple(meta.get("distractors", ())), meta.get("notes", {}))
