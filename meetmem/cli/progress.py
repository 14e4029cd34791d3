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


class ProgressBar:
    """A progress bar on stderr: `label [#####.....] done/total pct, elapsed, left`.

    On a terminal it redraws one line (at most every `interval` seconds); into a file or a pipe it writes a
    line every `log_interval` seconds and at the end, so a log of a long run stays short. `finish` ends the
    line. Disabled, it does nothing (`-q`).
    """

    def __init__(self, label: str, *, width: int = 24, interval: float = 0.2, log_interval: float = 10.0,
                 enabled: bool = True) -> None:
        self.label = label
        self.width = width
        self.enabled = enabled
        self._tty = sys.stderr.isatty()
        self._interval = interval if self._tty else log_interval
        self._started = time.monotonic()
        self._last = -1e9
        self._open = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < self._interval:
            return
        self._last = now
        share = min(1.0, done / total) if total else 1.0
        filled = round(self.width * share)
        elapsed = now - self._started
        left = f", {elapsed / share - elapsed:.0f} s left" if 0 < share < 1 else ""
        line = (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} "
                f"({100 * share:.0f}%), {elapsed:.0f} s{left}")
        if self._tty:
            sys.stderr.write("\r\x1b[2K" + line + ("\n" if done >= total else ""))
            self._open = done < total
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    def finish(self) -> None:
        """End an unfinished bar's line, so what follows starts on a line of its own."""
        if self.enabled and self._open:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._open = False
