"""A query-side linear adapter on a frozen embedder: a question's vector q becomes normalise(q @ W).

Passages stay as the embedder made them, so the stored segment vectors remain valid; only the question
is moved towards the way its answers are worded (trained from question/evidence pairs by `meetmem train
retrieval`). Stored like the other heads: `<name>.npz` holds the matrix, `<name>.json` the version, the
embedder it was trained on, the embedded text form and the settings it was chosen with. Run in numpy.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .heads import WEIGHTS_DIR, HeadUnavailable

if TYPE_CHECKING:
    import numpy as np


def adapter_name(embedder: str) -> str:
    """The file stem of the adapter trained on `embedder`'s vectors."""
    return f"query_adapter_{embedder}"


@dataclass(frozen=True)
class QueryAdapter:
    """`apply(q)`: the question's vector moved by `matrix` (d, d) and put back on the unit sphere."""

    version: str
    embedder: str
    matrix: np.ndarray
    settings: dict[str, Any]

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[0])

    def apply(self, vector: np.ndarray) -> np.ndarray:
        """The adapted vector (or rows, for a 2-D array), float32 and of unit length."""
        import numpy as np

        q = np.asarray(vector, dtype=np.float32)
        if q.shape[-1] != self.dim:
            raise HeadUnavailable(f"query adapter {self.version} expects {self.dim}-d vectors, got {q.shape}")
        out = q @ self.matrix
        norm = np.linalg.norm(out, axis=-1, keepdims=True)
        return (out / np.maximum(norm, 1e-12)).astype(np.float32)

    def save(self, folder: Path) -> tuple[Path, Path]:
        """Write `query_adapter_<embedder>.npz` and `.json` into `folder`; returns both paths."""
        import numpy as np

        folder.mkdir(parents=True, exist_ok=True)
        name = adapter_name(self.embedder)
        arrays, meta = folder / f"{name}.npz", folder / f"{name}.json"
        payload = io.BytesIO()
        np.lib.format.write_array(payload, np.ascontiguousarray(self.matrix, dtype=np.float32), allow_pickle=False)
        # The `.npz` layout np.load reads, written with a fixed member date so that the same matrix gives the same
        # bytes (np.savez stamps the current time), and the training command can be checked for reproducibility.
        with zipfile.ZipFile(arrays, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr(zipfile.ZipInfo("matrix.npy", date_time=(1980, 1, 1, 0, 0, 0)), payload.getvalue())
        meta.write_text(json.dumps({"version": self.version, "embedder": self.embedder, **self.settings},
                                   indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return arrays, meta


def load_query_adapter(embedder: str, folder: Path | None = None, *, dim: int | None = None) -> QueryAdapter:
    """The adapter trained on `embedder` from `folder` (the shipped weights by default).

    Args:
        dim: the embedder's dimension, checked against the matrix when given.

    Raises:
        HeadUnavailable: a file is missing or unreadable, was trained on another embedder, or its matrix is
            not square (of `dim`) and finite.
    """
    import numpy as np

    folder = folder or WEIGHTS_DIR
    name = adapter_name(embedder)
    arrays, meta = folder / f"{name}.npz", folder / f"{name}.json"
    try:
        settings = json.loads(meta.read_text(encoding="utf-8"))
        # From bytes: np.load leaves its own file handle open when the file is not a zip.
        with np.load(io.BytesIO(arrays.read_bytes())) as data:
            matrix = np.asarray(data["matrix"], dtype=np.float32)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise HeadUnavailable(f"cannot read the query adapter {name} from {folder}: {exc} "
                              f"(rebuild it with `meetmem train retrieval`)") from exc
    if not isinstance(settings, dict):
        raise HeadUnavailable(f"{meta} is not a JSON object")
    version = str(settings.pop("version", ""))
    trained_on = str(settings.pop("embedder", ""))
    if not version or trained_on != embedder:
        raise HeadUnavailable(f"{meta} holds version {version!r} for embedder {trained_on!r}, not {embedder!r}")
    if (matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or (dim is not None and matrix.shape[0] != dim)
            or not np.isfinite(matrix).all()):
        raise HeadUnavailable(f"the query adapter in {arrays} has a matrix of shape {matrix.shape}, "
                              f"not a finite {dim or 'square'}-d one")
    return QueryAdapter(version, embedder, matrix, settings)
