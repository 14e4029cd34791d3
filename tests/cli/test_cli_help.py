"""Every command has help text, `--help` works for each, and each appears in the README."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

from meetmem.cli import build_parser, main


def _subcommands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(path, help) of every subcommand, nested ones included (`bench store`)."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                found.append(((*prefix, name), helps.get(name) or ""))
                found.extend(_subcommands(sub, (*prefix, name)))
    return found


COMMANDS = _subcommands(build_parser())
TOP_LEVEL = [path[0] for path, _ in COMMANDS if len(path) == 1]


def test_the_contract_commands_exist() -> None:
    for name in ("ingest", "segments", "search", "ask", "verify", "reindex", "demo"):
        assert name in TOP_LEVEL


@pytest.mark.parametrize(("path", "help_text"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_help_text(path: tuple[str, ...], help_text: str) -> None:
    assert help_text.strip(), f"`meetmem {' '.join(path)}` has no help text"


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_help_works(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: meetmem " + " ".join(path))
    groups = ("bench", "train", "token", "edge", "audio", "retention", "db")
    if path[-1] not in groups:  # groups: their actions take the flags
        assert "--db" in out and "--json" in out


def test_meetmem_help_lists_every_command(meetmem_cli) -> None:
    result = meetmem_cli("--help", db=None)
    assert result.returncode == 0, result.stderr
    for name in TOP_LEVEL:
        assert re.search(rf"^\s+{re.escape(name)}\s+\S", result.stdout, re.M), name


def test_no_command_is_a_usage_error(meetmem_cli) -> None:
    result = meetmem_cli(db=None)
    assert result.returncode == 2 and result.stdout == "" and "usage:" in result.stderr


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "meetmem.cli", "--help"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "usage: meetmem" in result.stdout


def test_every_command_appears_in_the_readme(repo_root: Path) -> None:
    readme = repo_root / "README.md"
    if not readme.is_file():
        pytest.skip("README.md does not exist yet (being written); this test checks it once it does")
    text = readme.read_text(encoding="utf-8")
    missing = [" ".join(path) for path, _ in COMMANDS if f"meetmem {' '.join(path)}" not in text]
    assert not missing, f"commands not shown in README.md as `meetmem <command>`: {missing}"
