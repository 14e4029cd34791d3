"""Who is who in a meeting: the transcript's speaker labels, named by participants and self-introductions.

A question names people as users know them ("Priya", "the project manager", "marketing"); the transcript
labels turns with whatever the recogniser or the corpus gave ("A", "Priya", "SPEAKER_01"). A label is
known by:
- the label itself ("speaker C", "Priya");
- the participants given on ingest, written "C: Priya" or "Priya (project manager)";
- what its speaker said of themself: "I'm Priya", "my name is Priya", "I'm the project manager",
  "I am the Marketing Expert", "my role is the industrial designer", "as the marketing expert, I ...",
  "我是产品经理", "我叫李娜".
Introductions are read from the meeting itself, and from the tenant's other meetings that list the same
participants (a series of meetings of one team introduces itself once).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from meetmem.store.records import Segment

_ROLE_WORDS = (r"manager|lead|leader|designer|expert|specialist|engineer|developer|architect|analyst|owner|interface|"
               r"director|officer|head|chair|secretary|coordinator|consultant|researcher|marketing|sales|"
               r"finance|legal|intern|scientist|producer|writer|editor|admin\w*|facilitator|moderator|ceo|cto|cfo|"
               r"research|design")
_FILL = r"(?:(?:um|uh|er|erm|like)\s+)*"
# Up to three words before the role word, none of them one that turns the sentence away from the speaker
# ("I'm not sure what marketing thinks", "I'm not a designer").
_ROLE = (rf"((?:(?!(?:not|sure|what|that|how|if|about|with|to|going|gonna|just|glad|happy|afraid)\b)[\w-]+\s+){{0,3}}?"
         rf"(?:{_ROLE_WORDS})(?:\s+(?:{_ROLE_WORDS}))*)\b")
_INTRO_ROLE_RE = re.compile(
    rf"\b(?:i'?m|i am)\s+{_FILL}(?:(?:supposed|going|meant|here)\s+to\s+be\s+{_FILL})?(?:(?:your|the|a|an|our)\s+)?"
    rf"{_FILL}{_ROLE}"
    rf"|\bmy\s+(?:\w+\s+)?(?:role|function|job|position|title)\s+(?:in [\w\s]+?\s+)?(?:is|will be)\s+{_FILL}"
    rf"(?:(?:the|a|an|as)\s+)?{_FILL}{_ROLE}"
    rf"|\bi(?:'ll| will)\s+be\s+{_FILL}(?:[A-Z][a-z]+\s+)?(?:your|the|our)\s+{_ROLE}"
    # A role stated in passing: "as the marketing expert, I looked at ...", "speaking as project manager, we ..."
    rf"|\b(?:speaking\s+)?as\s+(?:the\s+|your\s+|a\s+|an\s+|our\s+)?{_FILL}{_ROLE}\s*,?\s+(?:i|i'm|i'll|i've|i'd|my|me)\b"
    # "Marketing is uh, is me."
    rf"|\b((?:[\w-]+\s+)?(?:{_ROLE_WORDS}))\s+is\s+(?:(?:uh|um),?\s+)*(?:is\s+)?me\b"
    r"|(?:我是|我担任|我负责)([\u4e00-\u9fff]{0,4}(?:经理|设计师|专家|工程师|主管|负责人|总监|产品|市场|销售))",
    re.I,
)
INTRO_NAME_RE = re.compile(
    r"\b(?i:my name is|my name's|i'm called|call me)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
    r"|\b(?:I'm|I am|i'm|This is|this is)\s+([A-Z][a-z]+)(?=\s+(?:and|here|from|speaking)\b|\s*[,.!]|\s*$)"
    r"|(?:我叫|我是)([\u4e00-\u9fff]{2,3})(?=[，,。.！!]|$)",
)
NOT_INTRO_NAMES = frozenset("""Sure Sorry Fine Good Okay Not Just Going Here Back Done Ready Afraid Glad Happy Also
Still Really Actually Pretty Quite Totally Right""".split())
_PARTICIPANT_LABEL_RE = re.compile(r"^\s*([^:()]+?)\s*:\s*(.+?)\s*$")
_PARTICIPANT_ROLE_RE = re.compile(r"^\s*(.+?)\s*\((.+?)\)\s*$")
_ABBREVIATIONS = {"pm": "project manager", "me": "marketing expert", "id": "industrial designer",
                  "ui": "user interface designer", "ux": "user experience designer", "qa": "quality assurance"}
_STOP = frozenset("the a an our your my of for and in".split())


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP}


#: Role words that many roles share: a match on these alone is not enough when the mention has others.
_GENERIC = frozenset({"designe", "manage", "expert", "lead", "leader", "engine", "specia", "head", "office",
                      "person", "owner", "design"})


def _expanded(text: str) -> str:
    """Abbreviations spelled out word by word: "UI designer" -> "user interface designer"."""
    if text in _ABBREVIATIONS:
        return _ABBREVIATIONS[text]
    return " ".join(_ABBREVIATIONS.get(w, w) if w in ("pm", "ui", "ux", "qa") else w for w in text.split())


def _stems(text: str) -> set[str]:
    """The words of `text` cut to six letters, so "market" meets "marketing" and "design" meets "designer"."""
    return {w[:6] if len(w) > 6 else w for w in _words(text)}


@dataclass
class SpeakerDirectory:
    """Names and roles by speaker label, and the evidence for each."""

    labels: list[str]
    aliases: dict[str, list[str]] = field(default_factory=dict)
    evidence: dict[str, str] = field(default_factory=dict)

    def add(self, label: str, alias: str, how: str) -> None:
        alias = " ".join(alias.split()).strip(" ,.")
        if not alias or label not in self.labels:
            return
        names = self.aliases.setdefault(label, [])
        if alias.lower() not in (a.lower() for a in names):
            names.append(alias)
            self.evidence.setdefault(f"{label}:{alias.lower()}", how)

    def resolve(self, mention: str) -> tuple[str, str] | None:
        """The label a question's mention names, and why; None when nothing fits well enough.

        An exact label or alias wins; else the alias sharing most words with the mention ("marketing" ->
        "Marketing Expert"), an abbreviation expanded ("PM" -> "project manager").
        """
        text = mention.strip()
        low = text.lower()
        low = re.sub(r"^(?:the|our|your|my)\s+", "", low)
        low = re.sub(r"^(?:speaker|participant)\s+", "", low)
        for label in self.labels:
            if low == label.lower():
                return label, f'"{mention}" is the speaker label {label}'
        for label, names in self.aliases.items():
            for name in names:
                if low == name.lower():
                    return label, f'"{mention}" is {label}: {self._why(label, name)}'
        asked = _stems(_expanded(low))
        if not asked:
            return None
        specific = asked - _GENERIC
        best: tuple[float, str, str] | None = None
        for label, names in self.aliases.items():
            for name in names:
                have = _stems(_expanded(name.lower()))
                common = asked & have
                # "UI designer" is not the industrial designer: a generic word alone ("designer", "expert",
                # "manager") does not make a match when the mention says more.
                if not common or (specific and not common & specific):
                    continue
                score = len(common) / len(asked) + 0.1 * len(common) / len(have)
                if best is None or score > best[0]:
                    best = (score, label, name)
        if best is None or best[0] < 0.5:
            return None
        _, label, name = best
        return label, f'"{mention}" taken as {label} ("{name}": {self._why(label, name)})'

    def _why(self, label: str, name: str) -> str:
        return self.evidence.get(f"{label}:{name.lower()}", "named so")


def introductions(segments: Iterable[Segment]) -> list[tuple[str, str, Segment]]:
    """`(label, name or role, segment)` for every self-introduction in the segments."""
    found = []
    for segment in segments:
        if not segment.speaker:
            continue
        for pattern in (INTRO_NAME_RE, _INTRO_ROLE_RE):
            for m in pattern.finditer(segment.text):
                said = next((g for g in m.groups() if g), None)
                if not said or said in NOT_INTRO_NAMES:
                    continue
                said = re.sub(r"^(?:(?:um|uh|er|like|the|our|your|a|an)\s+)+", "", said.strip(), flags=re.I)
                found.append((segment.speaker, said, segment))
    return found


def build_directory(segments: Sequence[Segment], participants: Sequence[str] = (),
                    related: Iterable[Segment] = ()) -> SpeakerDirectory:
    """The directory of one meeting: its labels, the participants' names and the introductions.

    Args:
        segments: the meeting's segments.
        participants: the names given on ingest ("C: Priya", "Priya (project manager)", "Priya").
        related: segments of the tenant's other meetings with the same participants.
    """
    labels = list(dict.fromkeys(s.speaker for s in segments if s.speaker))
    directory = SpeakerDirectory(labels)
    for entry in participants:
        if m := _PARTICIPANT_LABEL_RE.match(entry):
            label, name = m.group(1), m.group(2)
            role = _PARTICIPANT_ROLE_RE.match(name)
            if role:
                directory.add(label, role.group(1), "named in the participants")
                directory.add(label, role.group(2), "named in the participants")
            else:
                directory.add(label, name, "named in the participants")
        elif m := _PARTICIPANT_ROLE_RE.match(entry):
            directory.add(m.group(1), m.group(2), "named in the participants")
    for label, said, segment in introductions(segments):
        directory.add(label, said, f'said "{segment.text.strip()[:80]}" at {int(segment.start // 60)}:'
                                   f"{int(segment.start % 60):02d}")
    for label, said, segment in introductions(related):
        directory.add(label, said, f"introduced themself in meeting {segment.meeting_id}")
    return directory
