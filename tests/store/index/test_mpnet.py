"""all-mpnet-base-v2 from its chunk packages: found by distribution, joined, checked, unpacked once.

The join, the checksum, the extraction and the stamps are the real code, run on a small real zip split into
parts inside distributions made here (the real packages' folders are not importable names either, so both
are found through `importlib.metadata`). The real 400 MB model is loaded by the last test, which skips
when the `mpnet` extra is not installed.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import os
import zipfile
from pathlib import Path

import pytest

from meetmem.chunked_files import ChunkedFileError, extract_zip, stamped, stamped_folder
from meetmem.store.index.errors import MissingDependency, ModelUnavailable
from meetmem.store.index.mpnet import MPNET_INSTALL_HINT, MPNET_PACKAGES, mpnet_parts, mpnet_path

_FILES = {"all-mpnet-base-v2/modules.json": b'[{"idx": 0}]', "all-mpnet-base-v2/1_Pooling/config.json": b"{}",
          "all-mpnet-base-v2/model.safetensors": os.urandom(50_000), "all-mpnet-base-v2/desktop.ini": b"x"}


def _zip_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zipped:
        for name, data in _FILES.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


def _install_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str, whole: bytes,
                   parts: int = 3) -> list[str]:
    """Distributions shaped like the real ones: `<prefix>_00N/input/all-mpnet-base-v2.zip.00N`, in RECORD."""
    root = tmp_path / "site"
    size = -(-len(whole) // parts)
    names = []
    for n in range(1, parts + 1):
        name = f"{prefix}-{n:03d}"
        piece = f"{prefix}_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}"
        (root / piece).parent.mkdir(parents=True)
        (root / piece).write_bytes(whole[(n - 1) * size : n * size])
        info = root / f"{name.replace('-', '_')}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n")
        (info / "RECORD").write_text(f"{piece},,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")
        names.append(name)
    monkeypatch.syspath_prepend(str(root))
    return names


def test_the_parts_join_and_unpack_once_then_are_trusted_while_unchanged(tmp_path, monkeypatch):
    whole = _zip_bytes()
    packages = _install_parts(tmp_path, monkeypatch, "meetmem-test-mpnet-ok", whole)
    assert [p.name for p in mpnet_parts(packages)] == [f"all-mpnet-base-v2.zip.00{n}" for n in (1, 2, 3)]
    digest = hashlib.sha256(whole).hexdigest()
    cache = tmp_path / "cache"
    model = mpnet_path(folder=cache, packages=packages, sha256=digest)
    assert model == cache / "all-mpnet-base-v2" / "all-mpnet-base-v2"
    for name, data in _FILES.items():
        assert (cache / "all-mpnet-base-v2" / name).read_bytes() == data
    assert (cache / "all-mpnet-base-v2.zip").read_bytes() == whole
    assert [p.name for p in cache.iterdir() if "partial" in p.name] == []
    assert stamped(cache / "all-mpnet-base-v2.zip", digest) and stamped_folder(cache / "all-mpnet-base-v2", digest)

    weights = model / "model.safetensors"
    unpacked_at = weights.stat().st_mtime_ns
    for n in (1, 2, 3):  # the pieces are no longer read once the folder is stamped
        mpnet_parts(packages)[n - 1].unlink()
    assert mpnet_path(folder=cache, packages=packages, sha256=digest) == model
    assert weights.stat().st_mtime_ns == unpacked_at

    weights.write_bytes(b"damaged")  # no longer the unpacked file: unpacked again from the stamped zip
    assert not stamped_folder(cache / "all-mpnet-base-v2", digest)
    mpnet_path(folder=cache, packages=packages, sha256=digest)
    assert weights.read_bytes() == _FILES["all-mpnet-base-v2/model.safetensors"]


def test_a_wrong_checksum_leaves_nothing_behind(tmp_path, monkeypatch):
    whole = _zip_bytes()
    packages = _install_parts(tmp_path, monkeypatch, "meetmem-test-mpnet-bad", whole)
    cache = tmp_path / "cache"
    with pytest.raises(ModelUnavailable, match="sha256 .* not the expected") as caught:
        mpnet_path(folder=cache, packages=packages, sha256=hashlib.sha256(whole + b"!").hexdigest())
    assert MPNET_INSTALL_HINT in str(caught.value)
    assert list(cache.iterdir()) == []


def test_a_join_or_an_unpacking_cut_short_is_never_taken_for_ready(tmp_path, monkeypatch):
    whole = _zip_bytes()
    packages = _install_parts(tmp_path, monkeypatch, "meetmem-test-mpnet-cut", whole)
    digest = hashlib.sha256(whole).hexdigest()
    cache = tmp_path / "cache"
    cache.mkdir()
    # What a process killed mid-way leaves: half the zip under its final name and in a partial file, a
    # folder with part of the members, and no stamps.
    (cache / "all-mpnet-base-v2.zip").write_bytes(whole[: len(whole) // 2])
    (cache / "all-mpnet-base-v2.zip.partial-99").write_bytes(whole[: len(whole) // 3])
    (cache / "all-mpnet-base-v2" / "all-mpnet-base-v2").mkdir(parents=True)
    (cache / "all-mpnet-base-v2" / "all-mpnet-base-v2" / "modules.json").write_bytes(b"[]")
    assert not stamped(cache / "all-mpnet-base-v2.zip", digest)
    assert not stamped_folder(cache / "all-mpnet-base-v2", digest)

    model = mpnet_path(folder=cache, packages=packages, sha256=digest)
    assert (model / "modules.json").read_bytes() == _FILES["all-mpnet-base-v2/modules.json"]
    assert (cache / "all-mpnet-base-v2.zip").read_bytes() == whole

    # A zip that cannot be unpacked leaves the folder it was meant to replace untouched in the cache.
    (cache / "broken.zip").write_bytes(whole[:100])
    with pytest.raises(ChunkedFileError, match="cannot unpack"):
        extract_zip(cache / "broken.zip", cache / "broken", digest)
    assert sorted(p.name for p in cache.iterdir() if p.name.startswith("broken")) == ["broken.zip"]


def test_a_member_outside_the_folder_is_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("../outside.txt", b"x")
    with pytest.raises(ChunkedFileError, match="outside"):
        extract_zip(archive, tmp_path / "cache" / "evil", "0" * 64)
    assert not (tmp_path / "cache" / "outside.txt").exists()
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_package_names_the_extra(tmp_path, monkeypatch):
    packages = _install_parts(tmp_path, monkeypatch, "meetmem-test-mpnet-gap", _zip_bytes(), parts=2)
    with pytest.raises(MissingDependency, match=r"meetmem-test-mpnet-gap-003 is not installed: .*meetmem\[mpnet\]"):
        mpnet_path(folder=tmp_path / "cache", packages=[*packages, "meetmem-test-mpnet-gap-003"], sha256="0" * 64)
    assert not (tmp_path / "cache").exists()


def _mpnet_installed() -> bool:
    try:
        for name in MPNET_PACKAGES:
            importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.model
@pytest.mark.skipif(not _mpnet_installed(), reason=f"the mpnet extra is not installed ({MPNET_INSTALL_HINT})")
def test_the_real_model_loads_by_path_and_ranks_a_paraphrase_first():
    from meetmem.store.index.embedders import load_embedder

    embedder = load_embedder("mpnet", threads=1)
    assert embedder.name == "mpnet" and embedder.dim == 768
    passages = embedder.encode(["We agreed to ship the remote control in red and yellow.",
                                "The budget for the battery is twelve euros and fifty cents.",
                                "Let's take a short break for lunch."])
    assert passages.shape == (3, 768) and passages.dtype.name == "float32"
    query = embedder.encode_query("which colours did they decide on for the remote?")
    assert abs(float(query @ query) - 1.0) < 1e-5
    scores = passages @ query
    assert int(scores.argmax()) == 0
