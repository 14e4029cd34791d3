"""`meetmem bench locomo`: evidence recall on LoCoMo's long conversations, each conversation one meeting.

LoCoMo (Maharana et al., ACL 2024) holds two-person conversations over many sessions, each session dated,
each turn with a `dia_id` such as `D3:7`, and questions whose `evidence` names the turns that answer them.
Every conversation is appended to a fresh SQLite log as one meeting, one segment per turn in order (speaker
= the turn's speaker, text = the turn's text, `seq` = the turn's position in the conversation), then each
question is put to:

* `ask`: meetmem's `Answerer.ask` (hybrid search and the sentence reranker; no language model), its
  citations in the order it returns them (at most 10);
* `bm25`, `dense`, `hybrid`: `TranscriptSearch.search` in that mode alone, the first 10 hits.

Evidence recall@k = the share of a question's evidence turns among the first k results; `any@k` = at least
one of them is. Means over questions, per category and over the answerable categories 1-4 (1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop). Category 5 (adversarial: the conversation does not hold the asked
fact, though its evidence names the turns the question was built from) is reported on its own and left out
of the overall figures. Evidence ids are split on `;`, `,` and spaces (one id in the published file reads
`D8:6; D9:17`); an id naming no turn is counted and dropped, and a question left with no evidence is not
scored. With `errata` (`--errata FILE`: the third-party audit `locomo_audit_errors_dev.json`, unverified),
the same rankings are also scored against the audit's corrected evidence (`answerable_errata`).

Time: a segment's `start` is seconds from its meeting's start, and the log refuses a time more than a week
after it (`store.interchange.MAX_TIMESTAMP_S`), while a LoCoMo conversation spans months. So the meeting
starts at the first session's date-time, each turn lasts its words at `WORDS_PER_SECOND` (at least
`MIN_TURN_S`), a session follows the previous one after `SESSION_GAP_S`, and the real date-time of every
session is kept beside its start on the meeting's clock (`sessions` in the result), so a segment's wall-clock
time is its session's date-time plus its offset into the session. Nothing in retrieval reads the times.

Images: some turns share a photo; the published file gives a machine caption (`blip_caption`). A meeting
transcript holds what was said, so captions are left out unless `captions=True` (`--captions`), which
appends `[shares a photo: CAPTION]` to the turn's text. About a third of the evidence turns carry a photo, and
some say no more than "look at this" without their caption.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meetmem.cli.options import JSON, MODEL, QUIET, flags
from meetmem.cli.output import emit_figures

from ..harness import PARTS, BenchDataError, RunClock, base_options, guarded, in_part, options_public

if TYPE_CHECKING:
    from meetmem.cli.context import CommandContext
    from meetmem.store.index.embedder_routes import EmbedderRoutes
    from meetmem.store.index.embedders import Embedder
    from meetmem.store.index.search_types import SearchOptions
    from meetmem.store.records import SegmentInput

#: The published development file in ../shared/data/locomo.
DEFAULT_FILE = "locomo10_dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "unanswerable"}
#: Categories in the overall figures: 5 asks for what the conversation does not hold.
ANSWERABLE = (1, 2, 3, 4)
KS = (5, 10)
METHODS = ("ask", "bm25", "dense", "hybrid")
LOCOMO_DEVICE = "locomo"
#: A typical conversational speaking rate (150 words a minute), for the turns' durations.
WORDS_PER_SECOND = 2.5
MIN_TURN_S = 1.0
SESSION_GAP_S = 600.0
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class LocomoTurn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None


@dataclass(frozen=True)
class LocomoSession:
    number: int
    date_time: datetime
    turns: tuple[LocomoTurn, ...]


@dataclass(frozen=True)
class LocomoQuestion:
    question: str
    category: int
    evidence: tuple[str, ...]
    unknown_evidence: tuple[str, ...]


@dataclass(frozen=True)
class LocomoConversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[LocomoSession, ...]
    questions: tuple[LocomoQuestion, ...]


def parse_date_time(text: str) -> datetime:
    """A LoCoMo session date-time such as `1:56 pm on 8 May, 2023`."""
    try:
        return datetime.strptime(text.strip(), _DATE_FORMAT)
    except ValueError:
        raise BenchDataError(f"unreadable LoCoMo session date-time {text!r}") from None


def load_locomo(path: Path) -> list[LocomoConversation]:
    """The conversations of a LoCoMo file (or of `DEFAULT_FILE` in a folder), sessions in order."""
    path = Path(path)
    if path.is_dir():
        path = path / DEFAULT_FILE
    if not path.is_file():
        raise BenchDataError(f"no LoCoMo file at {path}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchDataError(f"{path} is not JSON: {exc}") from None
    if not isinstance(raw, list):
        raise BenchDataError(f"{path}: expected a list of conversations")
    out = []
    for item in raw:
        try:
            out.append(_conversation(item))
        except (KeyError, TypeError, ValueError) as exc:
            raise BenchDataError(f"{path}: conversation {item.get('sample_id', '?')!r} is malformed: {exc!r}") from None
    return out


def _conversation(item: dict[str, Any]) -> LocomoConversation:
    conv = item["conversation"]
    sessions = []
    for key in conv:
        match = _SESSION_KEY.match(key)
        if not match or not conv[key]:
            continue
        number = int(match.group(1))
        turns = tuple(LocomoTurn(t["dia_id"], t["speaker"], (t.get("text") or "").strip(),
                                 (t.get("blip_caption") or "").strip() or None) for t in conv[key])
        sessions.append(LocomoSession(number, parse_date_time(conv[f"session_{number}_date_time"]), turns))
    sessions.sort(key=lambda s: s.number)
    if not sessions:
        raise ValueError("no sessions")
    known = {t.dia_id for s in sessions for t in s.turns}
    questions = []
    for qa in item.get("qa", []):
        ids = [part for e in qa.get("evidence") or [] for part in _EVIDENCE_SPLIT.split(str(e)) if part]
        questions.append(LocomoQuestion(qa["question"], int(qa["category"]),
                                        tuple(dict.fromkeys(i for i in ids if i in known)),
                                        tuple(i for i in ids if i not in known)))
    return LocomoConversation(item["sample_id"], (conv["speaker_a"], conv["speaker_b"]), tuple(sessions),
                              tuple(questions))


def load_errata(path: Path) -> dict[str, tuple[str, ...]]:
    """Corrected evidence from the third-party audit file (`locomo_audit_errors_dev.json`), by question text:
    only the entries whose `correct_evidence` differs from the published `cited_evidence`."""
    try:
        entries = json.loads(Path(path).read_text(encoding="utf-8"))
        return {e["question"]: tuple(e["correct_evidence"]) for e in entries
                if e.get("correct_evidence") is not None and list(e["correct_evidence"]) != list(e["cited_evidence"])}
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise BenchDataError(f"cannot read the LoCoMo errata {path}: {exc!r}") from None


def with_errata(conversation: LocomoConversation, corrected: dict[str, tuple[str, ...]]) -> list[LocomoQuestion]:
    """The conversation's questions with the audit's evidence where it names one (turns the conversation has)."""
    known = {t.dia_id for s in conversation.sessions for t in s.turns}
    out = []
    for q in conversation.questions:
        if q.question in corrected:
            ids = [part for e in corrected[q.question] for part in _EVIDENCE_SPLIT.split(str(e)) if part]
            q = LocomoQuestion(q.question, q.category, tuple(dict.fromkeys(i for i in ids if i in known)),
                               tuple(i for i in ids if i not in known))
        out.append(q)
    return out


def turn_text(turn: LocomoTurn, *, captions: bool) -> str:
    """What the segment says: the turn's words, and its photo's caption when `captions`."""
    if captions and turn.caption:
        return f"{turn.text} [shares a photo: {turn.caption}]".strip()
    return turn.text


def conversation_segments(conversation: LocomoConversation, *, captions: bool = False
                          ) -> tuple[list[SegmentInput], list[str], list[dict[str, Any]]]:
    """The conversation as segments in order (`seq` = position), the dia_id of each, and its session table.

    A turn with no text (and no caption used) is left out. Session table rows: `session`, `date_time`
    (ISO), `start_s` and `end_s` on the meeting's clock, `turns`.
    """
    from meetmem.store.interchange import validate_segment

    segments: list[SegmentInput] = []
    dia_ids: list[str] = []
    table: list[dict[str, Any]] = []
    clock = 0.0
    seq = 0
    for number, session in enumerate(conversation.sessions):
        if number:
            clock += SESSION_GAP_S
        session_start = clock
        for turn in session.turns:
            text = turn_text(turn, captions=captions)
            if not text:
                continue
            seconds = max(MIN_TURN_S, len(text.split()) / WORDS_PER_SECOND)
            obj = {"start": round(clock, 3), "end": round(clock + seconds, 3), "text": text, "speaker": turn.speaker,
                   "lang": "en"}
            segments.append(validate_segment(obj, seq))
            dia_ids.append(turn.dia_id)
            seq += 1
            clock += seconds
        table.append({"session": session.number, "date_time": session.date_time.isoformat(timespec="minutes"),
                      "start_s": round(session_start, 3), "end_s": round(clock, 3), "turns": len(session.turns)})
    return segments, dia_ids, table


@dataclass
class _Scores:
    """Per-question ranked dia_ids of one method."""

    ranked: list[list[str]] = field(default_factory=list)
    seconds: float = 0.0


def evidence_recall(evidence: Sequence[str], ranked: Sequence[str], k: int) -> tuple[float, float]:
    top = set(ranked[:k])
    found = sum(1 for e in evidence if e in top)
    return found / len(evidence), 1.0 if found else 0.0


def _figures(rows: Sequence[tuple[LocomoQuestion, int]], ranked: Sequence[Sequence[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows)}
    for k in KS:
        pairs = [evidence_recall(q.evidence, r, k) for (q, _n), r in zip(rows, ranked, strict=True)]
        out[f"recall@{k}"] = round(sum(p[0] for p in pairs) / len(pairs), 4) if pairs else None
        out[f"any@{k}"] = round(sum(p[1] for p in pairs) / len(pairs), 4) if pairs else None
    # Of every result returned (at most the largest k): how many, and the share that is evidence.
    counts = [len(r) for r in ranked]
    shares = [sum(1 for x in r if x in set(q.evidence)) / len(r) if r else 0.0
              for (q, _n), r in zip(rows, ranked, strict=True)]
    out["results"] = round(sum(counts) / len(counts), 2) if counts else None
    out["precision"] = round(sum(shares) / len(shares), 4) if shares else None
    return out


def _random(rows: Sequence[tuple[LocomoQuestion, int]]) -> dict[str, Any]:
    """Expected recall@k of k turns drawn at random from the question's meeting."""
    return {f"recall@{k}": round(sum(min(1.0, k / n) for _q, n in rows) / len(rows), 4) if rows else None
            for k in KS}


def _grouped(rows: Sequence[tuple[LocomoQuestion, int]], ranked: Sequence[Sequence[str]],
             figures: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    def pick(keep: Callable[[LocomoQuestion], bool]) -> tuple[list[tuple[LocomoQuestion, int]], list[Sequence[str]]]:
        idx = [i for i, (q, _n) in enumerate(rows) if keep(q)]
        return [rows[i] for i in idx], [ranked[i] for i in idx]

    return {
        "answerable": figures(*pick(lambda q: q.category in ANSWERABLE)),
        "by_category": {f"{c} {name}": figures(*pick(lambda q, c=c: q.category == c))
                        for c, name in CATEGORIES.items() if any(q.category == c for q, _n in rows)},
    }


def evaluate_locomo(data: Path, *, embedder: Embedder | EmbedderRoutes | None, captions: bool = False,
                    conversations: Sequence[str] | None = None, errata: Path | None = None,
                    db_path: Path | None = None, part: str = "all", search_options: SearchOptions | None = None,
                    progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Evidence recall@5 and @10 of `ask`, BM25, dense and hybrid search on LoCoMo's conversations.

    Args:
        data: a LoCoMo JSON file, or a folder holding `DEFAULT_FILE`.
        embedder: the dense model or the embedder routes; None for BM25 alone (no dense or hybrid rows).
        captions: append each shared photo's caption to its turn's text.
        conversations: only these sample ids (quick checks).
        errata: the audit file; when given, every method is also scored against its corrected evidence
            (`answerable_errata`), from the same rankings.
        db_path: a new database file to keep the log in (default: a temporary one).
        part: `all`, or the half of the questions (`tune` / `report`: `retrieval.dev_part` of the sample id
            and the question) to score.
        search_options: the search's options (default: `SearchOptions()`).
        progress: called with a line of progress for a person, if given.

    Returns:
        The figures; see the module docstring.
    """
    from meetmem.answers.pipeline import Answerer
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog

    say = progress or (lambda _line: None)
    clock = RunClock()
    loaded = load_locomo(Path(data))
    corrected = load_errata(errata) if errata is not None else None
    if conversations:
        wanted = set(conversations)
        loaded = [c for c in loaded if c.sample_id in wanted]
        if not loaded:
            raise BenchDataError(f"none of {', '.join(sorted(wanted))} is in {data}")
    if db_path is not None and Path(db_path).exists():
        raise BenchDataError(f"{db_path} exists; the benchmark needs a new database")
    dense = embedder is not None
    methods = [m for m in METHODS if dense or m not in ("dense", "hybrid")]
    scores = {m: _Scores() for m in methods}
    rows: list[tuple[LocomoQuestion, int]] = []
    errata_rows: list[tuple[LocomoQuestion, int]] = []  # the same questions, the audit's evidence
    unscored: list[dict[str, Any]] = []
    described: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-locomo-") as tmp, \
            TranscriptLog(Path(db_path) if db_path else Path(tmp) / "locomo.db") as log:
        search = TranscriptSearch(log, embedder, options=search_options)
        answerer = Answerer(search)
        for number, conv in enumerate(loaded, start=1):
            t = time.perf_counter()
            segments, dia_ids, sessions = conversation_segments(conv, captions=captions)
            log.append(conv.sample_id, LOCOMO_DEVICE, segments)
            log.close_meeting(conv.sample_id)
            dia_of = {s.segment_id: dia_ids[s.seq] for s in log.chain(conv.sample_id)}
            clock.add("ingest", time.perf_counter() - t)
            t = time.perf_counter()
            search.meeting_index(conv.sample_id)
            clock.add("index", time.perf_counter() - t)
            say(f"[{number}/{len(loaded)}] {conv.sample_id}: {len(segments)} turns in {len(conv.sessions)} sessions "
                f"indexed in {time.perf_counter() - t:.1f} s; {len(conv.questions)} questions ...")
            t = time.perf_counter()
            asked = 0
            audited = with_errata(conv, corrected) if corrected is not None else list(conv.questions)
            for q, fixed in zip(conv.questions, audited, strict=True):
                if not in_part(f"{conv.sample_id}:{q.question}", part):
                    continue
                if not q.evidence:
                    unscored.append({"sample_id": conv.sample_id, "question": q.question,
                                     "evidence_given": list(q.unknown_evidence)})
                    continue
                rows.append((q, len(segments)))
                errata_rows.append((fixed, len(segments)))
                asked += 1
                _ask_all(search, answerer, conv.sample_id, q.question, dia_of, scores)
            clock.add("questions", time.perf_counter() - t)
            described.append({"sample_id": conv.sample_id, "speakers": list(conv.speakers), "sessions": sessions,
                              "segments": len(segments), "questions": len(conv.questions), "scored": asked})
    wall = clock.report()
    return {
        "benchmark": "locomo",
        "data": str(data),
        "captions": captions,
        "part": part,
        "search_options": options_public(search.options),
        "query_adapter": search.query_adapters.versions() if search.query_adapters is not None else None,
        "timeline": "meeting start = first session's date-time; turns at the speaking rate, sessions "
                    f"{SESSION_GAP_S:g} s apart on the meeting's clock (a meeting spans at most a week); "
                    "each session's real date-time beside its start_s",
        "ks": list(KS),
        "conversations": described,
        "questions": {
            "total": sum(len(c.questions) for c in loaded),
            "scored": len(rows),
            "by_category": {f"{c} {name}": sum(1 for q, _n in rows if q.category == c)
                            for c, name in CATEGORIES.items()},
            "unscored_no_known_evidence": unscored,
            "unknown_evidence_ids": sorted({e for c in loaded for q in c.questions for e in q.unknown_evidence}),
        },
        "embedder": sorted(search.routes.by_name()) if search.routes is not None else [],
        "errata": None if corrected is None else {
            "file": str(errata), "entries_with_other_evidence": len(corrected),
            "questions_changed": sum(1 for (a, _n), (b, _m) in zip(rows, errata_rows, strict=True)
                                     if a.evidence != b.evidence)},
        "methods": {m: {**_grouped(rows, scores[m].ranked, _figures),
                        **({"answerable_errata": _errata_figures(errata_rows, scores[m].ranked)}
                           if corrected is not None else {}),
                        "ms_per_question": round(1000 * scores[m].seconds / max(1, len(rows)), 1)}
                    for m in methods},
        "random_baseline": _grouped(rows, [[] for _ in rows], lambda r, _ranked: _random(r)),
        "wall_time": wall,
    }


def _errata_figures(rows: Sequence[tuple[LocomoQuestion, int]], ranked: Sequence[Sequence[str]]) -> dict[str, Any]:
    """The answerable figures against the audit's evidence (a question it leaves without known evidence drops)."""
    keep = [i for i, (q, _n) in enumerate(rows) if q.category in ANSWERABLE and q.evidence]
    return _figures([rows[i] for i in keep], [ranked[i] for i in keep])


def _ask_all(search: Any, answerer: Any, meeting_id: str, question: str, dia_of: dict[str, str],
             scores: dict[str, _Scores]) -> None:
    """Put one question to every method; append each one's ranked dia_ids."""
    k = max(KS)
    t0 = time.perf_counter()
    answer = answerer.ask(meeting_id, question)
    scores["ask"].seconds += time.perf_counter() - t0
    scores["ask"].ranked.append([dia_of[c.segment_id] for c in answer.citations[:k]])
    vectors = None
    t0 = time.perf_counter()
    if "dense" in scores:
        vectors = search.encode_query(meeting_id, question)
    encode_s = time.perf_counter() - t0
    for mode in ("bm25", "dense", "hybrid"):
        if mode not in scores:
            continue
        t0 = time.perf_counter()
        hits = search.search(meeting_id, question, k=k, mode=mode, query_vectors=vectors)
        scores[mode].seconds += time.perf_counter() - t0 + (encode_s if mode != "bm25" else 0.0)
        scores[mode].ranked.append([dia_of[h.segment.segment_id] for h in hits])


# -- the CLI ----------------------------------------------------------------------------------------------------
def run_command(args: argparse.Namespace, ctx: CommandContext) -> int:
    from meetmem.cli.progress import note
    from meetmem.store.index.embedder_routes import embedder_routes

    s = ctx.settings
    say = None if ctx.quiet else note
    load_locomo(Path(args.data))  # a data error is reported before any model loads
    routes = embedder_routes(s.embedder, s.embedder_zh, threads=s.threads,
                             on_load=None if say is None else (lambda name: say(f"loading the {name} model ...")))
    conversations = [c.strip() for c in args.conversations.split(",") if c.strip()] if args.conversations else None
    report = evaluate_locomo(Path(args.data), embedder=routes, captions=args.captions, conversations=conversations,
                             errata=Path(args.errata) if args.errata else None, part=args.part,
                             search_options=base_options(args.search_option), progress=say)
    emit_figures(report, as_json=args.json)
    return 0


def add_parser(bench_sub: argparse._SubParsersAction) -> None:
    p = bench_sub.add_parser(
        "locomo", parents=flags(MODEL, JSON, QUIET), help="evidence recall on LoCoMo's long conversations",
        description="Each LoCoMo conversation becomes one meeting (a segment per turn, sessions in order); every "
                    "question is put to ask, BM25, dense and hybrid search, and scored by evidence recall@5 and "
                    "@10 (share of its evidence turns among the first k results) and any@k, per category; "
                    "category 5 (unanswerable) is reported apart. The figures on stdout (one JSON object with "
                    "--json); progress on stderr.")
    p.add_argument("--data", required=True, metavar="PATH",
                   help=f"the LoCoMo folder (holding {DEFAULT_FILE}) or a LoCoMo JSON file")
    p.add_argument("--captions", action="store_true",
                   help="append each shared photo's caption to its turn's text (default: the words alone)")
    p.add_argument("--errata", default=None, metavar="FILE",
                   help="also score against a third-party audit's corrected evidence (locomo_audit_errors_dev.json)")
    p.add_argument("--conversations", default=None, metavar="ID,ID", help="only these conversations (quick checks)")
    p.add_argument("--part", choices=PARTS, default="all",
                   help="the half of the questions to score (a fixed rule on conversation and question; defaults "
                        "are tuned on 'tune' and reported on 'report'; default all)")
    p.add_argument("--search-option", action="append", default=None, metavar="KEY=VALUE",
                   help="override a SearchOptions field for every search of the run (repeatable)")
    p.set_defaults(func=guarded(run_command))
