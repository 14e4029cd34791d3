"""The Raspberry Pi kit (issue 8): the systemd unit meets the issue's requirements and passes
`systemd-analyze verify`, and `install.sh` is valid bash whose dry run plans a root-only environment file
that it never overwrites."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from meetmem.cli import build_parser

REPO_ROOT = Path(__file__).resolve().parents[2]
PI = REPO_ROOT / "hardware" / "pi"
UNIT = PI / "meetmem-edge.service"
INSTALL = PI / "install.sh"
ENV_FILE = "/etc/meetmem/edge.env"


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """A systemd unit file as section -> key -> values, in order (systemd allows a key more than once, and
    an empty assignment resets the list, as `Environment=` alone does)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    logical = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not logical and (not line or line[0] in "#;"):
            continue
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        line, logical = logical + line, ""
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"an assignment before any section: {line!r}"
        key, sep, value = line.partition("=")
        assert sep, f"not an assignment: {line!r}"
        values = current.setdefault(key.strip(), [])
        if value.strip():
            values.append(value.strip())
        else:
            values.clear()
    return sections


@pytest.fixture(scope="module")
def unit() -> dict[str, dict[str, list[str]]]:
    return parse_unit(UNIT.read_text(encoding="utf-8"))


def one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    values = unit[section].get(key, [])
    assert len(values) == 1, f"[{section}] {key}: expected one value, got {values}"
    return values[0]


def environment(unit: dict[str, dict[str, list[str]]]) -> dict[str, str]:
    pairs = [item.split("=", 1) for value in unit["Service"].get("Environment", []) for item in shlex.split(value)]
    return dict(pairs)


def exec_start(unit: dict[str, dict[str, list[str]]]) -> list[str]:
    return shlex.split(one(unit, "Service", "ExecStart"))


def test_parse_unit_keeps_repeated_keys_and_resets() -> None:
    parsed = parse_unit("[Service]\n# c\nEnvironment=A=1\nEnvironment=B=2\nExecStart=/bin/x \\\n  --y\n"
                        "[Install]\nWantedBy=a.target\nWantedBy=\nWantedBy=b.target\n")
    assert parsed["Service"]["Environment"] == ["A=1", "B=2"]
    assert parsed["Service"]["ExecStart"] == ["/bin/x  --y"]
    assert parsed["Install"]["WantedBy"] == ["b.target"]


def test_it_starts_at_boot_after_the_network_and_sound(unit: dict[str, dict[str, list[str]]]) -> None:
    assert one(unit, "Install", "WantedBy") == "multi-user.target"
    for key in ("After", "Wants"):
        targets = " ".join(unit["Unit"][key]).split()
        assert "network-online.target" in targets and "sound.target" in targets


def test_it_restarts_on_failure_within_a_start_limit(unit: dict[str, dict[str, list[str]]]) -> None:
    assert one(unit, "Service", "Restart") == "on-failure"
    assert int(one(unit, "Service", "RestartSec")) >= 1
    burst, interval = int(one(unit, "Unit", "StartLimitBurst")), int(one(unit, "Unit", "StartLimitIntervalSec"))
    # the limit can trip: `burst` restarts, RestartSec apart, fit in the interval
    assert burst * int(one(unit, "Service", "RestartSec")) < interval


def test_it_runs_the_edge_on_the_microphone(unit: dict[str, dict[str, list[str]]]) -> None:
    argv = exec_start(unit)
    assert argv[0] == "/opt/meetmem/bin/meetmem"
    assert argv[1:3] == ["edge", "run"]
    assert argv[argv.index("--input") + 1] == "mic"


def test_exec_start_is_accepted_by_the_real_cli(unit: dict[str, dict[str, list[str]]]) -> None:
    """Every flag in ExecStart exists in `meetmem edge run` (systemd substitutes ${VAR} as one argument)."""
    defaults = dict(line.split("=", 1) for line in unit["Service"]["Environment"])
    argv = [re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], arg) for arg in exec_start(unit)[1:]]
    args = build_parser().parse_args(argv)
    assert (args.input, args.meeting_id, args.quiet) == ("mic", "%H-%b", True)
    assert (args.model, args.threads) == ("base", 2)  # install.sh writes the board's choice into edge.env
    assert args.cloud is None and args.token is None  # never on the command line: from the environment file


def test_the_outbox_is_under_the_persistent_state_directory(unit: dict[str, dict[str, list[str]]]) -> None:
    argv = exec_start(unit)
    state = Path("/var/lib") / one(unit, "Service", "StateDirectory")
    outbox = Path(argv[argv.index("--outbox") + 1])
    assert outbox.parent == state
    assert one(unit, "Service", "WorkingDirectory") == str(state)
    assert str(state) in one(unit, "Service", "ReadWritePaths").split()


def test_it_runs_as_the_meetmem_user_in_the_audio_group(unit: dict[str, dict[str, list[str]]]) -> None:
    assert one(unit, "Service", "User") == "meetmem"
    assert one(unit, "Service", "Group") == "audio"


def test_the_cloud_and_token_come_from_the_root_only_environment_file(
        unit: dict[str, dict[str, list[str]]]) -> None:
    # no leading "-": a missing file is an error, not a service started without a token
    assert one(unit, "Service", "EnvironmentFile") == ENV_FILE
    env = environment(unit)
    assert "MEETMEM_TOKEN" not in env and "MEETMEM_CLOUD" not in env
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["MEETMEM_MIC_DEVICE"] == "meetmem_mic"


def test_it_is_hardened(unit: dict[str, dict[str, list[str]]]) -> None:
    service = unit["Service"]
    assert one(unit, "Service", "NoNewPrivileges") == "yes"
    assert one(unit, "Service", "ProtectSystem") == "strict"
    assert one(unit, "Service", "ProtectHome") == "yes"
    assert one(unit, "Service", "PrivateTmp") == "yes"
    assert "PrivateDevices" not in service  # it would hide /dev/snd, the microphone


@pytest.fixture
def systemd_root(tmp_path: Path) -> Path:
    """A root for `systemd-analyze verify --root`: the machine's own units, the unit, and a stand-in for the
    installed console script (verify checks that ExecStart's program exists)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    units = next((p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system")) if p.is_dir()), None)
    if units is None:
        pytest.skip("no systemd units on this machine to verify against")
    shutil.copytree(units, tmp_path / "usr/lib/systemd/system", symlinks=True)
    (tmp_path / "etc/systemd/system").mkdir(parents=True)
    program = tmp_path / "opt/meetmem/bin/meetmem"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    return tmp_path


def _verify(root: Path, text: str) -> subprocess.CompletedProcess[str]:
    (root / "etc/systemd/system/meetmem-edge.service").write_text(text, encoding="utf-8")
    return subprocess.run(["systemd-analyze", "verify", f"--root={root}", "meetmem-edge.service"],
                          capture_output=True, text=True, timeout=60, check=False)


def test_systemd_analyze_verify_accepts_the_unit(systemd_root: Path) -> None:
    finished = _verify(systemd_root, UNIT.read_text(encoding="utf-8"))
    assert finished.returncode == 0 and not (finished.stdout + finished.stderr).strip(), finished.stderr


def test_systemd_analyze_verify_catches_a_typo(systemd_root: Path) -> None:
    """The check bites: systemd ignores an unknown key with only a warning, which the test above forbids."""
    finished = _verify(systemd_root, UNIT.read_text(encoding="utf-8").replace("Restart=", "Restrat="))
    assert "Unknown key" in finished.stdout + finished.stderr


def test_install_script_is_valid_bash() -> None:
    subprocess.run(["bash", "-n", str(INSTALL)], check=True, timeout=30)
    assert os.access(INSTALL, os.X_OK)


def test_install_script_is_shellcheck_clean() -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    finished = subprocess.run(["shellcheck", str(INSTALL)], capture_output=True, text=True, timeout=60, check=False)
    assert finished.returncode == 0, finished.stdout


def dry_run(root: Path, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MEETMEM_TOKEN"}
    if token is not None:
        env["MEETMEM_TOKEN"] = token
    return subprocess.run([str(INSTALL), "--dry-run", "--root", str(root), *args], capture_output=True, text=True,
                          env=env, timeout=60, check=False)


def planned_file(plan: str, path: str) -> str | None:
    """The content a dry run would write to `path`, or None when it would not write it."""
    match = re.search(rf"^would write: {re.escape(path)} \(.*\)\n((?:    \|.*\n?)*)", plan, re.MULTILINE)
    if match is None:
        return None
    return "\n".join(line[6:] for line in match[1].splitlines())


def test_dry_run_plans_the_whole_install_and_changes_nothing(tmp_path: Path) -> None:
    finished = dry_run(tmp_path, "--mic", "Device", "meetmem==0.1.0")
    assert finished.returncode == 0, finished.stderr
    plan = finished.stdout
    for step in ("apt-get install -y --no-install-recommends python3-venv python3-pip libportaudio2 alsa-utils",
                 "useradd --system", "usermod --append --groups audio meetmem",
                 "install -d -m 0750 -o meetmem -g audio /var/lib/meetmem",
                 "python3 -m venv /opt/meetmem",
                 "pip install --upgrade --only-binary=:all: meetmem\\[edge\\]==0.1.0 sounddevice",
                 "runuser -u meetmem -- env XDG_CACHE_HOME=/var/cache HF_HUB_OFFLINE=1",
                 "systemctl enable meetmem-edge"):
        assert step in plan, step
    # placeholders only: enabled at boot, not started until the token is set
    assert "would run: systemctl restart" not in plan and "not started" in finished.stderr
    assert planned_file(plan, "/etc/systemd/system/meetmem-edge.service") == UNIT.read_text().rstrip("\n")
    alsa = planned_file(plan, "/etc/alsa/conf.d/60-meetmem.conf")
    assert alsa is not None and 'slave.pcm "hw:CARD=Device,DEV=0"' in alsa and "pcm.meetmem_mic" in alsa
    assert list(tmp_path.iterdir()) == []


def test_the_environment_file_is_root_only_with_both_settings(tmp_path: Path) -> None:
    plan = dry_run(tmp_path, "--mic", "Device", "--cloud", "https://cloud.example", "meetmem",
                   token="secret-token").stdout
    assert f"would write: {ENV_FILE} (mode 0600, owner root:root)" in plan
    content = planned_file(plan, ENV_FILE)
    assert content is not None
    assert "MEETMEM_CLOUD=https://cloud.example" in content.splitlines()
    assert "MEETMEM_TOKEN=secret-token" in content.splitlines()
    assert "would run: systemctl restart meetmem-edge" in plan  # both given: started at once
    assert not [line for line in plan.splitlines() if line.startswith("would run:") and "secret-token" in line]


@pytest.mark.parametrize(("board", "model", "threads"), [
    ("Raspberry Pi 4 Model B Rev 1.5", "tiny.en", "4"),  # base cannot keep up with speech on a Cortex-A72
    ("Raspberry Pi 400 Rev 1.1", "tiny.en", "4"),
    ("Raspberry Pi 5 Model B Rev 1.0", "base", "2"),
    (None, "base", "2"),  # not a Pi (no device tree): the edge's default
])
def test_the_whisper_model_is_chosen_for_the_board(tmp_path: Path, board: str | None, model: str,
                                                   threads: str) -> None:
    if board is not None:
        (tmp_path / "proc" / "device-tree").mkdir(parents=True)
        (tmp_path / "proc" / "device-tree" / "model").write_bytes(board.encode() + b"\0")
    run = dry_run(tmp_path, "--mic", "Device", "meetmem")
    content = planned_file(run.stdout, ENV_FILE)
    assert content is not None
    assert f"MEETMEM_MODEL={model}" in content.splitlines() and f"MEETMEM_THREADS={threads}" in content.splitlines()
    assert f"Whisper model {model} on {threads} threads" in run.stderr
    # The weights joined and loaded at install are that model's (the plan shows the command shell-quoted).
    assert f"model=\\'{model}\\'" in run.stdout


def test_an_existing_environment_file_is_never_overwritten(tmp_path: Path) -> None:
    existing = tmp_path / ENV_FILE.lstrip("/")
    existing.parent.mkdir(parents=True)
    existing.write_text("MEETMEM_CLOUD=https://mine.example\nMEETMEM_TOKEN=kept\n")
    existing.chmod(0o644)
    finished = dry_run(tmp_path, "--mic", "Device", "--cloud", "https://other.example", "meetmem",
                       token="other-token")
    assert finished.returncode == 0, finished.stderr
    assert planned_file(finished.stdout, ENV_FILE) is None
    assert f"chmod 0600 {ENV_FILE}" in finished.stdout and f"chown root:root {ENV_FILE}" in finished.stdout
    assert "would run: systemctl restart meetmem-edge" in finished.stdout  # set up: the upgrade restarts the agent
    assert existing.read_text() == "MEETMEM_CLOUD=https://mine.example\nMEETMEM_TOKEN=kept\n"
    assert stat.S_IMODE(existing.stat().st_mode) == 0o644  # a dry run changes nothing


def test_an_environment_file_with_placeholders_does_not_start(tmp_path: Path) -> None:
    existing = tmp_path / ENV_FILE.lstrip("/")
    existing.parent.mkdir(parents=True)
    existing.write_text("MEETMEM_CLOUD=https://cloud.example\nMEETMEM_TOKEN=CHANGE-ME\n")
    finished = dry_run(tmp_path, "--mic", "Device", "meetmem")
    assert "would run: systemctl restart" not in finished.stdout and "not started" in finished.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--mic", "Device", "--token", "x", "meetmem"], "never an argument"),
    (["--mic", "Device"], "no SOURCE"),
    (["--mic", "bad name", "meetmem"], "expected CARD or CARD,DEVICE"),
    (["--mic", "Device", "not-meetmem==1"], "neither a path nor a requirement"),
])
def test_install_script_refuses_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    finished = dry_run(tmp_path, *args)
    assert finished.returncode != 0 and message in finished.stderr


def test_the_alsa_device_parses_and_is_listed(tmp_path: Path) -> None:
    """alsa-lib itself reads the planned PCM (as ~/.asoundrc) and lists `meetmem_mic` with its description."""
    if shutil.which("arecord") is None:
        pytest.skip("arecord is not installed (apt-get install alsa-utils)")
    alsa = planned_file(dry_run(tmp_path / "root", "--mic", "Device", "meetmem").stdout,
                        "/etc/alsa/conf.d/60-meetmem.conf")
    assert alsa is not None
    home = tmp_path / "home"
    home.mkdir()
    (home / ".asoundrc").write_text(alsa + "\n")
    listed = subprocess.run(["arecord", "-L"], capture_output=True, text=True, timeout=30, check=False,
                            env={**os.environ, "HOME": str(home)})
    assert "meetmem_mic" in listed.stdout.splitlines(), listed.stdout + listed.stderr
    assert "error" not in listed.stderr.lower(), listed.stderr
