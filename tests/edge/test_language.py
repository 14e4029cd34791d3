"""The language policy: detected once, reused for a minute of meeting time, detected again on doubt, frozen
under load, never asked for when the meeting's language is fixed."""

from __future__ import annotations

import pytest

from meetmem.edge.language import LanguageOptions, LanguagePolicy


def test_a_detected_language_is_reused_for_a_minute_then_detected_again() -> None:
    policy = LanguagePolicy(options=LanguageOptions(redetect_s=60.0))
    assert policy.language_for(0.0) is None  # nothing known yet: Whisper detects
    policy.observe(None, "en", 0.0, -0.3)
    assert [policy.language_for(t) for t in (1.0, 30.0, 59.9)] == ["en", "en", "en"]
    assert policy.language_for(60.0) is None
    policy.observe(None, "zh", 60.0, -0.4)
    assert policy.language_for(61.0) == "zh" and policy.detections == 2


def test_an_unsure_decode_in_the_remembered_language_makes_the_next_call_detect() -> None:
    policy = LanguagePolicy()
    policy.observe(None, "en", 0.0, -0.2)
    policy.observe("en", "en", 5.0, -0.4)  # confident: kept
    assert policy.language_for(6.0) == "en"
    policy.observe("en", "en", 7.0, -1.6)  # someone switched language: Whisper was unsure
    assert policy.language_for(8.0) is None


def test_frozen_under_load_it_keeps_the_language_past_the_minute_and_past_doubt() -> None:
    policy = LanguagePolicy()
    assert not policy.freeze()  # nothing to keep yet
    policy.observe(None, "en", 0.0, -0.2)
    assert policy.freeze() and not policy.freeze()
    policy.observe("en", "en", 100.0, -2.0)
    assert policy.language_for(500.0) == "en"


def test_a_fixed_language_is_never_detected() -> None:
    policy = LanguagePolicy("zh")
    policy.observe("zh", "en", 0.0, -3.0)
    assert policy.language_for(0.0) == policy.language_for(1e6) == "zh"
    assert not policy.freeze() and policy.detections == 0


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="redetect_s"):
        LanguageOptions(redetect_s=-1)
