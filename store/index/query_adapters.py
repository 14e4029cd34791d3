"""The shipped query adapters, applied to a question's vector before a dense search (`SearchOptions.query_adapter`).

One adapter per embedder it was trained on (`meetmem train retrieval`), loaded the first time a question is
embedded by that model. A missing, unreadable or mismatched file means the question is searched as the
embedder made it, with one warning: a search never fails for want of an adapter.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)


class QueryAdapters:
    """Each embedder's adapter, loaded once per process (or None when it has none that fits).

    Args:
        folder: where the weights are (the shipped `learned/weights` by default).
        speaker: whether passages are embedded as "Speaker: text"; an adapter trained on the other text form
            is not applied.
    """

    def __init__(self, folder: Path | None = None, *, speaker: bool = True) -> None:
        self.folder = folder
        self.speaker = speaker
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    def adapter(self, embedder: str, dim: int) -> Any:
        """The `QueryAdapter` for `embedder`, or None (warned once) when there is none that fits."""
        with self._lock:
            if embedder in self._loaded:
                return self._loaded[embedder]
            from meetmem.learned.heads import HeadUnavailable
            from meetmem.learned.query_adapter import adapter_name, load_query_adapter

            found = None
            try:
                found = load_query_adapter(embedder, self.folder, dim=dim)
                form = found.settings.get("embedded_text")
                if form != ("speaker: text" if self.speaker else "text"):
                    log.warning("query adapter %s was trained on %r passages, not these; questions are searched "
                                "without it", found.version, form)
                    found = None
            except HeadUnavailable as exc:
                # Only an embedder that was ever given an adapter is worth a warning; others simply have none.
                if (self.folder or _weights_dir()).joinpath(f"{adapter_name(embedder)}.json").exists() or \
                        (self.folder or _weights_dir()).joinpath(f"{adapter_name(embedder)}.npz").exists():
                    log.warning("query adapter unavailable, searching without it: %s", exc)
                else:
                    log.debug("no query adapter for %s: %s", embedder, exc)
            self._loaded[embedder] = found
            return found

    def apply(self, embedder: str, vector: np.ndarray) -> np.ndarray:
        """`vector` (a question embedded by `embedder`) through its adapter, or unchanged when it has none."""
        adapter = self.adapter(embedder, int(vector.shape[-1]))
        return adapter.apply(vector) if adapter is not None else vector

    def versions(self) -> dict[str, str]:
        """The version of each adapter applied so far, by embedder (what produced a dense ranking)."""
        with self._lock:
            return {name: a.version for name, a in sorted(self._loaded.items()) if a is not None}


def _weights_dir() -> Path:
    from meetmem.learned.heads import WEIGHTS_DIR

    return WEIGHTS_DIR
