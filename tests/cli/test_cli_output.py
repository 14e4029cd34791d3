"""What commands print on stdout (meetmem/cli/output.py): with --json exactly the JSON document, without it the
same figures as `key: value` lines for a person."""

from __future__ import annotations

import json
from typing import Any

import pytest

from meetmem.cli.output import RECORDS_SHOWN, SCALARS_SHOWN, emit_figures, figure_lines

FIGURES = {"benchmark": "store", "machine": {"cores": 2, "versions": {"python": "3.11"}}, "ok": True, "db": None,
           "sizes": [1000, 10000], "results": [{"segments": 1000, "search": {"p95_ms": 12.3456}}, {"segments": 2}],
           "empty": {}, "zh": "下周五", "wall_s": 12345.6}


def test_with_json_the_figures_are_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    emit_figures(FIGURES, as_json=True)
    out = capsys.readouterr().out
    assert out == json.dumps(FIGURES, ensure_ascii=False) + "\n"


def test_without_json_each_figure_is_a_line_under_its_key(capsys: pytest.CaptureFixture[str]) -> None:
    emit_figures(FIGURES, as_json=False)
    assert capsys.readouterr().out.splitlines() == [
        "benchmark: store",
        "machine:",
        "  cores: 2",
        "  versions:",
        "    python: 3.11",
        "ok: yes",
        "db: none",
        "sizes: 1000, 10000",
        "results:",
        "  - segments: 1000",
        "    search:",
        "      p95_ms: 12.35",
        "  - segments: 2",
        "empty: (none)",
        "zh: 下周五",
        "wall_s: 12346",
    ]


@pytest.mark.parametrize(("value", "shown"), [
    (list(range(SCALARS_SHOWN + 3)), f"{', '.join(map(str, range(SCALARS_SHOWN)))}, ... ({SCALARS_SHOWN + 3} in all)"),
    ([], "(none)"),
    ([[1, 2], [3]], None),
    ("two\nlines", "two lines"),
    (0.000123, "0.000123"),
    (False, "no"),
])
def test_values_for_a_person(value: Any, shown: str | None) -> None:
    lines = figure_lines({"x": value})
    if shown is None:  # a list of lists: one dash per inner list
        assert lines == ["x:", "  - 1, 2", "  - 3"]
    else:
        assert lines == [f"x: {shown}"]


def test_a_long_list_of_records_says_how_many_it_left_out() -> None:
    lines = figure_lines({"rows": [{"n": i} for i in range(RECORDS_SHOWN + 5)]})
    assert lines[-1] == "  ... 5 more (--json prints every one)"
    assert sum(line.startswith("  - ") for line in lines) == RECORDS_SHOWN
