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

With `--model local-qwen` or `--llm-url URL --llm-model NAME` the bench scores the optional model pass
(`ledger_llm.LLMLedger`: the model's items vetted against their cited segments and merged beside the rules')
against the rules alone, in the same run, on a fixed subset that a small CPU model can get through: one
window of `--window` consecutive dialogue acts per meeting of `MODEL_SUBSET`. The window is the meeting's
tile (cut every `--window` acts from its first) holding the most evidence acts of its gold actions and
decisions, earliest on a tie; chosen from the gold alone, so the same for both arms. The gold of a window
is the gold items whose evidence lies in it. Wall time is reported per hour of the windows' speech.
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

from meetmem.cli.options import JSON, flags
from meetmem.cli.output import emit_figures

from ..harness import BenchDataError, guarded

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


def match_counts(items: Sequence[LedgerItem], gold: Sequence[dict[str, Any]]) -> dict[str, int]:
    """How many items match some gold sentence, and gold sentences some item, by evidence and by text."""
    ev_item = sum(1 for it in items if any(set(it.source.segment_ids) & set(g["evidence_da_ids"]) for g in gold))
    ev_gold = sum(1 for g in gold if any(set(it.source.segment_ids) & set(g["evidence_da_ids"]) for it in items))
    f1 = [[token_f1(it.text, g["text"]) >= TEXT_F1_THRESHOLD for g in gold] for it in items]
    tx_item = sum(1 for row in f1 if any(row))
    tx_gold = sum(1 for j in range(len(gold)) if any(row[j] for row in f1))
    return {"extracted": len(items), "gold": len(gold), "gold_with_evidence": sum(1 for g in gold
                                                                              if g["evidence_da_ids"]),
            "evidence_items_matched": ev_item, "evidence_gold_matched": ev_gold,
            "text_items_matched": tx_item, "text_gold_matched": tx_gold}


def figures(c: dict[str, int]) -> dict[str, Any]:
    """Precision and recall by both criteria from pooled `match_counts`."""
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
        meetings: Sequence[str] | None = None, half: str = "all",
        extractors: Sequence[str] = ("rules",)) -> dict[str, Any]:
    """Score the ledger's todos and decisions on the split's AMI meetings; returns the JSON report.

    Args:
        half: `tune`, `report` or `all` of AMI dev, split by series (`eval.training.ami_split`).
        extractors: which ledgers to score, each in the same run: `rules` (the rules alone), `detector`
            (the learned detector's decisions and todos) and `combined` (the default ledger: both).
    """
    from meetmem.summarizers.ledger_learned import LearnedLedger

    from ..training.ami_split import in_half

    loaded = load_meetings(Path(data_dir), split)
    loaded = [m for m in loaded if in_half(m["meeting_id"], half)]
    if meetings:
        wanted = set(meetings)
        loaded = [m for m in loaded if m["meeting_id"] in wanted]
    if limit:
        loaded = loaded[:limit]
    if not loaded:
        raise BenchDataError(f"no AMI meeting of {data_dir}/{split} is in the {half} half with those filters")
    segments_of = {m["meeting_id"]: ami_segments(m) for m in loaded}
    n_segments = sum(len(v) for v in segments_of.values())
    hours = sum((v[-1].end - v[0].start) / 3600 for v in segments_of.values() if v)
    report: dict[str, Any] = {
        "benchmark": "ami_ledger",
        "split": split,
        "half": half,
        "meetings": len(loaded),
        "meetings_without_actions": sum(1 for m in loaded if not _gold(m)["todo"]),
        "segments": n_segments,
        "speech_hours": round(hours, 2),
        "match": {"evidence": "the item's cited segments overlap the gold sentence's evidence_da_ids",
                  "text": f"content-word token F1 >= {TEXT_F1_THRESHOLD} with the gold sentence, same meeting"},
        "averaging": "micro (counts pooled over meetings)",
    }
    for name in extractors:
        extractor = LearnedLedger(mode=name)
        totals = {kind: dict.fromkeys(("extracted", "gold", "gold_with_evidence", "evidence_items_matched",
                                       "evidence_gold_matched", "text_items_matched", "text_gold_matched"), 0)
                  for kind in _KINDS}
        per_meeting: dict[str, dict[str, Any]] = {}
        cited = items_n = 0
        version = None
        t0 = time.perf_counter()
        for meeting in loaded:
            items = extractor(segments_of[meeting["meeting_id"]])
            if extractor.last_notes:
                raise BenchDataError(f"{name} on {meeting['meeting_id']}: {extractor.last_notes[0]}")
            gold = _gold(meeting)
            row: dict[str, Any] = {}
            for kind in _KINDS:
                found = [it for it in items if it.kind == kind]
                items_n += len(found)
                cited += sum(len(it.source.segment_ids) for it in found)
                version = version or next((it.version for it in found if it.version), None)
                counts = match_counts(found, gold[kind])
                for key, value in counts.items():
                    totals[kind][key] += value
                row[kind] = counts
            per_meeting[meeting["meeting_id"]] = row
        seconds = time.perf_counter() - t0
        report[name] = {
            "version": version or "rules",
            "todos": figures(totals["todo"]),
            "decisions": figures(totals["decision"]),
            "segments_cited_per_item": round(cited / items_n, 2) if items_n else None,
            "seconds": round(seconds, 2),
            "seconds_per_meeting_hour": round(seconds / hours, 2) if hours else None,
            "per_meeting": per_meeting,
        }
    if len(extractors) == 1:  # the shape of earlier runs: the one ledger's figures at the top level
        only = report.pop(extractors[0])
        report.update({k: v for k, v in only.items()})
        report["ledger"] = extractors[0]
    return report


#: The fixed AMI dev meetings the model pass is measured on (one window each): the kick-off meetings of
#: four scenario series, which hold the most action items.
MODEL_SUBSET = ("ES2002a", "ES2003a", "ES2006a", "ES2007a")
#: Consecutive dialogue acts in one measured window.
MODEL_WINDOW = 60


def _gold(meeting: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    summary = meeting.get("abstractive_summary") or {}
    return {kind: [g for g in summary.get(key, []) if g["text"].strip() != "NA."] for kind, key in _KINDS.items()}


def model_window(segments: Sequence[Segment], gold: dict[str, list[dict[str, Any]]],
                 size: int) -> list[Segment]:
    """The tile of `size` acts (cut from the first) holding the most gold evidence acts; earliest on a tie."""
    evidence = {da for items in gold.values() for g in items for da in g["evidence_da_ids"]}
    tiles = [list(segments[i: i + size]) for i in range(0, len(segments), size)]
    if not tiles:
        return []
    return max(tiles, key=lambda tile: sum(1 for s in tile if s.segment_id in evidence))


class _CountingChat:
    """A chat model that sums the tokens and seconds of its calls (for the report)."""

    def __init__(self, chat: Any) -> None:
        self.chat = chat
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.seconds = 0.0

    def complete(self, messages: list[dict[str, str]]) -> Any:
        t0 = time.perf_counter()
        try:
            reply = self.chat.complete(messages)
        finally:
            self.seconds += time.perf_counter() - t0
        self.calls += 1
        self.prompt_tokens += reply.prompt_tokens or 0
        self.completion_tokens += reply.completion_tokens or 0
        return reply


def run_model_pass(data_dir: Path, split: str = "dev", *, chat: Any, model_name: str,
                   meetings: Sequence[str] = MODEL_SUBSET, window: int = MODEL_WINDOW,
                   progress: Any = None) -> dict[str, Any]:
    """Rules alone vs rules + the vetted model pass on one window per meeting; returns the JSON report.

    Args:
        chat: the chat model (`OpenAIChat` on a server); its failures end the run (`BenchDataError`).
        model_name: the name reported for the model.
        meetings: the AMI meetings, one window each.
        window: consecutive dialogue acts per window.
        progress: a callable taking one line, for progress on stderr.
    """
    from meetmem.summarizers.ledger import extract_ledger
    from meetmem.summarizers.ledger_llm import LLMLedger

    loaded = {m["meeting_id"]: m for m in load_meetings(Path(data_dir), split)}
    absent = [m for m in meetings if m not in loaded]
    if absent:
        raise BenchDataError(f"{data_dir}/{split} holds no meeting {', '.join(absent)}")
    counting = _CountingChat(chat)
    ledger = LLMLedger(counting, chunk_words=10_000)
    arms = ("rules", "rules_plus_model")
    totals = {arm: {kind: dict.fromkeys(("extracted", "gold", "gold_with_evidence", "evidence_items_matched",
                                         "evidence_gold_matched", "text_items_matched", "text_gold_matched"), 0)
                    for kind in _KINDS} for arm in arms}
    subset: list[dict[str, Any]] = []
    rejected = added = 0
    speech_seconds = rules_seconds = model_seconds = 0.0
    for meeting_id in meetings:
        meeting = loaded[meeting_id]
        gold_all = _gold(meeting)
        segments = model_window(ami_segments(meeting), gold_all, window)
        ids = {s.segment_id for s in segments}
        gold = {kind: [g for g in items if ids & set(g["evidence_da_ids"])] for kind, items in gold_all.items()}
        t0 = time.perf_counter()
        rules = extract_ledger(segments)
        t1 = time.perf_counter()
        try:
            merged, notes = ledger.extract(segments, meeting_date=None, rules=rules)
        except Exception as exc:  # the ledger keeps the rules on a failed call; anything else is a bench error
            raise BenchDataError(f"the model pass failed on {meeting_id}: {exc}") from exc
        t2 = time.perf_counter()
        failed = [n for n in notes if n.startswith("llm ledger not used")]
        if failed:
            raise BenchDataError(f"the model pass failed on {meeting_id}: {failed[0]}")
        rules_seconds += t1 - t0
        model_seconds += t2 - t1
        span = segments[-1].end - segments[0].start if segments else 0.0
        speech_seconds += span
        new = [it for it in merged if it.origin == "llm"]
        added += len(new)
        rejected += len(notes)
        row: dict[str, Any] = {"meeting": meeting_id, "first_act": segments[0].segment_id,
                               "last_act": segments[-1].segment_id, "acts": len(segments),
                               "start": round(segments[0].start, 1), "end": round(segments[-1].end, 1),
                               "gold_todos": len(gold["todo"]), "gold_decisions": len(gold["decision"]),
                               "model_items_kept": len(new), "model_items_rejected": len(notes),
                               "model_seconds": round(t2 - t1, 1),
                               "model_items": [{"kind": it.kind, "text": it.text, "cite": list(it.source.segment_ids)}
                                               for it in new if it.kind in _KINDS]}
        for arm, items in (("rules", rules), ("rules_plus_model", merged)):
            for kind in _KINDS:
                counts = match_counts([it for it in items if it.kind == kind], gold[kind])
                for name, value in counts.items():
                    totals[arm][kind][name] += value
        subset.append(row)
        if progress:
            progress(f"{meeting_id}: acts {row['first_act']}..{row['last_act']}, {len(new)} model items kept, "
                     f"{len(notes)} rejected, {t2 - t1:.0f} s")
    hours = speech_seconds / 3600
    report: dict[str, Any] = {
        "benchmark": "ami_ledger_model",
        "split": split,
        "model": model_name,
        "subset": f"one {window}-act window in each of {', '.join(meetings)} (the tile with the most gold "
                  "evidence acts)",
        "windows": subset,
        "match": {"evidence": "the item's cited segments overlap the gold sentence's evidence_da_ids",
                  "text": f"content-word token F1 >= {TEXT_F1_THRESHOLD} with the gold sentence, same meeting"},
        "averaging": "micro (counts pooled over windows)",
    }
    for arm in arms:
        report[arm] = {"todos": figures(totals[arm]["todo"]), "decisions": figures(totals[arm]["decision"])}
    verdict: dict[str, dict[str, bool]] = {}
    for kind in ("todos", "decisions"):
        for criterion in ("evidence", "text"):
            r, m = report["rules"][kind][criterion], report["rules_plus_model"][kind][criterion]
            verdict.setdefault(kind, {})[criterion] = all(
                m[k] is not None and (r[k] is None or m[k] > r[k]) for k in ("precision", "recall"))
    report["model_beats_rules_on_precision_and_recall"] = verdict
    report["model_items_kept"] = added
    report["model_items_rejected"] = rejected
    report["model_calls"] = counting.calls
    report["prompt_tokens"] = counting.prompt_tokens
    report["completion_tokens"] = counting.completion_tokens
    report["speech_hours"] = round(hours, 4)
    report["rules_seconds"] = round(rules_seconds, 2)
    report["model_seconds"] = round(model_seconds, 1)
    report["rules_seconds_per_meeting_hour"] = round(rules_seconds / hours, 2) if hours else None
    report["model_seconds_per_meeting_hour"] = round(model_seconds / hours, 1) if hours else None
    return report


def _run_model_command(args: argparse.Namespace) -> dict[str, Any]:
    """Start the local model's server (or use the given endpoint) and run `run_model_pass`."""
    from contextlib import ExitStack

    from meetmem.summarizers.errors import ChatError
    from meetmem.summarizers.llm.chat import OpenAIChat

    meetings = ([m.strip() for m in args.meetings.split(",") if m.strip()] if args.meetings
                else list(MODEL_SUBSET))
    if args.limit:
        meetings = meetings[: args.limit]

    def progress(line: str) -> None:
        sys.stderr.write(f"bench ledger: {line}\n")
        sys.stderr.flush()

    with ExitStack() as stack:
        try:
            if args.model:
                from meetmem.summarizers.llm.llama_server import LlamaServer
                from meetmem.summarizers.llm.local_model import LOCAL_MODELS, local_model_path

                if args.model not in LOCAL_MODELS:
                    raise BenchDataError(f"unknown local model {args.model!r}: choose {', '.join(LOCAL_MODELS)}")
                path = local_model_path(LOCAL_MODELS[args.model])
                progress(f"starting the llama.cpp server on {path} ({args.threads} thread(s))")
                server = stack.enter_context(LlamaServer(path, n_ctx=args.n_ctx, n_threads=args.threads,
                                                         startup_timeout=300))
                chat = OpenAIChat(server.url, server.model, timeout=args.llm_timeout, max_tokens=args.max_tokens)
                name = args.model
            else:
                if not args.llm_model:
                    raise BenchDataError("--llm-url needs --llm-model (the model name the endpoint knows)")
                import os

                chat = OpenAIChat(args.llm_url, args.llm_model, api_key=os.environ.get("MEETMEM_LLM_API_KEY"),
                                  timeout=args.llm_timeout, max_tokens=args.max_tokens)
                name = f"{args.llm_model} at {args.llm_url}"
        except ChatError as exc:
            raise BenchDataError(str(exc)) from exc
        t0 = time.perf_counter()
        report = run_model_pass(Path(args.data), args.split, chat=chat, model_name=name, meetings=meetings,
                                window=args.window, progress=progress)
        report["wall_seconds"] = round(time.perf_counter() - t0, 1)
        if args.model:
            report["threads"] = args.threads
            report["server_started_in_seconds"] = round(server.started_in or 0.0, 1)
        return report


def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.model or args.llm_url:
        report = _run_model_command(args)
        emit_figures(report, as_json=args.json)
        return 0
    meetings = [m.strip() for m in args.meetings.split(",") if m.strip()] if args.meetings else None
    extractors = ("rules", "detector", "combined") if args.ledger == "all" else (args.ledger,)
    report = run(Path(args.data), args.split, limit=args.limit, meetings=meetings, half=args.half,
                 extractors=extractors)
    if not args.per_meeting:
        report.pop("per_meeting", None)
        for name in extractors:
            if isinstance(report.get(name), dict):
                report[name].pop("per_meeting", None)
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "ledger", parents=flags(JSON), help="the ledger's todos and decisions on AMI (rules, learned detector, both)",
        description="Run the rule-based ledger on AMI meetings (dialogue acts as segments) and score its todos "
                    "and decisions against the human action items and decisions: precision and recall by "
                    "evidence overlap and by text similarity. With --model or --llm-url, rules alone and rules "
                    "plus the vetted model pass on fixed windows, in the same run. The figures on stdout (one "
                    "JSON object with --json).")
    p.add_argument("--data", required=True, metavar="DIR", help="the AMI folder (<split>/*.json)")
    p.add_argument("--split", default="dev", help="the split to score (default dev)")
    p.add_argument("--meetings", default=None, metavar="ID,ID", help="only these meetings (quick checks)")
    p.add_argument("--limit", type=int, default=None, help="only the first N meetings (quick checks)")
    p.add_argument("--per-meeting", action="store_true", help="include each meeting's counts")
    p.add_argument("--half", default="all", choices=("tune", "report", "all"),
                   help="the half of AMI dev by series (the detector was trained and chosen on tune; default all)")
    p.add_argument("--ledger", default="rules", choices=("rules", "detector", "combined", "all"),
                   help="the ledger to score: the rules alone (default), the learned detector, their combination "
                        "(the service's default), or all three side by side")
    m = p.add_argument_group(
        "model pass", "score rules alone vs rules + the vetted model pass, in one run, on one --window of acts "
        f"per meeting of a fixed subset (default {','.join(MODEL_SUBSET)}; --meetings replaces it)")
    which = m.add_mutually_exclusive_group()
    which.add_argument("--model", default=None, metavar="NAME",
                       help="a local model run by the llama.cpp server: local-qwen (extra local-model)")
    which.add_argument("--llm-url", default=None, metavar="URL",
                       help="an OpenAI-compatible endpoint (key from MEETMEM_LLM_API_KEY), with --llm-model")
    m.add_argument("--llm-model", default=None, metavar="NAME", help="the model name the endpoint knows")
    m.add_argument("--window", type=int, default=MODEL_WINDOW, help=f"acts per window (default {MODEL_WINDOW})")
    m.add_argument("--threads", type=int, default=1,
                   help="the local model's inference threads (default 1: on a busy machine 2 run slower)")
    m.add_argument("--n-ctx", type=int, default=4096, help="the local model's context window (default 4096)")
    m.add_argument("--max-tokens", type=int, default=768, help="cap on each reply's tokens (default 768)")
    m.add_argument("--llm-timeout", type=float, default=900.0, help="seconds per model call (default 900)")
    p.set_defaults(func=guarded(run_command))
