"""The local model's chunks: found by package, joined in order, kept only when the sha256 matches.

The join and the checks are the real code, run on small part files made here; the 1.1 GB model itself is
measured by `meetmem bench ledger --model local-qwen`, not loaded in the tests.
"""

from __future__ import annotations

import hashlib
import os

import pytest

from meetmem.summarizers.errors import ChatError
from meetmem.summarizers.llm.local_model import (
    LOCAL_MODEL_INSTALL_HINT,
    ChunkedModel,
    join_parts,
    local_model_path,
    part_files,
)


def _parts(tmp_path, chunks: list[bytes]):
    paths = []
    for n, data in enumerate(chunks, 1):
        path = tmp_path / "parts" / f"part{n:02d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    return paths


def test_join_writes_the_parts_in_order_when_the_checksum_matches(tmp_path):
    chunks = [b"GGUF" + bytes(range(256)) * 40, b"\x00middle" * 1000, b"tail"]
    whole = b"".join(chunks)
    dest = tmp_path / "cache" / "model.gguf"
    got = join_parts(_parts(tmp_path, chunks), dest, hashlib.sha256(whole).hexdigest())
    assert got == dest
    assert dest.read_bytes() == whole
    assert [p.name for p in dest.parent.iterdir() if "partial" in p.name] == []


def test_a_wrong_checksum_leaves_no_file(tmp_path):
    chunks = [b"first", b"second"]
    swapped = list(reversed(_parts(tmp_path, chunks)))  # out of order: same bytes, another digest
    dest = tmp_path / "cache" / "model.gguf"
    with pytest.raises(ChatError, match="sha256 .* not the expected") as caught:
        join_parts(swapped, dest, hashlib.sha256(b"firstsecond").hexdigest())
    assert LOCAL_MODEL_INSTALL_HINT in str(caught.value)
    assert list(dest.parent.iterdir()) == []


def test_a_missing_part_is_named(tmp_path):
    parts = _parts(tmp_path, [b"a", b"b"])
    parts[1].unlink()
    with pytest.raises(ChatError, match="cannot read model part .*part02.bin"):
        join_parts(parts, tmp_path / "model.gguf", hashlib.sha256(b"ab").hexdigest())
    assert not (tmp_path / "model.gguf").exists()


def _install_fake_packages(tmp_path, monkeypatch, prefix: str, chunks: list[bytes]) -> None:
    """Packages shaped like the real ones (`<prefix>N/data/partNN.bin`) on sys.path."""
    root = tmp_path / "site"
    for n, data in enumerate(chunks, 1):
        package = root / f"{prefix}{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{n:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(root))


def test_the_model_is_joined_once_then_reused_while_unchanged(tmp_path, monkeypatch):
    prefix = "meetmem_test_chunks_ok_part"
    chunks = [b"one-", b"two-", b"three"]
    _install_fake_packages(tmp_path, monkeypatch, prefix, chunks)
    model = ChunkedModel("fake", "fake.gguf", prefix, 3, hashlib.sha256(b"one-two-three").hexdigest())
    assert [p.name for p in part_files(model)] == ["part01.bin", "part02.bin", "part03.bin"]
    path = local_model_path(model, folder=tmp_path / "cache")
    assert path.read_bytes() == b"one-two-three"
    joined_at = path.stat().st_mtime_ns
    assert local_model_path(model, folder=tmp_path / "cache").stat().st_mtime_ns == joined_at  # not joined again
    path.write_bytes(b"one-two-thre!")  # damaged afterwards: no longer the checked file, so joined again
    os.utime(path, ns=(joined_at + 10**9, joined_at + 10**9))  # a clock too coarse to see the write
    assert local_model_path(model, folder=tmp_path / "cache").read_bytes() == b"one-two-three"


def test_missing_packages_name_the_extra(tmp_path, monkeypatch):
    prefix = "meetmem_test_chunks_gap_part"
    _install_fake_packages(tmp_path, monkeypatch, prefix, [b"x", b"y"])
    model = ChunkedModel("fake", "fake.gguf", prefix, 4, hashlib.sha256(b"xy").hexdigest())
    with pytest.raises(ChatError) as caught:
        local_model_path(model, folder=tmp_path / "cache")
    message = str(caught.value)
    assert f"{prefix}3, {prefix}4 missing" in message
    assert "meetmem[local-model]" in message
    assert not (tmp_path / "cache" / "fake.gguf").exists()
