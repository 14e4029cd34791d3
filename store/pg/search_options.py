"""How the PostgreSQL search ranks (`PgSearchOptions`), apart from the search itself so its parts
(store/pg/search.py, search_rows.py, search_across.py) share the names without importing each other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..index.search_types import SearchOptions

KeywordRanking = Literal["bm25", "fts", "fts_cd"]
DenseRanking = Literal["exact", "hnsw"]


@dataclass(frozen=True, slots=True)
class PgSearchOptions:
    """How the Postgres search ranks: `keyword` and `dense` (see the module), HNSW's `ef_search`."""

    keyword: KeywordRanking = "bm25"
    dense: DenseRanking = "exact"
    ef_search: int = 200  # recall@10 0.94 at 1M segments (100: 0.87); docs/BENCHMARKS.md, issue 20
    fusion: SearchOptions = field(default_factory=SearchOptions)
