"""Names for the edge's speaker labels, suggested from what was said, with the evidence cited.

Two cues, both read from the transcript (rules, no model):
- an introduction: the label's speaker says "hi, I'm Priya from finance", "my name is Priya" (the
  introductions `speakers.introductions` reads; names only, not roles);
- being addressed: someone says "Priya, what do you think?" or "... over to you, Priya." and a different
  label speaks next, within `ADDRESS_GAP` seconds.

Each suggestion cites its segments. A label's suggested name is the one with most weight (an introduction
counts `INTRO_WEIGHT` times an address); a name two labels would share goes to the one with more weight.
The names users set (`store.speaker_map.SpeakerMap`) win over suggestions; a user's null withdraws one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from meetmem.store.records import Segment
from meetmem.store.speaker_map import SpeakerName

from .speakers import INTRO_NAME_RE, NOT_INTRO_NAMES, SpeakerDirectory

ADDRESS_GAP = 5.0
INTRO_WEIGHT = 3
_NAME = r"([A-Z][a-z]{1,20})"
_ADDRESS_END_RE = re.compile(rf"(?:,|\b(?:to you|over to|go ahead|what about you|how about you|your turn))\s*,?\s*"
                             rf"{_NAME}\s*[?.!]*\s*$")
_ADDRESS_START_RE = re.compile(rf"^\s*(?:(?:So|OK|Okay|And|Now|Well|Right)\s*,?\s+)?{_NAME},\s+(?:what|how|can|could|"
                               r"would|do|did|are|is|will|any|you|please|tell|go)\b")
# The labels a voice gets when nobody has named it: the edge's `S1`, `S2`, ... and `wearer`, and the usual
# diarizer forms. Only these get suggestions: a label that is a name already ("Bob", from a device set to its
# wearer or an imported transcript) is the transcript's own, and "Dana, what do you think?" before Bob
# speaks does not make Bob Dana. A user can still name any label.
ANONYMOUS_LABEL_RE = re.compile(r"^(?:S\d+|wearer|spk_?\d+|speaker[ _-]?\d+|unknown|guest[ _-]?\d*)$", re.I)
_NOT_NAMES = NOT_INTRO_NAMES | frozenset("""Yes No Yeah Thanks Thank Well So Okay Hi Hello Hey Everyone All Guys
Team Folks Please Great Cool Now Then Again Too Sir Madam Today Tomorrow Monday Tuesday Wednesday Thursday Friday
Saturday Sunday""".split())


@dataclass
class Suggestion:
    """A name for a label, and the segments that say so."""

    label: str
    name: str
    weight: int = 0
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def public(self) -> dict[str, Any]:
        return {"label": self.label, "name": self.name, "weight": self.weight, "evidence": self.evidence}


def _cite(segment: Segment, how: str) -> dict[str, Any]:
    return {"how": how, "segment_id": segment.segment_id, "start": segment.start, "end": segment.end,
            "speaker": segment.speaker, "text": segment.text}


def suggest(segments: Sequence[Segment]) -> dict[str, Suggestion]:
    """The suggested name of each anonymous label (`ANONYMOUS_LABEL_RE`) that has one."""
    found: dict[tuple[str, str], Suggestion] = {}

    def add(label: str, name: str, weight: int, evidence: list[dict[str, Any]]) -> None:
        if not ANONYMOUS_LABEL_RE.match(label):
            return
        item = found.setdefault((label, name), Suggestion(label, name))
        item.weight += weight
        item.evidence.extend(evidence)

    ordered = sorted(segments, key=lambda s: (s.start, s.end))
    for segment in ordered:
        if not segment.speaker:
            continue
        for m in INTRO_NAME_RE.finditer(segment.text):
            said = next((g for g in m.groups() if g), None)
            if said and said not in NOT_INTRO_NAMES and said.split()[0] not in _NOT_NAMES:
                add(segment.speaker, said, INTRO_WEIGHT, [_cite(segment, "introduced themself")])
    for before, after in zip(ordered, ordered[1:], strict=False):
        if not before.speaker or not after.speaker or before.speaker == after.speaker:
            continue
        if after.start - before.end > ADDRESS_GAP:
            continue
        # The turn's last sentence names whom it hands over to ("Thanks. Tom, what do you think?").
        last = re.split(r"(?<=[.!?])\s+", before.text.strip())[-1]
        m = _ADDRESS_END_RE.search(last) or _ADDRESS_START_RE.search(last)
        if m and m.group(1) not in _NOT_NAMES:
            add(after.speaker, m.group(1), 1, [_cite(before, "addressed by name"), _cite(after, "spoke next")])
    best: dict[str, Suggestion] = {}
    for item in sorted(found.values(), key=lambda s: -s.weight):
        if item.label in best:
            continue
        # A name already given to a label with more weight is not given twice ("Priya" for S2 and S3).
        if any(other.name.split()[0] == item.name.split()[0] for other in best.values()):
            continue
        best[item.label] = item
    return best


def speaker_map(segments: Sequence[Segment], stored: dict[str, SpeakerName]) -> list[dict[str, Any]]:
    """Every label of the meeting with its name now: a user's (newest version) over a suggestion."""
    counts: dict[str, int] = {}
    spoken: dict[str, float] = {}
    for segment in segments:
        if segment.speaker:
            counts[segment.speaker] = counts.get(segment.speaker, 0) + 1
            spoken[segment.speaker] = spoken.get(segment.speaker, 0.0) + segment.end - segment.start
    suggestions = suggest(segments)
    labels = list(dict.fromkeys([s.speaker for s in segments if s.speaker] + list(stored)))
    out = []
    for label in labels:
        user = stored.get(label)
        hint = suggestions.get(label)
        if user is not None:
            name, source = user.name, "user"
        elif hint is not None:
            name, source = hint.name, "suggested"
        else:
            name, source = None, None
        out.append({"label": label, "name": name, "source": source,
                    "version": user.version if user is not None else 0,
                    "segments": counts.get(label, 0), "seconds": round(spoken.get(label, 0.0), 1),
                    "suggestion": hint.public() if hint is not None else None})
    return out


def names_by_label(segments: Sequence[Segment], stored: dict[str, SpeakerName]) -> dict[str, tuple[str, str]]:
    """`label -> (name, why)` for every label that has a name now."""
    out = {}
    for entry in speaker_map(segments, stored):
        if entry["name"]:
            if entry["source"] == "user":
                why = f"named {entry['name']} in the meeting's speaker map (version {entry['version']})"
            else:
                first = entry["suggestion"]["evidence"][0]
                why = (f"suggested: {first['how']} at {int(first['start'] // 60)}:{int(first['start'] % 60):02d} "
                       f'("{first["text"][:80]}")')
            out[entry["label"]] = (entry["name"], why)
    return out


def apply_names(directory: SpeakerDirectory, names: dict[str, tuple[str, str]]) -> None:
    """Put the speaker map's names first in the directory: a name the map gives one label is taken from any
    other label that an introduction or the participants had given it."""
    for label, (name, why) in names.items():
        if label not in directory.labels:
            continue
        low = name.lower()
        for other, aliases in directory.aliases.items():
            if other != label:
                aliases[:] = [a for a in aliases if a.lower() != low]
        rest = [a for a in directory.aliases.get(label, []) if a.lower() != low]
        directory.aliases[label] = [name, *rest]
        directory.evidence[f"{label}:{low}"] = why


def cited_names(log: Any, meeting_id: str, tenant: str, labels: Sequence[str]) -> dict[str, str]:
    """`label -> name now` for those of `labels` the meeting's speaker map names (a user's name, else a
    suggestion). The meeting's segments are read only when a label could have a suggestion."""
    from meetmem.store.speaker_map import read_current

    wanted = {label for label in labels if label}
    if not wanted:
        return {}
    stored = read_current(log, meeting_id, tenant=tenant)
    if not any(ANONYMOUS_LABEL_RE.match(label) for label in wanted - set(stored)):
        return {label: entry.name for label, entry in stored.items() if label in wanted and entry.name}
    named = names_by_label(log.segments(meeting_id, tenant=tenant), stored)
    return {label: name for label, (name, _) in named.items() if label in wanted}


def named_quotes(text: str, names: dict[str, str]) -> str:
    """An answer's quotes attributed by name: `"..." (S1, 01:23)` becomes `"..." (Priya, 01:23)`."""
    for label, name in names.items():
        text = re.sub(rf"\({re.escape(label)}, (\d+:\d\d(?::\d\d)?)\)", lambda m, n=name: f"({n}, {m.group(1)})",
                      text)
    return text


def with_speaker_names(answer: Any, log: Any, meeting_id: str, tenant: str) -> Any:
    """The answer with each citation's `speaker_name` and its quotes attributed by name, from the meeting's
    speaker map; `speaker` stays the label (an `answer.Answer`, typed loosely: `answer` imports this module)."""
    from dataclasses import replace

    names = cited_names(log, meeting_id, tenant, [c.speaker for c in answer.citations if c.speaker])
    if not names:
        return answer
    citations = tuple(replace(c, speaker_name=names.get(c.speaker)) for c in answer.citations)
    return replace(answer, answer=named_quotes(answer.answer, names), citations=citations)
