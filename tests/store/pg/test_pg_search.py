"""Search on PostgreSQL (store/pg/search.py) against a real server with pgvector, ranked like the SQLite backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meetmem.store.index.errors import SearchError
from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import SearchFilters, vector_key
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

psycopg = pytest.importorskip("psycopg")
pytest.importorskip("pgvector")

MEETING = "launch"
TENANT = "acme"


@pytest.fixture
def sqlite_log(tmp_path) -> Iterator[TranscriptLog]:
    with TranscriptLog(tmp_path / "log.db") as opened:
        yield opened


@pytest.fixture
def pg_log(pg_url: str) -> Iterator[object]:
    from meetmem.store.pg.log import PgTranscriptLog

    opened = PgTranscriptLog(pg_url)
    yield opened
    opened.close()


@pytest.fixture
def pool(pg_url: str) -> Iterator[object]:
    from meetmem.store.pg.search import connect_pool

    opened = connect_pool(pg_url)
    yield opened
    opened.close()


class Both:
    """The same appends to a SQLite log and a PostgreSQL log, to compare the backends' searches."""

    def __init__(self, sqlite_log: TranscriptLog, pg_log) -> None:
        self.sqlite, self.pg = sqlite_log, pg_log

    def append(self, device: str, segments, *, tenant: str = TENANT, meeting: str = MEETING) -> None:
        self.sqlite.append(meeting, device, segments, tenant=tenant)
        self.pg.append(meeting, device, segments, tenant=tenant)

    def key(self, segment_id: str, *, tenant: str = TENANT) -> tuple[float, str]:
        """(start, text) of a segment of either log: what identifies it across the two."""
        seg = self.sqlite.get([segment_id]).get(segment_id) or self.pg.get([segment_id])[segment_id]
        return seg.start, seg.text


@pytest.fixture
def both(sqlite_log: TranscriptLog, pg_log) -> Both:
    return Both(sqlite_log, pg_log)


@pytest.fixture
def meeting(both: Both, sample_device_and_segments) -> Both:
    device, segments = sample_device_and_segments
    both.append(device, segments)
    return both


def _indexed(pool, embedder=None, *, tenant: str = TENANT, **options):
    from meetmem.store.pg.search import PgSearch, PgSearchOptions

    search = PgSearch(pool, embedder, options=PgSearchOptions(**options))
    added = search.catch_up(tenant, MEETING)
    assert added > 0 and search.catch_up(tenant, MEETING) == 0  # caught up, by chain position
    if embedder is not None:
        assert search.embed_pending(tenant, MEETING) == added
    return search


def test_bm25_ranks_exactly_like_the_sqlite_backend(pool, meeting: Both, sample_questions) -> None:
    pg = _indexed(pool)
    reference = TranscriptSearch(meeting.sqlite, None)
    for q in sample_questions:
        want = [(meeting.key(h.segment.segment_id), round(h.score, 9))
                for h in reference.search(MEETING, q["question"], k=5, tenant=TENANT)]
        got = [(meeting.key(h.segment_id), round(h.score, 9))
               for h in pg.search(MEETING, q["question"], tenant=TENANT, k=5)]
        assert got == want, q["question"]


def test_bm25_is_rebuilt_from_the_database_in_another_process_state(pool, meeting: Both) -> None:
    from meetmem.store.pg.search import PgSearch

    _indexed(pool)
    fresh = PgSearch(pool, None)  # another worker: nothing in memory, everything read from the rows
    assert fresh.rebuild_bm25(MEETING, tenant=TENANT) == len(list(meeting.pg.chain(MEETING, tenant=TENANT)))
    hits = fresh.search(MEETING, "How much did the supplier quote for the tooling?", tenant=TENANT, k=3)
    assert "$4,250" in meeting.key(hits[0].segment_id)[1]


@pytest.mark.parametrize("keyword", ["bm25", "fts", "fts_cd"])
def test_keyword_search_keeps_numbers_negations_and_chinese(pool, both: Both, keyword: str) -> None:
    texts = ["The tooling quote was $4,250 for TS-204.", "We are not shipping the blue casing.",
             "We are shipping the red casing.", "样品制作费是三千元，下周五付款。"]
    both.append("dev", [SegmentInput(seq=i, start=2.0 * i, end=2.0 * i + 1, text=t, speaker="A")
                        for i, t in enumerate(texts)])
    pg = _indexed(pool, keyword=keyword)

    def top(query: str) -> str:
        return both.key(pg.search(MEETING, query, tenant=TENANT, k=2)[0].segment_id)[1]

    assert top("4250") == texts[0]
    assert top("ts-204 quote") == texts[0]
    assert top("not shipping") == texts[1]
    assert top("样品制作费多少") == texts[3]
    assert pg.search(MEETING, "the", tenant=TENANT) == []  # stop words alone find nothing


@pytest.mark.parametrize("keyword", ["bm25", "fts"])
def test_corrections_and_filters(pool, pg_log, keyword: str) -> None:
    pg_log.append(MEETING, "dev", [
        SegmentInput(seq=0, start=0.0, end=2.0, text="The budget is 40 thousand.", speaker="Ana"),
        SegmentInput(seq=1, start=10.0, end=12.0, text="Budget review on Friday.", speaker="Ben"),
    ], tenant=TENANT)
    first = list(pg_log.chain(MEETING, tenant=TENANT))[0]
    pg_log.append(MEETING, "dev", [SegmentInput(seq=2, start=0.0, end=2.0, text="The budget is 45 thousand.",
                                                speaker="Ana", supersedes=first.segment_id)], tenant=TENANT)
    pg = _indexed(pool, keyword=keyword)
    ids = [h.segment_id for h in pg.search(MEETING, "budget", tenant=TENANT)]
    assert first.segment_id not in ids and len(ids) == 2
    ben = pg.search(MEETING, "budget", tenant=TENANT, filters=SearchFilters(speaker="ben"))
    assert len(ben) == 1
    late = pg.search(MEETING, "budget", tenant=TENANT, filters=SearchFilters(start=5.0))
    assert len(late) == 1 and late[0].segment_id == ben[0].segment_id
    with pytest.raises(SearchError):
        pg.search(MEETING, "budget", tenant=TENANT, k=0)
    with pytest.raises(SearchError):
        pg.search(MEETING, "budget", tenant=TENANT, mode="dense")  # no model configured


def test_tenants_do_not_see_each_other(pool, pg_log, pg_url: str, tmp_path) -> None:
    from meetmem.store.receipts import ReceiptKey

    pg_log.append(MEETING, "dev", [SegmentInput(seq=0, start=0.0, end=1.0, text="secret launch date")],
                  tenant=TENANT)
    pg_log.append(MEETING, "dev", [SegmentInput(seq=0, start=0.0, end=1.0, text="public launch date")],
                  tenant="other")
    pg = _indexed(pool)
    _indexed(pool, tenant="other")
    assert len(pg.search(MEETING, "launch", tenant=TENANT)) == 1
    assert len(pg.search(MEETING, "launch", tenant="other")) == 1
    assert pg.search(MEETING, "secret", tenant="other") == []
    with pool.connection() as conn, conn.transaction():
        assert conn.execute("SELECT current_user").fetchone()[0] == "meetmem_app"
        conn.execute("SELECT set_config('app.tenant', 'other', true)")
        assert conn.execute("SELECT count(*) FROM segment_search").fetchone()[0] == 1  # row-level security
    from meetmem.store.records import Segment

    ghost = Segment("nope", "other", MEETING, "d", 9, 0.0, 1.0, "ghost launch", None, None, None, None, None, "now",
                    9, "", "h")
    assert pg.index_segments([ghost]) == 0  # a row only for a segment the log holds
    key = ReceiptKey.load(tmp_path / "key", create=True)
    pg_log.delete_meeting(MEETING, tenant=TENANT, reason="test", key=key)  # the rows go with the meeting
    with psycopg.connect(pg_url, autocommit=True) as owner:
        assert owner.execute("SELECT tenant FROM segment_search").fetchall() == [("other",)]


def test_tsvector_literal_quotes_and_positions() -> None:
    from meetmem.store.pg.lexemes import tsquery_literal, tsvector_literal

    assert tsvector_literal(["it's", "a", "it's"]) == "'it''s':1,3 'a':2"
    assert tsvector_literal(["back\\slash"]) == "'back\\\\slash':1"
    assert tsquery_literal(["a", "b", "a"]) == "'a' | 'b'"
    assert tsquery_literal([]) == ""


@pytest.mark.model
def test_hybrid_ranks_like_the_sqlite_backend_and_hnsw_agrees(pool, meeting: Both, embedder,
                                                             sample_questions) -> None:
    pg = _indexed(pool, embedder)
    from meetmem.store.pg.search import PgSearch, PgSearchOptions

    hnsw = PgSearch(pool, embedder, options=PgSearchOptions(dense="hnsw"))
    reference = TranscriptSearch(meeting.sqlite, embedder)
    key = vector_key(embedder.name)
    for q in sample_questions:
        qv = embedder.encode_query(q["question"])
        want = [meeting.key(h.segment.segment_id) for h in reference.search(MEETING, q["question"], k=5,
                                                                            tenant=TENANT, query_vector=qv)]
        got = [meeting.key(h.segment_id) for h in pg.search(MEETING, q["question"], tenant=TENANT, k=5,
                                                            query_vectors={key: qv})]
        assert got == want, q["question"]
        exact = [h.segment_id for h in pg.search(MEETING, q["question"], tenant=TENANT, k=5, mode="dense",
                                                 query_vectors={key: qv})]
        approx = [h.segment_id for h in hnsw.search(MEETING, q["question"], tenant=TENANT, k=5, mode="dense",
                                                    query_vectors={key: qv})]
        assert approx == exact
    across = pg.dense_across(TENANT, embedder.encode_query("tooling quote"), model=key, k=3, method="hnsw")
    assert len(across) == 3 and across[0][1] >= across[-1][1]
