"""The server of `meetmem bench serve`: a real `meetmem serve` subprocess on a loopback port, and what /proc
says about it (memory, CPU) and about the machine it shares."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ServeBenchError(Exception):
    """The benchmark cannot run: the server did not start, or the work database is not what it expects."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_figures(pid: int) -> dict[str, float]:
    """VmRSS / VmHWM (MB) and user+system CPU seconds of a process, from /proc."""
    out: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    key, value = line.split(":", 1)
                    out[key] = round(int(value.split()[0]) / 1024.0, 1)
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        out["cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    return out


def machine_cpu_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine since boot, all cores (from /proc/stat)."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            ticks = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return sum(ticks[:8]) - idle, sum(ticks[:8])


@dataclass
class Server:
    """`meetmem serve` on a loopback port; its log goes to a file beside the database."""

    db: Path
    port: int
    embedder: str
    log_path: Path
    database_url: str | None = None  # PostgreSQL; None: the SQLite file `db` (which is also the receipt key's home)
    process: subprocess.Popen[bytes] | None = None
    peak_rss_sampled: float = 0.0
    rss_trace: list[tuple[float, float]] = field(default_factory=list)  # (seconds into the load, MB)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        exe = Path(sys.executable).with_name("meetmem")
        command = [str(exe)] if exe.exists() else [sys.executable, "-m", "meetmem.cli"]
        command += ["serve", "--db", str(self.db), "--host", "127.0.0.1", "--port", str(self.port),
                    "--embedder", self.embedder]
        # The load generator is one client with one token: the per-token rate limit would throttle the load
        # being measured, so it is off here (the per-address limit stays, above the bench's clients).
        env = {**os.environ, "MEETMEM_THREADS": "1", "HF_HUB_OFFLINE": "1", "MEETMEM_RATE_LIMIT": "0"}
        env.pop("MEETMEM_DATABASE_URL", None)
        if self.database_url:
            env["MEETMEM_DATABASE_URL"] = self.database_url
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout: float, *, any_answer: bool = False) -> float:
        """Seconds until /healthz answered 200 (with `any_answer`, answered at all: a server takes segments
        before its indexes are warm, and ingest does not wait for those); raises if the server exits or the
        timeout passes."""
        import httpx

        assert self.process is not None
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout:
            if self.process.poll() is not None:
                raise ServeBenchError(f"the server exited with status {self.process.returncode}:\n{self.log_tail()}")
            try:
                if httpx.get(self.url + "/healthz", timeout=2.0).status_code == 200 or any_answer:
                    return time.perf_counter() - t0
            except httpx.HTTPError:
                pass
            time.sleep(0.05 if any_answer else 0.25)  # not listening (or not ready) yet: poll again shortly
        raise ServeBenchError(f"the server was not {'answering' if any_answer else 'ready'} within {timeout:g} s:\n"
                              f"{self.log_tail()}")

    def figures(self) -> dict[str, float]:
        figures = proc_figures(self.process.pid) if self.process is not None else {}
        self.peak_rss_sampled = max(self.peak_rss_sampled, figures.get("VmRSS", 0.0))
        return figures

    def stop(self, timeout: float = 15.0) -> dict[str, Any]:
        """SIGTERM, then SIGKILL after `timeout`; says which it took."""
        return stop_process(self.process, timeout)

    def log_tail(self, lines: int = 20) -> str:
        return log_tail(self.log_path, lines)

    def log_problems(self) -> dict[str, Any]:
        """Warning, error and traceback lines of the server's log (the first few, and how many)."""
        return log_problems(self.log_path)


@dataclass
class Worker:
    """`meetmem worker` on a PostgreSQL database: runs the jobs the API processes defer."""

    database_url: str
    embedder: str
    log_path: Path
    options: tuple[str, ...] = ()  # more `meetmem worker` flags: --heartbeat, --stalled-after
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = Path(sys.executable).with_name("meetmem")
        command = [str(exe)] if exe.exists() else [sys.executable, "-m", "meetmem.cli"]
        command += ["worker", "--database", self.database_url, "--embedder", self.embedder, "-v", *self.options]
        env = {**os.environ, "MEETMEM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)

    def figures(self) -> dict[str, float]:
        return proc_figures(self.process.pid) if self.process is not None else {}

    def stop(self, timeout: float = 30.0) -> dict[str, Any]:
        """SIGTERM (a worker finishes the job in hand first), then SIGKILL after `timeout`."""
        return stop_process(self.process, timeout)

    def log_tail(self, lines: int = 20) -> str:
        return log_tail(self.log_path, lines)

    def log_problems(self) -> dict[str, Any]:
        return log_problems(self.log_path)


def stop_process(process: subprocess.Popen[bytes] | None, timeout: float) -> dict[str, Any]:
    """SIGTERM, then SIGKILL after `timeout`; says which it took."""
    if process is None:
        return {}
    if process.poll() is not None:
        return {"how": "had exited", "returncode": process.returncode}
    process.send_signal(signal.SIGTERM)
    t0 = time.perf_counter()
    try:
        process.wait(timeout)
        how = "SIGTERM"
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        how = f"SIGKILL after {timeout:g} s"
    return {"how": how, "returncode": process.returncode, "stop_s": round(time.perf_counter() - t0, 2)}


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def log_problems(path: Path) -> dict[str, Any]:
    """Warning, error and traceback lines of a process's log (the first few, and how many)."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    bad = [line for line in text if line.startswith(("WARNING", "ERROR", "CRITICAL", "Traceback"))]
    return {"lines": len(bad), "first": list(dict.fromkeys(bad))[:5]}


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process, of its children that ended (which the kernel adds to it when reaped) and of
    its children alive now: PostgreSQL's postmaster and its backends, which come and go with connections."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(p: int | str) -> list[str] | None:
        try:
            with open(f"/proc/{p}/stat", encoding="ascii") as fh:
                return fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None

    own = stat(pid)
    if own is None:
        return 0.0
    total = sum(int(v) for v in own[11:15])  # utime, stime, cutime, cstime
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := stat(entry)) is not None and fields[1] == str(pid):
            total += int(fields[11]) + int(fields[12])
    return total / tick


def create_token_pg(url: str, tenant: str, label: str = "bench serve") -> str:
    """A token of `tenant` in the PostgreSQL database at `url`."""
    from meetmem.cloud.auth import TokenStore
    from meetmem.store.pg.log import PgTranscriptLog

    with PgTranscriptLog(url) as transcript_log:
        return TokenStore(transcript_log).create(tenant, label=label)


def create_token(path: Path, tenant: str, label: str = "bench serve") -> str:
    """A token of `tenant` in the SQLite database at `path`."""
    from meetmem.cloud.auth import TokenStore
    from meetmem.store.log import TranscriptLog

    with TranscriptLog(path) as transcript_log:
        return TokenStore(transcript_log).create(tenant, label=label)


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """`env` set in this process's environment (which the processes started inside inherit), restored after."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
