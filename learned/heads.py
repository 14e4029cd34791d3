"""Linear heads on frozen features, stored as one `.npz` of arrays and a JSON of settings, run in numpy.

A head file holds, per label, a standardisation (`mean`, `scale`) and a logistic layer (`coef`,
`intercept`): `p = sigmoid(((x - mean) / scale) @ coef + intercept)`. The JSON beside it holds the
version, the labels, the feature layout and whatever the code that builds items from the scores needs
(thresholds, grouping), chosen when it was trained. Training (scikit-learn) writes both; nothing here
imports more than numpy.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Where the shipped artifacts are.
WEIGHTS_DIR = Path(__file__).parent / "weights"


class HeadUnavailable(RuntimeError):
    """A head's files are missing or do not match the code that reads them."""


@dataclass(frozen=True)
class LinearHeads:
    """Logistic heads sharing one feature vector: `scores(x)` gives each label's probability per row."""

    version: str
    labels: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (features, labels)
    intercept: np.ndarray  # (labels,)
    settings: dict[str, Any]

    @property
    def features(self) -> int:
        return int(self.coef.shape[0])

    def scores(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """Each label's probability for each row of `x` (rows, features)."""
        import numpy as np

        if x.ndim != 2 or x.shape[1] != self.features:
            raise HeadUnavailable(f"head {self.version} expects {self.features} features, got shape {x.shape}")
        z = ((x - self.mean) / self.scale) @ self.coef + self.intercept
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))
        return {label: p[:, i] for i, label in enumerate(self.labels)}

    def save(self, folder: Path, name: str) -> tuple[Path, Path]:
        """Write `<name>.npz` and `<name>.json` into `folder`; returns both paths."""
        import numpy as np

        folder.mkdir(parents=True, exist_ok=True)
        arrays = folder / f"{name}.npz"
        meta = folder / f"{name}.json"
        with arrays.open("wb") as fh:
            np.savez_compressed(fh, mean=self.mean.astype(np.float32), scale=self.scale.astype(np.float32),
                                coef=self.coef.astype(np.float32), intercept=self.intercept.astype(np.float32))
        meta.write_text(json.dumps({"version": self.version, "labels": list(self.labels), **self.settings},
                                   indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return arrays, meta


def load_heads(name: str, folder: Path | None = None) -> LinearHeads:
    """The heads `<name>.npz` / `<name>.json` from `folder` (the shipped weights by default).

    Raises:
        HeadUnavailable: a file is missing or unreadable, or the arrays do not fit together.
    """
    import numpy as np

    folder = folder or WEIGHTS_DIR
    arrays, meta = folder / f"{name}.npz", folder / f"{name}.json"
    try:
        settings = json.loads(meta.read_text(encoding="utf-8"))
        # From bytes: np.load leaves its own file handle open when the file is not a zip.
        with np.load(io.BytesIO(arrays.read_bytes())) as data:
            parts = {key: np.asarray(data[key], dtype=np.float32) for key in ("mean", "scale", "coef", "intercept")}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise HeadUnavailable(f"cannot read the {name} head from {folder}: {exc} "
                              f"(rebuild it with `meetmem train`)") from exc
    version = str(settings.pop("version", ""))
    labels = tuple(settings.pop("labels", ()))
    coef = parts["coef"]
    if (not version or coef.ndim != 2 or coef.shape[1] != len(labels) or parts["intercept"].shape != (len(labels),)
            or parts["mean"].shape != (coef.shape[0],) or parts["scale"].shape != (coef.shape[0],)):
        raise HeadUnavailable(f"the {name} head in {folder} is inconsistent (version {version!r}, labels {labels}, "
                              f"coef {coef.shape})")
    return LinearHeads(version, labels, parts["mean"], parts["scale"], coef, parts["intercept"], settings)
