"""The diarization error rate against cases worked out by hand."""

from __future__ import annotations

import pytest

from meetmem.eval.harness.der import diarization_error

REFERENCE = [(0.0, 10.0, "A"), (10.0, 20.0, "B")]
HYPOTHESIS = [(0.0, 12.0, "x"), (12.0, 20.0, "y"), (20.0, 21.0, "z")]


def test_no_collar() -> None:
    # x -> A, y -> B; 10-12 s is B said by x (2 s confusion); 20-21 s nobody spoke (1 s false alarm).
    got = diarization_error(REFERENCE, HYPOTHESIS, collar=0.0)
    assert got.mapping == {"x": "A", "y": "B"}
    assert (got.missed, got.false_alarm, got.confusion, got.scored) == pytest.approx((0, 1, 2, 20))
    assert got.der == pytest.approx(3 / 20)


def test_collar_leaves_the_boundaries_unscored() -> None:
    # 0.25 s each side of 0, 10 and 20 s: 19 s scored; confusion 10.25-12 s, false alarm 20.25-21 s.
    got = diarization_error(REFERENCE, HYPOTHESIS, collar=0.25)
    assert got.scored == pytest.approx(19.0)
    assert (got.confusion, got.false_alarm) == pytest.approx((1.75, 0.75))
    assert got.der == pytest.approx(2.5 / 19)


def test_missed_speech_overlap_and_an_extra_speaker() -> None:
    # Reference: A 0-4, A and B together 4-6, B 6-8. System: s1 0-6, s2 6-8 (misses B during the overlap).
    reference = [(0.0, 6.0, "A"), (4.0, 8.0, "B")]
    hypothesis = [(0.0, 6.0, "s1"), (6.0, 8.0, "s2")]
    got = diarization_error(reference, hypothesis, collar=0.0)
    assert got.missed == pytest.approx(2.0) and got.confusion == pytest.approx(0.0)
    assert got.der == pytest.approx(2 / 10)
    # One speaker split in two labels: only one can map, the other's time is confusion.
    got = diarization_error([(0.0, 10.0, "A")], [(0.0, 5.0, "s1"), (5.0, 10.0, "s2")], collar=0.0)
    assert got.confusion == pytest.approx(5.0) and got.der == pytest.approx(0.5)


def test_perfect_and_bad_input() -> None:
    assert diarization_error(REFERENCE, [(0.0, 10.0, "p"), (10.0, 20.0, "q")]).der == 0.0
    with pytest.raises(ValueError, match="start <= end"):
        diarization_error([(5.0, 1.0, "A")], [])
