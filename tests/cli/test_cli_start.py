"""What the CLI imports when it starts: a command never pays for the benchmarks (eval/) it does not run, and a
reader that goes away early (`meetmem ask ... | head`) gets no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_MODULES = """
import sys
from meetmem.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("MODULES " + " ".join(sorted(m for m in sys.modules if m.startswith("meetmem."))), file=sys.stderr)
"""


def _imported(*argv: str, cwd: Path) -> set[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEETMEM_EMBEDDER": "none"}
    proc = subprocess.run([sys.executable, "-c", _MODULES, *argv], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    return set(line.split()[1:])


@pytest.mark.parametrize("argv", [["--help"], ["bench", "--help"], ["train", "--help"], ["ask", "--help"]])
def test_no_command_but_a_benchmark_imports_the_benchmarks(argv: list[str], tmp_path: Path) -> None:
    assert not {m for m in _imported(*argv, cwd=tmp_path) if m.startswith("meetmem.eval")}


def test_a_benchmark_imports_itself_alone(tmp_path: Path) -> None:
    imported = _imported("bench", "delete", "--help", cwd=tmp_path)
    assert "meetmem.eval.bench.delete" in imported
    assert not {"meetmem.eval.bench.serve", "meetmem.eval.bench.store", "meetmem.eval.corpora.qmsum"} & imported


def test_ask_into_a_closed_pipe_ends_quietly(tmp_path: Path, cli_command: list[str]) -> None:
    lines = tmp_path / "m.jsonl"
    lines.write_text("".join(json.dumps({"start": 2.0 * i, "end": 2.0 * i + 1.5, "speaker": "Ana",
                                         "text": f"The quote for part {i} was {i * 100} euros."}) + "\n"
                             for i in range(400)))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEETMEM_EMBEDDER": "none"}
    db = str(tmp_path / "m.db")
    subprocess.run([*cli_command, "ingest", "--db", db, "m", str(lines), "-q"], check=True, env=env, timeout=120)
    proc = subprocess.Popen([*cli_command, "ask", "--db", db, "m", "what was the quote for part 7?", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the answer is written
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err
