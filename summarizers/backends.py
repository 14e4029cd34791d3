"""Choosing the summarizer and ledger extractor a process uses, from its settings (the CLI and the app
factory call this)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Summarizer
from .errors import SummarizerError

if TYPE_CHECKING:
    from .digest import LedgerExtractor
    from .llm.chat import OpenAIChat

BACKENDS = ("learned", "extractive", "llm")
#: The ledgers: the rules with the learned detector (the default: best on AMI's report half, docs/BENCHMARKS.md),
#: the detector's decisions, todos and open questions alone, or the rules alone.
LEDGERS = ("combined", "detector", "rules")


def make_digest_parts(
    backend: str,
    *,
    llm_url: str | None = None,
    llm_model: str | None = None,
    llm_api_key: str | None = None,
    llm_timeout: float = 60.0,
    llm_system_role: bool = True,
    ledger: str = "combined",
    embedder: Any = None,
) -> tuple[Summarizer, LedgerExtractor]:
    """The summarizer and the ledger extractor for `MeetingDigester`, chosen by `backend` and `ledger`.

    `learned`: whole statements ranked by the learned summary head (`summary_learned.LearnedSummarizer`);
    `extractive`: SumBasic over verbatim sentences; either with the ledger chosen by `ledger`
    (`ledger_learned.LearnedLedger`: the rules with the learned detector by default), sharing one scorer.
    `llm`: the LLM summarizer and the rules' ledger plus a
    vetted LLM pass (`ledger_llm.LLMLedger`), both asking one OpenAI-compatible chat API at `llm_url`.

    Args:
        ledger: `combined`, `detector` or `rules` (see `LEDGERS`).
        embedder: the all-MiniLM-L6-v2 embedder the process already holds, for the detector to share (it
            loads its own on first use when None).

    Raises:
        SummarizerError: an unknown backend or ledger, or `llm` without a URL or model.
    """
    from .extractive import ExtractiveSummarizer
    from .ledger import IncrementalLedger

    if ledger not in LEDGERS:
        raise SummarizerError(f"unknown ledger {ledger!r}: choose one of {', '.join(LEDGERS)}")
    extractive = ExtractiveSummarizer()
    if backend in ("learned", "extractive"):
        from .ledger_learned import LearnedLedger, UtteranceScorer

        # One scorer for the summary and the ledger: each utterance is embedded once.
        scorer = UtteranceScorer(embedder)
        summarizer: Summarizer = extractive
        if backend == "learned":
            from .summary_learned import LearnedSummarizer

            summarizer = LearnedSummarizer(scorer, fallback=extractive)
        if ledger == "rules":
            return summarizer, IncrementalLedger()
        return summarizer, LearnedLedger(scorer, mode=ledger)
    if backend != "llm":
        raise SummarizerError(f"unknown summarizer {backend!r}: choose one of {', '.join(BACKENDS)}")
    from .ledger_llm import LLMLedger
    from .summary_llm import LLMSummarizer

    chat = _chat(llm_url, llm_model, llm_api_key, llm_timeout, llm_system_role)
    return LLMSummarizer(chat, extractive), LLMLedger(chat)


def _chat(llm_url: str | None, llm_model: str | None, llm_api_key: str | None, llm_timeout: float,
          system_role: bool = True) -> OpenAIChat:
    if not llm_url or not llm_model:
        raise SummarizerError("the llm summarizer needs MEETMEM_LLM_URL (an OpenAI-compatible base URL such as "
                              "http://127.0.0.1:8080/v1) and MEETMEM_LLM_MODEL")
    from .llm.chat import OpenAIChat

    return OpenAIChat(llm_url, llm_model, api_key=llm_api_key, timeout=llm_timeout, system_role=system_role)


def shared_minilm(routes: Any) -> Any:
    """The embedding routes' default model when it is all-MiniLM-L6-v2 (the detector's), else None."""
    default = getattr(routes, "default", None)
    return default if getattr(default, "name", None) == "minilm" else None
