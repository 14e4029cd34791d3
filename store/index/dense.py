"""Dense vector search over a meeting's segments with faiss (exact inner product on unit vectors)."""

from __future__ import annotations

import numpy as np

from .errors import MissingDependency


class DenseIndex:
    """An exact (flat) inner-product index; vectors are L2-normalised, so scores are cosines.

    Flat search over 100k 384-dimensional vectors costs a few milliseconds on two cores, and it is exact,
    so the ranking never depends on an approximate structure's training or insertion order. Vectors carry
    the meeting's document numbers as ids, so several indexes (one per embedding model, for segments of
    different languages) can share one numbering.
    """

    def __init__(self, dim: int) -> None:
        try:
            import faiss
        except ImportError as exc:
            raise MissingDependency("faiss-cpu") from exc
        self._faiss = faiss
        self.dim = dim
        self._index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, vectors: np.ndarray, ids: np.ndarray | list[int]) -> None:
        """Add rows under the given document numbers."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if len(vectors) != len(ids):
            raise ValueError("one id per vector")
        if len(vectors):
            self._index.add_with_ids(vectors, ids)

    def ids(self) -> np.ndarray:
        """The document numbers held, in insertion order."""
        return self._faiss.vector_to_array(self._index.id_map).astype(np.int64)

    def vectors(self) -> np.ndarray:
        """A copy of every stored vector, in insertion order (see `ids`)."""
        ids = self.ids()
        if len(ids) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._index.reconstruct(int(i)) for i in ids])

    def vector(self, doc: int) -> np.ndarray:
        """The stored vector of one document."""
        return self._index.reconstruct(int(doc))

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The `k` nearest documents, best first; `mask` (bool per document) keeps only True ones."""
        n = len(self)
        if n == 0 or k <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, self.dim)
        params = None
        if mask is not None:
            held = self.ids()
            keep = held[mask[held]] if len(mask) else held[:0]
            if len(keep) == 0:
                return []
            params = self._faiss.SearchParameters(sel=self._faiss.IDSelectorBatch(keep))
            k = min(k, len(keep))
        k = min(k, n)
        scores, ids = self._index.search(q, k, params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
