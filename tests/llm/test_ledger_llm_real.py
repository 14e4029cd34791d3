"""The ledger's model pass end to end on a real server: a real model's reply read, vetted and merged.

The 270M model's items are not judged (its quality on this task is measured by `meetmem bench ledger
--model local-qwen` on AMI, docs/BENCHMARKS.md); what is checked is that a real reply over HTTP goes
through the whole pass: the rules' items stay as they were, in order, and whatever the model adds cites
segments it was given and survived the vetting.
"""

from __future__ import annotations

import datetime as dt

import pytest

from meetmem.store.records import Segment
from meetmem.summarizers.ledger import extract_ledger
from meetmem.summarizers.ledger_llm import LLMLedger
from meetmem.summarizers.llm.chat import OpenAIChat
from meetmem.summarizers.llm.llama_server import LlamaServer

pytestmark = pytest.mark.llm

TEXTS = [
    "Okay so the vendor quote came in at forty thousand dollars for the whole year.",
    "Farida owns the vendor onboarding and will send a status note every Thursday.",
    "We're not going with the matte coating, it shows fingerprints.",
    "Carol, could you look into the hosting costs by Friday?",
]


def test_a_real_model_reply_goes_through_the_vetting_and_the_merge(llama_server: LlamaServer) -> None:
    segments = [
        Segment(f"s_{i}", "t", "m1", "dev", i, 30.0 * i + 5, 30.0 * i + 20, text, ("Alice", "Bob")[i % 2],
                "en", None, None, None, "2025-03-03T09:00:00Z", i, "0" * 64, "f" * 64)
        for i, text in enumerate(TEXTS)
    ]
    date = dt.date(2025, 3, 3)
    rules = extract_ledger(segments, meeting_date=date)
    # Gemma under llama.cpp drops a system message, so the instructions go in the user message.
    with OpenAIChat(llama_server.url, llama_server.model, timeout=300, max_tokens=160,
                    system_role=False) as chat:
        ledger = LLMLedger(chat)
        merged, notes = ledger.extract(segments, meeting_date=date, rules=rules)
    assert not [n for n in notes if n.startswith("llm ledger not used")], notes  # the server answered
    assert [it for it in merged if it.origin != "llm"] == rules
    given = {s.segment_id for s in segments}
    for item in merged:
        if item.origin == "llm":
            assert set(item.source.segment_ids) <= given
            assert item.kind in ("decision", "todo", "open_question", "fact")
    for note in notes:
        assert note.startswith("llm ledger ")
