"""`meetmem bench summaries-ami`: L1 and L2 summaries against what AMI's annotators wrote down.

Each AMI meeting's dialogue acts become segments (`ami_ledger.ami_segments`: id, speaker, times and words;
dialogue-act types are never read), cut into topic sections once (`summarizers.sections.TopicSegmenter` on
all-MiniLM-L6-v2 vectors, or on pauses alone with `--sections pauses`), and the same sections go to every
arm:

- `extractive`: today's default summarizer (SumBasic over verbatim sentences);
- `learned`: `summary_learned.LearnedSummarizer` with the shipped head;
- `lead`: the meeting's first utterances, as said, up to the learned summary's word count (L1 and L2 each).

Figures per arm, for L1 (every section's lines) and L2 apart:
- `cited`: precision and recall of the utterances the lines cite against the meeting's
  `extractive_summary_da_ids` (the utterances annotators chose);
- `rouge`: ROUGE-1, ROUGE-2 and ROUGE-L F (rouge-score, Porter stemming) of the lines joined against the
  abstract's sentences joined ("NA." skipped);
- `micro` pools counts over meetings (cited utterances; n-gram and LCS overlaps), `macro` averages the
  meetings' figures;
- lines ending mid-clause (`summary_learned.ends_mid_clause`), duplicate lines (the same words, or one
  line's content words nearly all in another's: `NEAR_DUPLICATE`), mean words per line, and seconds per
  hour of meeting. The learned arm's seconds include embedding the utterances (the sections reuse those
  vectors); the section cut itself is timed apart.

The halves are `eval.training.ami_split`'s: the head and the summarizer's settings were chosen on `tune`;
`report` is for the figures.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.cli.options import JSON, QUIET, flags
from meetmem.cli.output import emit_figures

from ..harness import BenchDataError, guarded
from .ami_ledger import ami_segments, load_meetings

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext
    from meetmem.store.records import Section, Segment, SummaryLine

ARMS = ("extractive", "learned", "lead")
#: Two lines are near duplicates when this share of the shorter one's content words is in the other.
NEAR_DUPLICATE = 0.8
_ROUGE = ("rouge1", "rouge2", "rougeL")


def abstract_text(meeting: dict[str, Any]) -> str:
    """The meeting's abstract, its sentences joined ("NA." skipped)."""
    sentences = (meeting.get("abstractive_summary") or {}).get("abstract") or []
    return " ".join(s["text"].strip() for s in sentences if s["text"].strip() and s["text"].strip() != "NA.")


def lead_lines(segments: Sequence[Segment], words: int) -> tuple[SummaryLine, ...]:
    """The meeting's first utterances, one line each as said, until they hold `words` words."""
    from meetmem.store.records import Source, SummaryLine

    out: list[SummaryLine] = []
    total = 0
    for segment in segments:
        if total >= words:
            break
        out.append(SummaryLine(segment.text, Source.of([segment])))
        total += len(segment.text.split())
    return tuple(out)


def cut(segments: Sequence[Segment], vectors: Sequence[Any] | None) -> list[Section]:
    """The meeting's topic sections (closed at its end), on the vectors or on pauses alone."""
    from meetmem.summarizers.sections import cut_sections

    sections, _ = cut_sections(segments, vectors if vectors is not None else [None] * len(segments), final=True)
    return sections


class _Tally:
    """One arm's counts at one level (L1 or L2), pooled and per meeting."""

    def __init__(self) -> None:
        self.cited = self.cited_gold = self.gold = 0
        self.lines = self.words = self.mid_clause = self.duplicates = self.near_duplicates = 0
        self.rouge_overlap = dict.fromkeys(_ROUGE, 0)
        self.rouge_pred = dict.fromkeys(_ROUGE, 0)
        self.rouge_ref = dict.fromkeys(_ROUGE, 0)
        self.per_meeting: dict[str, dict[str, Any]] = {}

    def add(self, meeting_id: str, lines: Sequence[SummaryLine], gold: set[str], abstract: str,
            rouge: Any, tokenizer: Any) -> None:
        from meetmem.summarizers.summary_learned import content_words, ends_mid_clause, same_thing

        cited = {sid for line in lines for sid in line.source.segment_ids}
        hit = len(cited & gold)
        self.cited += len(cited)
        self.cited_gold += hit
        self.gold += len(gold)
        texts = [line.text for line in lines]
        self.lines += len(texts)
        self.words += sum(len(t.split()) for t in texts)
        self.mid_clause += sum(1 for t in texts if ends_mid_clause(t))
        seen: list[str] = []
        said: list[frozenset[str]] = []
        for text in texts:
            key = " ".join(text.casefold().split()).rstrip(".!?")
            words = content_words(text)
            if key in seen:
                self.duplicates += 1
            if any(same_thing(words, w, overlap=NEAR_DUPLICATE) for w in said if words and w):
                self.near_duplicates += 1
            seen.append(key)
            said.append(words)
        row: dict[str, Any] = {"lines": len(texts), "words": sum(len(t.split()) for t in texts),
                               "cited": len(cited), "cited_gold": hit, "gold": len(gold),
                               "precision": _ratio(hit, len(cited)), "recall": _ratio(hit, len(gold))}
        if abstract:
            summary = " ".join(texts)
            scores = rouge.score(abstract, summary)
            tokens_ref = tokenizer.tokenize(abstract)
            tokens_pred = tokenizer.tokenize(summary)
            for key in _ROUGE:
                n = 1 if key == "rougeL" else int(key[-1])
                ref = max(0, len(tokens_ref) - n + 1)
                pred = max(0, len(tokens_pred) - n + 1)
                self.rouge_overlap[key] += round(scores[key].recall * ref)
                self.rouge_ref[key] += ref
                self.rouge_pred[key] += pred
                row[key] = round(scores[key].fmeasure, 4)
        self.per_meeting[meeting_id] = row

    def figures(self) -> dict[str, Any]:
        rows = list(self.per_meeting.values())

        def mean(key: str) -> float | None:
            values = [r[key] for r in rows if r.get(key) is not None]
            return round(sum(values) / len(values), 4) if values else None

        micro_rouge = {}
        for key in _ROUGE:
            p = self.rouge_overlap[key] / self.rouge_pred[key] if self.rouge_pred[key] else 0.0
            r = self.rouge_overlap[key] / self.rouge_ref[key] if self.rouge_ref[key] else 0.0
            micro_rouge[key] = round(2 * p * r / (p + r), 4) if p + r else 0.0
        return {
            "cited": {"micro": {"precision": _ratio(self.cited_gold, self.cited),
                                "recall": _ratio(self.cited_gold, self.gold)},
                      "macro": {"precision": mean("precision"), "recall": mean("recall")}},
            "rouge_f": {"micro": micro_rouge, "macro": {key: mean(key) for key in _ROUGE}},
            "lines": self.lines,
            "lines_ending_mid_clause": self.mid_clause,
            "duplicate_lines": self.duplicates,
            "near_duplicate_lines": self.near_duplicates,
            "mean_line_words": round(self.words / self.lines, 1) if self.lines else None,
            "words_per_meeting": round(self.words / len(rows), 1) if rows else None,
        }


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def run(data_dir: Path, split: str = "dev", *, half: str = "report", meetings: Sequence[str] | None = None,
        limit: int | None = None, sections: str = "minilm", scorer: Any = None,
        progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Score the three arms on the half's AMI meetings; returns the JSON report.

    Args:
        half: `tune`, `report` or `all` of AMI dev, split by series (`eval.training.ami_split`).
        sections: `minilm` (topic turns and pauses) or `pauses` (pauses and length alone).
        scorer: the learned arm's utterance scorer (`UtteranceScorer` with the shipped head when not given).
        progress: a callable taking one line, for progress on stderr.
    """
    from rouge_score import rouge_scorer, tokenizers

    from meetmem.summarizers.extractive import ExtractiveSummarizer
    from meetmem.summarizers.ledger_learned import UtteranceScorer
    from meetmem.summarizers.summary_learned import LearnedSummarizer

    from ..training.ami_split import in_half

    if sections not in ("minilm", "pauses"):
        raise BenchDataError(f"unknown sections {sections!r}: choose minilm or pauses")
    loaded = [m for m in load_meetings(Path(data_dir), split) if in_half(m["meeting_id"], half)]
    if meetings:
        wanted = set(meetings)
        loaded = [m for m in loaded if m["meeting_id"] in wanted]
    loaded = [m for m in loaded if m.get("dialogue_acts")]
    if limit:
        loaded = loaded[:limit]
    if not loaded:
        raise BenchDataError(f"no AMI meeting of {data_dir}/{split} with dialogue acts is in the {half} half "
                             "with those filters")
    scorer = scorer or UtteranceScorer()
    summarizers = {"extractive": ExtractiveSummarizer(), "learned": LearnedSummarizer(scorer)}
    tokenizer = tokenizers.DefaultTokenizer(use_stemmer=True)
    rouge = rouge_scorer.RougeScorer(list(_ROUGE), tokenizer=tokenizer)
    tallies = {arm: {"l1": _Tally(), "l2": _Tally()} for arm in ARMS}
    seconds = dict.fromkeys(ARMS, 0.0)
    embed_seconds = cut_seconds = hours = 0.0
    n_sections = n_segments = 0
    for number, meeting in enumerate(loaded, 1):
        meeting_id = meeting["meeting_id"]
        segments = ami_segments(meeting)
        if not segments:
            continue
        by_id = {s.segment_id: s for s in segments}
        gold = set(meeting.get("extractive_summary_da_ids") or ())
        abstract = abstract_text(meeting)
        span = (segments[-1].end - segments[0].start) / 3600
        hours += span
        n_segments += len(segments)
        vectors = None
        if sections == "minilm":
            t0 = time.perf_counter()
            vectors = list(scorer.vectors([s.text for s in segments]))
            embed_seconds += time.perf_counter() - t0
        t0 = time.perf_counter()
        cut_here = cut(segments, vectors)
        cut_seconds += time.perf_counter() - t0
        n_sections += len(cut_here)
        made: dict[str, tuple[tuple[SummaryLine, ...], tuple[SummaryLine, ...]]] = {}
        for arm, summarizer in summarizers.items():
            t0 = time.perf_counter()
            l1 = [summarizer.summarize_section(section, [by_id[i] for i in section.segment_ids])
                  for section in cut_here]
            l2 = summarizer.summarize_meeting(l1, by_id)
            seconds[arm] += time.perf_counter() - t0
            if arm == "learned":
                notes = [n for n in [*(s.note for s in l1), summarizer.last_l2_note]
                         if n and n.startswith("learned summary not used")]
                if notes:
                    raise BenchDataError(f"the learned summarizer fell back on {meeting_id}: {notes[0]}")
            made[arm] = (tuple(line for s in l1 for line in s.lines), tuple(l2))
        learned_l1, learned_l2 = made["learned"]
        made["lead"] = (lead_lines(segments, sum(len(line.text.split()) for line in learned_l1)),
                        lead_lines(segments, sum(len(line.text.split()) for line in learned_l2)))
        for arm in ARMS:
            for level, lines in zip(("l1", "l2"), made[arm], strict=True):
                tallies[arm][level].add(meeting_id, lines, gold, abstract, rouge, tokenizer)
        if progress:
            progress(f"{number}/{len(loaded)} {meeting_id}: {len(cut_here)} sections, "
                     + ", ".join(f"{arm} L1 {len(made[arm][0])} lines" for arm in ARMS))
    seconds["learned"] += embed_seconds
    report: dict[str, Any] = {
        "benchmark": "ami_summaries",
        "split": split,
        "half": half,
        "meetings": len(loaded),
        "meetings_with_abstract": sum(1 for m in loaded if abstract_text(m)),
        "segments": n_segments,
        "speech_hours": round(hours, 2),
        "sections": {"cut_on": sections, "count": n_sections,
                     "per_meeting": round(n_sections / len(loaded), 2),
                     "cut_seconds": round(cut_seconds, 2), "embedding_seconds": round(embed_seconds, 1)},
        "learned_version": summarizers["learned"].version,
        "gold": {"cited": "extractive_summary_da_ids (the utterances annotators chose)",
                 "rouge": "abstractive_summary.abstract sentences joined; rouge-score F, Porter stemming"},
        "averaging": "micro: counts pooled over meetings; macro: mean of the meetings' figures",
    }
    for arm in ARMS:
        report[arm] = {level: tallies[arm][level].figures() for level in ("l1", "l2")}
        report[arm]["seconds"] = round(seconds[arm], 2) if arm != "lead" else None
        report[arm]["seconds_per_meeting_hour"] = (round(seconds[arm] / hours, 2)
                                                   if arm != "lead" and hours else None)
    report["per_meeting"] = {arm: {level: tallies[arm][level].per_meeting for level in ("l1", "l2")}
                             for arm in ARMS}
    learned = report["learned"]
    report["targets"] = {
        level: {"precision_at_least_0_6": (learned[level]["cited"]["micro"]["precision"] or 0) >= 0.6,
                "rouge2_beats_extractive": learned[level]["rouge_f"]["micro"]["rouge2"]
                > report["extractive"][level]["rouge_f"]["micro"]["rouge2"],
                "rouge2_beats_lead": learned[level]["rouge_f"]["micro"]["rouge2"]
                > report["lead"][level]["rouge_f"]["micro"]["rouge2"]}
        for level in ("l1", "l2")
    }
    return report


def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..harness import progress_note

    meetings = [m.strip() for m in args.meetings.split(",") if m.strip()] if args.meetings else None
    report = run(Path(args.data), args.split, half=args.half, meetings=meetings, limit=args.limit,
                 sections=args.sections, progress=lambda line: progress_note(ctx, f"bench summaries-ami: {line}"))
    if not args.per_meeting:
        report.pop("per_meeting", None)
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "summaries-ami", parents=flags(JSON, QUIET),
        help="L1/L2 summaries on AMI (extractive, learned, lead-N): cited-utterance precision/recall and ROUGE",
        description="Summarize AMI meetings (dialogue acts as segments, the same topic sections for every arm) "
                    "with today's extractive summarizer, the learned one and a lead-N baseline, and score the "
                    "utterances each summary cites against the annotators' extractive summary and its text "
                    "against the abstract (ROUGE-1/2/L F), micro and macro. The figures on stdout (one JSON "
                    "object with --json).")
    p.add_argument("--data", required=True, metavar="DIR", help="the AMI folder (<split>/*.json)")
    p.add_argument("--split", default="dev", help="the split to score (default dev)")
    p.add_argument("--half", default="report", choices=("tune", "report", "all"),
                   help="the half of AMI dev by series (the learned summarizer was chosen on tune; default report)")
    p.add_argument("--meetings", default=None, metavar="ID,ID", help="only these meetings (quick checks)")
    p.add_argument("--limit", type=int, default=None, help="only the first N meetings (quick checks)")
    p.add_argument("--sections", default="minilm", choices=("minilm", "pauses"),
                   help="cut sections on MiniLM topic turns and pauses (default) or on pauses alone")
    p.add_argument("--per-meeting", action="store_true", help="include each meeting's figures")
    p.set_defaults(func=guarded(run_command))
