"""Progress lines on stderr for long operations (stdout stays clean for `--json`)."""

from __future__ import annotations

import sys
import time


class StderrProgress:
    """Prints `label: done/total (pct)` on stderr at most every `interval` seconds, and once at the end."""

    def __init__(self, label: str, *, interval: float = 0.5, enabled: bool = True) -> None:
        self.label = label
        self.interval = interval
        self.enabled = enabled
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < self.interval:
            return
        self._last = now
        pct = 100.0 * done / total if total else 100.0
        end = "\n" if done >= total else "\r" if sys.stderr.isatty() else "\n"
        sys.stderr.write(f"{self.label}: {done}/{total} ({pct:.0f}%){end}")
        sys.stderr.flush()


def note(message: str) -> None:
    """One line of progress or status for a person, on stderr."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
