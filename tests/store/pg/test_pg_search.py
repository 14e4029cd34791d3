"""PostgreSQL's search rows (store/pg/search.py) against a real server with pgvector: written from the log, per
tenant, and ranked across meetings."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import vector_key
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
    from meetmem.store.pg.search import PgSearch

    search = PgSearch(pool, embedder, **options)
    added = search.catch_up(tenant, MEETING)
    assert added > 0 and search.catch_up(tenant, MEETING) == 0  # caught up, by chain position
    if embedder is not None:
        assert search.embed_pending(tenant, MEETING) == added
    return search


def test_the_rows_hold_the_bm25_lexemes_of_every_segment(pool, meeting: Both) -> None:
    """The lexemes written are the in-process BM25's tokens, so a process rebuilding from them ranks alike."""
    from meetmem.store.index.tokenize import MeetingTokenizer

    _indexed(pool)
    tokens = MeetingTokenizer()
    want = {(seg.chain_pos, " ".join(tokens.tokens(seg.text))) for seg in meeting.pg.chain(MEETING, tenant=TENANT)}
    with pool.connection() as conn, conn.transaction():
        conn.execute("SELECT set_config('app.tenant', %s, true)", (TENANT,))
        got = set(conn.execute("SELECT doc, lexed FROM segment_search WHERE meeting_id = %s", (MEETING,)).fetchall())
    assert got == want


def test_keyword_candidates_keep_numbers_negations_and_chinese(pool, both: Both) -> None:
    texts = ["The tooling quote was $4,250 for TS-204.", "We are not shipping the blue casing.",
             "We are shipping the red casing.", "样品制作费是三千元，下周五付款。"]
    both.append("dev", [SegmentInput(seq=i, start=2.0 * i, end=2.0 * i + 1, text=t, speaker="A")
                        for i, t in enumerate(texts)])
    pg = _indexed(pool)

    def top(query: str) -> str:
        return both.key(pg.keyword_across(TENANT, query, k=2, meeting_ids=[MEETING])[0][0])[1]

    assert top("4250") == texts[0]
    assert top("ts-204 quote") == texts[0]
    assert top("not shipping") == texts[1]
    assert top("样品制作费多少") == texts[3]
    assert pg.keyword_across(TENANT, "the") == []  # stop words alone find nothing


def test_a_corrected_segment_is_no_longer_a_candidate(pool, pg_log) -> None:
    pg_log.append(MEETING, "dev", [
        SegmentInput(seq=0, start=0.0, end=2.0, text="The budget is 40 thousand.", speaker="Ana"),
        SegmentInput(seq=1, start=10.0, end=12.0, text="Budget review on Friday.", speaker="Ben"),
    ], tenant=TENANT)
    first = list(pg_log.chain(MEETING, tenant=TENANT))[0]
    pg_log.append(MEETING, "dev", [SegmentInput(seq=2, start=0.0, end=2.0, text="The budget is 45 thousand.",
                                                speaker="Ana", supersedes=first.segment_id)], tenant=TENANT)
    pg = _indexed(pool)
    ids = [sid for sid, _ in pg.keyword_across(TENANT, "budget")]
    assert first.segment_id not in ids and len(ids) == 2
    assert pg.lagging(TENANT) == []
    pg_log.append(MEETING, "dev", [SegmentInput(seq=3, start=20.0, end=21.0, text="One more budget line.")],
                  tenant=TENANT)
    assert pg.lagging(TENANT) == [MEETING]
    assert pg.catch_up(TENANT, MEETING) == 1 and pg.lagging(TENANT) == []


def test_tenants_do_not_see_each_other(pool, pg_log, pg_url: str, tmp_path) -> None:
    from meetmem.store.receipts import ReceiptKey

    pg_log.append(MEETING, "dev", [SegmentInput(seq=0, start=0.0, end=1.0, text="secret launch date")],
                  tenant=TENANT)
    pg_log.append(MEETING, "dev", [SegmentInput(seq=0, start=0.0, end=1.0, text="public launch date")],
                  tenant="other")
    pg = _indexed(pool)
    _indexed(pool, tenant="other")
    assert len(pg.keyword_across(TENANT, "launch")) == 1
    assert len(pg.keyword_across("other", "launch")) == 1
    assert pg.keyword_across("other", "secret") == []
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
def test_vectors_across_meetings_by_hnsw_agree_with_the_exact_ranking(pool, meeting: Both, embedder,
                                                                     sample_questions) -> None:
    pg = _indexed(pool, embedder)
    key = vector_key(embedder.name)
    reference = TranscriptSearch(meeting.sqlite, embedder)
    for q in sample_questions:
        qv = embedder.encode_query(q["question"])
        exact = pg.dense_across(TENANT, qv, model=key, k=5, method="exact")
        approx = pg.dense_across(TENANT, qv, model=key, k=5, method="hnsw")
        assert [s for s, _ in approx] == [s for s, _ in exact], q["question"]
        assert exact[0][1] >= exact[-1][1]
        # The stored vectors are the ones the SQLite backend ranks by: the same nearest segment.
        dense = reference.search(MEETING, q["question"], k=1, mode="dense", tenant=TENANT, query_vector=qv)
        assert meeting.key(exact[0][0]) == meeting.key(dense[0].segment.segment_id), q["question"]
