"""What every benchmark records beside its figures: the machine, the library versions and the checkout.

Shared by `bench store`, `bench serve` and `bench edge`, so a figure in docs/BENCHMARKS.md always says
the same things about where it was measured.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import sqlite3
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

#: The libraries the store and the cloud's search depend on.
STORE_DISTRIBUTIONS = ("numpy", "faiss-cpu", "torch", "sentence-transformers", "transformers", "snowballstemmer",
                       "sqlite-utils")


def versions(distributions: Sequence[str] = STORE_DISTRIBUTIONS) -> dict[str, str | None]:
    """Installed versions of `distributions` (None when one is missing)."""
    out: dict[str, str | None] = {}
    for dist in distributions:
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    return out


def checkout(paths: Sequence[str], *, untracked: bool = True) -> tuple[str | None, list[str] | None]:
    """HEAD, and the files under `paths` that differ from it (others may edit the checkout as we measure)."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=10,
                              check=True).stdout

    try:
        head = git("rev-parse", "--short", "HEAD").strip()
        flags = ["--untracked-files=all"] if untracked else []
        status = git("status", "--porcelain", *flags, "--", *paths)
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head, sorted(line[3:] for line in status.splitlines() if line.strip())


def machine_info() -> dict[str, Any]:
    """CPU, memory, load and the store's library versions, at the start of a run."""
    cpu_model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_total = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            mem_total = round(int(fh.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "mem_total_gb": mem_total,
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "versions": {"python": platform.python_version(), "sqlite": sqlite3.sqlite_version, **versions()},
    }
