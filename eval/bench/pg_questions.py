"""Questions on PostgreSQL: vectors recomputed in every API process (before) against vectors read from pgvector.

    python -m meetmem.eval.bench.pg_questions [--repeat 20] [--rounds 5] [--database postgresql://...]

One meeting in a fresh PostgreSQL database: the bundled sample meeting said `--repeat` times over (its words,
speakers and numbers; seq and times shifted). Two search back ends answer the sample's verbatim questions
through the service's answerer (`answers.pipeline.Answerer`, in process, no HTTP), each in two fresh instances on
the same database, as two API processes would hold them:

* `recompute`: `TranscriptSearch` over the PostgreSQL log (the service before): every instance embeds every
  segment of the meeting before its first answer;
* `pgvector`: `PgTranscriptSearch` (the service now): the first instance embeds the segments and stores their
  vectors; the second reads them.

For each instance: segments embedded, the first answer's seconds (building the meeting's index included),
then ask p50/p95 over `--rounds` rounds of the questions. The answers of the two back ends are compared.
PostgreSQL is the bundled server (fsync off: nothing here measures durability). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from meetmem.eval.harness import BenchPostgres

TENANT = "bench"
MEETING = "sample-x"


def _note(message: str) -> None:
    sys.stderr.write(f"bench_pg_questions: {message}\n")


class _Counting:
    def __init__(self, model: Any) -> None:
        self.model, self.name, self.dim, self.passages = model, model.name, model.dim, 0

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        self.passages += len(texts)
        return self.model.encode(texts, batch_size=batch_size)

    def encode_query(self, text: str) -> np.ndarray:
        return self.model.encode_query(text)


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values) * 1000.0, q)), 1)


def _instance(make_search: Any, model: Any, url: str, questions: list[str], rounds: int) -> dict[str, Any]:
    from meetmem.answers.pipeline import Answerer
    from meetmem.store.index.embedder_routes import EmbedderRoutes
    from meetmem.store.pg.log import PgTranscriptLog

    counting = _Counting(model)
    log = PgTranscriptLog(url)
    search = make_search(log, EmbedderRoutes(counting))
    try:
        answerer = Answerer(search)
        started = time.perf_counter()
        first = answerer.ask(MEETING, questions[0], tenant=TENANT).public()
        first_s = time.perf_counter() - started
        times, answers = [], [first]
        for r in range(rounds):
            for question in questions:
                t = time.perf_counter()
                got = answerer.ask(MEETING, question, tenant=TENANT).public()
                times.append(time.perf_counter() - t)
                if r == 0:
                    answers.append(got)
        return {"segments_embedded": counting.passages, "first_answer_s": round(first_s, 3),
                "ask_p50_ms": _pct(times, 50), "ask_p95_ms": _pct(times, 95), "asks": len(times),
                "_answers": answers}
    finally:
        close = getattr(search, "close", None)
        if callable(close):
            close()
        log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m meetmem.eval.bench.pg_questions",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="times the sample meeting is said over (default 20)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the questions per instance (default 5)")
    parser.add_argument("--database", default=None, help="an existing PostgreSQL server's URL whose user may "
                        "create databases (default: the bundled server in a temporary directory)")
    args = parser.parse_args(argv)

    import psycopg

    from meetmem.store.index.embedders import load_embedder
    from meetmem.store.index.search import TranscriptSearch
    from meetmem.store.interchange import read_jsonl
    from meetmem.store.pg import migrate
    from meetmem.store.pg.log import PgTranscriptLog
    from meetmem.store.pg.meeting_search import PgTranscriptSearch
    from meetmem.store.records import SegmentInput

    data = resources.files("meetmem.demo_data")
    _, sample = read_jsonl(Path(str(data.joinpath("sample_meeting.jsonl"))))
    questions = [q["question"] for q in map(json.loads, data.joinpath("sample_questions.jsonl").read_text(
        encoding="utf-8").splitlines()) if q.get("kind", "verbatim") != "overview"]
    span = max(s.end for s in sample) + 5.0
    segments = [SegmentInput(seq=r * len(sample) + i, start=s.start + r * span, end=s.end + r * span, text=s.text,
                             speaker=s.speaker, lang=s.lang)
                for r in range(args.repeat) for i, s in enumerate(sample)]

    work = Path(tempfile.mkdtemp(prefix="meetmem-bench-pgq-"))
    server = BenchPostgres(args.database, work / "pgdata", durable=False)
    base, admin = server.base, server.admin
    try:
        model = load_embedder("minilm", threads=1)
        model.encode(["warm-up"])
        results: dict[str, Any] = {}
        answers: dict[str, Any] = {}
        for name, make in (("recompute", TranscriptSearch), ("pgvector", PgTranscriptSearch)):
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "bench_{name}" WITH (FORCE)')
                conn.execute(f'CREATE DATABASE "bench_{name}"')
            url = f"{base}/bench_{name}"
            migrate.upgrade(url)
            with PgTranscriptLog(url) as log:
                for i in range(0, len(segments), 50):
                    log.append(MEETING, "glasses-1", segments[i : i + 50], tenant=TENANT)
            _note(f"{name}: {len(segments)} segments, two instances")
            runs = [_instance(make, model, url, questions, args.rounds) for _ in range(2)]
            answers[name] = [run.pop("_answers") for run in runs]
            results[name] = {"first_instance": runs[0], "second_instance": runs[1]}
        out = {
            "bench": "pg_questions", "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "params": {"segments": len(segments), "questions": len(questions), "rounds": args.rounds},
            "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 2),
                        "python": platform.python_version()},
            "results": results,
            "same_answers": answers["recompute"][0] == answers["pgvector"][0] == answers["pgvector"][1],
        }
        print(json.dumps(out))
    finally:
        server.remove()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
