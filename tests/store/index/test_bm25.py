"""The incremental BM25 engine scores exactly as rank-bm25's BM25Okapi (the reference it replaces)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from meetmem.store.index.bm25 import BM25Index
from meetmem.store.index.tokenize import MeetingTokenizer


def _engine(corpus: list[list[str]], **params: float) -> BM25Index:
    index = BM25Index(**params)
    for doc in corpus:
        index.add(doc)
    return index


def _random_corpus(seed: int, docs: int, vocabulary: int) -> list[list[str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocabulary)]
    # Zipf-like: a few words in most documents (their idf goes negative and is floored), a long tail.
    weights = [1.0 / (rank + 1) for rank in range(vocabulary)]
    return [rng.choices(words, weights, k=rng.randint(1, 30)) for _ in range(docs)]


def _queries(corpus: list[list[str]], seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    vocab = sorted({t for doc in corpus for t in doc})
    queries = [[vocab[0]], [vocab[-1]], ["never-seen"], [vocab[0], vocab[0], vocab[1]], vocab[:8]]
    queries += [rng.sample(vocab, k=min(len(vocab), rng.randint(1, 6))) for _ in range(20)]
    queries += [rng.choice(corpus) for _ in range(5)]
    return queries


@pytest.mark.parametrize(("seed", "docs", "vocabulary"), [(0, 300, 40), (1, 50, 8), (2, 1000, 500), (3, 7, 5)])
def test_scores_equal_rank_bm25_on_random_corpora(seed: int, docs: int, vocabulary: int) -> None:
    corpus = _random_corpus(seed, docs, vocabulary)
    reference = BM25Okapi(corpus)
    engine = _engine(corpus)
    assert len(engine) == docs
    for query in _queries(corpus, seed):
        np.testing.assert_allclose(engine.scores(query), reference.get_scores(query), rtol=1e-9, atol=1e-12)


def test_a_corpus_with_mostly_common_terms_hits_the_idf_floor() -> None:
    corpus = [["common", "x"], ["common", "y"], ["common"], ["common", "rare"], ["other"]]
    reference = BM25Okapi(corpus)
    engine = _engine(corpus)
    assert engine.idf("common") == pytest.approx(reference.idf["common"])
    assert reference.idf["common"] == pytest.approx(0.25 * reference.average_idf)
    for query in (["common"], ["rare", "common"], ["x", "y", "other"]):
        np.testing.assert_allclose(engine.scores(query), reference.get_scores(query), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("params", [{"k1": 1.2, "b": 0.5, "epsilon": 0.1}, {"k1": 2.0, "b": 1.0, "epsilon": 0.5}])
def test_scores_equal_rank_bm25_with_other_parameters(params: dict[str, float]) -> None:
    corpus = _random_corpus(4, 200, 30)
    reference = BM25Okapi(corpus, **params)
    engine = _engine(corpus, **params)
    for query in _queries(corpus, 4):
        np.testing.assert_allclose(engine.scores(query), reference.get_scores(query), rtol=1e-9, atol=1e-12)


def test_scores_equal_rank_bm25_on_tokenized_meeting_text(sample_segments) -> None:
    tokenize = MeetingTokenizer()
    corpus = [tokenize(s.text) for s in sample_segments]
    zh = ["我们决定用铝合金外壳，不用塑料。", "供应商报价四千二百五十美元。", "陈伟下周五之前发新报价。",
          "我没同意这个价格。"]
    corpus += [tokenize(t) for t in zh]
    reference = BM25Okapi(corpus)
    engine = _engine(corpus)
    questions = [
        "When is the deadline for getting the updated pricing back to the vendor?",
        "How much was the tooling?", "aluminium casing", "TS-204", "March 12th", "not plastic",
        "谁负责报价？", "铝合金外壳", "没同意",
    ]
    queries = [tokenize(q) for q in questions] + corpus[:10]
    for query in queries:
        expected = reference.get_scores(query)
        got = engine.scores(query)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_incremental_adds_score_as_a_fresh_build(sample_segments) -> None:
    tokenize = MeetingTokenizer()
    corpus = [tokenize(s.text) for s in sample_segments]
    engine = BM25Index()
    for n, doc in enumerate(corpus, start=1):
        engine.add(doc)
        if n in (1, 5, 20, len(corpus)):
            reference = BM25Okapi(corpus[:n])
            for query in (corpus[0], corpus[n // 2], ["aluminium"]):
                np.testing.assert_allclose(engine.scores(query), reference.get_scores(query), rtol=1e-9,
                                           atol=1e-12)


def test_top_is_the_reference_ranking_best_first() -> None:
    corpus = _random_corpus(5, 400, 60)
    reference = BM25Okapi(corpus)
    engine = _engine(corpus)
    for query in _queries(corpus, 5):
        expected = reference.get_scores(query)
        top = engine.top(query, 10)
        assert [score for _, score in top] == sorted((score for _, score in top), reverse=True)
        best = np.sort(expected[expected > 0])[::-1][:10]
        # The same scores in the same order; documents whose scores tie (to rounding) may swap places.
        np.testing.assert_allclose([s for _, s in top], best, rtol=1e-9)
        np.testing.assert_allclose([s for _, s in top], expected[[d for d, _ in top]], rtol=1e-9)
        assert len({d for d, _ in top}) == len(top)


def test_top_respects_the_mask() -> None:
    corpus = _random_corpus(6, 100, 20)
    engine = _engine(corpus)
    mask = np.zeros(len(corpus), dtype=bool)
    mask[::3] = True
    for query in _queries(corpus, 6):
        assert all(mask[d] for d, _ in engine.top(query, 50, mask))


def test_an_empty_index_scores_nothing() -> None:
    engine = BM25Index()
    assert engine.scores(["x"]).shape == (0,)
    assert engine.top(["x"], 5) == []


def test_postings_counts_the_documents_holding_a_term() -> None:
    corpus = _random_corpus(seed=5, docs=200, vocabulary=40)
    index = _engine(corpus)
    for term in ("w0", "w7", "w39"):
        assert index.postings(term) == sum(term in set(doc) for doc in corpus)
    assert index.postings("never-said") == 0
