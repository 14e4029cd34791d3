"""Dense vector search over a meeting's segments with faiss (exact inner product on unit vectors)."""

from __future__ import annotations

import numpy as np

from .errors import MissingDependency


class DenseIndex:
    """An exact (flat) inner-product index; vectors are L2-normalised, so scores are cosines.

    Flat search over 100k 384-dimensional vectors costs a few milliseconds on two cores, and it is exact,
    so the ranking never depends on an approximate structure's training or insertion order.
    """

    def __init__(self, dim: int) -> None:
        try:
            import faiss
        except ImportError as exc:
            raise MissingDependency("faiss-cpu") from exc
        self._faiss = faiss
        self.dim = dim
        self._index = faiss.IndexFlatIP(dim)

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def add(self, vectors: np.ndarray) -> None:
        """Append rows; document numbers continue from the current size."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        if len(vectors):
            self._index.add(vectors)

    def vectors(self) -> np.ndarray:
        """A copy of every stored vector, in document order."""
        n = len(self)
        if n == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._index.reconstruct_n(0, n)

    def top(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The `k` nearest documents, best first; `mask` (bool per document) keeps only True ones."""
        n = len(self)
        if n == 0 or k <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, self.dim)
        params = None
        if mask is not None:
            keep = np.flatnonzero(mask[:n]).astype(np.int64)
            if len(keep) == 0:
                return []
            params = self._faiss.SearchParameters(sel=self._faiss.IDSelectorBatch(keep))
            k = min(k, len(keep))
        k = min(k, n)
        scores, ids = self._index.search(q, k, params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
