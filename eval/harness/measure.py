"""Measuring tools for the benchmarks: wall and CPU latency percentiles, per-phase stopwatches, preemptions,
peak memory and database size, and an embedder wrapper that embeds each passage text once."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# ------------------------------------------------------------------------------------------------------
# Measuring.
# ------------------------------------------------------------------------------------------------------


class SharedVectorEmbedder:
    """Wraps an embedder so that identical passage texts are embedded once and share that (real) vector.

    Queries are never cached: `encode_query` always runs the model. With `reuse` off, every text is sent
    to the model (and remembered), so a first pass measures embedding honestly and a later pass over the
    same texts (`reuse` on) measures everything but embedding.
    """

    def __init__(self, inner: Any, *, reuse: bool = True) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.reuse = reuse
        self._cache: dict[str, Any] = {}
        self.model_seconds = 0.0
        self.texts_embedded = 0
        self.texts_requested = 0

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> Any:
        import numpy as np

        texts = list(texts)
        self.texts_requested += len(texts)
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache)) if self.reuse else texts
        if todo:
            t0 = time.perf_counter()
            vecs = self.inner.encode(todo, batch_size=batch_size)
            self.model_seconds += time.perf_counter() - t0
            self.texts_embedded += len(todo)
            for t, v in zip(todo, vecs, strict=True):
                self._cache[t] = v
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def encode_query(self, text: str) -> Any:
        return self.inner.encode_query(text)

    def forget(self) -> None:
        """Drop the remembered vectors: the next pass embeds every text again."""
        self._cache.clear()


class Stopwatch:
    """Accumulates the wall time of the calls it wraps."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed

    def wrap_iter(self, fn: Callable[..., Iterator[Any]]) -> Callable[..., list[Any]]:
        """For a generator function: time it to exhaustion, return the list."""

        def timed(*args: Any, **kwargs: Any) -> list[Any]:
            t0 = time.perf_counter()
            try:
                return list(fn(*args, **kwargs))
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        return timed


@contextmanager
def patched(obj: Any, name: str, replacement: Any) -> Iterator[None]:
    """Set an instance attribute for the duration (instrumentation of one object, never of a class)."""
    setattr(obj, name, replacement)
    try:
        yield
    finally:
        delattr(obj, name)


def _percentiles(values_ms: list[float], prefix: str = "") -> dict[str, float]:
    ms = sorted(values_ms)

    def pct(p: float) -> float:
        # nearest-rank percentile
        rank = max(1, min(len(ms), int(-(-p * len(ms) // 100))))
        return ms[rank - 1]

    return {
        f"{prefix}p50_ms": round(statistics.median(ms), 3),
        f"{prefix}p95_ms": round(pct(95), 3),
        f"{prefix}p99_ms": round(pct(99), 3),
        f"{prefix}mean_ms": round(statistics.fmean(ms), 3),
        f"{prefix}max_ms": round(ms[-1], 3),
    }


def latency(wall_s: Sequence[float], cpu_s: Sequence[float] | None = None) -> dict[str, float | int]:
    """Wall-clock percentiles in ms and, if given, the process CPU time (all threads) of the same calls."""
    if not wall_s:
        return {"n": 0}
    out: dict[str, float | int] = {"n": len(wall_s), **_percentiles([s * 1000.0 for s in wall_s])}
    if cpu_s:
        out.update(_percentiles([s * 1000.0 for s in cpu_s], "cpu_"))
    return out


class Clock:
    """Wall and process-CPU time of a block, plus involuntary context switches (preemption) of the process."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    @contextmanager
    def __call__(self) -> Iterator[None]:
        w, c = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall.append(time.perf_counter() - w)
            self.cpu.append(time.process_time() - c)

    def stats(self) -> dict[str, float | int]:
        return latency(self.wall, self.cpu)


def preemptions() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw


def rate(count: int, seconds: float) -> float | None:
    return round(count / seconds, 1) if seconds > 0 else None


def proc_status() -> dict[str, float]:
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(("VmHWM:", "VmRSS:", "VmPeak:")):
                    key, value = line.split(":", 1)
                    out[key] = round(int(value.split()[0]) / 1024.0, 1)
    except OSError:
        pass
    return out


def reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: write 5 to clear_refs); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def db_bytes(path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        p = Path(str(path) + suffix)
        if p.exists():
            total += p.stat().st_size
    return total


