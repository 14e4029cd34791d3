"""A segment's lexemes as PostgreSQL's text search reads them: the tsvector and tsquery literals.

The lexemes are the product's own tokens (the BM25 index's), not those of a Postgres text search
configuration; the search across a tenant's meetings (store/pg/search_across.py) queries them in this form.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Postgres' limits on a tsvector: positions above this are clamped, longer lexemes are refused.
MAX_POSITION = 16383
MAX_LEXEME_BYTES = 2046


def tsvector_literal(tokens: Sequence[str]) -> str:
    """The tsvector text form of `tokens` in order, with positions: `'word':1,4 'other':2`.

    Built from the product's tokenizer rather than a Postgres text search configuration, so numbers
    ("$4,250" -> 4250), codes ("TS-204"), negations (which Postgres' English stop list drops) and jieba's
    Chinese words are the same lexemes the BM25 index uses.
    """
    positions: dict[str, list[int]] = {}
    for i, token in enumerate(tokens, start=1):
        if not token or len(token.encode("utf-8")) > MAX_LEXEME_BYTES:
            continue
        positions.setdefault(token, []).append(min(i, MAX_POSITION))
    return " ".join(f"{quote_lexeme(t)}:{','.join(map(str, p[:256]))}" for t, p in positions.items())


def tsquery_literal(tokens: Sequence[str]) -> str:
    """An OR of the query's lexemes (a question's words are alternatives, not all required)."""
    seen = dict.fromkeys(t for t in tokens if t and len(t.encode("utf-8")) <= MAX_LEXEME_BYTES)
    return " | ".join(quote_lexeme(t) for t in seen)


def quote_lexeme(lexeme: str) -> str:
    """A lexeme as a tsvector or tsquery literal quotes it."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
