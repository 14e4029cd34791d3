"""The VAD segmenter on real speech (espeak-ng) with known boundaries, and its invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meetmem.edge.vad import SAMPLE_RATE, Utterance, VADOptions, VADSegmenter, segment

TOLERANCE_S = 0.3


def spans(utterances: list[Utterance]) -> list[tuple[int, int]]:
    return [(u.start_sample, u.end_sample) for u in utterances]


def test_two_sentences_give_two_utterances_at_the_true_boundaries(two_sentences) -> None:
    """The detector alone (no padding, no hangover) finds each sentence within 0.3 s."""
    found = segment(two_sentences.samples, VADOptions(padding_ms=0, hangover_ms=0))
    assert len(found) == 2
    for utterance, (start, end) in zip(found, two_sentences.spans, strict=True):
        assert abs(utterance.start - start) <= TOLERANCE_S, (utterance.start, start)
        assert abs(utterance.end - end) <= TOLERANCE_S, (utterance.end, end)


def test_padding_and_hangover_keep_every_word(two_sentences) -> None:
    """With the default pre-roll and hangover an utterance holds all of its speech, and little more."""
    options = VADOptions()
    found = segment(two_sentences.samples, options)
    assert len(found) == 2
    slack = TOLERANCE_S + max(options.padding_ms, options.hangover_ms) / 1000
    for utterance, (start, end) in zip(found, two_sentences.spans, strict=True):
        assert utterance.start <= start and utterance.end >= end
        assert utterance.start >= start - slack and utterance.end <= end + slack


def test_times_are_sample_exact_and_the_audio_is_the_source(two_sentences) -> None:
    for utterance in segment(two_sentences.samples):
        assert utterance.start == utterance.start_sample / SAMPLE_RATE
        assert len(utterance.audio) == utterance.end_sample - utterance.start_sample
        assert utterance.audio.dtype == np.float32
        source = two_sentences.samples[utterance.start_sample:utterance.end_sample]
        np.testing.assert_array_equal(utterance.audio, source.astype(np.float32) / 32768)


def test_wall_clock_anchor_is_the_time_of_sample_zero(two_sentences) -> None:
    anchor = 1_741_776_000.25
    found = segment(two_sentences.samples, wall_clock_anchor=anchor)
    for utterance in found:
        assert utterance.wall_clock_start == pytest.approx(anchor + utterance.start)
        assert utterance.wall_clock_end == pytest.approx(anchor + utterance.end)
    assert all(u.wall_clock_start is None for u in segment(two_sentences.samples))


def test_max_utterance_length_forces_cuts(two_sentences) -> None:
    options = VADOptions(max_utterance_s=1.5)
    found = segment(two_sentences.samples, options)
    assert len(found) >= 5
    assert all(u.duration <= options.max_utterance_s + 1e-9 for u in found)
    assert any(u.forced for u in found)
    # A forced cut loses nothing: the next piece starts where the cut one ended.
    for cut, following in zip(found, found[1:], strict=False):
        if cut.forced:
            assert following.start_sample == cut.end_sample
    # Every sentence is still covered end to end.
    for start, end in two_sentences.spans:
        assert any(u.start <= start + 0.05 for u in found)
        assert any(u.end >= end - 0.05 for u in found)


def test_silence_and_dither_give_nothing() -> None:
    rng = np.random.default_rng(7)
    silence = np.zeros(SAMPLE_RATE * 5, dtype=np.int16)
    dither = rng.integers(-3, 4, SAMPLE_RATE * 5).astype(np.int16)
    assert segment(silence) == []
    assert segment(dither) == []


def test_a_click_shorter_than_the_minimum_is_dropped() -> None:
    audio = np.zeros(SAMPLE_RATE * 3, dtype=np.int16)
    t = np.arange(int(0.06 * SAMPLE_RATE)) / SAMPLE_RATE
    audio[SAMPLE_RATE:SAMPLE_RATE + len(t)] = (8000 * np.sin(2 * np.pi * 300 * t)).astype(np.int16)
    assert segment(audio, VADOptions(aggressiveness=0, min_utterance_ms=200)) == []


def test_bytes_int16_and_float32_input_agree(two_sentences) -> None:
    samples = two_sentences.samples
    from_int16 = spans(segment(samples))
    assert spans(segment(samples.astype("<i2").tobytes())) == from_int16
    assert spans(segment(samples.astype(np.float32) / 32768)) == from_int16


def test_streaming_state_and_finish(two_sentences) -> None:
    segmenter = VADSegmenter()
    done = segmenter.feed(two_sentences.samples[:SAMPLE_RATE * 6])
    assert len(done) == 1  # the first sentence ended in the 1.5 s pause
    assert segmenter.audio_time == pytest.approx(6.0)
    done += segmenter.feed(two_sentences.samples[SAMPLE_RATE * 6:])
    done += segmenter.finish()
    assert spans(done) == spans(segment(two_sentences.samples))
    assert segmenter.finish() == []


def test_speech_running_to_the_end_of_the_stream_is_closed_by_finish(budget_speech) -> None:
    clipped = budget_speech.samples[: int(2.0 * SAMPLE_RATE) + 7]  # ends mid-word, mid-frame
    found = segment(clipped)
    assert len(found) == 1
    assert found[0].end_sample == len(clipped)


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="frame_ms"):
        VADOptions(frame_ms=25)
    with pytest.raises(ValueError, match="aggressiveness"):
        VADOptions(aggressiveness=4)
    with pytest.raises(ValueError, match="hangover"):
        VADOptions(hangover_ms=800, min_silence_ms=500)
    with pytest.raises(ValueError, match="even number"):
        VADSegmenter().insert_audio(b"\x00\x01\x02")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(min_value=1, max_value=9000), min_size=1, max_size=30),
       as_bytes=st.booleans(), frame_ms=st.sampled_from([10, 20, 30]))
def test_chunk_sizes_do_not_change_the_result(two_sentences, sizes: list[int], as_bytes: bool,
                                              frame_ms: int) -> None:
    """Any way of slicing the stream gives the same utterances, to the sample, as one big chunk."""
    samples = two_sentences.samples
    options = VADOptions(frame_ms=frame_ms, max_utterance_s=2.5)
    expected = segment(samples, options)
    segmenter = VADSegmenter(options)
    found: list[Utterance] = []
    at, turn = 0, 0
    while at < len(samples):
        size = sizes[turn % len(sizes)]
        chunk = samples[at:at + size]
        found += segmenter.feed(chunk.tobytes() if as_bytes else chunk)
        at, turn = at + size, turn + 1
    found += segmenter.finish()
    assert spans(found) == spans(expected)
    for mine, theirs in zip(found, expected, strict=True):
        np.testing.assert_array_equal(mine.audio, theirs.audio)
        assert mine.forced == theirs.forced


def test_quiet_speech_is_still_found(two_sentences) -> None:
    """A distant speaker or a low microphone gain (about -65 dBFS over a faint hiss): the VAD's gain keeps
    every word, and the utterances keep the audio as it came."""
    rng = np.random.default_rng(0)
    samples = two_sentences.samples.astype(np.float32) * 0.0015 + rng.normal(0, 1.0, len(two_sentences.samples))
    quiet = samples.astype(np.int16)
    assert not segment(quiet, VADOptions(max_gain=1.0))  # what webrtcvad alone hears: nothing
    found = segment(quiet)
    assert len(found) == 2
    for utterance, (start, end) in zip(found, two_sentences.spans, strict=True):
        assert utterance.start <= start + 0.1 and utterance.end >= end - 0.1
        expected = quiet[utterance.start_sample:utterance.end_sample].astype(np.float32) / 32768.0
        assert np.allclose(utterance.audio, expected)


def test_trailing_silence_counts_the_pause_at_the_end_of_the_utterance_in_progress(two_sentences) -> None:
    """What the capture reads to hold back a partial pass when an utterance is about to end."""
    first_end = two_sentences.spans[0][1]
    segmenter = VADSegmenter()
    assert segmenter.trailing_silence_ms == 0
    segmenter.feed(two_sentences.samples[: int((first_end - 0.5) * SAMPLE_RATE)])
    assert segmenter.in_speech and segmenter.trailing_silence_ms < 240  # mid-sentence
    segmenter.feed(two_sentences.samples[int((first_end - 0.5) * SAMPLE_RATE): int((first_end + 0.4) * SAMPLE_RATE)])
    assert segmenter.in_speech  # 0.4 s into the pause: not ended yet (600 ms), but quiet for a while
    assert 240 <= segmenter.trailing_silence_ms < VADOptions().min_silence_ms
    segmenter.feed(two_sentences.samples[int((first_end + 0.4) * SAMPLE_RATE): int((first_end + 1.0) * SAMPLE_RATE)])
    assert not segmenter.in_speech and segmenter.trailing_silence_ms == 0


def test_the_closing_candidate_is_the_utterance_the_pause_then_closes(two_sentences) -> None:
    """A speculative final is matched by its samples: the candidate offered during the closing pause has the
    very start, end and audio of the utterance the VAD emits when that pause reaches `min_silence_ms`, and
    none is offered mid-speech or before the pause has lasted `after_ms`."""
    segmenter = VADSegmenter()
    candidates: dict[tuple[int, int], Utterance] = {}
    emitted: list[Utterance] = []
    step = 480  # 30 ms chunks: the candidate is looked at after every frame
    for i in range(0, len(two_sentences.samples), step):
        emitted += segmenter.feed(two_sentences.samples[i : i + step])
        candidate = segmenter.closing_candidate(270)
        if candidate is not None:
            assert segmenter.trailing_silence_ms >= 270
            candidates[(candidate.start_sample, candidate.end_sample)] = candidate
        elif segmenter.in_speech and segmenter.trailing_silence_ms == 0:
            assert segmenter.closing_candidate(0) is None  # voiced: nothing is closing
    emitted += segmenter.finish()
    assert len(emitted) == 2
    for utterance in emitted:
        match = candidates[(utterance.start_sample, utterance.end_sample)]
        assert np.array_equal(match.audio, utterance.audio) and not match.forced


def _breathless(two_sentences) -> tuple[np.ndarray, list[Utterance]]:
    """Three sentences with a 0.25 s breath between them, and the one utterance the 600 ms rule makes of them."""
    first, second = (two_sentences.samples[int(s * SAMPLE_RATE):int(e * SAMPLE_RATE)] for s, e in two_sentences.spans)
    breath = np.zeros(int(0.25 * SAMPLE_RATE), dtype=np.int16)
    quiet = np.zeros(SAMPLE_RATE, dtype=np.int16)
    samples = np.concatenate([quiet, first, breath, second, breath, first, quiet])
    whole = segment(samples)
    assert len(whole) == 1
    return samples, whole


def test_a_long_utterance_is_cut_at_a_short_pause_once_it_has_lasted_cut_after_s(two_sentences) -> None:
    """Live input's cut: past `cut_after_s` of speech, a pause of `cut_pause_ms` ends the utterance in the
    pause's middle; the next piece starts right there when the speaker goes on, so nothing falls between."""
    samples, whole = _breathless(two_sentences)
    pieces = segment(samples, VADOptions(cut_after_s=1.5))
    assert len(pieces) >= 3 and not any(u.forced for u in pieces)
    assert pieces[0].start_sample == whole[0].start_sample
    for piece, following in zip(pieces, pieces[1:], strict=False):
        assert following.start_sample == piece.end_sample  # contiguous: the pre-roll reaches back to the cut
        assert np.array_equal(np.concatenate([piece.audio, following.audio]),
                              samples[piece.start_sample:following.end_sample].astype(np.float32) / 32768.0)
    # Each cut lies inside a pause, after at least `cut_after_s` of speech.
    for piece in pieces[:-1]:
        assert piece.duration >= 1.5
        assert np.abs(samples[piece.end_sample - 480:piece.end_sample + 480]).max() < 1000
    # The speech goes to its end; once long, the last piece closes at the short pause after it.
    assert abs(pieces[-1].end - whole[0].end) <= 0.2
    # Below `cut_after_s` nothing changes, and the same audio gives the same pieces whatever the chunks.
    assert spans(segment(samples, VADOptions(cut_after_s=19.0))) == spans(whole)
    chunked = VADSegmenter(VADOptions(cut_after_s=1.5))
    found = [u for i in range(0, len(samples), 1234) for u in chunked.feed(samples[i:i + 1234])] + chunked.finish()
    assert spans(found) == spans(pieces)


def _with_candidates(samples: np.ndarray, options: VADOptions, chunk: int,
                     ) -> tuple[list[Utterance], set[tuple[int, int]]]:
    """The utterances of `samples` fed in `chunk`-sample pieces, and every closing candidate offered at 270 ms
    of a pause on the way (start, end samples)."""
    segmenter = VADSegmenter(options)
    offered: set[tuple[int, int]] = set()
    emitted: list[Utterance] = []
    for i in range(0, len(samples), chunk):
        emitted += segmenter.feed(samples[i:i + chunk])
        candidate = segmenter.closing_candidate(270)
        if candidate is not None:
            offered.add((candidate.start_sample, candidate.end_sample))
    return emitted + segmenter.finish(), offered


def test_a_long_utterance_still_closes_at_its_pause_with_a_matching_closing_candidate(two_sentences) -> None:
    """Past `cut_after_s` a pause the speaker does not go on after still ends the utterance at
    `min_silence_ms` with its hangover, as the candidate offered during that pause said (a speculative
    final stays valid for the last piece of a long stretch)."""
    samples = two_sentences.samples
    emitted, offered = _with_candidates(samples, VADOptions(cut_after_s=1.0), 480)
    closed = [u for u, following in zip(emitted, [*emitted[1:], None], strict=True)
              if following is None or following.start_sample != u.end_sample]
    assert len(closed) == 2 and all((u.start_sample, u.end_sample) in offered for u in closed)
    assert [u.end_sample for u in closed] == [u.end_sample for u in segment(samples)]


def test_a_cut_at_a_long_enough_pause_is_the_closing_candidate_offered_during_it(two_sentences) -> None:
    """Past `cut_after_s`, a pause of 0.45 s the speaker goes on after cuts the utterance exactly where the
    candidate offered during that pause ends (its hangover), so a speculative final started then is the cut
    piece's; the next piece still starts before the speech goes on."""
    first, second = (two_sentences.samples[int(s * SAMPLE_RATE):int(e * SAMPLE_RATE)] for s, e in two_sentences.spans)
    pause = np.zeros(int(0.45 * SAMPLE_RATE), dtype=np.int16)
    quiet = np.zeros(SAMPLE_RATE, dtype=np.int16)
    samples = np.concatenate([quiet, first, pause, second, quiet])
    emitted, offered = _with_candidates(samples, VADOptions(cut_after_s=1.0, cut_pause_ms=300), 1600)
    assert len(emitted) == 2 and emitted[1].start_sample == emitted[0].end_sample  # cut, not closed
    assert (emitted[0].start_sample, emitted[0].end_sample) in offered
    speech_again = len(quiet) + len(first) + len(pause)
    assert emitted[0].end_sample <= speech_again - int(0.1 * SAMPLE_RATE)
    # A pause too short for the hangover and half the pre-roll is still cut in its middle.
    short = np.zeros(int(0.25 * SAMPLE_RATE), dtype=np.int16)
    tight = np.concatenate([quiet, first, short, second, quiet])
    cut = segment(tight, VADOptions(cut_after_s=1.0, cut_pause_ms=120))
    assert len(cut) == 2 and np.abs(tight[cut[0].end_sample - 480:cut[0].end_sample + 480]).max() < 1000


def test_cut_options_are_checked() -> None:
    with pytest.raises(ValueError, match="cut_after_s"):
        VADOptions(cut_after_s=25.0)
    with pytest.raises(ValueError, match="cut_pause_ms"):
        VADOptions(cut_pause_ms=700)
    with pytest.raises(ValueError, match="sentence_after_s"):
        VADOptions(sentence_after_s=0.0)
    with pytest.raises(ValueError, match="sentence_pause_ms"):
        VADOptions(sentence_pause_ms=10)


def test_a_place_to_cut_is_offered_past_sentence_after_s_and_cut_only_when_asked(two_sentences) -> None:
    """Past `sentence_after_s` of speech, a short pause the speaker goes on after is offered as a place to
    cut; the segmentation changes only where `cut_at` is asked to cut, and there the piece is the very samples
    of the candidate, the next piece starting at the cut. A candidate of an utterance already cut is refused."""
    samples, whole = _breathless(two_sentences)
    options = VADOptions(sentence_after_s=1.5)
    assert spans(segment(samples, options)) == spans(whole)  # offered, never asked: nothing changes

    def fed(cut_at: int | None) -> tuple[list[Utterance], list[Utterance], Utterance | None]:
        """The utterances, the places offered, and what cutting at the offer numbered `cut_at` returned."""
        segmenter = VADSegmenter(options)
        emitted: list[Utterance] = []
        offers: list[Utterance] = []
        piece = None
        for i in range(0, len(samples), 1600):
            emitted += segmenter.feed(samples[i:i + 1600])
            offer = segmenter.sentence_candidate()
            if offer is not None and (not offers or offer is not offers[-1]):
                offers.append(offer)
                if len(offers) - 1 == cut_at:
                    piece = segmenter.cut_at(offer)
                    emitted += [piece] if piece is not None else []
                    assert segmenter.cut_at(offer) is None  # the utterance it belonged to was cut
        return emitted + segmenter.finish(), offers, piece

    _, offers, _ = fed(None)
    assert 1 <= len(offers) <= 2  # the breaths the VAD hears as pauses of 120 ms or more
    for offer in offers:
        assert offer.start_sample == whole[0].start_sample and offer.duration >= 1.5
        assert np.abs(samples[offer.end_sample - 480:offer.end_sample + 480]).max() < 1000  # in a breath
    pieces, _, piece = fed(0)
    assert piece is not None and spans([piece]) == spans(offers[:1])
    assert np.array_equal(piece.audio, offers[0].audio) and not piece.forced
    assert len(pieces) == 2 and pieces[1].start_sample == pieces[0].end_sample  # contiguous
    assert pieces[1].end_sample == whole[0].end_sample
