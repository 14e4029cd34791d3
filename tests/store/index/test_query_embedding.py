"""A served question's own embedding: it never queues behind passage batches, and a repeat is not recomputed."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from meetmem.store.index.embedders import LazyEmbedder
from meetmem.store.index.minilm_numpy import MiniLMQueries

QUESTIONS = [
    "what did we finally decide about the casing material today",
    "who is going to send the vendor status note on thursday",
    "how much will the LCD screen with the scroll wheel cost",
    "小王下周五之前把测试报告发给谁？",
]
LONG_TURN = "Farida owns the vendor onboarding and will send a status note every Thursday after the review. " * 12


@pytest.mark.model
def test_a_question_asked_during_a_long_passage_batch_does_not_wait_for_it() -> None:
    pool = LazyEmbedder("minilm", instances=1)  # one copy: the batch below holds it throughout
    pool.encode(["warm-up"])
    batch_done = threading.Event()

    def index() -> None:
        pool.encode([f"{i} {LONG_TURN}" for i in range(128)])
        batch_done.set()

    indexer = threading.Thread(target=index)
    indexer.start()
    try:
        while pool._free.qsize() and not batch_done.is_set():  # until the batch has taken the copy
            batch_done.wait(0.001)
        vector = pool.encode_query(QUESTIONS[0])
        assert not batch_done.is_set()  # answered while the batch still held the only model copy
    finally:
        indexer.join()
    assert np.array_equal(vector, MiniLMQueries().encode_query(QUESTIONS[0]))


@pytest.mark.model
def test_after_the_passage_model_loads_a_question_still_gets_the_torch_models_vector(embedder: object) -> None:
    pool = LazyEmbedder("minilm")
    pool.encode(["the passage model is loaded now"])
    assert pool.loaded
    for question in QUESTIONS:
        ours = pool.encode_query(question)
        assert float(np.abs(ours - embedder.encode_query(question)).max()) < 1e-5  # type: ignore[attr-defined]


def test_a_repeated_question_comes_from_the_cache_equal_to_a_fresh_vector() -> None:
    pool = LazyEmbedder("minilm")
    first = pool.encode_query(QUESTIONS[1])
    first[:] = 0.0  # a caller changing its array does not change the cached one
    again = pool.encode_query(QUESTIONS[1])
    assert np.array_equal(again, MiniLMQueries().encode_query(QUESTIONS[1]))
    assert again.dtype == np.float32 and abs(float(np.linalg.norm(again)) - 1.0) < 1e-5


def test_the_question_cache_drops_the_least_recently_asked() -> None:
    pool = LazyEmbedder("minilm")
    pool.QUERY_CACHE = 2
    pool.encode_query(QUESTIONS[0])
    pool.encode_query(QUESTIONS[1])
    pool.encode_query(QUESTIONS[0])  # asked again: now the most recent
    pool.encode_query(QUESTIONS[2])
    assert list(pool._cache) == [("minilm", QUESTIONS[0]), ("minilm", QUESTIONS[2])]


def test_concurrent_questions_get_serial_vectors_and_leave_the_blas_threads_as_they_were() -> None:
    runtime = MiniLMQueries()
    expected = {q: runtime.encode_query(q) for q in QUESTIONS}
    before = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
    results: list[tuple[str, np.ndarray]] = []

    def ask(question: str) -> None:
        for _ in range(5):
            results.append((question, runtime.encode_query(question)))

    threads = [threading.Thread(target=ask, args=(q,)) for q in QUESTIONS * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 40
    for question, vector in results:
        assert np.array_equal(vector, expected[question])
    assert [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"] == before
