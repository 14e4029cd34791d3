"""The dense model embeds "Speaker: text"; the log keeps the words verbatim and a rebuild gives the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import SearchOptions, embedded_text, vector_key
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

TURNS = [("Caroline", "I went to the support group yesterday."), (None, "Nobody said who this was."),
         ("Melanie", "We painted a sunrise by the lake.")]


def _append(log: TranscriptLog) -> None:
    log.append("chat", "phone", [SegmentInput(seq=i, start=2.0 * i, end=2.0 * i + 1, speaker=who, text=text)
                                 for i, (who, text) in enumerate(TURNS)])


def test_embedded_text_puts_the_speaker_first_when_known() -> None:
    segments = [SegmentInput(seq=0, start=0, end=1, speaker="Dana", text="the quote is due Friday"),
                SegmentInput(seq=1, start=1, end=2, speaker=None, text="no speaker here")]
    assert [embedded_text(s) for s in segments] == ["Dana: the quote is due Friday", "no speaker here"]
    assert [embedded_text(s, speaker=False) for s in segments] == [s.text for s in segments]


def test_vector_key_differs_by_embedded_text_form() -> None:
    assert vector_key("minilm") != vector_key("minilm", speaker=False) == "minilm"


@pytest.mark.model
@pytest.mark.parametrize("speaker", [True, False])
def test_vectors_embed_the_speaker_and_survive_a_rebuild(log: TranscriptLog, embedder, speaker: bool) -> None:
    _append(log)
    search = TranscriptSearch(log, embedder, options=SearchOptions(embed_speaker=speaker))
    index = search.meeting_index("chat")
    stored = log.segments("chat")
    assert [s.text for s in stored] == [text for _who, text in TURNS]  # the log keeps the words verbatim
    expected = embedder.encode([embedded_text(s, speaker=speaker) for s in stored])
    got = np.stack([index.dense[embedder.name].vector(i) for i in range(len(stored))])
    np.testing.assert_allclose(got, expected, atol=2e-3)  # held as float16
    keys = {row[0] for row in log.db.execute("SELECT DISTINCT model FROM segment_vectors").fetchall()}
    assert keys == {vector_key(embedder.name, speaker=speaker)}
    search.rebuild()
    rebuilt = search.meeting_index("chat")
    np.testing.assert_array_equal(np.stack([rebuilt.dense[embedder.name].vector(i) for i in range(len(stored))]),
                                  got)


@pytest.mark.model
def test_a_cached_vector_of_the_other_text_form_is_not_reused(log: TranscriptLog, embedder) -> None:
    _append(log)
    TranscriptSearch(log, embedder, options=SearchOptions(embed_speaker=False)).meeting_index("chat")
    with_speaker = TranscriptSearch(log, embedder).meeting_index("chat")
    stored = log.segments("chat")
    np.testing.assert_allclose(with_speaker.dense[embedder.name].vector(0),
                               embedder.encode([f"Caroline: {stored[0].text}"])[0], atol=2e-3)
