"""The topic segmenter: cuts at pauses, topic turns and length; live feeding equals feeding all at once."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meetmem.store.records import Segment
from meetmem.summarizers.sections import SectionOptions, TopicSegmenter, cut_sections, text_size

OPTIONS = SectionOptions(pause_s=30.0, window_words=40, depth=0.2, min_words=80, min_seconds=30.0, max_seconds=600.0)


def seg(i: int, start: float, text: str = "we talked about the plan for the next release today") -> Segment:
    return Segment(f"s{i:04d}", "t", "m", "d", i, start, start + 3.0, text, "A", "en", None, None, None, "", i, "", "")


def topic_vector(topic: int, i: int, dim: int = 16) -> np.ndarray:
    """A unit vector near one of a few topic directions, with a little per-segment noise."""
    rng = np.random.default_rng(1000 * topic + i)
    base = np.zeros(dim, dtype=np.float32)
    base[topic] = 1.0
    v = base + 0.08 * rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def meeting(topics: list[int], per_topic: int = 20, gap: float = 4.0) -> tuple[list[Segment], list[np.ndarray]]:
    segments, vectors = [], []
    for t_index, topic in enumerate(topics):
        for j in range(per_topic):
            i = t_index * per_topic + j
            segments.append(seg(i, i * gap))
            vectors.append(topic_vector(topic, i))
    return segments, vectors


def test_topic_turns_are_found_where_the_topic_changes() -> None:
    segments, vectors = meeting([0, 1, 2])
    sections, open_from = cut_sections(segments, vectors, final=True, options=OPTIONS)
    starts = [s.segment_ids[0] for s in sections]
    assert starts == ["s0000", "s0020", "s0040"]
    assert [s.closed_by for s in sections] == ["topic", "topic", "end"]
    assert open_from is None


def test_one_topic_is_one_section() -> None:
    segments, vectors = meeting([3], per_topic=60)
    sections, _ = cut_sections(segments, vectors, final=True, options=OPTIONS)
    assert len(sections) == 1 and sections[0].closed_by == "end"


def test_a_long_pause_always_cuts() -> None:
    segments = [seg(i, i * 4.0) for i in range(5)] + [seg(5 + i, 200.0 + i * 4.0) for i in range(5)]
    sections, _ = cut_sections(segments, [None] * 10, final=True, options=OPTIONS)
    assert [len(s.segment_ids) for s in sections] == [5, 5]
    assert sections[0].closed_by == "pause"


def test_a_section_never_grows_past_max_seconds() -> None:
    segments = [seg(i, i * 10.0) for i in range(200)]
    sections, _ = cut_sections(segments, [None] * 200, final=True, options=OPTIONS)
    assert len(sections) > 1
    assert all(s.end - s.start <= OPTIONS.max_seconds + 10.0 for s in sections)
    assert {s.closed_by for s in sections[:-1]} == {"length"}


def test_an_open_meeting_keeps_its_last_section_open() -> None:
    segments, vectors = meeting([0, 1])
    sections, open_from = cut_sections(segments, vectors, final=False, options=OPTIONS)
    assert [s.segment_ids[0] for s in sections] == ["s0000"]
    assert open_from == segments[20].start


def test_sections_cover_every_segment_once_in_order() -> None:
    segments, vectors = meeting([0, 1, 0, 2, 1], per_topic=15)
    sections, _ = cut_sections(segments, vectors, final=True, options=OPTIONS)
    flat = [sid for s in sections for sid in s.segment_ids]
    assert flat == [s.segment_id for s in segments]
    assert [s.index for s in sections] == list(range(len(sections)))
    assert len({s.key for s in sections}) == len(sections)


@settings(max_examples=40, deadline=None)
@given(
    topics=st.lists(st.integers(0, 4), min_size=1, max_size=6),
    cuts=st.lists(st.integers(1, 30), min_size=1, max_size=12),
    pause_at=st.sets(st.integers(1, 100), max_size=3),
)
def test_feeding_live_in_any_batches_gives_the_sections_of_a_rebuild(topics: list[int], cuts: list[int],
                                                                      pause_at: set[int]) -> None:
    segments, vectors = meeting(topics, per_topic=17)
    shift = 0.0
    for i, s in enumerate(segments):  # some long pauses too
        if i in pause_at:
            shift += 120.0
        segments[i] = seg(i, s.start + shift)
    whole, _ = cut_sections(segments, vectors, final=True, options=OPTIONS)

    live = TopicSegmenter(OPTIONS)
    closed_live = []
    pos, k = 0, 0
    while pos < len(segments):
        step = cuts[k % len(cuts)]
        k += 1
        closed_live.extend(live.insert_many(zip(segments[pos : pos + step], vectors[pos : pos + step], strict=True)))
        pos += step
        # What has closed so far is a prefix of the rebuild, never revised later.
        assert live.sections == whole[: len(live.sections)]
    closed_live.extend(live.finish())
    assert closed_live == whole


@pytest.mark.parametrize(("text", "size"), [("we ship on March 3rd", 5), ("我们下周五发布", 7),
                                            ("用 TS-204 型号", 5), ("", 0)])
def test_text_size_counts_words_and_chinese_characters(text: str, size: int) -> None:
    assert text_size(text) == size
