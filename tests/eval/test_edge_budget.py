"""The pure parts of `meetmem bench edge --parts budget`: the cap search, the aggregation, the projection onto a
board, the table; and the audio it writes. No model is loaded and nothing is timed."""

from __future__ import annotations

import math
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from meetmem.eval.bench.edge_budget import (
    MB,
    CapSearch,
    board_factors,
    budget_row,
    empty_outbox_bytes,
    looped_speech,
    markdown,
    parse_sysbench,
    project,
    room_noise,
    smallest_cap,
    write_wav,
)

DEMO = Path(__file__).resolve().parents[2] / "meetmem" / "demo_data" / "sample_meeting.ogg"
STEP = 64 * MB


@pytest.mark.parametrize(("need_mb", "low_mb", "high_mb"), [
    (300, 250, 1500),  # good guesses: low fails, high fits
    (300, 0, 1500),  # no lower guess
    (300, 600, 1500),  # low guess too high: halved until it fails
    (300, 250, 200),  # high guess too low: doubled until it fits
    (64, 0, 64),  # exactly one step
    (65, 64, 128),  # just above a step: the next one
    (1000, 1000, 1000),  # both guesses at the answer
    (3000, 128, 256),  # far above both guesses
])
def test_smallest_cap_finds_the_first_step_that_fits(need_mb: int, low_mb: int, high_mb: int) -> None:
    calls: list[int] = []

    def fits(cap: int) -> bool:
        calls.append(cap)
        return cap >= need_mb * MB

    found = smallest_cap(fits, low=low_mb * MB, high=high_mb * MB, step=STEP)
    assert found.cap == math.ceil(need_mb * MB / STEP) * STEP
    assert len(calls) == len(set(calls)), "a cap was probed twice"
    assert all(cap % STEP == 0 and cap > 0 for cap in calls)
    assert [c for c, _ in found.probes] == calls
    assert all(ok == (c >= need_mb * MB) for c, ok in found.probes)
    # The step below the answer was seen to fail, unless the answer is the first step.
    assert found.cap == STEP or (found.cap - STEP, False) in found.probes


def test_smallest_cap_gives_up_at_the_ceiling() -> None:
    found = smallest_cap(lambda cap: False, low=0, high=256 * MB, step=STEP, ceiling=1024 * MB)
    assert found.cap is None
    assert [c // MB for c, _ in found.probes] == [256, 512, 1024]


def test_smallest_cap_rejects_a_bad_step() -> None:
    with pytest.raises(ValueError):
        smallest_cap(lambda cap: True, low=0, high=MB, step=0)


def _item(audio_s: float, wall_s: float, cpu_s: float, outbox_bytes: int, calls: int) -> dict[str, Any]:
    return {"audio_s": audio_s, "wall_s": wall_s, "cpu_s": cpu_s, "transcribe_s": wall_s * 0.9,
            "recogniser_calls": calls, "segments": [{}] * calls, "outbox_bytes": outbox_bytes,
            "outbox_text_bytes": 40 * calls,
            "call_audio_s": [4.0] * calls}


def test_budget_row_scales_to_the_hour_above_an_empty_outbox() -> None:
    speech = _item(300.0, 60.0, 90.0, 20480 + 3 * MB // 12, 50)
    silence = _item(300.0, 3.0, 1.5, 20480, 0)
    cap = CapSearch(640 * MB, ((1024 * MB, True), (512 * MB, False), (640 * MB, True), (576 * MB, False)))
    row = budget_row("base", 2, speech, silence, process={"peak_rss_mb": 310.5, "peak_vm_mb": 1900.0, "load_s": 0.8},
                     empty_outbox_bytes=20480, cap=cap)
    assert row["rtf"] == 0.2
    assert row["cpu_pct_speech"] == 30.0
    assert row["cpu_pct_silence"] == 0.5
    assert row["outbox_mb_per_hour_speech"] == 3.0  # 0.25 MB in 5 minutes
    assert row["outbox_mb_per_hour_silence"] == 0.0
    assert row["outbox_text_mb_per_hour_speech"] == round(40 * 50 * 12 / MB, 3)
    assert row["smallest_as_cap_mb"] == 640
    assert row["as_cap_probes_mb"] == [[1024, True], [512, False], [640, True], [576, False]]
    assert row["recogniser_calls_silence"] == 0
    assert row["transcribe_s_per_call"] == round(54.0 / 50, 3)
    assert row["audio_s_per_call"] == 4.0


def test_budget_row_without_a_cap_search() -> None:
    item = _item(60.0, 6.0, 6.0, 8192, 1)
    row = budget_row("tiny.en", 1, item, item, process={}, empty_outbox_bytes=8192, cap=None)
    assert row["smallest_as_cap_mb"] is None and row["as_cap_probes_mb"] is None and row["peak_rss_mb"] is None


def _row(model: str, threads: int, rtf: float, cpu: float = 20.0) -> dict[str, Any]:
    return {"model": model, "threads": threads, "rtf": rtf, "cpu_pct_speech": cpu, "cpu_pct_silence": 0.4}


@pytest.mark.parametrize(("factor", "default"), [
    (1.0, "base"),  # base at 0.2 fits
    (2.5, "base"),  # base's best (2 threads, 0.2) -> 0.5: at the limit
    (3.0, "tiny.en"),  # base -> 0.6; tiny.en's best 0.08 -> 0.24
    (7.0, None),  # tiny.en -> 0.56: neither
])
def test_project_picks_the_largest_model_that_keeps_up(factor: float, default: str | None) -> None:
    rows = [_row("tiny.en", 1, 0.12), _row("tiny.en", 2, 0.08), _row("base", 1, 0.3), _row("base", 2, 0.2)]
    out = project(rows, {"board": factor})["board"]
    assert out["default_model"] == default
    assert out["factor"] == factor
    assert [p["rtf"] for p in out["rows"]] == [round(r["rtf"] * factor, 3) for r in rows]
    assert out["rows"][0]["cpu_pct_speech"] == round(20.0 * factor, 1)


def test_board_factors_and_sysbench_parsing() -> None:
    report = "CPU speed:\n    events per second:  4433.70\n\nGeneral statistics:\n    total time: 20.0002s\n"
    local = parse_sysbench(report)
    assert local == 4433.70
    assert parse_sysbench("sysbench: unknown test") is None
    assert board_factors(local, {"pi4": 1477.83, "pi5": 2737.49}) == {"pi4": 3.0, "pi5": 1.62}


def test_markdown_has_a_row_per_configuration_and_marks_what_was_not_measured() -> None:
    item = _item(300.0, 60.0, 90.0, 20480 + MB // 4, 50)
    rows = [budget_row("base", 2, item, item, process={"peak_rss_mb": 310.4}, empty_outbox_bytes=20480, cap=None)]
    lines = markdown(rows).splitlines()
    assert lines[0].startswith("| model | threads | RTF")
    assert len(lines) == 3
    assert lines[2] == "| `base` | 2 | 0.200 | 30.0 / 30.00 | 310 | n/a | n/a | 3.00 / 0.02 | 3.000 |"


def test_room_noise_is_at_its_level() -> None:
    noise = room_noise(10.0, -60.0)
    assert noise.dtype == np.int16 and len(noise) == 160000
    level = 20 * math.log10(float(np.sqrt(np.mean(noise.astype(np.float64) ** 2))) / 32768.0)
    assert abs(level - -60.0) < 0.2
    assert np.array_equal(noise, room_noise(10.0, -60.0)), "the noise is seeded"


def test_looped_speech_and_wav(tmp_path: Path) -> None:
    speech = looped_speech(DEMO, 300.0)
    assert speech.dtype == np.int16 and len(speech) == 300 * 16000
    path = tmp_path / "speech.wav"
    write_wav(path, speech[:16000])
    with wave.open(str(path), "rb") as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth(), wav.getnframes()) == (16000, 1, 2, 16000)


def test_empty_outbox_is_a_small_file(tmp_path: Path) -> None:
    assert 0 < empty_outbox_bytes(tmp_path) < 256 * 1024
