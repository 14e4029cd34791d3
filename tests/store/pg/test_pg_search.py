"""Search on PostgreSQL (store/pg/search.py) against a real server with pgvector, ranked like the SQLite backend."""

from __future__ import annotations

from collections.abc import Iterator

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
def search_db(pg_cluster) -> Iterator[str]:
    """A database holding the search table alone (its revision's table statements), no log: these tests index
    segments of a SQLite log, to compare both backends' rankings on the same rows."""
    from meetmem.store.pg.migrations.versions import b20s01_search as revision

    url = pg_cluster.server.create_database("search_bare")
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in revision.SEARCH_TABLE:
            conn.execute(statement)
        conn.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON segment_search TO meetmem_app")
    yield url
    pg_cluster.drop_database(url)


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


def test_the_migration_ties_rows_to_the_log_and_to_their_tenant(pg_url: str) -> None:
    """On the migrated schema: a row needs its segment, goes when its meeting is deleted, and the service's
    role sees only its tenant's rows."""
    from meetmem.store.pg.search import PgSearch, connect_pool

    with psycopg.connect(pg_url, autocommit=True) as owner:
        with pytest.raises(psycopg.errors.ForeignKeyViolation):
            owner.execute("INSERT INTO segment_search (segment_id, tenant, meeting_id, doc, start_s, end_s, lexed, "
                          "fts) "
                          "VALUES ('nope', 'a', 'm', 0, 0, 1, 'x', 'x')")
        for tenant in ("a", "b"):
            owner.execute("SELECT set_config('app.tenant', %s, false)", (tenant,))
            owner.execute("INSERT INTO meetings (tenant, meeting_id, created_at) VALUES (%s, 'm', 'now')", (tenant,))
            owner.execute(
                "INSERT INTO segments (segment_id, tenant, meeting_id, device_id, seq, start, \"end\", text, "
                "received_at, chain_pos, prev_hash, hash) VALUES (%s, %s, 'm', 'd', 0, 0, 1, 'launch date', 'now', 0, "
                "'', 'h')", (f"s-{tenant}", tenant))
    pool = connect_pool(pg_url)
    try:
        search = PgSearch(pool, None)
        from meetmem.store.records import Segment

        for tenant in ("a", "b"):
            seg = Segment(f"s-{tenant}", tenant, "m", "d", 0, 0.0, 1.0, "launch date", None, None, None, None, None,
                          "now", 0, "", "h")
            assert search.index_segments([seg]) == 1
        with pool.connection() as conn:
            assert conn.execute("SELECT current_user").fetchone()[0] == "meetmem_app"
        assert [h.segment_id for h in search.search("m", "launch", tenant="a")] == ["s-a"]
        assert [h.segment_id for h in search.search("m", "launch", tenant="b")] == ["s-b"]
        with pool.connection() as conn, conn.transaction():
            conn.execute("SELECT set_config('app.tenant', 'a', true)")
            assert conn.execute("SELECT count(*) FROM segment_search").fetchone()[0] == 1
    finally:
        pool.close()
    with psycopg.connect(pg_url, autocommit=True) as owner:
        owner.execute("SELECT set_config('app.tenant', 'a', false)")
        owner.execute("SELECT meetmem_delete_meeting('a', 'm', 'now', 'test', 1, 0, 'h', 'k', 'sig', 1)")
        owner.execute("SELECT set_config('app.tenant', '*', false)")
        assert owner.execute("SELECT segment_id FROM segment_search").fetchall() == [("s-b",)]
