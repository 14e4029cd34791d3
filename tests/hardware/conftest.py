"""Fixtures for the hardware kits: `hardware/` holds scripts, not a package, so they are loaded by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

HARDWARE = Path(__file__).resolve().parents[2] / "hardware"


def load_script(path: Path) -> ModuleType:
    """Import a standalone script as a module (registered in sys.modules so its dataclasses resolve)."""
    name = f"meetmem_hardware_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def check_wheels() -> ModuleType:
    return load_script(HARDWARE / "check_wheels.py")
