"""Which embedding model embeds a segment: routing by the segment's language.

An English-only model is both faster and better on English; a multilingual one is needed for Chinese. The
routes are shared by every search backend (the SQLite `TranscriptSearch` and the PostgreSQL one) and by the
CLI and the server that build them from settings; the models load lazily, so building routes costs nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .embedders import Embedder

_CJK_RE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def segment_language(text: str, lang: str | None = None) -> str:
    """The primary language of a segment: its `lang` field's primary subtag, else `zh` when at least
    a third of its letters are CJK characters, else `en`."""
    if lang:
        return lang.split("-")[0].lower()
    letters = sum(ch.isalnum() for ch in text) or 1
    return "zh" if len(_CJK_RE.findall(text)) / letters >= 1 / 3 else "en"


@dataclass(frozen=True)
class EmbedderRoutes:
    """Which embedding model embeds a segment, by its language.

    An English-only model is both faster and better on English; a multilingual one is needed for
    Chinese. Each segment is embedded by its language's model, and a question is embedded by every model
    the meeting's segments use, so an English question about a Chinese meeting still finds its answer.
    """

    default: Embedder
    by_lang: Mapping[str, Embedder] = field(default_factory=dict)

    def for_segment(self, text: str, lang: str | None) -> Embedder:
        return self.by_lang.get(segment_language(text, lang), self.default)

    def by_name(self) -> dict[str, Embedder]:
        models = {self.default.name: self.default}
        for model in self.by_lang.values():
            models.setdefault(model.name, model)
        return models


def embedder_routes(
    default: str,
    zh: str = "none",
    *,
    threads: int | None = None,
    instances: int = 1,
    on_load: Callable[[str], None] | None = None,
) -> EmbedderRoutes | None:
    """Routes of lazily loaded models by name (`none` for BM25 alone, or for no separate Chinese model).

    `instances` copies of each model serve concurrent callers (a server's questions and its indexer).
    """
    from .embedders import LazyEmbedder

    if default == "none":
        return None
    by_lang: dict[str, Embedder] = {}
    if zh not in ("none", default):
        by_lang["zh"] = LazyEmbedder(zh, threads=threads, on_load=on_load, instances=instances)
    return EmbedderRoutes(LazyEmbedder(default, threads=threads, on_load=on_load, instances=instances), by_lang)
