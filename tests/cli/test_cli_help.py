"""Every command has help text, `--help` works for each, each appears in the README, and the options are
uniform (issue 34): a command takes only the options it reads, `--json` is the switch to JSON for every
command that prints data, one spelling per idea (`--device-id`, `--tenant`, the meeting id first), and every
earlier spelling still parses and says, once, on stderr, that it goes in a later release."""

from __future__ import annotations

import argparse
import ast
import builtins
import importlib
import inspect
import json
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from meetmem.cli import build_parser, main
from meetmem.cli.options import DB, JSON, QUIET, STORAGE, TENANT, Deprecated, flags


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


def _leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub.get_default("func") is not None:
                    yield (*prefix, name), sub
                yield from _leaves(sub, (*prefix, name))


#: Every command that runs something (`bench store`, not `bench`), with its parser.
LEAVES = dict(_leaves(build_parser()))
LEAF_IDS = [" ".join(path) for path in LEAVES]


def _dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for a in parser._actions if a.dest not in ("help", argparse.SUPPRESS)}


def _visible(parser: argparse.ArgumentParser) -> set[str]:
    """The option strings `--help` shows."""
    return {s for a in parser._actions if a.help != argparse.SUPPRESS for s in a.option_strings}


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
    if path in LEAVES:  # a group (bench, edge, token, ...) lists its actions; each action shows its options
        dests = _dests(LEAVES[path])
        assert "--verbose" in out  # every command: the process's logging
        assert ("--db" in out) == ("db" in dests) and ("--json" in out) == ("json" in dests)


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


# -- what a command's handler reads ------------------------------------------------------------------------------
# Read from the handler's source (and the functions of meetmem it hands `args`, the context or the settings to):
# `args.X` and `getattr(args, "X")` read option X; the context's parts read the shared options they are built
# from (the log: --db and --database; the search, the digests and the answerer also --embedder and -q, which
# announces a model's loading); the settings read the option of the same name. Settings handed whole to
# something else (the app factory, a copy) read every store and model option.

_STORE = frozenset({"db", "database_url"})
_MODELS = _STORE | {"embedder", "quiet"}
_CONTEXT = {"log": _STORE, "search": _MODELS, "digester": _MODELS, "answerer": _MODELS,
            "tenant": frozenset({"tenant"}), "quiet": frozenset({"quiet"})}
_SETTINGS = {"db": {"db"}, "receipt_key_path": {"db"}, "database_url": {"database_url"}, "tenant": {"tenant"},
             "embedder": {"embedder"}, "summarizer_for_embedder": {"embedder"}, "ledger_for_embedder": {"embedder"}}
_WHOLE = frozenset({"db", "database_url", "embedder"})
#: `main()` reads these for every command: -v sets the process's logging.
READ_BY_MAIN = frozenset({"verbose"})


def _function(func: Callable[..., Any]) -> ast.FunctionDef | None:
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(func))).body[0]
    except (OSError, TypeError, SyntaxError):
        return None
    return node if isinstance(node, ast.FunctionDef) else None


def _resolve(name: str, func: Callable[..., Any], node: ast.AST) -> Any:
    """What `name` means inside `func`: a `from X import name` in its body, else a global of its module."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.ImportFrom):
            for alias in sub.names:
                if (alias.asname or alias.name) == name:
                    package = importlib.import_module(func.__module__).__package__ or ""
                    base = package.split(".")[:len(package.split(".")) - sub.level + 1] if sub.level else []
                    module = ".".join([*base, sub.module] if sub.module else base)
                    return getattr(importlib.import_module(module), alias.name, None)
    return func.__globals__.get(name, getattr(builtins, name, None))


@cache
def handler_reads(func: Callable[..., Any], args: str = "args", ctx: str = "ctx",
                  settings: str = "\0") -> frozenset[str]:
    """The option dests `func` reads, given the names it knows the namespace, the context and the settings by."""
    func = inspect.unwrap(func)
    node = _function(func)
    if node is None:
        return frozenset()
    parent = {child: above for above in ast.walk(node) for child in ast.iter_child_nodes(above)}
    settings_names = {settings} | {
        a.targets[0].id for a in ast.walk(node) if isinstance(a, ast.Assign) and len(a.targets) == 1
        and isinstance(a.targets[0], ast.Name) and _is_settings(a.value, ctx, set())}
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == args:
            found.add(sub.attr)
        elif isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == ctx:
            found |= _CONTEXT.get(sub.attr, frozenset())
        elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            found |= _call_reads(sub, func, node, args, ctx, settings_names)
        if _is_settings(sub, ctx, settings_names):
            above = parent.get(sub)
            if isinstance(above, ast.Attribute):
                found |= _WHOLE if above.attr in ("model_copy", "model_dump") else _SETTINGS.get(above.attr, set())
            elif not (isinstance(above, ast.Assign) or isinstance(above, ast.Call) and sub in above.args
                      and isinstance(above.func, ast.Name)):
                found |= _WHOLE  # handed on whole (a keyword, a method's argument): every option it holds
    return frozenset(found)


def _is_settings(node: ast.AST, ctx: str, names: set[str]) -> bool:
    return (isinstance(node, ast.Name) and node.id in names and isinstance(node.ctx, ast.Load)) or (
        isinstance(node, ast.Attribute) and node.attr == "settings" and isinstance(node.value, ast.Name)
        and node.value.id == ctx)


def _call_reads(call: ast.Call, func: Callable[..., Any], node: ast.AST, args: str, ctx: str,
                settings_names: set[str]) -> set[str]:
    """What a call of a function by name reads of what it is handed. The CLI's and the benchmarks' own
    functions are read in turn; settings handed to anything else (the app factory) count whole."""
    passed = [(i, None, a) for i, a in enumerate(call.args)] + [(None, k.arg, k.value) for k in call.keywords]
    handed = [(i, kw, a) for i, kw, a in passed
              if (isinstance(a, ast.Name) and a.id in (args, ctx)) or _is_settings(a, ctx, settings_names)]
    callee = _resolve(call.func.id, func, node)
    if callee is getattr and handed and handed[0][0] == 0 and isinstance(call.args[0], ast.Name) \
            and call.args[0].id == args and len(call.args) > 1 and isinstance(call.args[1], ast.Constant):
        return {call.args[1].value}
    if not handed or callee in vars(builtins).values():
        return set()
    ours = inspect.isfunction(callee) and callee.__module__.startswith(("meetmem.cli", "meetmem.eval"))
    if not ours:
        return set(_WHOLE) if any(_is_settings(a, ctx, settings_names) for *_, a in handed) else set()
    params = list(inspect.signature(inspect.unwrap(callee)).parameters)
    names = {"args": "\0", "ctx": "\0", "settings": "\0"}
    for i, kw, a in handed:
        param = kw if kw is not None else params[i] if i is not None and i < len(params) else None
        if param is not None:
            role = "settings" if _is_settings(a, ctx, settings_names) else "args" if a.id == args else "ctx"
            names[role] = param
    return set(handler_reads(callee, names["args"], names["ctx"], names["settings"]))


def _settings_reads(func: Callable[..., Any]) -> frozenset[str]:
    """The shared options a handler reads through the context or the settings (not by `args.X`)."""
    return handler_reads(func, "\0") & {"db", "database_url", "tenant", "embedder", "quiet"}


@pytest.mark.parametrize("path", LEAVES, ids=LEAF_IDS)
def test_a_command_takes_no_option_it_never_reads(path: tuple[str, ...]) -> None:
    parser = LEAVES[path]
    unused = _dests(parser) - handler_reads(parser.get_default("func")) - READ_BY_MAIN
    assert not unused, f"`meetmem {' '.join(path)}` takes options its handler never reads: {sorted(unused)}"


@pytest.mark.parametrize("path", LEAVES, ids=LEAF_IDS)
def test_a_command_takes_the_shared_options_it_uses(path: tuple[str, ...]) -> None:
    parser = LEAVES[path]
    missing = _settings_reads(parser.get_default("func")) - _dests(parser)
    assert not missing, f"`meetmem {' '.join(path)}` uses {sorted(missing)} without taking the option"


def test_the_reading_checks_find_an_unused_option_and_a_missing_one() -> None:
    """The checks above would fail for a command that regained a flag it does not read."""
    def handler(args: argparse.Namespace, ctx: Any) -> int:
        return len(ctx.log.segments("m")) if args.json else 0

    parser = argparse.ArgumentParser(parents=flags(*STORAGE, TENANT, JSON, QUIET))
    parser.add_argument("--start", type=float)
    parser.set_defaults(func=handler)
    assert _dests(parser) - handler_reads(handler) - READ_BY_MAIN == {"tenant", "quiet", "start"}
    # ... and for one that opens the store without taking both its options
    assert _settings_reads(handler) - _dests(argparse.ArgumentParser(parents=flags(DB, JSON))) == {"database_url"}


#: Commands whose stdout is no data to switch to JSON: a server, a worker, a document in a chosen format
#: (`export --format md|srt|vtt|json`, the contract's spelling), the path of a written report.
PRINTS_NO_DATA = {("serve",), ("worker",), ("export",), ("eval", "report")}


@pytest.mark.parametrize("path", LEAVES, ids=LEAF_IDS)
def test_every_command_that_prints_data_takes_json(path: tuple[str, ...]) -> None:
    options = {s for a in LEAVES[path]._actions for s in a.option_strings}
    assert ("--json" in options) == (path not in PRINTS_NO_DATA), " ".join(path)
    json_actions = [a for a in LEAVES[path]._actions if a.dest == "json" and a.help != argparse.SUPPRESS]
    assert len(json_actions) <= 1 and all(a.option_strings == ["--json"] for a in json_actions)


@pytest.mark.parametrize("path", LEAVES, ids=LEAF_IDS)
def test_one_visible_spelling_per_idea(path: tuple[str, ...]) -> None:
    parser = LEAVES[path]
    visible = _visible(parser)
    assert not {"--device", "--device-id"} <= visible
    assert "--device" not in visible and "--meeting" not in visible and "--compact" not in visible
    tenants = [a for a in parser._actions if "--tenant" in a.option_strings]
    assert len(tenants) <= 1  # one --tenant: the tenant acted as, or (token, retention) the one acted on
    for dest in {a.dest for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS}:
        spellings = [a for a in parser._actions if a.dest == dest and a.help != argparse.SUPPRESS]
        assert len(spellings) == 1, f"`meetmem {' '.join(path)}` shows {dest} twice"


@pytest.mark.parametrize("path", [p for p, parser in LEAVES.items() if "meeting_id" in _dests(parser)],
                         ids=[i for i, parser in zip(LEAF_IDS, LEAVES.values(), strict=True)
                              if "meeting_id" in _dests(parser)])
def test_the_meeting_id_is_the_first_positional_argument(path: tuple[str, ...]) -> None:
    parser = LEAVES[path]
    positionals = [a for a in parser._actions if not a.option_strings]
    assert positionals[0].dest == "meeting_id" and positionals[0].metavar == "MEETING_ID"
    assert all(a.help == argparse.SUPPRESS for a in parser._actions if a.option_strings and a.dest == "meeting_id")
    assert " MEETING_ID" in parser.format_usage() and "[MEETING_ID]" not in parser.format_usage()  # required


def test_every_command_that_names_a_meeting_takes_its_id_first() -> None:
    named = {path for path, parser in LEAVES.items() if "meeting_id" in _dests(parser)}
    assert {("ingest",), ("segments",), ("search",), ("ask",), ("verify",), ("summary",), ("ledger",),
            ("export",), ("audio", "delete"), ("delete",), ("edge", "run"), ("edge", "ask")} <= named


def test_token_create_names_the_tenant_the_token_is_for() -> None:
    parser = LEAVES[("token", "create")]
    (tenant,) = [a for a in parser._actions if "--tenant" in a.option_strings]
    assert tenant.dest == "tenant_name" and tenant.required and "token is for" in tenant.help
    assert "tenant" not in _dests(parser)  # no tenant to act as competes with it


#: Every earlier spelling, and the same command line in today's: both parse alike; the old one says so once.
DEPRECATED = [
    (["ask", "m1", "what was decided?", "--device", "glasses-1", "--device", "glasses-1"],
     ["ask", "m1", "what was decided?", "--device-id", "glasses-1"], "--device", "--device-id"),
    (["edge", "run", "--input", "a.wav", "--meeting", "m1", "--cloud", "http://cloud", "--token", "t"],
     ["edge", "run", "m1", "--input", "a.wav", "--cloud", "http://cloud", "--token", "t"], "--meeting", "MEETING_ID"),
    (["edge", "ask", "--audio", "q.wav", "--meeting", "m1", "--json"],
     ["edge", "ask", "m1", "--audio", "q.wav", "--json"], "--meeting", "MEETING_ID"),
    (["eval", "run", "--meeting", "needles/", "--k", "3"], ["eval", "run", "--folder", "needles/", "--k", "3"],
     "--meeting", "--folder"),
    (["bench", "qmsum", "--data", "qmsum/", "--compact"], ["bench", "qmsum", "--data", "qmsum/", "--json"],
     "--compact", "--json"),
    (["bench", "zh", "--compact"], ["bench", "zh", "--json"], "--compact", "--json"),
]


@pytest.mark.parametrize(("old", "new", "old_flag", "new_name"), DEPRECATED, ids=[" ".join(d[0][:2]) + " " + d[2]
                                                                                   for d in DEPRECATED])
def test_an_earlier_spelling_still_works_and_says_it_goes(old: list[str], new: list[str], old_flag: str,
                                                          new_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    parsed_new = vars(build_parser(new).parse_args(new))
    assert capsys.readouterr().err == ""
    parsed_old = vars(build_parser(old).parse_args(old))
    err = capsys.readouterr().err
    handlers = [inspect.unwrap(parsed.pop("func")) for parsed in (parsed_old, parsed_new)]
    assert parsed_old == parsed_new and handlers[0] is handlers[1]
    assert err.count("\n") == 1 and err.startswith("meetmem: warning: ")  # once, however often it is given
    assert old_flag in err and new_name in err and "later release" in err


def test_every_deprecated_spelling_is_tested() -> None:
    hidden = {s for parser in LEAVES.values() for a in parser._actions if isinstance(a, Deprecated)
              for s in a.option_strings}
    assert hidden == {d[2] for d in DEPRECATED}


@pytest.mark.parametrize("path", list(LEAVES), ids=[" ".join(p) for p in LEAVES])
def test_every_command_still_accepts_db(path: tuple[str, ...]) -> None:
    """CONTRACT.md: every command takes `--db PATH`. One that opens no database accepts it hidden, and says so."""
    from meetmem.cli.options import Ignored

    db = [a for a in LEAVES[path]._actions if "--db" in a.option_strings]
    assert len(db) == 1
    assert isinstance(db[0], Ignored) or db[0].help != argparse.SUPPRESS


def test_db_on_a_command_that_opens_no_database_is_taken_and_said(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser(["edge", "run"]).parse_args(["edge", "run", "m1", "--input", "a.wav", "--db", "x.db"])
    assert args.meeting_id == "m1" and not hasattr(args, "db")
    assert "--db is not read by `meetmem edge run`" in capsys.readouterr().err


def test_the_contract_spelling_of_edge_run_reaches_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    """`edge run --input FILE --meeting ID --cloud URL --token T` (CONTRACT.md) still runs: here it gets as far
    as the input file, which does not exist; without any meeting id it is a usage error."""
    assert main(["edge", "run", "--input", "/nonexistent.wav", "--meeting", "m1", "--cloud", "http://127.0.0.1:9",
                 "--token", "t", "-q"]) == 1
    err = capsys.readouterr().err
    assert "--meeting is deprecated" in err and "nonexistent.wav" in err.splitlines()[-1]
    assert main(["edge", "run", "--input", "/nonexistent.wav", "--cloud", "http://127.0.0.1:9", "--token", "t"]) == 2
    assert "meetmem edge run MEETING_ID" in capsys.readouterr().err


def test_the_edge_reads_the_cloud_from_the_settings(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """MEETMEM_CLOUD and MEETMEM_TOKEN reach `edge ask` through Settings: with them, it gets as far as the audio."""
    monkeypatch.delenv("MEETMEM_CLOUD", raising=False)
    monkeypatch.delenv("MEETMEM_TOKEN", raising=False)
    assert main(["edge", "ask", "m1", "--audio", "/nonexistent.wav"]) == 1
    assert "--cloud (or MEETMEM_CLOUD) and --token (or MEETMEM_TOKEN)" in capsys.readouterr().err
    monkeypatch.setenv("MEETMEM_CLOUD", "http://127.0.0.1:9")
    monkeypatch.setenv("MEETMEM_TOKEN", "t")
    assert main(["edge", "ask", "m1", "--audio", "/nonexistent.wav"]) == 1
    err = capsys.readouterr().err
    assert "nonexistent.wav" in err and "MEETMEM_TOKEN" not in err


def test_a_benchmark_prints_figures_for_a_person_and_json_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    """`bench delete` on two small meetings: its figures as `key: value` lines (nested ones indented), or with
    --json one JSON object of the same figures, on one line."""
    command = ["bench", "delete", "--segments", "60", "--meetings", "2", "-q"]
    assert main([*command, "--json"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    figures = json.loads(out)
    assert main(command) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "bench: delete" in lines and f"segments_per_meeting: {figures['segments_per_meeting']}" in lines
    assert "  segments: 60" in lines  # deleted.segments, under its key
    assert [line.split(":")[0] for line in lines if not line.startswith(" ")] == list(figures)
