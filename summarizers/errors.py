"""Errors raised by the summarizers.

Foreign errors (httpx's, JSON decoding) are converted to one of these where they are met, so that the CLI
can print a one-line message and the LLM summarizer can fall back to the extractive one with a reason.
"""

from __future__ import annotations

#: What a user runs to get the HTTP client the LLM summarizer needs.
LLM_INSTALL_HINT = "pip install 'meetmem[llm]'"


class SummarizerError(Exception):
    """Base class of every error the summarizers raise."""


class ChatError(SummarizerError):
    """A chat model could not be asked, or its answer could not be read.

    Attributes:
        url: the endpoint that was asked (None when no request was made).
        status: the HTTP status the server answered with, when it answered with an error.
    """

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None) -> None:
        self.url = url
        self.status = status
        super().__init__(message)
