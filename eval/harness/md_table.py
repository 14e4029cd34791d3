"""Markdown pieces the evaluation reports share: a figure as text and a table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def num(value: Any, digits: int = 3) -> str:
    """A figure with `digits` decimals and thousands separators, or `n/a` when it was not measured."""
    return "n/a" if value is None else f"{value:,.{digits}f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table's lines."""
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]
