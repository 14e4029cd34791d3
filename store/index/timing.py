"""Where a request's time goes: named spans summed per request, for the `Server-Timing` header.

A request handler opens `timed_request()`; the search code marks its waits and its work with `span(name)`.
Outside a timed request `span` costs one context-variable lookup. The names:

* `catchup_lexical`: adding rows the index did not hold yet to BM25 (waiting for another thread doing so included);
* `catchup_wait`: waiting for another thread (the background indexer) to finish catching the meeting's index up;
* `catchup_embed`: embedding rows the index did not hold yet, in this request;
* `model_wait`: waiting for a free copy of the embedding model (inside `catchup_embed` too when that embeds);
* `query_embed`: embedding the question (model time only);
* `rank`: BM25 and dense ranking under the index's lock, lock wait included.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

_spans: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("meetmem_spans", default=None)


@contextmanager
def timed_request() -> Iterator[dict[str, float]]:
    """Collect the spans of the code run inside; yields the dict of seconds by name (plus `total`)."""
    spans: dict[str, float] = {}
    token = _spans.set(spans)
    t0 = time.perf_counter()
    try:
        yield spans
    finally:
        spans["total"] = time.perf_counter() - t0
        _spans.reset(token)


@contextmanager
def span(name: str) -> Iterator[None]:
    """Add the time spent inside to `name` of the current timed request (nothing outside one)."""
    spans = _spans.get()
    if spans is None:
        yield
        return
    t0 = time.perf_counter()
    try:
        yield
    finally:
        spans[name] = spans.get(name, 0.0) + time.perf_counter() - t0


def server_timing(spans: dict[str, float]) -> str:
    """The spans as a `Server-Timing` header value (milliseconds)."""
    return ", ".join(f"{name};dur={1000 * seconds:.1f}" for name, seconds in spans.items())
