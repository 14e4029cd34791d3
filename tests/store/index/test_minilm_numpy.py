"""The torch-free MiniLM query runtime gives the torch model's vectors, so stored passages still match."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from meetmem.store.index.embedders import LazyEmbedder
from meetmem.store.index.minilm_numpy import MiniLMQueries, minilm_dim

TEXTS = [
    "what material will the case be made of?",
    "x",
    "Farida owns the vendor onboarding and will send a status note every Thursday. " * 30,  # truncated at 256
    "小王下周五之前把测试报告发给我。",
    "L_C_D_ with a spinning wheel, 25 Euro, March 12th",
]


@pytest.mark.model
@pytest.mark.parametrize("text", TEXTS)
def test_numpy_queries_equal_the_torch_model(embedder: Any, text: str) -> None:
    light = MiniLMQueries()
    ours, theirs = light.encode_query(text), embedder.encode_query(text)
    assert ours.dtype == np.float32 and ours.shape == (light.dim,)
    assert float(np.abs(ours - theirs).max()) < 1e-5
    assert abs(float(np.linalg.norm(ours)) - 1.0) < 1e-5


def test_a_lazy_minilm_answers_queries_without_loading_torch() -> None:
    lazy = LazyEmbedder("minilm")
    assert lazy.dim == minilm_dim() == 384
    vector = lazy.encode_query("what did we decide about the casing?")
    assert vector.shape == (384,)
    assert not lazy.loaded  # the torch model was never loaded for a question
