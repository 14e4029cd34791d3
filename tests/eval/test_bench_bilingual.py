"""The bilingual meeting's scoring and its Mandarin lines as pinyin (`bench edge --parts languages`)."""

from __future__ import annotations

from meetmem.eval.bench.bilingual import SCRIPT, VOICES, pinyin, score

ROWS = [{"start": 0.0, "end": 4.0, "speaker": "Alice", "lang": "en", "text": "the casing is aluminium"},
        {"start": 5.0, "end": 9.0, "speaker": "Li Na", "lang": "zh", "text": "下个月发货"},
        {"start": 10.0, "end": 12.0, "speaker": "Bob", "lang": "en", "text": "see you friday"}]


def test_each_segment_is_judged_by_the_row_it_overlaps_most() -> None:
    segments = [{"start": 0.1, "end": 5.5, "text": "the casing is aluminium", "lang": "en"},
                {"start": 5.5, "end": 9.2, "text": "下个月发", "lang": "zh"},
                {"start": 9.8, "end": 12.0, "text": "see you friday", "lang": "zh"}]  # English stored as zh
    scored = score(ROWS, segments)
    assert scored["right_lang"] == 2 and scored["right_lang_share"] == 0.667
    assert scored["wer"] == 0.0 and scored["cer"] == 0.2  # one character of five missing
    assert scored["segments_by_lang"] == {"en": {"segments": 2, "stored_as": {"en": 1, "zh": 1}},
                                          "zh": {"segments": 1, "stored_as": {"zh": 1}}}
    assert score(ROWS, [])["right_lang_share"] is None


def test_mandarin_lines_become_numbered_tone_pinyin_with_pauses() -> None:
    assert pinyin("我们明天发货。") == "wo3 men5 ming2 tian1 fa1 huo4 ."
    assert {lang for _, lang, _ in SCRIPT} == {"en", "zh"} and set(VOICES) == {s for s, _, _ in SCRIPT}
