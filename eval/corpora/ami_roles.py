"""`meetmem bench roles`: questions' role mentions ("the project manager", "marketing") resolved to AMI's speaker
letters, against a reference read from the human summaries.

Each AMI dev meeting's dialogue acts become segments (`ami_ledger.ami_segments`); the speaker directory
(`meetmem.answers.speakers.build_directory`) is built from them, with the other meetings of the same series as
`related` (a team introduces itself once, usually in the first meeting) and no participants list. Every role's
mention forms (`MENTIONS`) are resolved in every meeting.

The reference is independent of the transcript's words: the abstractive summary's sentences whose subject is a
role ("The Project Manager opened the meeting ...", "The interface specialist presented ...") attribute their
evidence dialogue acts to that role, and a dialogue act's speaker letter is in its id
(`TS3012d.A.dialog-act.vkaraisk.39` is A). A sentence counts when:
- it is in `abstract`, `decisions` or `problems` (`REFERENCE_SECTIONS`). `actions` are left out: their
  evidence is mostly the chair handing the task out ("The industrial designer will work on ..." cites the
  project manager's words), not the role's own;
- it starts with the role ("The X ...", "Then the X ...") and names no other role anywhere;
- it names no other actor ("team", "group", "members", "they", ...): "The project manager recapped ... and two
  team members presented their prototype" cites everyone.
Per meeting and role the counted sentences' evidence acts are pooled; the reference letter is the one holding
more than half of them and at least `MIN_EVIDENCE`. Pairs that fall short are reported, not guessed.

Figures, per mention form, per role and overall, for the `tune` and `report` halves of AMI dev (by series,
`eval.training.ami_split`, the same halves as `bench ledger` and `bench summaries-ami`) and both together:
- `resolved_share`: the share of (meeting, mention) asked that resolve to some label;
- `accuracy`: over the (meeting, mention) whose role has a reference letter, the share resolved to that letter
  (unresolved counts as wrong); `precision`: the same over those resolved.
The report half's wrong and unresolved cases are listed (at most `MAX_MISSES`).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.cli.options import JSON, flags
from meetmem.cli.output import emit_figures

from ..harness import BenchDataError, guarded
from .ami_ledger import ami_segments, load_meetings

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext

#: The scenario's four roles, in the order the report lists them.
ROLES = {"PM": "project manager", "ME": "marketing expert", "UI": "user interface designer",
         "ID": "industrial designer"}
#: How a question names each role.
MENTIONS: dict[str, tuple[str, ...]] = {
    "PM": ("project manager", "the PM"),
    "ME": ("marketing expert", "marketing"),
    "UI": ("user interface designer", "UI designer", "interface designer"),
    "ID": ("industrial designer",),
}
REFERENCE_SECTIONS = ("abstract", "decisions", "problems")
#: The reference letter's least count of evidence acts.
MIN_EVIDENCE = 2
MAX_MISSES = 30

#: How the summaries name each role; the abbreviations only in capitals ("ME", "ID" are words otherwise).
_ROLE_NAMES = {
    "PM": r"(?i:project\s+manager|program\s+manager|project\s+leader)|PM",
    "ME": r"(?i:marketing\s+(?:expert|executive|specialist|manager|person))|ME",
    "UI": r"(?i:(?:user\s+)?interface\s+(?:designer|specialist|expert|manager)|UI\s+(?:designer|specialist|expert))"
          r"|UI|UID",
    "ID": r"(?i:industrial\s+(?:designer|specialist|expert))|ID",
}
_ANY_ROLE = re.compile("|".join(rf"(?P<{role}>\b(?:{names})\b)" for role, names in _ROLE_NAMES.items()))
_SUBJECT = re.compile(r"\s*(?i:(?:then|next|finally|first|afterwards|later|also)\s*,?\s+)?(?i:the)\s+")
_OTHER_ACTORS = re.compile(r"\b(?:team|group|members?|everyone|everybody|they|them|their|participants|others|all|"
                           r"themselves|both|each|together|designers)\b", re.I)


def subject_role(text: str) -> str | None:
    """The role a summary sentence is about when it starts with it and names no other role or actor."""
    start = _SUBJECT.match(text)
    if not start:
        return None
    first = _ANY_ROLE.match(text, start.end())
    if not first:
        return None
    named = {m.lastgroup for m in _ANY_ROLE.finditer(text)}
    if len(named) != 1 or _OTHER_ACTORS.search(text):
        return None
    return first.lastgroup


def _letter(da_id: str, speakers: dict[str, str]) -> str | None:
    parts = da_id.split(".")
    if len(parts) > 1 and re.fullmatch(r"[A-Z]", parts[1]):
        return parts[1]
    return speakers.get(da_id)


def reference_roles(meeting: dict[str, Any]) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """`({role: letter}, {role: evidence})` from the meeting's summary sentences about one role.

    The evidence of every role some sentence was about: the letters' counts, the sentences counted, and
    `letter` (None when no letter holds more than half of the acts and at least `MIN_EVIDENCE`).
    """
    speakers = {a["id"]: a.get("speaker") for a in meeting.get("dialogue_acts") or ()}
    summary = meeting.get("abstractive_summary") or {}
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    sentences: Counter[str] = Counter()
    for section in REFERENCE_SECTIONS:
        for sentence in summary.get(section) or ():
            role = subject_role(sentence.get("text") or "")
            if role is None:
                continue
            letters = [x for x in (_letter(i, speakers) for i in sentence.get("evidence_da_ids") or ()) if x]
            if letters:
                sentences[role] += 1
                counts[role].update(letters)
    found: dict[str, str] = {}
    evidence: dict[str, dict[str, Any]] = {}
    for role in ROLES:
        if role not in counts:
            continue
        (best, n), *_ = counts[role].most_common(1)
        total = sum(counts[role].values())
        letter = best if n >= MIN_EVIDENCE and 2 * n > total else None
        evidence[role] = {"letters": dict(sorted(counts[role].items())), "sentences": sentences[role],
                          "letter": letter}
        if letter:
            found[role] = letter
    return found, evidence


class _Tally:
    """Counts of one group of (meeting, mention) questions."""

    def __init__(self) -> None:
        self.asked = self.resolved = self.with_reference = self.resolved_with_reference = self.correct = 0

    def add(self, got: str | None, expected: str | None) -> None:
        self.asked += 1
        self.resolved += got is not None
        if expected is not None:
            self.with_reference += 1
            self.resolved_with_reference += got is not None
            self.correct += got == expected

    def figures(self) -> dict[str, Any]:
        def ratio(a: int, b: int) -> float | None:
            return round(a / b, 4) if b else None

        return {"asked": self.asked, "resolved": self.resolved, "resolved_share": ratio(self.resolved, self.asked),
                "with_reference": self.with_reference, "correct": self.correct,
                "accuracy": ratio(self.correct, self.with_reference),
                "precision": ratio(self.correct, self.resolved_with_reference)}


def run(data_dir: Path, split: str = "dev", *, meetings: Sequence[str] | None = None) -> dict[str, Any]:
    """Resolve every role mention in every meeting with dialogue acts and score it; returns the JSON report."""
    from meetmem.answers.speakers import build_directory

    from ..training.ami_split import half, series

    loaded = load_meetings(Path(data_dir), split)
    skipped = sorted(m["meeting_id"] for m in loaded if not m.get("dialogue_acts"))
    loaded = [m for m in loaded if m.get("dialogue_acts")]
    segments = {m["meeting_id"]: ami_segments(m) for m in loaded}
    by_series: dict[str, list[str]] = defaultdict(list)
    for meeting_id in segments:
        by_series[series(meeting_id)].append(meeting_id)
    if meetings:
        wanted = set(meetings)
        loaded = [m for m in loaded if m["meeting_id"] in wanted]
    if not loaded:
        raise BenchDataError(f"no AMI meeting of {data_dir}/{split} with dialogue acts (with those filters)")
    groups = ("all", "tune", "report")
    tallies = {g: {"overall": _Tally(), "by_role": defaultdict(_Tally), "by_mention": defaultdict(_Tally)}
               for g in groups}
    pairs = {g: 0 for g in groups}
    pairs_by_role: Counter[str] = Counter()
    short = {"too_few_acts": 0, "no_majority": 0}
    references: dict[str, dict[str, str]] = {}
    misses: list[dict[str, Any]] = []
    for meeting in loaded:
        meeting_id = meeting["meeting_id"]
        where = half(meeting_id)
        reference, evidence = reference_roles(meeting)
        references[meeting_id] = reference
        for seen in evidence.values():
            if seen["letter"] is None:
                top = max(seen["letters"].values())
                short["too_few_acts" if top < MIN_EVIDENCE else "no_majority"] += 1
        for g in ("all", where):
            pairs[g] += len(reference)
        pairs_by_role.update(reference.keys())
        related = [s for other in by_series[series(meeting_id)] if other != meeting_id for s in segments[other]]
        directory = build_directory(segments[meeting_id], related=related)
        for role, forms in MENTIONS.items():
            expected = reference.get(role)
            for mention in forms:
                resolved = directory.resolve(mention)
                got = resolved[0] if resolved else None
                for g in ("all", where):
                    tallies[g]["overall"].add(got, expected)
                    tallies[g]["by_role"][role].add(got, expected)
                    tallies[g]["by_mention"][mention].add(got, expected)
                if where == "report" and expected is not None and got != expected:
                    misses.append({"meeting": meeting_id, "mention": mention, "role": role, "got": got,
                                   "expected": expected, "why": resolved[1] if resolved else None})
    consistent = total_series_roles = 0
    conflicts: list[dict[str, Any]] = []
    for name, ids in sorted(by_series.items()):
        for role in ROLES:
            letters = {i: references[i][role] for i in sorted(ids) if role in references.get(i, {})}
            if letters:
                total_series_roles += 1
                consistent += len(set(letters.values())) == 1
                if len(set(letters.values())) > 1:
                    conflicts.append({"series": name, "role": role, "letters": letters})
    report: dict[str, Any] = {
        "benchmark": "ami_roles",
        "split": split,
        "meetings": len(loaded),
        "meetings_without_dialogue_acts": skipped,
        "series": len({series(m["meeting_id"]) for m in loaded}),
        "halves": "by series, eval.training.ami_split (the same halves as bench ledger and summaries-ami)",
        "related": "the other meetings of the same series",
        "mentions": {role: list(forms) for role, forms in MENTIONS.items()},
        "reference": {
            "rule": f"summary sentences ({', '.join(REFERENCE_SECTIONS)}) starting with one role and naming no other "
                    "role or actor; their evidence acts pooled per meeting and role; the letter holding more than "
                    f"half of them and at least {MIN_EVIDENCE}",
            "pairs": pairs["all"],
            "pairs_by_half": {g: pairs[g] for g in ("tune", "report")},
            "pairs_by_role": {role: pairs_by_role[role] for role in ROLES},
            "possible_pairs": 4 * len(loaded),
            "roles_without_letter": short,
            # A speaker keeps their letter through a series (AMI's metadata on the QMSum meetings shows it), so a
            # role given two letters in one series is a summary that swapped roles (mostly the two designers).
            "series_roles_with_one_letter": {"consistent": consistent, "series_roles": total_series_roles},
            "series_conflicts": conflicts,
        },
    }
    for g in groups:
        report[g] = {"overall": tallies[g]["overall"].figures(),
                     "by_role": {role: tallies[g]["by_role"][role].figures() for role in ROLES
                                 if role in tallies[g]["by_role"]},
                     "by_mention": {mention: tallies[g]["by_mention"][mention].figures()
                                    for forms in MENTIONS.values() for mention in forms
                                    if mention in tallies[g]["by_mention"]}}
    report["report_misses_total"] = len(misses)
    report["report_misses"] = misses[:MAX_MISSES]
    return report


def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    meetings = [m.strip() for m in args.meetings.split(",") if m.strip()] if args.meetings else None
    report = run(Path(args.data), args.split, meetings=meetings)
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "roles", parents=flags(JSON),
        help="role mentions (\"the project manager\", \"marketing\") resolved to AMI's speaker letters",
        description="Resolve role mentions with the speaker directory of each AMI meeting (its own introductions "
                    "and those of its series' other meetings) and score them against the letter the human "
                    "summaries' evidence gives each role: resolved share and accuracy per mention, role and "
                    "overall, for the tune and report halves. The figures on stdout (one JSON object with --json).")
    p.add_argument("--data", required=True, metavar="DIR", help="the AMI folder (<split>/*.json)")
    p.add_argument("--split", default="dev", help="the split to score (default dev)")
    p.add_argument("--meetings", default=None, metavar="ID,ID", help="only these meetings (quick checks)")
    p.set_defaults(func=guarded(run_command))
