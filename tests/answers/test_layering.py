"""The answers package stands on its own: it never imports the HTTP service (the CLI answers offline), and its
modules import one another one way (no cycle), at run time or for type checking."""

from __future__ import annotations

import ast
from pathlib import Path

import meetmem.answers

PACKAGE = Path(meetmem.answers.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in it (top level, functions, `TYPE_CHECKING` blocks)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                found.add(f"meetmem.answers.{node.module}" if node.module else "meetmem.answers")
            elif node.module:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_answers_never_imports_the_service() -> None:
    for path in PACKAGE.glob("*.py"):
        assert not any(name.startswith("meetmem.cloud") for name in _imports(path)), path.name


def test_the_answers_modules_import_one_another_one_way() -> None:
    graph = {f"meetmem.answers.{p.stem}": {n for n in _imports(p) if n.startswith("meetmem.answers.")}
             for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if module in done:
            return
        for imported in graph.get(module, ()):
            visit(imported, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())
    assert len(graph) >= 12
