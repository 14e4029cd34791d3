"""The `edge` extra installs on a Raspberry Pi: nothing it pulls in, directly or through its dependencies,
is torch, FastAPI, faiss or sentence-transformers (read from the installed packages' own metadata)."""

from __future__ import annotations

import re
from importlib import metadata

from packaging.requirements import Requirement

FORBIDDEN = {"torch", "fastapi", "faiss-cpu", "sentence-transformers", "transformers", "uvicorn", "starlette"}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def _closure(roots: list[str]) -> set[str]:
    """Every distribution the requirements pull in, following each one's unconditional dependencies."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        requirement = Requirement(todo.pop())
        name = _name(str(requirement))
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo.extend(r for r in (metadata.requires(name) or []) if "extra ==" not in r)
        except metadata.PackageNotFoundError:
            pass
    return seen


def test_the_edge_extra_pulls_in_no_cloud_package() -> None:
    edge = [r.split(";")[0] for r in metadata.requires("meetmem") or [] if 'extra == "edge"' in r]
    base = [r for r in metadata.requires("meetmem") or [] if "extra ==" not in r]
    assert {"faster-whisper", "webrtcvad-wheels", "httpx"} <= {_name(r) for r in edge}
    pulled = _closure(edge + base)
    assert "ctranslate2" in pulled and "av" in pulled  # the walk does reach the dependencies' dependencies
    assert not pulled & FORBIDDEN, sorted(pulled & FORBIDDEN)
