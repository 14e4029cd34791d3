"""`meetmem bench store`: ingest and search speed of the transcript store at 1k, 10k and 100k segments.

For each size N, one meeting of N generated segments (seeded, deterministic) is written through the one write
path, `TranscriptLog.append`, in batches of 50 from a few devices, as glasses would post them. Then:

* ingest: the log-append rate, the BM25 catch-up rate (a `TranscriptSearch` without embedder reading the new
  rows from the log, tokenizing and indexing them) and both combined; no embedding.
* embedding: the configured embedder computes every segment vector through `TranscriptSearch` (which caches
  them in `segment_vectors`); vectors are real embeddings of each segment's text. With `--distinct-texts`
  the corpus is drawn from that many distinct utterances and identical texts share one embedding (stated
  in the output as `vector_reuse`).
* index build: a fresh `TranscriptSearch` over the existing database (BM25 rebuild plus loading the cached
  vectors), split into its parts.
* search: latency of `search()` in bm25, dense and hybrid mode over generated questions (the query's embedding
  included: no `query_vector` is passed), the query embedding alone, the parts of a search timed one by one,
  hit@10 against the segment each question was made from, and the latencies again once the meeting holds one
  correction (`supersedes`).
* memory: peak RSS (VmHWM) of the process for that size (the peak is reset between sizes when Linux allows).

Prints one JSON object on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DEFAULT_SIZES = (1000, 10_000, 100_000)
DEFAULT_QUERIES = 250
DEFAULT_SEED = 20250304
TARGET_INGEST_PER_S = 2000.0
TARGET_HYBRID_P95_MS = 25.0
TARGET_HYBRID_SIZE = 100_000
K = 10
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


# ------------------------------------------------------------------------------------------------------
# Measuring.
# ------------------------------------------------------------------------------------------------------


class Stopwatch:
    """Accumulates the wall time of the calls it wraps."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed

    def wrap_iter(self, fn: Callable[..., Iterator[Any]]) -> Callable[..., list[Any]]:
        """For a generator function: time it to exhaustion, return the list."""

        def timed(*args: Any, **kwargs: Any) -> list[Any]:
            t0 = time.perf_counter()
            try:
                return list(fn(*args, **kwargs))
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed


@contextmanager
def patched(obj: Any, name: str, replacement: Any) -> Iterator[None]:
    """Set an instance attribute for the duration (instrumentation of one object, never of a class)."""
    setattr(obj, name, replacement)
    try:
        yield
    finally:
        delattr(obj, name)


def _percentiles(values_ms: list[float], prefix: str = "") -> dict[str, float]:
    ms = sorted(values_ms)

    def pct(p: float) -> float:
        # nearest-rank percentile
        rank = max(1, min(len(ms), int(-(-p * len(ms) // 100))))
        return ms[rank - 1]

    return {
        f"{prefix}p50_ms": round(statistics.median(ms), 3),
        f"{prefix}p95_ms": round(pct(95), 3),
        f"{prefix}p99_ms": round(pct(99), 3),
        f"{prefix}mean_ms": round(statistics.fmean(ms), 3),
        f"{prefix}max_ms": round(ms[-1], 3),
    }


def latency(wall_s: Sequence[float], cpu_s: Sequence[float] | None = None) -> dict[str, float | int]:
    """Wall-clock percentiles in ms and, if given, the process CPU time (all threads) of the same calls."""
    if not wall_s:
        return {"n": 0}
    out: dict[str, float | int] = {"n": len(wall_s), **_percentiles([s * 1000.0 for s in wall_s])}
    if cpu_s:
        out.update(_percentiles([s * 1000.0 for s in cpu_s], "cpu_"))
    return out


class Clock:
    """Wall and process-CPU time of a block, plus involuntary context switches (preemption) of the process."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    @contextmanager
    def __call__(self) -> Iterator[None]:
        w, c = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall.append(time.perf_counter() - w)
            self.cpu.append(time.process_time() - c)

    def stats(self) -> dict[str, float | int]:
        return latency(self.wall, self.cpu)


def preemptions() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def rate(count: int, seconds: float) -> float | None:
    return round(count / seconds, 1) if seconds > 0 else None


def proc_status() -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    key, value = line.split(":", 1)
                    out[key] = round(int(value.split()[0]) / 1024.0, 1)
    except OSError:
        pass
    return out


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def db_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            total += p.stat().st_size
    return total


class SharedVectorEmbedder:
    """Wraps an embedder so that identical passage texts are embedded once and share that (real) vector.

    Queries are never cached: `encode_query` always runs the model.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self._cache: dict[str, Any] = {}
        self.model_seconds = 0.0
        self.texts_embedded = 0
        self.texts_requested = 0

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> Any:
        import numpy as np

        texts = list(texts)
        self.texts_requested += len(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            t0 = time.perf_counter()
            vecs = self.inner.encode(todo, batch_size=batch_size)
            self.model_seconds += time.perf_counter() - t0
            self.texts_embedded += len(todo)
            for t, v in zip(todo, vecs, strict=True):
                self._cache[t] = v
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def encode_query(self, text: str) -> Any:
        return self.inner.encode_query(text)


# ------------------------------------------------------------------------------------------------------
# One size.
# ------------------------------------------------------------------------------------------------------


def _note(ctx: Any, message: str) -> None:
    if not ctx.quiet:
        from meetmem.cli.progress import note

        note(message)


def ingest(log: Any, meeting_id: str, tenant: str, corpus: Corpus, *, batch: int, devices: int) -> tuple[float, int]:
    """Append the corpus in consecutive blocks of `batch` segments, block i from device i % devices."""
    from meetmem.store.records import SegmentInput

    seqs = [0] * devices
    rng = random.Random(f"confidence:{len(corpus)}")
    elapsed = 0.0
    cpu = 0.0
    calls = 0
    for block, lo in enumerate(range(0, len(corpus), batch)):
        dev = block % devices
        items = []
        for i in range(lo, min(lo + batch, len(corpus))):
            items.append(SegmentInput(
                seq=seqs[dev], start=corpus.starts[i], end=corpus.ends[i], text=corpus.texts[i],
                speaker=corpus.speakers[i], lang="en", confidence=round(rng.uniform(0.78, 0.99), 3),
            ))
            seqs[dev] += 1
        t0, c0 = time.perf_counter(), time.process_time()
        result = log.append(meeting_id, f"glasses-{dev + 1:02d}", items, tenant=tenant)
        elapsed += time.perf_counter() - t0
        cpu += time.process_time() - c0
        calls += 1
        if result.new != len(items):
            raise RuntimeError(f"append stored {result.new} of {len(items)} segments (meeting {meeting_id} reused?)")
    return elapsed, cpu, calls


def timed_build(search: Any, meeting_id: str, tenant: str, progress: Any = None) -> dict[str, float]:
    """`meeting_index` of a meeting, split into log read, vectors, tokenizing and the rest (indexing)."""
    chain_sw, vec_sw, tok_sw = Stopwatch(), Stopwatch(), Stopwatch()
    t0, c0 = time.perf_counter(), time.process_time()
    with patched(search.log, "chain", chain_sw.wrap_iter(search.log.chain)), \
            patched(search, "_vectors_for", vec_sw.wrap(search._vectors_for)), \
            patched(search.tokenizer, "tokens", tok_sw.wrap(search.tokenizer.tokens)):
        search.meeting_index(meeting_id, tenant=tenant, progress=progress)
    total = time.perf_counter() - t0
    return {
        "total_s": round(total, 4),
        "cpu_s": round(time.process_time() - c0, 4),
        "log_read_s": round(chain_sw.seconds, 4),
        "vectors_s": round(vec_sw.seconds, 4),
        "tokenize_s": round(tok_sw.seconds, 4),
        "index_other_s": round(total - chain_sw.seconds - vec_sw.seconds - tok_sw.seconds, 4),
    }


def measure_search(search: Any, meeting_id: str, tenant: str, questions: Sequence[Fact], dense: bool,
                   *, components: bool = True) -> dict[str, Any]:
    """Latency of search() per mode (interleaved per question), the query embedding alone, hit@10, parts."""
    modes = ["bm25", "hybrid", "dense"] if dense else ["bm25"]
    clocks = {m: Clock() for m in modes}
    hits: dict[str, int] = {m: 0 for m in modes}
    warm = questions[: min(10, len(questions))]
    for f in warm:
        for m in modes:
            search.search(meeting_id, f.question, tenant=tenant, k=K, mode=m)
    gc.collect()
    load0, nivcsw0, t0 = os.getloadavg()[0], preemptions(), time.perf_counter()
    for qi, f in enumerate(questions):
        for m in modes[qi % len(modes):] + modes[: qi % len(modes)]:
            with clocks[m]():
                result = search.search(meeting_id, f.question, tenant=tenant, k=K, mode=m)
            if any(h.segment.text == f.text for h in result):
                hits[m] += 1
    out: dict[str, Any] = {m: clocks[m].stats() for m in modes}
    out["hit_at_10"] = {m: round(hits[m] / len(questions), 3) for m in modes}
    out["involuntary_context_switches_per_search"] = round(
        (preemptions() - nivcsw0) / (len(questions) * len(modes)), 2)
    out["loadavg_1min_during"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    out["searches_s"] = round(time.perf_counter() - t0, 2)
    vectors: list[Any] = []
    if dense:
        emb = search.embedder
        qclock = Clock()
        for f in questions:
            with qclock():
                vectors.append(emb.encode_query(f.question))
        out["query_embedding"] = qclock.stats()
    if components:
        out["components"] = search_components(search, meeting_id, tenant, questions, vectors)
    return out


def _dense_indexes(index: Any) -> dict[str, Any]:
    """The meeting's dense indexes by model name (one per model, or the single index of older versions)."""
    dense = index.dense
    if dense is None:
        return {}
    if isinstance(dense, dict):
        return dense
    return {"default": dense}


def search_components(search: Any, meeting_id: str, tenant: str, questions: Sequence[Fact],
                      vectors: Sequence[Any]) -> dict[str, Any]:
    """The parts of one search, timed one by one over the same questions (the steps search() takes).

    The query vectors are the ones timed as `query_embedding` (the default model's).
    """
    import inspect

    names = ("catch_up_meeting_index", "mask", "query_tokenize", "bm25_top", "dense_top", "fuse", "fetch_hit_rows")
    clocks = {name: Clock() for name in names}
    pool = max(search.options.pool, K)
    fuse_takes_rankings = "dense_rankings" in inspect.signature(search._fuse).parameters
    postings: list[int] = []
    for qi, f in enumerate(questions):
        with clocks["catch_up_meeting_index"]():
            index = search.meeting_index(meeting_id, tenant=tenant)
        with clocks["mask"]():
            mask = search._mask(index, None)
        with clocks["query_tokenize"]():
            tokens = search.tokenizer.tokens(f.question)
        with clocks["bm25_top"]():
            bm = index.bm25.top(tokens, pool, mask)
        bm25 = index.bm25
        postings.append(sum(len(bm25._docs[bm25._term_ids[t]]) for t in tokens if t in bm25._term_ids))
        rankings: list[list[tuple[int, float]]] = []
        if vectors:
            with clocks["dense_top"]():
                rankings = [dense.top(vectors[qi], pool, mask) for dense in _dense_indexes(index).values()]
        with clocks["fuse"]():
            if not rankings:
                fused = [(d, s, r, None) for r, (d, s) in enumerate(bm[:K], 1)]
            elif fuse_takes_rankings:
                fused = search._fuse(bm, rankings)[:K]
            else:
                fused = search._fuse(bm, rankings[0])[:K]
        with clocks["fetch_hit_rows"]():
            search.log.get(index.segment_ids[d] for d, *_ in fused)
    out: dict[str, Any] = {name: c.stats() for name, c in clocks.items() if c.wall}
    out["bm25_postings_scored_per_query"] = {
        "mean": round(statistics.fmean(postings), 1), "max": max(postings),
    }
    out["dense_indexes"] = list(_dense_indexes(index))
    return out


def run_size(ctx: Any, args: argparse.Namespace, size: int, embedder: Any, workdir: Path | None,
             db_path: Path | None, run_stamp: str) -> dict[str, Any]:
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.log import TranscriptLog
    from meetmem.store.records import SegmentInput

    gc.collect()
    peak_reset = reset_peak_rss()
    mem_before = proc_status()
    tenant = ctx.tenant
    path = db_path if db_path is not None else workdir / f"store-{size}.db"  # type: ignore[operator]
    meeting_id = f"bench-store-{size}-seed{args.seed}-{run_stamp}"
    result: dict[str, Any] = {"segments": size, "meeting_id": meeting_id,
                              "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]}

    t0 = time.perf_counter()
    corpus = generate_corpus(size, args.seed, args.distinct_texts)
    questions = pick_questions(corpus, args.queries, args.seed)
    result["corpus"] = {
        "generate_s": round(time.perf_counter() - t0, 3),
        "distinct_texts": len(set(corpus.texts)),
        "fact_segments": len(corpus.facts),
        "product_codes": corpus.codes,
        "mean_words": round(statistics.fmean(len(t.split()) for t in corpus.texts), 1),
        "meeting_hours": round(corpus.ends[-1] / 3600.0, 1),
    }
    _note(ctx, f"[{size}] corpus ready ({result['corpus']['distinct_texts']} distinct texts); appending ...")

    from meetmem.store.index.tokenize import MeetingTokenizer, stem

    MeetingTokenizer().tokens("warm up the stemmer import")  # a server has loaded its libraries already
    stem.cache_clear()  # ... but has not seen this meeting's words: no size profits from the one before

    log = TranscriptLog(path)
    try:
        # -- ingest: log append, then BM25 catch-up (no embedding) -----------------------------------------
        gc.collect()
        append_s, append_cpu, calls = ingest(log, meeting_id, tenant, corpus, batch=args.batch, devices=args.devices)
        _note(ctx, f"[{size}] appended in {append_s:.2f}s; BM25 catch-up ...")
        bm25_search = TranscriptSearch(log, None)
        bm25_build = timed_build(bm25_search, meeting_id, tenant)
        index = bm25_search.meeting_index(meeting_id, tenant=tenant)
        vocab = index.bm25.vocabulary_size
        if len(index) != size:
            raise RuntimeError(f"BM25 index holds {len(index)} segments, expected {size}")
        bm25_questions_only = None
        if embedder is None:
            bm25_questions_only = measure_search(bm25_search, meeting_id, tenant, questions, dense=False)
        del index, bm25_search
        combined = append_s + bm25_build["total_s"]
        result["ingest"] = {
            "append_calls": calls,
            "batch_size": args.batch,
            "devices": args.devices,
            "log_append_s": round(append_s, 4),
            "log_append_segments_per_s": rate(size, append_s),
            "log_append_cpu_s": round(append_cpu, 4),
            "bm25_index_s": bm25_build["total_s"],
            "bm25_index_segments_per_s": rate(size, bm25_build["total_s"]),
            "bm25_index_cpu_s": bm25_build["cpu_s"],
            "bm25_index_breakdown_s": {k: v for k, v in bm25_build.items()
                                       if k not in ("total_s", "cpu_s", "vectors_s")},
            "combined_s": round(combined, 4),
            "combined_segments_per_s": rate(size, combined),
            "bm25_vocabulary": vocab,
            "db_bytes_after_ingest": db_bytes(path),
        }
        _note(ctx, f"[{size}] ingest {result['ingest']['combined_segments_per_s']} seg/s combined")

        if embedder is None:
            result["embedding"] = None
            result["index_build"] = None
            result["search"] = bm25_questions_only
        else:
            # -- embedding through TranscriptSearch (vectors cached in segment_vectors) -------------------
            from meetmem.cli.progress import StderrProgress

            shared = SharedVectorEmbedder(embedder)
            embed_search = TranscriptSearch(log, shared)
            gc.collect()
            build = timed_build(embed_search, meeting_id, tenant,
                                progress=StderrProgress(f"[{size}] embedding", interval=10.0, enabled=not ctx.quiet))
            del embed_search
            reuse = shared.texts_embedded < shared.texts_requested
            result["embedding"] = {
                "model": embedder.name,
                "dim": embedder.dim,
                "segments": shared.texts_requested,
                "texts_embedded": shared.texts_embedded,
                "vector_reuse": "identical texts share one embedding (each computed by the model from that text)"
                if reuse else None,
                "model_s": round(shared.model_seconds, 3),
                "model_texts_per_s": rate(shared.texts_embedded, shared.model_seconds),
                "vectors_step_s": build["vectors_s"],
                "embedding_build_cpu_s": build["cpu_s"],
                "vectors_step_segments_per_s": rate(size, build["vectors_s"]),
                "vector_cache_write_s": round(build["vectors_s"] - shared.model_seconds, 3),
                "db_bytes_after_vectors": db_bytes(path),
            }
            shared._cache.clear()
            _note(ctx, f"[{size}] embedded {shared.texts_embedded} texts in {shared.model_seconds:.1f}s; "
                  "fresh index build ...")

            # -- fresh index over the existing database: BM25 rebuild + cached vectors ----------------------
            gc.collect()
            peak_ingest_embed = proc_status().get("VmHWM")
            reset_peak_rss()
            rss_before_build = proc_status().get("VmRSS")
            t0 = time.perf_counter()
            search = TranscriptSearch(log, embedder)
            construct_s = time.perf_counter() - t0
            build = timed_build(search, meeting_id, tenant)
            result["index_build"] = {
                "total_s": round(construct_s + build["total_s"], 4),
                "cpu_s": build["cpu_s"],
                "construct_s": round(construct_s, 4),
                "log_read_s": build["log_read_s"],
                "vectors_load_s": build["vectors_s"],
                "tokenize_s": build["tokenize_s"],
                "index_other_s": build["index_other_s"],
                "segments_per_s": rate(size, construct_s + build["total_s"]),
            }
            rss_after_build = proc_status().get("VmRSS")
            _note(ctx, f"[{size}] index built in {result['index_build']['total_s']:.2f}s; "
                  f"searching {len(questions)} questions ...")

            # -- search latency ----------------------------------------------------------------------------
            result["search"] = measure_search(search, meeting_id, tenant, questions, dense=True)

            # -- the same after one correction (a superseded segment makes every search build a mask) -------
            victim = corpus.facts[len(corpus.facts) // 2].index if corpus.facts else size // 2
            victim_id = search.meeting_index(meeting_id, tenant=tenant).segment_ids[victim]
            fix = SegmentInput(seq=0, start=corpus.starts[victim], end=corpus.ends[victim],
                               text=corpus.texts[victim] + " Sorry, correction to that.",
                               speaker=corpus.speakers[victim], lang="en", supersedes=victim_id)
            log.append(meeting_id, "corrections", [fix], tenant=tenant)
            search.meeting_index(meeting_id, tenant=tenant)
            after = measure_search(search, meeting_id, tenant, questions, dense=True)
            result["search_after_one_correction"] = {
                "note": "the meeting then holds one superseded segment",
                **{m: after[m] for m in ("bm25", "dense", "hybrid", "hit_at_10",
                                         "involuntary_context_switches_per_search", "loadavg_1min_during")},
                "components": {k: after["components"][k] for k in ("mask", "bm25_top", "dense_top")},
            }
            peak_serving = proc_status().get("VmHWM")
            del search
        gc.collect()
        result["memory"] = {
            "peak_reset_between_phases": peak_reset,
            "rss_at_size_start_mb": mem_before.get("VmRSS"),
        }
        if embedder is None:
            result["memory"]["peak_rss_mb"] = proc_status().get("VmHWM")
        else:
            result["memory"].update({
                "peak_rss_ingest_and_embedding_mb": peak_ingest_embed,
                "rss_before_index_build_mb": rss_before_build,
                "rss_after_index_build_mb": rss_after_build,
                "peak_rss_index_build_and_search_mb": peak_serving,
            })
        result["memory"]["rss_at_size_end_mb"] = proc_status().get("VmRSS")
        result["db_bytes"] = db_bytes(path)
    finally:
        log.close()
    return result


# ------------------------------------------------------------------------------------------------------
# The command.
# ------------------------------------------------------------------------------------------------------


def _versions() -> dict[str, Any]:
    import importlib.metadata as md
    import sqlite3

    out: dict[str, Any] = {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version}
    for dist in ("numpy", "faiss-cpu", "torch", "sentence-transformers", "transformers", "snowballstemmer",
                 "sqlite-utils"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def code_info() -> dict[str, Any]:
    """The checkout measured: HEAD and the files of the store that differ from it (others edit concurrently)."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    out: dict[str, Any] = {"git_head": None, "modified_store_files": None}
    try:
        out["git_head"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                                         text=True, timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--", "store", "eval/bench_store.py"], cwd=root,
                                capture_output=True, text=True, timeout=10, check=True).stdout
        out["modified_store_files"] = sorted(line[3:] for line in status.splitlines() if line.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def machine_info() -> dict[str, Any]:
    cpu_model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_total = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            mem_total = round(int(fh.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    info: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_gb": mem_total,
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "versions": _versions(),
    }
    return info


def _sizes(value: str) -> list[int]:
    try:
        sizes = [int(v.replace("_", "")) for v in value.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes takes comma-separated integers, not {value!r}") from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError("--sizes needs at least one positive size")
    return sizes


def _positive(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def run(args: argparse.Namespace, ctx: Any) -> int:
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    info = machine_info()
    code = code_info()
    embedder = None
    load_s = None
    if ctx.settings.embedder != "none":
        from meetmem.store.index.embedders import load_embedder

        _note(ctx, f"loading the {ctx.settings.embedder} embedding model ...")
        t0 = time.perf_counter()
        embedder = load_embedder(ctx.settings.embedder, threads=ctx.settings.threads)
        load_s = round(time.perf_counter() - t0, 2)
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        info["torch_threads"] = None
    try:
        import faiss

        info["faiss_omp_threads"] = faiss.omp_get_max_threads()
    except (ImportError, AttributeError):
        info["faiss_omp_threads"] = None
    info["env_threads"] = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "MEETMEM_THREADS")}
    explicit_db = Path(args.db) if args.db else None
    run_stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    results = []
    with tempfile.TemporaryDirectory(prefix="meetmem-bench-store-") as tmp:
        for size in args.sizes:
            t0 = time.perf_counter()
            r = run_size(ctx, args, size, embedder, Path(tmp), explicit_db, run_stamp)
            r["wall_s"] = round(time.perf_counter() - t0, 2)
            results.append(r)
            _note(ctx, f"[{size}] done in {r['wall_s']:.1f}s")
    info["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    targets: dict[str, Any] = {
        "ingest_combined_segments_per_s_min": TARGET_INGEST_PER_S,
        "hybrid_p95_ms_max_at_100k": TARGET_HYBRID_P95_MS,
        "ingest_met": {str(r["segments"]): (r["ingest"]["combined_segments_per_s"] or 0) >= TARGET_INGEST_PER_S
                       for r in results},
    }
    big = [r for r in results if r["segments"] == TARGET_HYBRID_SIZE and r.get("search", {}).get("hybrid")]
    targets["hybrid_p95_met_at_100k"] = (
        big[0]["search"]["hybrid"]["p95_ms"] <= TARGET_HYBRID_P95_MS if big else None
    )
    report = {
        "benchmark": "store",
        "machine": info,
        "code": code,
        "config": {
            "sizes": args.sizes,
            "queries": args.queries,
            "k": K,
            "seed": args.seed,
            "batch": args.batch,
            "devices": args.devices,
            "distinct_texts_cap": args.distinct_texts,
            "embedder": ctx.settings.embedder,
            "embedder_threads": ctx.settings.threads,
            "embedder_load_s": load_s,
            "db": str(explicit_db) if explicit_db else "temporary (one file per size, deleted after the run)",
            "tenant": ctx.tenant,
            "timing": "wall clock (time.perf_counter); cpu_* = process CPU time of all threads "
                      "(time.process_time); percentiles are nearest-rank",
            "stem_cache": "cleared before each size (tokenizer libraries imported beforehand)",
        },
        "targets": targets,
        "results": results,
        "wall_s": round(time.perf_counter() - wall0, 1),
        "process_cpu_s": round(time.process_time() - cpu0, 1),
    }
    sys.stdout.write(json.dumps(report, indent=2 if not args.json else None) + "\n")
    sys.stdout.flush()
    return 0


def add_parser(bench_sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = bench_sub.add_parser(
        "store", parents=[common], help="ingest and search speed of the store",
        description="Ingest, embedding, index-build and search speed of the transcript store on a generated "
                    "meeting of each size. Prints one JSON object on stdout; progress on stderr. Uses a "
                    "temporary database unless --db is given (then each size adds a new meeting to it).",
    )
    p.add_argument("--sizes", type=_sizes, default=list(DEFAULT_SIZES), metavar="N[,N...]",
                   help="meeting sizes in segments (default: 1000,10000,100000)")
    p.add_argument("--queries", type=_positive, default=DEFAULT_QUERIES, metavar="N",
                   help=f"questions searched per size (default: {DEFAULT_QUERIES})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the generated meetings and questions")
    p.add_argument("--batch", type=_positive, default=50, help="segments per append call (default: 50)")
    p.add_argument("--devices", type=_positive, default=4, help="devices posting to the meeting (default: 4)")
    p.add_argument("--distinct-texts", type=_positive, default=None, metavar="N",
                   help="draw each meeting from at most N distinct utterances; identical texts then share one "
                        "(real) embedding, which bounds the embedding time of large sizes (default: no cap)")
    p.set_defaults(func=run)
