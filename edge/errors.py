"""Errors raised by the edge agent.

Foreign errors (PyAV's, ctranslate2's, OS errors) are converted to one of these at the stage that meets
them, so that the CLI can print a one-line message and exit non-zero instead of a traceback.
"""

from __future__ import annotations

#: What a user runs to get everything the edge needs (speech recognition, VAD, audio decoding).
EDGE_INSTALL_HINT = "pip install 'meetmem[edge]'"


class EdgeError(Exception):
    """Base class of every error the edge agent raises."""


class AudioError(EdgeError):
    """An audio source cannot be read: missing, empty, corrupt, truncated or not audio at all.

    Attributes:
        source: the file name (or `-` for standard input) the audio came from.
        problem: what is wrong with it, in words a user can act on.
    """

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


class ModelUnavailable(EdgeError):
    """A speech model or a library it needs is not installed (or its files are damaged).

    Attributes:
        model: the model name (`base`, `tiny.en`) or the library that is missing.
        hint: what to run to fix it.
    """

    def __init__(self, model: str, reason: str, *, hint: str = EDGE_INSTALL_HINT) -> None:
        self.model = model
        self.reason = reason
        self.hint = hint
        super().__init__(f"{model}: {reason} (install it with: {hint})")


class TranscriptionError(EdgeError):
    """The speech recogniser failed on audio it was given (a model or runtime failure, not bad input)."""


class OutboxError(EdgeError):
    """The local outbox cannot be opened or written (a damaged file, a full disk)."""


class OutboxCorrupt(OutboxError):
    """The outbox file is damaged. It was moved aside whole (its unsent segments kept for recovery); the next
    start begins a new outbox."""


class OutboxFull(OutboxError):
    """The outbox reached its size bound: nothing more is accepted until the cloud takes what it holds.

    Capture stops with this error rather than drop a segment (never silent loss).
    """


class CloudError(EdgeError):
    """The cloud refused a request or could not be reached.

    Attributes:
        status: the HTTP status (None when the cloud could not be reached at all).
        detail: the cloud's own explanation (`detail`), or the transport error.
    """

    def __init__(self, status: int | None, detail: str) -> None:
        self.status = status
        self.detail = detail
        where = f"HTTP {status}" if status is not None else "unreachable"
        super().__init__(f"cloud {where}: {detail}")

    @property
    def retryable(self) -> bool:
        """Worth retrying later: the network, a busy or restarting cloud (5xx, 429, 408)."""
        return self.status is None or self.status >= 500 or self.status in (408, 429)
