"""The load of `meetmem bench serve`: glasses posting segments at speaking pace, people asking questions, and
probes timing how soon a posted segment is searchable. Client side only: it talks HTTP to a running server.

One asyncio loop with one `httpx.AsyncClient` drives every simulated device and asker: on a two-core machine
shared with the server, threads would spend the generator's CPU on switching and the GIL instead of requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import string
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .store_corpus import NAMES, Corpus

log = logging.getLogger(__name__)

#: The words of a segment take this long to say (seconds per word plus a pause), as store_corpus times them.
SECONDS_PER_WORD = 0.33
UTTERANCE_PAUSE_S = 0.4


@dataclass(frozen=True, slots=True)
class Question:
    """A question and the text of the segment that answers it (to check the answer cites it)."""

    meeting_id: str
    question: str
    source_text: str
    source: str  # "preloaded" or "live"


@dataclass
class LiveMeeting:
    """A meeting held during the run: its generated utterances and its wearers."""

    meeting_id: str
    corpus: Corpus
    speakers: list[str]

    def questions_by_index(self) -> dict[int, str]:
        return {f.index: f.question for f in self.corpus.facts}


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """What the load does.

    Args:
        base_url: the server, e.g. http://127.0.0.1:8123.
        base_urls: several API processes of one deployment (base_url is then the first): devices and askers are
            spread over them as a round-robin load balancer would, and a probe searches on the process after
            the one its segment was posted to, so "searchable" means found by another process.
        token: a bearer token of the tenant holding the meetings.
        live: the meetings the devices post to (devices are split evenly among them).
        preloaded: questions about the meetings already in the database.
        devices, askers, duration: how many of each, for how long (seconds).
        pace: mean seconds between two segments of one device; each gap is drawn from pace * [1 - jitter, 1 + jitter].
        think: mean seconds an asker waits after an answer before the next question (0: back-to-back).
        probe_fraction: the share of posted segments that carry a marker and are probed for searchability.
        probe_timeout: seconds after which a probed segment that never became searchable counts as an error.
    """

    base_url: str
    token: str
    live: Sequence[LiveMeeting]
    preloaded: Sequence[Question]
    devices: int
    askers: int
    duration: float
    pace: float = 4.0
    jitter: float = 0.25
    think: float = 0.0
    probe_fraction: float = 0.2
    probe_timeout: float = 10.0
    probe_interval: float = 0.05
    seed: int = 0
    base_urls: Sequence[str] = ()

    @property
    def urls(self) -> list[str]:
        return list(self.base_urls) or [self.base_url]


@dataclass
class Tally:
    """Latencies of successful requests (seconds) and errors by kind, for every endpoint."""

    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    requests: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    searchable: list[float] = field(default_factory=list)
    searchable_sent: list[float] = field(default_factory=list)  # from the ack to sending the search that found it
    probe_attempts: list[int] = field(default_factory=list)
    ask_by_source: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    cited: Counter[str] = field(default_factory=Counter)
    ask_spans: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # Server-Timing, seconds
    segments_posted: int = 0
    live_questions: list[Question] = field(default_factory=list)  # answered by segments posted so far

    async def call(self, client: Any, kind: str, method: str, url: str, **kwargs: Any) -> tuple[Any, float]:
        """One request; returns (response or None on any failure, seconds taken)."""
        import httpx

        t0 = time.perf_counter()
        self.requests[kind] += 1
        try:
            response = await client.request(method, url, **kwargs)
        except httpx.TimeoutException:
            self.errors[f"{kind}: timeout"] += 1
            return None, time.perf_counter() - t0
        except httpx.HTTPError as exc:
            self.errors[f"{kind}: {type(exc).__name__}"] += 1
            log.warning("%s %s failed: %r", method, url, exc)
            return None, time.perf_counter() - t0
        seconds = time.perf_counter() - t0
        if response.is_success:
            self.latency[kind].append(seconds)
            return response, seconds
        key = f"{kind}: HTTP {response.status_code}"
        if not self.errors[key]:
            log.warning("%s %s answered %d: %s", method, url, response.status_code, response.text[:300])
        self.errors[key] += 1
        return None, seconds


#: Below `meetmem serve`'s keep-alive timeout (cloud_commands: timeout_keep_alive=5).
KEEPALIVE_EXPIRY_S = 3.0

SPANS = ("total", "catchup_lexical", "catchup_wait", "catchup_embed", "model_wait", "query_embed", "rank")


def server_spans(header: str) -> dict[str, float]:
    """`Server-Timing: name;dur=12.5, ...` as seconds by name (what the server says its handler spent)."""
    out: dict[str, float] = {}
    for part in header.split(","):
        name, _, rest = part.strip().partition(";")
        if name and rest.startswith("dur="):
            try:
                out[name] = float(rest[4:]) / 1000.0
            except ValueError:
                continue
    return out


def new_marker(rng: random.Random, used: set[str]) -> str:
    """A word no meeting says ("zq7k3"): letters first so the tokenizer keeps it whole and unstemmed."""
    while True:
        marker = "zq" + "".join(rng.choices(string.ascii_lowercase + string.digits, k=3)) + rng.choice(string.digits)
        if marker not in used:
            used.add(marker)
            return marker


async def _probe(client: Any, tally: Tally, plan: LoadPlan, meeting_id: str, segment_id: str, query: str,
                 acked: float) -> None:
    """Search for the segment's own text (with its marker) until it is the top hit; time from the ack."""
    attempts = 0
    while True:
        attempts += 1
        sent = time.perf_counter()
        response, _ = await tally.call(client, "search", "GET", f"/v1/meetings/{meeting_id}/search",
                                       params={"q": query, "k": 1})
        if response is not None:
            hits = response.json()
            if hits and hits[0]["segment_id"] == segment_id:
                tally.searchable.append(time.perf_counter() - acked)
                tally.searchable_sent.append(sent - acked)
                tally.probe_attempts.append(attempts)
                return
        if time.perf_counter() - acked > plan.probe_timeout:
            tally.errors[f"searchable: not the top hit within {plan.probe_timeout:g} s"] += 1
            return
        await asyncio.sleep(plan.probe_interval)


async def _device(client: Any, tally: Tally, plan: LoadPlan, meeting: LiveMeeting, slot: int, per_meeting: int,
                  t0: float, stop_at: float, probes: list[asyncio.Task[None]], markers: set[str],
                  search_client: Any = None) -> None:
    """One wearer's glasses: one segment per request, the wearer's own utterances, at speaking pace; its
    probes search through `search_client` (another API process), else the same one."""
    rng = random.Random(f"device:{plan.seed}:{meeting.meeting_id}:{slot}")
    loop = asyncio.get_running_loop()
    device_id = f"glasses-{meeting.meeting_id}-{slot + 1}"
    speaker = meeting.speakers[slot]
    mine = list(range(slot, len(meeting.corpus), per_meeting)) or [slot % len(meeting.corpus)]
    questions = meeting.questions_by_index()
    await asyncio.sleep(rng.uniform(0.0, plan.pace))  # wearers do not start talking in the same instant
    seq, prev_end = 0, 0.0
    while (now := loop.time()) < stop_at:
        index = mine[seq % len(mine)]
        text = meeting.corpus.texts[index]
        marker = new_marker(rng, markers) if rng.random() < plan.probe_fraction else None
        if marker:
            text = f"{text} {marker}"
        # The glasses send an utterance when it ends: it began as long ago as it takes to say.
        end = round(now - t0, 2)
        spoken = UTTERANCE_PAUSE_S + SECONDS_PER_WORD * len(text.split())
        start = round(max(prev_end, end - spoken), 2)
        body = {"device_id": device_id, "segments": [
            {"seq": seq, "start": start, "end": end, "text": text, "speaker": speaker, "lang": "en"}]}
        response, _ = await tally.call(client, "ingest", "POST", f"/v1/meetings/{meeting.meeting_id}/segments",
                                       json=body)
        if response is not None:
            acked = time.perf_counter()
            tally.segments_posted += 1
            if marker:
                segment_id = response.json()["segment_ids"][0]
                probes.append(asyncio.create_task(
                    _probe(search_client or client, tally, plan, meeting.meeting_id, segment_id, text, acked)))
            if index in questions and seq < len(mine):
                tally.live_questions.append(Question(meeting.meeting_id, questions[index], text, "live"))
        seq, prev_end = seq + 1, end
        gap = plan.pace * rng.uniform(1.0 - plan.jitter, 1.0 + plan.jitter)
        await asyncio.sleep(max(0.0, now + gap - loop.time()))


async def _asker(client: Any, tally: Tally, plan: LoadPlan, number: int, stop_at: float) -> None:
    """A person asking about past meetings and the ones running now, half and half (live once answerable)."""
    rng = random.Random(f"asker:{plan.seed}:{number}")
    loop = asyncio.get_running_loop()
    while loop.time() < stop_at:
        live = tally.live_questions
        pool = live if live and (rng.random() < 0.5 or not plan.preloaded) else plan.preloaded
        if not pool:
            await asyncio.sleep(0.2)
            continue
        q = rng.choice(pool)
        response, seconds = await tally.call(client, "ask", "POST", f"/v1/meetings/{q.meeting_id}/ask",
                                             json={"question": q.question})
        if response is not None:
            tally.ask_by_source[q.source].append(seconds)
            spans = server_spans(response.headers.get("server-timing", ""))
            for name in SPANS:
                tally.ask_spans[name].append(spans.get(name, 0.0))
            # What the server did not account for: the event loop, the thread pool's queue, the GIL, HTTP.
            tally.ask_spans["outside_handler"].append(max(0.0, seconds - spans.get("total", 0.0)))
            texts = [c["text"] for c in response.json()["citations"]]
            tally.cited[f"{q.source}_asked"] += 1
            tally.cited[f"{q.source}_first"] += bool(texts) and texts[0] == q.source_text
            tally.cited[f"{q.source}_any"] += q.source_text in texts
        if plan.think > 0:
            await asyncio.sleep(plan.think * rng.uniform(0.5, 1.5))


async def _progress(tally: Tally, t0: float, stop_at: float, every: float, quiet: bool) -> None:
    from meetmem.cli.progress import note

    loop = asyncio.get_running_loop()
    while not quiet and loop.time() < stop_at:
        await asyncio.sleep(min(every, max(0.0, stop_at - loop.time())))
        asks = sorted(tally.latency["ask"])
        p95 = f"{1000 * asks[int(0.95 * (len(asks) - 1))]:.0f} ms" if asks else "-"
        note(f"[{loop.time() - t0:5.0f} s] {tally.segments_posted} segments posted, {len(asks)} answers "
             f"(p95 {p95}), {len(tally.searchable)} probed searchable, {sum(tally.errors.values())} errors")


async def run_load(plan: LoadPlan, *, quiet: bool = False, progress_every: float = 15.0) -> tuple[Tally, float]:
    """Run devices and askers for `plan.duration` seconds, then wait for the probes still running.

    Returns:
        the tally, and the wall seconds from the start to the last request's end.
    """
    import httpx

    tally = Tally()
    per_meeting = -(-plan.devices // len(plan.live))
    # An idle connection is dropped by the client before the server's keep-alive timeout (5 s) can close it:
    # a device posts every 3-5 s, and a request sent on a connection the server is closing that instant
    # fails (ReadError) as a balancer's or a real client's would not.
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=plan.devices + plan.askers + 100,
                          keepalive_expiry=KEEPALIVE_EXPIRY_S)
    headers = {"Authorization": f"Bearer {plan.token}"}
    probes: list[asyncio.Task[None]] = []
    markers: set[str] = set()
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(httpx.AsyncClient(
            base_url=url, headers=headers, limits=limits, timeout=httpx.Timeout(30.0))) for url in plan.urls]
        n = len(clients)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        stop_at = t0 + plan.duration
        tasks = [
            _device(clients[d % n], tally, plan, plan.live[d // per_meeting], d % per_meeting, per_meeting, t0,
                    stop_at, probes, markers, search_client=clients[(d + 1) % n])
            for d in range(plan.devices)
        ]
        tasks += [_asker(clients[a % n], tally, plan, a, stop_at) for a in range(plan.askers)]
        reporter = asyncio.create_task(_progress(tally, t0, stop_at, progress_every, quiet))
        try:
            await asyncio.gather(*tasks)
            await asyncio.gather(*probes)
        finally:
            reporter.cancel()
            for probe in probes:
                probe.cancel()
        return tally, loop.time() - t0


def live_speakers(seed: int, meeting_number: int, count: int) -> list[str]:
    """The wearers of one live meeting (one name each)."""
    rng = random.Random(f"speakers:{seed}:{meeting_number}")
    return rng.sample(NAMES, min(count, len(NAMES))) + [f"Guest {i}" for i in range(max(0, count - len(NAMES)))]
