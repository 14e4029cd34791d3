"""Ask latency while summaries are being made: idle, during a live feed without summaries, during a live
feed kept summarized by the server's own background worker, and (a worst case) during back-to-back
rebuilds. Part of `meetmem bench summaries`: it shows whether making summaries stays off the ask path.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..harness import latency
from .planted_meeting import PlantedFact, PlantedMeeting, append_range

ASK_QUESTIONS = 20
LIVE_BATCH = 20
FEED_INTERVAL_S = 0.2
SUMMARY_PAUSE_S = 2.0  # cloud.service.ServiceOptions.summary_pause


def ask_questions(facts: Sequence[PlantedFact], n: int) -> list[PlantedFact]:
    """Up to `n` facts spread over the meeting whose question only one planted fact answers."""
    counts = Counter(f.question for f in facts)
    unique = [f for f in facts if counts[f.question] == 1]
    if len(unique) <= n:
        return unique
    step = len(unique) / n
    return [unique[int(i * step)] for i in range(n)]


def ask_latency(log: Any, search: Any, digester: Any, meeting_id: str, tenant: str,
                questions: Sequence[PlantedFact], rounds: int, meeting: PlantedMeeting) -> dict[str, Any]:
    """`Answerer.ask` latency idle and while another thread rebuilds every digest in a loop."""
    from meetmem.answers.answer_types import question_kind
    from meetmem.answers.pipeline import Answerer
    from meetmem.summarizers.digest import MeetingDigester
    from meetmem.summarizers.extractive import ExtractiveSummarizer

    answerer = Answerer(search, digests=digester.stored)
    for fact in questions[:3]:
        answerer.ask(meeting_id, fact.question, tenant=tenant)

    def timed_round() -> tuple[list[float], int]:
        walls: list[float] = []
        right = 0
        for _ in range(rounds):
            for fact in questions:
                t0 = time.perf_counter()
                answer = answerer.ask(meeting_id, fact.question, tenant=tenant)
                walls.append(time.perf_counter() - t0)
                right += fact.answer in answer.answer
        return walls, right

    idle, right_idle = timed_round()
    # The same stream twice, with and without the summarizer, so what the summaries cost the ask path is
    # told apart from what appending and indexing a live meeting cost it.
    fed, right_fed, _ = _asked_while_live(log, search, answerer, meeting, meeting_id, tenant, questions,
                                          summarize=False)
    live, right_live, updates = _asked_while_live(log, search, answerer, meeting, meeting_id, tenant, questions)

    churner = MeetingDigester(log, search, ExtractiveSummarizer())
    stop = threading.Event()
    rebuilds = [0]
    failure: list[BaseException] = []

    def churn() -> None:
        try:
            while not stop.is_set():
                churner.rebuild()
                rebuilds[0] += 1
        except BaseException as exc:  # reported in the figures, not lost in a thread
            failure.append(exc)

    thread = threading.Thread(target=churn, name="bench-digest-rebuilds", daemon=True)
    thread.start()
    time.sleep(0.2)
    try:
        busy, right_busy = timed_round()
    finally:
        stop.set()
        thread.join()
    if failure:
        raise RuntimeError(f"the background rebuild failed: {failure[0]!r}") from failure[0]
    asked = len(questions) * rounds or 1
    return {
        "questions": len(questions),
        "rounds": rounds,
        "kinds": dict(Counter(question_kind(f.question) for f in questions)),
        "idle": latency(idle),
        "during_live_feed_without_summaries": {**latency(fed), "feed_interval_s": FEED_INTERVAL_S},
        "during_live_summarizing": {**latency(live), "summary_updates": updates,
                                    "feed_interval_s": FEED_INTERVAL_S, "summary_pause_s": SUMMARY_PAUSE_S},
        "during_digest_rebuilds": {**latency(busy), "rebuilds_completed": rebuilds[0]},
        "answers_holding_planted_value": {"idle": round(right_idle / asked, 3),
                                          "during_live_feed": round(right_fed / max(len(fed), 1), 3),
                                          "during_live": round(right_live / max(len(live), 1), 3),
                                          "during": round(right_busy / asked, 3)},
    }


def _asked_while_live(log: Any, search: Any, answerer: Any, meeting: PlantedMeeting, meeting_id: str, tenant: str,
                      questions: Sequence[PlantedFact], *, summarize: bool = True) -> tuple[list[float], int, int]:
    """Ask about the closed meeting while a live copy streams in and the server's summarizer worker keeps
    the live copy's digest current: the latencies, how many answers held the value, how many updates ran."""
    from meetmem.cloud.indexer import BackgroundIndexer
    from meetmem.summarizers.digest import MeetingDigester
    from meetmem.summarizers.extractive import ExtractiveSummarizer

    live_id = meeting_id + ("-streaming" if summarize else "-streaming-unsummarized")
    digester = MeetingDigester(log, search, ExtractiveSummarizer())
    updates = [0]

    def summarize(t: str, m: str) -> None:
        digester.update(m, tenant=t)
        updates[0] += 1

    worker = BackgroundIndexer(summarize, name="bench-summarizer", pause=SUMMARY_PAUSE_S)
    worker.start()
    done = threading.Event()

    def feed() -> None:
        try:
            for lo in range(0, len(meeting), LIVE_BATCH):
                append_range(log, live_id, tenant, meeting, lo, min(lo + LIVE_BATCH, len(meeting)))
                search.meeting_index(live_id, tenant=tenant)
                if summarize:
                    worker.notify(tenant, live_id)
                time.sleep(FEED_INTERVAL_S)  # the pace of devices sending, not a wait for a result
        finally:
            done.set()

    feeder = threading.Thread(target=feed, name="bench-live-feed", daemon=True)
    feeder.start()
    walls: list[float] = []
    right = 0
    try:
        while not done.is_set():
            for fact in questions:
                t0 = time.perf_counter()
                answer = answerer.ask(meeting_id, fact.question, tenant=tenant)
                walls.append(time.perf_counter() - t0)
                right += fact.answer in answer.answer
    finally:
        feeder.join()
        worker.wait_idle(120)
        worker.stop()
    return walls, right, updates[0]
