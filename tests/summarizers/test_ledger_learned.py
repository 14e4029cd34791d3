"""The learned ledger detector: the shipped head, its features, its items and how they join the rules' ledger.

Real parts throughout: the head shipped in the package and the real all-MiniLM-L6-v2 (the `embedder`
fixture). The meeting is written here (no ../shared): a design discussion where a decision and an action
item are said as people say them, not as the rules' patterns expect.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.learned.heads import WEIGHTS_DIR, HeadUnavailable, LinearHeads, load_heads
from meetmem.store.records import Segment
from meetmem.summarizers.detector import SCALARS, feature_count, features
from meetmem.summarizers.ledger import extract_ledger
from meetmem.summarizers.ledger_learned import HEAD_NAME, LABEL_KINDS, LearnedLedger, UtteranceScorer

ROWS = [
    ("A", "Okay, so this is the meeting about the casing."),
    ("B", "Um."),
    ("B", "I looked at the materials we could use for the case."),
    ("C", "Plastic is cheap but it feels a bit flimsy."),
    ("B", "Rubber is nicer to hold and it doesn't break when you drop it."),
    ("A", "Mm-hmm."),
    ("D", "Rubber costs about two euros more per unit though."),
    ("A", "Yeah, let's go for the rubber one then, it's worth the two euros."),
    ("C", "Okay, so that's fixed, rubber case."),
    ("B", "Yeah."),
    ("A", "And the colour, I still don't know what the customers would like there."),
    ("D", "We don't have any data on colours yet."),
    ("A", "Right, Dana, could you find out what colours the users want before the next meeting?"),
    ("D", "Sure, I'll do that."),
    ("C", "I had a sandwich for lunch."),
    ("A", "Okay, thanks everyone, see you next time."),
]
DAY = dt.date(2026, 11, 30)


def meeting(rows: list[tuple[str, str]] = ROWS, lang: str | None = "en") -> list[Segment]:
    return [Segment(f"s{i:03d}", "t", "m", "d", i, i * 6.0, i * 6.0 + 5.0, text, speaker, lang, None, None, None,
                    "", i, "", "") for i, (speaker, text) in enumerate(rows)]


@pytest.fixture(scope="module")
def scorer(embedder: Any) -> UtteranceScorer:
    return UtteranceScorer(embedder)


def test_the_shipped_head_loads_and_says_what_it_is() -> None:
    heads = load_heads(HEAD_NAME)
    assert re.fullmatch(r"ledger-detector-\d+\+[0-9a-f]{8}", heads.version)
    assert set(LABEL_KINDS) <= set(heads.labels) and "summary" in heads.labels
    assert heads.features == feature_count(384)
    assert set(heads.settings["kinds"]) == set(LABEL_KINDS.values())
    # Small enough to ship in the package.
    assert (WEIGHTS_DIR / f"{HEAD_NAME}.npz").stat().st_size < 200_000


def test_features_have_one_row_per_utterance_and_see_their_neighbours() -> None:
    segments = meeting()
    vectors = np.eye(len(segments), 384, dtype=np.float32)
    x = features(segments, vectors)
    assert x.shape == (len(segments), 3 * 384 + len(SCALARS))
    # The context before utterance 4 is the mean of utterances 1-3; after it, of 5-7.
    assert np.allclose(x[4, 384:768], vectors[1:4].mean(axis=0))
    assert np.allclose(x[4, 768:1152], vectors[5:8].mean(axis=0))
    assert np.allclose(x[0, 384:768], 0.0)
    position = 3 * 384 + SCALARS.index("position")
    assert x[0, position] == 0.0 and 0.9 < x[-1, position] <= 1.0


def test_a_decision_said_in_passing_scores_above_small_talk(scorer: UtteranceScorer) -> None:
    segments = meeting()
    scores = scorer.scores(segments)
    decision = scores["decision"]
    said = {s.text: float(decision[i]) for i, s in enumerate(segments)}
    assert said["Yeah, let's go for the rubber one then, it's worth the two euros."] > said[
        "I had a sandwich for lunch."]
    assert said["Yeah, let's go for the rubber one then, it's worth the two euros."] > said[
        "Okay, so this is the meeting about the casing."]
    action = scores["action"]
    ask = next(i for i, s in enumerate(segments) if s.text.startswith("Right, Dana"))
    lunch = next(i for i, s in enumerate(segments) if "sandwich" in s.text)
    assert action[ask] > action[lunch]


def test_items_cite_real_segments_record_the_version_and_keep_the_words(scorer: UtteranceScorer) -> None:
    segments = meeting()
    by_id = {s.segment_id: s for s in segments}
    items = LearnedLedger(scorer, mode="detector")(segments, meeting_date=DAY)
    version = scorer.heads.version
    learned = [it for it in items if it.origin == "detector"]
    assert learned, "the detector found nothing in a meeting that decides and assigns work"
    for item in learned:
        assert item.version == version
        assert item.made_by() == {"kind": "model", "version": version}
        assert item.public()["made_by"]["version"] == version
        cited = [by_id[i] for i in item.source.segment_ids]
        assert item.source.start == min(s.start for s in cited) and item.source.end == max(s.end for s in cited)
        said = " ".join(s.text for s in cited)
        # Every word of the item was said in its cited segments: nothing made up, numbers kept.
        for word in re.findall(r"[A-Za-z0-9']+", item.text):
            assert word.lower() in said.lower(), (word, item.text)
        for number in re.findall(r"\d+", said):
            assert number in item.text  # cleaning never drops a number


def test_the_combination_keeps_the_rules_precise_items_and_their_changes(scorer: UtteranceScorer) -> None:
    rows = [*ROWS[:8], ("Alice", "Bob, can you book the venue by March 3rd?"),
            ("Bob", "Sure, I'll book the venue by March 3rd."), ("Alice", "Actually Priya will take it.")]
    segments = meeting(rows)
    rules = extract_ledger(segments, meeting_date=DAY)
    combined = LearnedLedger(scorer)(segments, meeting_date=DAY)
    # The rules' todo and its change of owner stay, with the chain between them intact.
    rule_todos = [it for it in rules if it.kind == "todo"]
    assert len(rule_todos) == 2 and rule_todos[0].status == "superseded"
    kept = {it.id: it for it in combined}
    for item in rule_todos:
        assert item.id in kept
        assert kept[item.id].origin in ("rules", "both")
    assert kept[rule_todos[0].id].superseded_by == rule_todos[1].id
    # Glossary and facts are the rules' alone and pass through unchanged.
    assert [it for it in combined if it.kind in ("glossary", "fact")] == [
        it for it in rules if it.kind in ("glossary", "fact")]
    ids = [it.id for it in combined]
    assert len(ids) == len(set(ids))


def test_chinese_segments_keep_their_rules(scorer: UtteranceScorer) -> None:
    rows = [("王", "我们决定用钢制铰链。"), ("李", "由小王负责在下周五之前完成测试。"), ("王", "好的。")]
    segments = meeting(rows, lang="zh")
    assert all(float(v.max()) == 0.0 for v in scorer.scores(segments).values())
    assert LearnedLedger(scorer)(segments, meeting_date=DAY) == extract_ledger(segments, meeting_date=DAY)


def test_a_growing_meeting_reuses_its_embeddings(embedder: Any) -> None:
    calls: list[int] = []

    class Counting:
        def encode(self, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
            calls.append(len(texts))
            return embedder.encode(texts)

    scorer = UtteranceScorer(Counting())
    ledger = LearnedLedger(scorer)
    segments = meeting()
    first = ledger(segments[:10], meeting_date=DAY)
    whole = ledger(segments, meeting_date=DAY)
    assert calls == [10, len(segments) - 10]
    assert whole == LearnedLedger(UtteranceScorer(embedder))(segments, meeting_date=DAY)
    assert first  # the first ten already decide something


def test_a_missing_model_leaves_the_rules_ledger_and_says_why(tmp_path: Path) -> None:
    segments = meeting()
    with pytest.raises(HeadUnavailable, match="rebuild it with `meetmem train`"):
        load_heads(HEAD_NAME, tmp_path)

    class Broken:
        def encode(self, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
            raise RuntimeError("no model here")

    ledger = LearnedLedger(UtteranceScorer(Broken()))
    assert ledger(segments, meeting_date=DAY) == extract_ledger(segments, meeting_date=DAY)
    assert ledger.last_notes and "no model here" in ledger.last_notes[0]


def test_heads_round_trip_and_refuse_a_mismatch(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    heads = LinearHeads("test-1", ("a", "b"), rng.normal(size=5).astype(np.float32),
                        np.ones(5, dtype=np.float32), rng.normal(size=(5, 2)).astype(np.float32),
                        np.zeros(2, dtype=np.float32), {"kinds": {}})
    heads.save(tmp_path, "h")
    again = load_heads("h", tmp_path)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    for label in ("a", "b"):
        assert np.allclose(heads.scores(x)[label], again.scores(x)[label])
    with pytest.raises(HeadUnavailable, match="expects 5 features"):
        again.scores(np.zeros((2, 4), dtype=np.float32))
    (tmp_path / "h.json").write_text('{"version": "test-1", "labels": ["a"]}', encoding="utf-8")
    with pytest.raises(HeadUnavailable, match="inconsistent"):
        load_heads("h", tmp_path)
    # A cut-short `.npz` is not a zip at all; it must still read as a head that is unavailable.
    heads.save(tmp_path, "cut")
    (tmp_path / "cut.npz").write_bytes((tmp_path / "cut.npz").read_bytes()[:100])
    with pytest.raises(HeadUnavailable, match="cannot read the cut head"):
        load_heads("cut", tmp_path)


def test_the_sample_meeting_keeps_every_decision_and_dated_todo_the_rules_read(
        scorer: UtteranceScorer, sample_segments: list[Any]) -> None:
    """A decision said as one ("we decided to go with ...") and a dated commitment are the rules' most precise
    readings: the detector's gate never drops them, whatever it scores them."""
    segments = [Segment(f"s{i:03d}", "t", "m", "d", s.seq, s.start, s.end, s.text, s.speaker, s.lang, None, None,
                        None, "", i, "", "") for i, s in enumerate(sample_segments)]
    rules = extract_ledger(segments, meeting_date=DAY)
    combined = {it.id: it for it in LearnedLedger(scorer)(segments, meeting_date=DAY)}
    kept = [it for it in rules if (it.kind == "todo" and it.due) or (it.kind == "decision" and "decided" in it.text)]
    assert any(it.kind == "decision" for it in kept) and any(it.kind == "todo" for it in kept)
    for item in kept:
        assert item.id in combined, item.text
