"""Choosing the summarizer a process uses, from its settings (the CLI and the app factory call this)."""

from __future__ import annotations

from .base import Summarizer
from .errors import SummarizerError

BACKENDS = ("extractive", "llm")


def make_summarizer(
    backend: str,
    *,
    llm_url: str | None = None,
    llm_model: str | None = None,
    llm_api_key: str | None = None,
    llm_timeout: float = 60.0,
) -> Summarizer:
    """The summarizer named by `backend`: `extractive` (the default, no model) or `llm` (an
    OpenAI-compatible chat API at `llm_url`, validated against the transcript, extractive as fallback).

    Raises:
        SummarizerError: an unknown backend, or `llm` without a URL or model.
    """
    from .extractive import ExtractiveSummarizer

    extractive = ExtractiveSummarizer()
    if backend == "extractive":
        return extractive
    if backend != "llm":
        raise SummarizerError(f"unknown summarizer {backend!r}: choose one of {', '.join(BACKENDS)}")
    if not llm_url or not llm_model:
        raise SummarizerError("the llm summarizer needs MEETMEM_LLM_URL (an OpenAI-compatible base URL such as "
                              "http://127.0.0.1:8080/v1) and MEETMEM_LLM_MODEL")
    from .chat import OpenAIChat
    from .llm import LLMSummarizer

    chat = OpenAIChat(llm_url, llm_model, api_key=llm_api_key, timeout=llm_timeout)
    return LLMSummarizer(chat, extractive)
