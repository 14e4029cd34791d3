"""Positions in a meeting as a player shows them: `MM:SS`, or `H:MM:SS` past the hour.

Standard library only, so the command line can print times without importing the search stack.
"""

from __future__ import annotations


def format_time(seconds: float) -> str:
    """`MM:SS` (or `H:MM:SS` past the hour), the way a player shows a position."""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"
