"""What commands write on stdout: with `--json` the machine form and nothing else, without it a short form for
a person. Progress and status lines go to stderr (progress.py), so stdout stays clean for `--json`."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

#: A list of numbers or names longer than this is cut short in the form for a person (`--json` has it all).
SCALARS_SHOWN = 12
#: Likewise for a list of records (a benchmark's per-meeting rows).
RECORDS_SHOWN = 20


def emit_json(data: Any) -> None:
    """One JSON document on one line of stdout (`--json`)."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")


def emit_json_lines(items: Iterable[Any]) -> None:
    """One JSON document per line of stdout (`--json` of a command that lists records)."""
    for item in items:
        sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")


def emit_figures(figures: Any, *, as_json: bool) -> None:
    """A report of figures (a benchmark's, a training run's): the JSON object with `as_json`, else the same
    figures as indented `key: value` lines, nested keys indented under theirs."""
    if as_json:
        emit_json(figures)
        return
    sys.stdout.write("".join(line + "\n" for line in figure_lines(figures)))
    sys.stdout.flush()


def figure_lines(value: Any, indent: int = 0) -> list[str]:
    """`value` (JSON-like: dicts, lists, scalars) as lines for a person: `key: value`, a nested mapping's keys
    indented under its key, a list of records as `- ` items, a list of scalars on one line. Long lists are cut
    short with a count of what was left out."""
    pad = "  " * indent
    if isinstance(value, Mapping):
        if not value:
            return [f"{pad}(none)"]
        lines: list[str] = []
        for key, item in value.items():
            if _inline(item):
                lines.append(f"{pad}{key}: {_inline_text(item)}")
            else:
                lines.append(f"{pad}{key}:")
                lines.extend(figure_lines(item, indent + 1))
        return lines
    if isinstance(value, list | tuple):
        if _inline(value):
            return [f"{pad}{_inline_text(value)}"]
        lines = []
        for item in value[:RECORDS_SHOWN]:
            inner = figure_lines(item, indent + 1)
            inner[0] = f"{pad}- {inner[0][len(pad) + 2:]}"  # the item's first line carries its dash
            lines.extend(inner)
        if len(value) > RECORDS_SHOWN:
            lines.append(f"{pad}... {len(value) - RECORDS_SHOWN} more (--json prints every one)")
        return lines
    return [f"{pad}{_scalar(value)}"]


def _inline(value: Any) -> bool:
    """Whether `value` fits on its key's line: a scalar, an empty collection, or a list of scalars."""
    if isinstance(value, Mapping | list | tuple):
        return not value or (not isinstance(value, Mapping)
                             and all(not isinstance(v, Mapping | list | tuple) for v in value))
    return True


def _inline_text(value: Any) -> str:
    if isinstance(value, Mapping | list | tuple):
        if not value:
            return "(none)"
        shown = ", ".join(_scalar(v) for v in list(value)[:SCALARS_SHOWN])
        return shown + (f", ... ({len(value)} in all)" if len(value) > SCALARS_SHOWN else "")
    return _scalar(value)


def _scalar(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
    return " ".join(str(value).split("\n"))
