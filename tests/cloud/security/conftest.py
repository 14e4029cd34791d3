"""The security suite (issue 30): every finding of the attack run on real `meetmem serve` processes, replayed.

Each test reproduces one finding and fails on the code that had it. A module sets
`BACKENDS = ("sqlite", "postgres")` to run on both stores (tests/cloud/conftest.py). Every test here carries
the `security` marker: `pytest -m security` replays the campaign alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.security)
