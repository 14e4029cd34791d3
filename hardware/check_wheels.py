"""Prove that an extra installs on a Raspberry Pi (Linux aarch64, CPython 3.11) from wheels alone, at the
same versions as on x86_64.

pip resolves the extra's requirement strings (and the project's base dependencies) twice with
`--only-binary=:all:`: once for manylinux x86_64 and once for manylinux aarch64, and the two resolutions
are compared package by package. A package missing from the aarch64 side has no wheel for the Pi (pip on
the Pi would build it from source, or fail); a package at another version there means pip backtracked to
an older release that still has a wheel (issue 8: a narrow platform list does that silently).

Usage: python hardware/check_wheels.py [--extra edge] [--with sounddevice] [--download] [--json]

By default pip resolves with `install --dry-run --report`, which reads each wheel's metadata file (PEP 658)
and downloads no wheel; `--download` runs `pip download` instead and measures the bytes fetched. Both use
pip's cache. The machine's pip configuration (extra indexes, find-links, constraints) is ignored so that
the answer is the one a Pi gets from the package index alone; `--index-url` names another index.

Standard library only: it runs before anything is installed. Exit status: 0 when every package has an
aarch64 wheel at the x86_64 version, 1 when not, 2 when the x86_64 resolution itself fails.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PYTHON_VERSION = "3.11"
ABI = "cp311"
# Debian 12 (bookworm), and so 64-bit Raspberry Pi OS, ships glibc 2.36. pip does not expand
# `manylinux_2_36` to the older glibc levels a wheel may be tagged with (only manylinux2014 to 2010 and 1),
# so every level from 2.17 (manylinux2014) up is listed: a wheel tagged only `manylinux_2_27_aarch64`
# would otherwise be skipped and pip would backtrack to an older release.
GLIBC_MINORS = range(36, 16, -1)
ARCHES = {"x86_64": "x86_64", "aarch64": "aarch64"}
# Environment variables through which a machine's pip configuration would widen or pin the resolution.
_PIP_CONFIG_VARIABLES = ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_CONSTRAINT",
                         "PIP_REQUIREMENT", "PIP_NO_INDEX", "PIP_PRE", "PIP_ONLY_BINARY", "PIP_NO_BINARY")
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<python>[^-]+)"
                    r"-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")
_SDIST = re.compile(r"^(?P<name>.+)-(?P<version>[^-]+?)\.(?:tar\.gz|tar\.bz2|tar\.xz|zip|tgz)$")
_NO_DISTRIBUTION = re.compile(r"(?:No matching distribution found for|"
                              r"Could not find a version that satisfies the requirement) ([^\s(]+)")


def canonical_name(name: str) -> str:
    """A distribution name normalised as PEP 503 does (`PyYAML`, `pyyaml` and `py_yaml` compare equal)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def manylinux_platforms(arch: str) -> list[str]:
    """pip's `--platform` values for a manylinux machine of `arch` with glibc 2.36 (newest first)."""
    return [f"manylinux_2_{minor}_{arch}" for minor in GLIBC_MINORS] + [f"manylinux2014_{arch}"]


@dataclass(frozen=True)
class Artifact:
    """One distribution file pip chose: a wheel (with its platform tags) or a source archive."""

    name: str
    version: str
    filename: str
    platforms: tuple[str, ...] = ()

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")

    @property
    def is_pure(self) -> bool:
        """A wheel for every platform (`any`): it cannot differ between machines."""
        return self.platforms == ("any",)


def parse_artifact(filename: str) -> Artifact:
    """Name, version and platform tags of a wheel or sdist file name (PEP 427 and 625).

    Raises:
        ValueError: the name is neither a wheel nor a source archive.
    """
    wheel = _WHEEL.match(filename)
    if wheel:
        return Artifact(canonical_name(wheel["name"]), wheel["version"], filename,
                        tuple(wheel["platform"].split(".")))
    sdist = _SDIST.match(filename)
    if sdist:
        return Artifact(canonical_name(sdist["name"]), sdist["version"], filename)
    raise ValueError(f"not a wheel or source archive: {filename!r}")


@dataclass(frozen=True)
class Resolution:
    """What pip chose for one platform, or why it chose nothing."""

    arch: str
    artifacts: dict[str, Artifact]
    seconds: float
    downloaded_bytes: int | None = None
    error: str | None = None
    unavailable: tuple[str, ...] = ()
    # Dependencies whose marker holds on one of x86_64 and aarch64 only: pip evaluates markers for the
    # machine it runs on, not the target platform, so they may resolve differently on the Pi than here.
    machine_markers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    name: str
    host_version: str | None
    target_version: str | None
    target_file: str | None
    status: str  # same, differs, missing, only-target, sdist


@dataclass
class Comparison:
    """The two resolutions side by side, and the per-package probes of what failed or differed."""

    host: Resolution
    target: Resolution
    rows: list[Row] = field(default_factory=list)
    # name==version pins of the x86_64 resolution that have no aarch64 wheel (from per-package probes).
    no_target_wheel: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[Row]:
        return [row for row in self.rows if row.status != "same"]

    @property
    def ok(self) -> bool:
        return self.host.error is None and self.target.error is None and not self.problems


def compare(host: Resolution, target: Resolution) -> list[Row]:
    """One row per package of either resolution, sorted by name, with its status on the target."""
    rows = []
    for name in sorted(set(host.artifacts) | set(target.artifacts)):
        mine, theirs = host.artifacts.get(name), target.artifacts.get(name)
        if theirs is None:
            status = "missing"
        elif not theirs.is_wheel:
            status = "sdist"
        elif mine is None:
            status = "only-target"
        elif mine.version != theirs.version:
            status = "differs"
        else:
            status = "same"
        rows.append(Row(name, mine.version if mine else None, theirs.version if theirs else None,
                        theirs.filename if theirs else None, status))
    return rows


def unavailable_requirements(pip_output: str) -> tuple[str, ...]:
    """The requirements pip's error names as having no matching distribution, in order, without repeats."""
    return tuple(dict.fromkeys(_NO_DISTRIBUTION.findall(pip_output)))


def platform_tag(row: Row) -> str:
    """The platform part of the target file's tags, shortened for the table (`any`, `manylinux_2_28`)."""
    if row.target_file is None:
        return "-"
    artifact = parse_artifact(row.target_file)
    if not artifact.is_wheel:
        return "sdist"
    return ".".join(tag.removesuffix("_aarch64") for tag in artifact.platforms)


def render(comparison: Comparison) -> str:
    """The comparison as a Markdown table and a verdict, for a terminal or the README."""
    host, target = comparison.host, comparison.target
    lines = ["| package | x86_64 | aarch64 | aarch64 wheel | status |", "| --- | --- | --- | --- | --- |"]
    for row in comparison.rows:
        lines.append(f"| {row.name} | {row.host_version or '-'} | {row.target_version or '-'} | "
                     f"{platform_tag(row)} | {row.status} |")
    lines.append("")
    for resolution in (host, target):
        size = (f", {resolution.downloaded_bytes / 1e6:.1f} MB of files"
                if resolution.downloaded_bytes is not None else "")
        lines.append(f"{resolution.arch}: {len(resolution.artifacts)} packages in {resolution.seconds:.1f} s{size}")
        if resolution.error:
            lines.append(f"{resolution.arch}: pip failed: {resolution.error}")
        for requirement in resolution.unavailable:
            lines.append(f"{resolution.arch}: no wheel for {requirement}")
    for requirement in sorted(set(host.machine_markers) | set(target.machine_markers)):
        lines.append(f"warning: pip evaluated this dependency's marker for this machine, not the Pi: {requirement}")
    for pin in comparison.no_target_wheel:
        lines.append(f"aarch64: no wheel for {pin} (pip on a Pi would build it from source or fail)")
    compiled = [row.name for row in comparison.rows if row.status == "sdist"]
    if compiled:
        lines.append("would compile from source: " + ", ".join(compiled))
    if comparison.ok:
        lines.append("OK: every package has an aarch64 wheel at the x86_64 version")
    else:
        lines.append(f"FAILED: {len(comparison.problems)} package(s) differ or lack an aarch64 wheel"
                     if comparison.problems else "FAILED: a resolution failed")
    return "\n".join(lines)


def requirement_name(requirement: str) -> str:
    """The distribution name at the start of a PEP 508 requirement string."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"not a requirement: {requirement!r}")
    return canonical_name(match[1])


def project_requirements(pyproject: dict, extras: Sequence[str], *, base: bool = True) -> list[str]:
    """The requirement strings of `extras` (and the base dependencies), with the project's references to
    its own extras (`meetmem[llm]`) expanded, since the project itself is local and not on the index."""
    project = pyproject["project"]
    own = canonical_name(project["name"])
    optional = project.get("optional-dependencies", {})
    result: list[str] = list(project.get("dependencies", [])) if base else []
    todo, seen = list(extras), set()
    while todo:
        extra = todo.pop(0)
        if extra in seen:
            continue
        if extra not in optional:
            raise KeyError(f"the project has no extra {extra!r} (it has: {', '.join(sorted(optional))})")
        seen.add(extra)
        for requirement in optional[extra]:
            if requirement_name(requirement) == own:
                inner = re.search(r"\[([^\]]*)\]", requirement)
                todo.extend(name.strip() for name in (inner[1] if inner else "").split(",") if name.strip())
            else:
                result.append(requirement)
    return list(dict.fromkeys(result))


def pip_environment() -> dict[str, str]:
    """This process's environment without the machine's pip configuration (files and variables)."""
    environment = {key: value for key, value in os.environ.items() if key not in _PIP_CONFIG_VARIABLES}
    environment["PIP_CONFIG_FILE"] = os.devnull
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return environment


def pip_target_options(arch: str) -> list[str]:
    options = ["--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp", "--abi", ABI]
    for platform in manylinux_platforms(ARCHES[arch]):
        options += ["--platform", platform]
    return options


def resolve(requirements: Sequence[str], arch: str, *, download: bool = False, index_url: str | None = None,
            python: str = sys.executable) -> Resolution:
    """Resolve `requirements` for manylinux `arch` from wheels only, with their dependencies."""
    index = ["--index-url", index_url] if index_url else []
    with tempfile.TemporaryDirectory(prefix=f"check-wheels-{arch}-") as folder:
        if download:
            command = [python, "-m", "pip", "download", "--no-input", "--quiet", "--dest", folder]
        else:
            report = os.path.join(folder, "report.json")
            command = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-input", "--quiet",
                       "--report", report]
        command += pip_target_options(arch) + index + list(requirements)
        started = time.monotonic()
        finished = subprocess.run(command, capture_output=True, text=True, env=pip_environment(), check=False)
        seconds = time.monotonic() - started
        if finished.returncode != 0:
            output = finished.stderr + finished.stdout
            last = [line.strip() for line in output.splitlines() if line.strip().startswith("ERROR")]
            return Resolution(arch, {}, seconds, error=(last[-1] if last else output.strip()[-300:]),
                              unavailable=unavailable_requirements(output))
        if download:
            files = sorted(os.listdir(folder))
            artifacts = [parse_artifact(name) for name in files]
            size = sum(os.path.getsize(os.path.join(folder, name)) for name in files)
            return Resolution(arch, {a.name: a for a in artifacts}, seconds, downloaded_bytes=size)
        with open(report, encoding="utf-8") as handle:
            items = json.load(handle)["install"]
    artifacts, markers = [], []
    for item in items:
        url = item["download_info"]["url"]
        artifacts.append(parse_artifact(urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])))
        markers += [r for r in item["metadata"].get("requires_dist", []) if _tests_the_machine(r)]
    return Resolution(arch, {a.name: a for a in artifacts}, seconds, machine_markers=tuple(sorted(set(markers))))


def _tests_the_machine(requirement: str) -> bool:
    """A dependency whose marker may hold on x86_64 Linux and not on aarch64 Linux, or the reverse.

    pip evaluates markers for the machine it runs on, never for `--platform`, so such a dependency would be
    resolved here as for x86_64. Only `platform_machine` differs between the two Linux machines; the marker
    is evaluated for both with pip's own `packaging` when it is importable, else every such one is named.
    """
    marker = requirement.partition(";")[2]
    if "platform_machine" not in marker:
        return False
    try:
        from pip._vendor.packaging.markers import Marker
    except ImportError:
        return True
    results = {Marker(marker).evaluate({"platform_machine": machine, "sys_platform": "linux",
                                        "platform_system": "Linux", "os_name": "posix", "extra": ""})
               for machine in ARCHES}
    return len(results) > 1


def probe(pins: Iterable[str], arch: str, *, index_url: str | None = None) -> list[str]:
    """The `name==version` pins that have no wheel for `arch`, each resolved alone (no dependencies), so
    that every one is named rather than only the first pip stops at."""
    missing = []
    index = ["--index-url", index_url] if index_url else []
    for pin in pins:
        with tempfile.TemporaryDirectory(prefix="check-wheels-probe-") as folder:
            command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                       "--no-input", "--quiet", "--report", os.path.join(folder, "report.json"),
                       *pip_target_options(arch), *index, pin]
            if subprocess.run(command, capture_output=True, text=True, env=pip_environment(),
                              check=False).returncode != 0:
                missing.append(pin)
    return missing


def check(requirements: Sequence[str], *, download: bool = False, index_url: str | None = None) -> Comparison:
    """Resolve for x86_64 and aarch64, compare, and probe every x86_64 pin the aarch64 side lacks."""
    host = resolve(requirements, "x86_64", download=download, index_url=index_url)
    target = resolve(requirements, "aarch64", download=download, index_url=index_url)
    comparison = Comparison(host, target, compare(host, target) if host.error is None else [])
    if host.error is None:
        suspects = [f"{row.name}=={row.host_version}" for row in comparison.rows
                    if row.host_version is not None and row.status in ("missing", "differs", "sdist")]
        comparison.no_target_wheel = probe(suspects, "aarch64", index_url=index_url)
    return comparison


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--extra", action="append", default=None,
                        help="an extra of pyproject.toml to check (repeatable; default: edge)")
    parser.add_argument("--with", dest="also", action="append", default=[], metavar="REQUIREMENT",
                        help="another requirement installed beside the extra (e.g. sounddevice)")
    parser.add_argument("--no-base", action="store_true", help="leave out the project's base dependencies")
    parser.add_argument("--pyproject", type=Path, default=PROJECT_ROOT / "pyproject.toml")
    parser.add_argument("--download", action="store_true",
                        help="download the files (pip download) instead of resolving from metadata only")
    parser.add_argument("--index-url", default=None, help="the package index (default: pip's own default)")
    parser.add_argument("--json", action="store_true", help="the comparison as JSON on stdout")
    args = parser.parse_args(argv)
    with open(args.pyproject, "rb") as handle:
        pyproject = tomllib.load(handle)
    requirements = project_requirements(pyproject, args.extra or ["edge"], base=not args.no_base) + args.also
    comparison = check(requirements, download=args.download, index_url=args.index_url)
    if args.json:
        json.dump({"ok": comparison.ok, "requirements": requirements, "host": _resolution_json(comparison.host),
                   "target": _resolution_json(comparison.target), "rows": [asdict(r) for r in comparison.rows],
                   "no_target_wheel": comparison.no_target_wheel}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(render(comparison))
    if comparison.host.error is not None:
        return 2
    return 0 if comparison.ok else 1


def _resolution_json(resolution: Resolution) -> dict:
    data = asdict(resolution)
    data["artifacts"] = {name: artifact.filename for name, artifact in sorted(resolution.artifacts.items())}
    return data


if __name__ == "__main__":
    sys.exit(main())
