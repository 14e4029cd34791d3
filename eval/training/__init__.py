"""`meetmem train ...`: the seeded commands that rebuild the shipped learned artifacts from annotated data."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


def lazy_encoder(name: str, threads: int | None = None) -> Callable[[list[str]], np.ndarray]:
    """`encode(texts)` of the embedder `name`, loaded on the first call: a run whose embeddings are all
    cached never loads the model."""
    model: Any = None

    def encode(texts: list[str]) -> np.ndarray:
        nonlocal model
        if model is None:
            from meetmem.store.index.embedders import load_embedder

            model = load_embedder(name, threads=threads)
        return model.encode(texts)

    return encode
