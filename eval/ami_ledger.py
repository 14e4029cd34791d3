"""`meetmem bench ledger`: the rule-based ledger's todos and decisions against AMI's human annotations.

Each AMI meeting's dialogue acts become segments (segment id = the dialogue act's id; speaker, times and
words as annotated; nothing else of AMI's annotation is given to the rules), `extract_ledger` runs on them,
and its todos and decisions are scored against the abstractive summary's `actions` and `decisions`
sentences ("NA." skipped).

Two match criteria, reported side by side:
- `evidence`: an extracted item matches a gold sentence when the segments it cites overlap the gold's
  `evidence_da_ids` (gold sentences without evidence can never match this way).
- `text`: content-word token F1 between the item's text and the gold sentence >= `TEXT_F1_THRESHOLD`
  (lower-cased words minus stop words, trailing "s" dropped), within the same meeting.
Precision = extracted items matching some gold item / extracted; recall = gold items matched by some
extracted item / gold; micro-averaged over meetings (pooled counts).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .retrieval import BenchDataError, _guarded

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext
    from meetmem.store.records import LedgerItem, Segment

#: The text criterion's threshold on content-word token F1.
TEXT_F1_THRESHOLD = 0.3
_KINDS = {"todo": "actions", "decision": "decisions"}
_STOP = frozenset("""a an the and or but so to of in on at for with by from is are was were be been will would
should could can shall it its this that these those we i you he she they them us our your my me um uh just
then also not no yes okay ok well like do does did have has had going gonna go let's let there what which who
all about as if into up out more very some any one""".split())
_WORD = re.compile(r"[a-z0-9]+")


def load_meetings(data_dir: Path, split: str) -> list[dict[str, Any]]:
    """The split's AMI meetings (sorted by id), as published in ../shared/data/ami."""
    folder = data_dir / split
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise BenchDataError(f"{data_dir} holds no AMI meetings under {split}/")
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def ami_segments(meeting: dict[str, Any]) -> list[Segment]:
    """The meeting's dialogue acts as store segments in time order: id, speaker, times and words only."""
    from meetmem.store.records import Segment

    acts = sorted(meeting["dialogue_acts"], key=lambda a: (float(a["start"]), float(a["end"])))
    out = []
    for seq, act in enumerate(acts):
        text = (act.get("text") or "").strip()
        if not text:
            continue
        out.append(Segment(segment_id=act["id"], tenant="bench", meeting_id=meeting["meeting_id"], device_id="ami",
                           seq=seq, start=float(act["start"]), end=max(float(act["start"]), float(act["end"])),
                           text=text, speaker=act.get("speaker"), lang="en", raw_text=None, confidence=None,
                           supersedes=None, received_at="", chain_pos=seq, prev_hash="", hash=""))
    return out


def content_tokens(text: str) -> list[str]:
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in _WORD.findall(text.lower().replace("_", ""))
            if w not in _STOP]


def token_f1(a: str, b: str) -> float:
    """Content-word token F1 (bag of words, counts clipped) between two texts."""
    ta, tb = content_tokens(a), content_tokens(b)
    if not ta or not tb:
        return 0.0
    common = 0
    rest = list(tb)
    for w in ta:
        if w in rest:
            rest.remove(w)
            common += 1
    if not common:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


def _score(items: Sequence[LedgerItem], gold: Sequence[dict[str, Any]]) -> dict[str, int]:
    ev_item = sum(1 for it in items if any(set(it.source.segment_ids) & set(g["evidence_da_ids"]) for g in gold))
    ev_gold = sum(1 for g in gold if any(set(it.source.segment_ids) & set(g["evidence_da_ids"]) for it in items))
    f1 = [[token_f1(it.text, g["text"]) >= TEXT_F1_THRESHOLD for g in gold] for it in items]
    tx_item = sum(1 for row in f1 if any(row))
    tx_gold = sum(1 for j in range(len(gold)) if any(row[j] for row in f1))
    return {"extracted": len(items), "gold": len(gold), "gold_with_evidence": sum(1 for g in gold
                                                                              if g["evidence_da_ids"]),
            "evidence_items_matched": ev_item, "evidence_gold_matched": ev_gold,
            "text_items_matched": tx_item, "text_gold_matched": tx_gold}


def _figures(c: dict[str, int]) -> dict[str, Any]:
    def ratio(a: int, b: int) -> float | None:
        return round(a / b, 3) if b else None

    return {
        "evidence": {"precision": ratio(c["evidence_items_matched"], c["extracted"]),
                     "recall": ratio(c["evidence_gold_matched"], c["gold"]),
                     "recall_of_gold_with_evidence": ratio(c["evidence_gold_matched"], c["gold_with_evidence"])},
        "text": {"precision": ratio(c["text_items_matched"], c["extracted"]),
                 "recall": ratio(c["text_gold_matched"], c["gold"])},
        "counts": c,
    }


def run(data_dir: Path, split: str = "dev", *, limit: int | None = None,
        meetings: Sequence[str] | None = None) -> dict[str, Any]:
    """Score the ledger's todos and decisions on the split's AMI meetings; returns the JSON report."""
    from meetmem.summarizers.ledger import extract_ledger

    loaded = load_meetings(Path(data_dir), split)
    if meetings:
        wanted = set(meetings)
        loaded = [m for m in loaded if m["meeting_id"] in wanted]
    if limit:
        loaded = loaded[:limit]
    totals = {kind: dict.fromkeys(("extracted", "gold", "gold_with_evidence", "evidence_items_matched",
                                   "evidence_gold_matched", "text_items_matched", "text_gold_matched"), 0)
              for kind in _KINDS}
    per_meeting: dict[str, dict[str, Any]] = {}
    no_actions = 0
    t0 = time.perf_counter()
    n_segments = 0
    for meeting in loaded:
        segments = ami_segments(meeting)
        n_segments += len(segments)
        items = extract_ledger(segments)
        summary = meeting.get("abstractive_summary") or {}
        row: dict[str, Any] = {}
        for kind, key in _KINDS.items():
            gold = [g for g in summary.get(key, []) if g["text"].strip() != "NA."]
            if kind == "todo" and not gold:
                no_actions += 1
            counts = _score([it for it in items if it.kind == kind], gold)
            for name, value in counts.items():
                totals[kind][name] += value
            row[kind] = counts
        per_meeting[meeting["meeting_id"]] = row
    seconds = time.perf_counter() - t0
    return {
        "benchmark": "ami_ledger",
        "split": split,
        "meetings": len(loaded),
        "meetings_without_actions": no_actions,
        "segments": n_segments,
        "match": {"evidence": "the item's cited segments overlap the gold sentence's evidence_da_ids",
                  "text": f"content-word token F1 >= {TEXT_F1_THRESHOLD} with the gold sentence, same meeting"},
        "averaging": "micro (counts pooled over meetings)",
        "todos": _figures(totals["todo"]),
        "decisions": _figures(totals["decision"]),
        "seconds": round(seconds, 2),
        "per_meeting": per_meeting,
    }


def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    meetings = [m.strip() for m in args.meetings.split(",") if m.strip()] if args.meetings else None
    report = run(Path(args.data), args.split, limit=args.limit, meetings=meetings)
    if not args.per_meeting:
        report.pop("per_meeting")
    sys.stdout.write(json.dumps(report, indent=None if args.json else 1) + "\n")
    return 0


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "ledger", parents=[common], help="the rule-based ledger's todos and decisions on AMI",
        description="Run the rule-based ledger on AMI meetings (dialogue acts as segments) and score its todos "
                    "and decisions against the human action items and decisions: precision and recall by "
                    "evidence overlap and by text similarity. One JSON object on stdout.")
    p.add_argument("--data", required=True, metavar="DIR", help="the AMI folder (<split>/*.json)")
    p.add_argument("--split", default="dev", help="the split to score (default dev)")
    p.add_argument("--meetings", default=None, metavar="ID,ID", help="only these meetings (quick checks)")
    p.add_argument("--limit", type=int, default=None, help="only the first N meetings (quick checks)")
    p.add_argument("--per-meeting", action="store_true", help="include each meeting's counts")
    p.set_defaults(func=_guarded(run_command))
