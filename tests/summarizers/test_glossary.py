"""The glossary keeps names, products and terms: never function words or discourse markers (en, zh)."""

from __future__ import annotations

import pytest

from meetmem.summarizers import ledger_en, ledger_zh


def _terms(module: object, sentence: str) -> set[str]:
    return {sentence[a:b] for (a, b), _ in module.glossary(sentence)}  # type: ignore[attr-defined]


@pytest.mark.parametrize(("sentence", "kept", "dropped"), [
    ("For example, you could use the LCD with a scroll wheel.", {"LCD"}, {"For example", "For", "example"}),
    ("Besides, can we afford it?", set(), {"Besides"}),
    ("And, can we add voice recognition?", set(), {"And"}),
    ("But, what about the battery?", set(), {"But"}),
    ("However, could Priya check it?", set(), {"However"}),
    ("Anyway, would you send it to Bob?", {"Bob"}, {"Anyway"}),
    ("Okay, thanks Dana.", {"Dana"}, {"Okay"}),
    ("Priya, can you send the SOW to legal?", {"Priya", "SOW"}, set()),
    ("We moved Project Falcon to the TS-204 board and the MacBook build.", {"Falcon", "TS-204", "MacBook"}, set()),
    ("Ask Chen Wei about it.", {"Chen Wei"}, set()),
    ("Actually, we could just keep it OK.", set(), {"Actually", "OK"}),
])
def test_english_glossary(sentence: str, kept: set[str], dropped: set[str]) -> None:
    found = _terms(ledger_en, sentence)
    assert kept <= found, found
    assert not (dropped & found), found


@pytest.mark.parametrize(("sentence", "kept", "dropped"), [
    ("小王，你把用户手册发给王总。", {"小王", "王总"}, set()),
    ("我们用Kubernetes部署，OK吗？", {"Kubernetes"}, {"OK"}),
    ("So我们就这样，But还要再看看。", set(), {"So", "But"}),
    ("《星火计划》下周上线。", {"星火计划"}, set()),
])
def test_chinese_glossary(sentence: str, kept: set[str], dropped: set[str]) -> None:
    found = _terms(ledger_zh, sentence)
    assert kept <= found, found
    assert not (dropped & found), found
