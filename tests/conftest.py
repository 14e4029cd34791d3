"""Shared fixtures: real SQLite files in tmp_path, the real MiniLM embedder (loaded once), the real CLI.

The environment is set before anything can import transformers or huggingface_hub: the models ship inside
installed packages and must never be looked up on a hub.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import json  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from importlib import resources  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402
import pytest  # noqa: E402

from meetmem.store.interchange import read_jsonl  # noqa: E402
from meetmem.store.log import TranscriptLog  # noqa: E402
from meetmem.store.records import SegmentInput  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
# The bundled demo files, found the way `meetmem demo` finds them (demo_data has no __init__.py, so
# `resources.files` gives a MultiplexedPath whose str() is not a path; joinpath gives a real one).
SAMPLE_MEETING = Path(str(resources.files("meetmem.demo_data").joinpath("sample_meeting.jsonl")))
SAMPLE_QUESTIONS = Path(str(resources.files("meetmem.demo_data").joinpath("sample_questions.jsonl")))


def _cli_command() -> list[str]:
    """The installed console script (CONTRACT: `.venv/bin/meetmem`), beside this interpreter."""
    script = Path(sys.executable).with_name("meetmem")
    if script.is_file():
        return [str(script)]
    found = shutil.which("meetmem")
    if found:
        return [found]
    # No console script: call the same entry point the script would.
    return [sys.executable, "-c", "import sys; from meetmem.cli import main; sys.exit(main())"]


@dataclass(frozen=True)
class CliResult:
    """One finished `meetmem` process."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """stdout as exactly one JSON document (the `--json` promise: nothing else on stdout)."""
        lines = self.stdout.splitlines()
        assert len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}:\n{self.stdout}"
        return json.loads(lines[0])

    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.stdout.splitlines()]


@pytest.fixture(scope="session")
def cli_command() -> list[str]:
    return _cli_command()


@pytest.fixture(scope="session")
def meetmem_cli(cli_command: list[str], tmp_path_factory: pytest.TempPathFactory) -> Callable[..., CliResult]:
    """Run the real CLI as a subprocess: `meetmem_cli(*args, db=PATH or None)`.

    The embedder defaults to `none` (no model load); pass `embedder=None` for the CLI's own default.
    `db=None` passes no `--db` (for `--help`, `demo`); otherwise every call names its database, so nothing
    touches the user's data directory: a SQLite file, or a `PgStore` (`--database URL`, `--db` its home).
    """
    workdir = tmp_path_factory.mktemp("cli-cwd")

    def run(*args: str, db: Path | PgStore | None, embedder: str | None = "none", timeout: float = 300,
            cwd: Path | None = None) -> CliResult:
        argv = [*cli_command, *args]
        if isinstance(db, PgStore):
            argv += ["--db", str(db.home), "--database", db.url]
        elif db is not None:
            argv += ["--db", str(db)]
        env = dict(os.environ)
        for name in ("MEETMEM_DB", "MEETMEM_DATABASE_URL", "MEETMEM_TENANT", "MEETMEM_EMBEDDER"):
            env.pop(name, None)
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
        env.setdefault("MEETMEM_THREADS", "1")  # see the `embedder` fixture
        if embedder is not None:
            env["MEETMEM_EMBEDDER"] = embedder
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout,
                              cwd=str(cwd or workdir))
        return CliResult(tuple(args), proc.returncode, proc.stdout, proc.stderr)

    return run


@dataclass(frozen=True)
class PgStore:
    """A PostgreSQL database for the CLI: `--database URL`, with `home` as `--db` (the receipt key beside it)."""

    url: str
    home: Path


@pytest.fixture(scope="module")
def cli_backend(request: pytest.FixtureRequest) -> str:
    """The store a module's CLI runs use: `sqlite` unless the module's BACKENDS say more (`pytest_generate_tests`)."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="module")
def cli_store(request: pytest.FixtureRequest, cli_backend: str,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Path | PgStore]]:
    """`cli_store(name)`: a fresh, empty store for CLI runs on the module's backend, kept to the module's end: a
    SQLite file, or a fresh database of the run's PostgreSQL server."""
    cluster = request.getfixturevalue("pg_cluster") if cli_backend == "postgres" else None
    made: list[str] = []

    def make(name: str) -> Path | PgStore:
        home = tmp_path_factory.mktemp(name) / f"{name}.db"
        if cluster is None:
            return home
        made.append(cluster.fresh_database("cli"))
        return PgStore(made[-1], home)

    yield make
    for url in made:
        cluster.drop_database(url)


@pytest.fixture
def run_cli(meetmem_cli: Callable[..., CliResult], tmp_path: Path, request: pytest.FixtureRequest,
            cli_backend: str) -> Iterator[Callable[..., CliResult]]:
    """`meetmem_cli` with `--db` defaulting to a fresh database in this test's tmp_path (`run_cli.db`), or, in a
    module whose BACKENDS name it, to a fresh PostgreSQL database (a `PgStore`)."""
    default_db: Path | PgStore = tmp_path / "cli.db"
    if cli_backend == "postgres":
        default_db = PgStore(request.getfixturevalue("pg_url"), tmp_path / "cli.db")

    def run(*args: str, db: Path | PgStore | None = default_db, **kwargs: Any) -> CliResult:
        return meetmem_cli(*args, db=db, **kwargs)

    run.db = default_db  # type: ignore[attr-defined]
    yield run


@pytest.fixture(scope="session")
def embedder() -> Any:
    """The real all-MiniLM-L6-v2 embedder, loaded once per session (a load costs seconds).

    One torch thread: on a shared two-core machine torch's intra-op threads spin against each other and
    against other processes; one thread was measured ten times faster there, with the same vectors.
    """
    from meetmem.store.index.embedders import load_embedder

    return load_embedder("minilm", threads=1)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[TranscriptLog]:
    """A fresh transcript log in a real SQLite file."""
    with TranscriptLog(tmp_path / "log.db") as opened:
        yield opened


@pytest.fixture(scope="session")
def sample_device_and_segments() -> tuple[str, list[SegmentInput]]:
    """The bundled sample meeting (four speakers, about four minutes), parsed as the CLI parses it."""
    return read_jsonl(SAMPLE_MEETING)


@pytest.fixture(scope="session")
def sample_segments(sample_device_and_segments: tuple[str, list[SegmentInput]]) -> list[SegmentInput]:
    return sample_device_and_segments[1]


@pytest.fixture(scope="session")
def sample_questions() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE_QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


def make_segments(texts: Sequence[str], *, first_seq: int = 0, start: float = 0.0, step: float = 2.0,
                  speakers: Sequence[str | None] = ("A",)) -> list[SegmentInput]:
    """Consecutive segments with increasing seq and start times, one per text."""
    return [
        SegmentInput(seq=first_seq + i, start=start + i * step, end=start + i * step + step * 0.8, text=text,
                     speaker=speakers[i % len(speakers)])
        for i, text in enumerate(texts)
    ]


@pytest.fixture(scope="session")
def segments_factory() -> Callable[..., list[SegmentInput]]:
    return make_segments


def write_jsonl(path: Path, rows: Sequence[dict[str, Any] | str | bytes]) -> Path:
    """Write an interchange file: dicts become JSON lines, str/bytes are written as given (bad lines)."""
    parts: list[bytes] = []
    for row in rows:
        if isinstance(row, bytes):
            parts.append(row)
        elif isinstance(row, str):
            parts.append(row.encode("utf-8"))
        else:
            parts.append(json.dumps(row, ensure_ascii=False).encode("utf-8"))
    path.write_bytes(b"\n".join(parts) + b"\n")
    return path


@pytest.fixture(scope="session")
def jsonl_writer() -> Callable[[Path, Sequence[dict[str, Any] | str | bytes]], Path]:
    return write_jsonl


@pytest.fixture(scope="session")
def sample_meeting_path() -> Path:
    return SAMPLE_MEETING


@pytest.fixture(scope="session")
def sample_questions_path() -> Path:
    return SAMPLE_QUESTIONS


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


# -- `meetmem serve` on a loopback port (the cloud for cloud and edge tests) -------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServeProcess:
    """`meetmem serve` on a database and port, started and stopped at will (a cloud that goes away and
    comes back). Output goes to a file: a pipe nobody reads would block the server once its buffer filled."""

    def __init__(self, cli_command: list[str], db: Path, port: int | None = None, *, embedder: str = "minilm",
                 voice_model: str = "none", database_url: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.cli_command = cli_command
        self.env = dict(env or {})
        self.db = db
        self.database_url = database_url
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.embedder = embedder
        self.voice_model = voice_model
        self.log_path = db.with_suffix(".serve.log")
        self.process: subprocess.Popen | None = None
        self._output: Any = None

    @property
    def store_args(self) -> tuple[str, ...]:
        """What a `meetmem` command adds to reach this server's store beside `--db` (PostgreSQL's URL)."""
        return ("--database", self.database_url) if self.database_url else ()

    def start(self, timeout: float = 120.0) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", MEETMEM_THREADS="1",
                   MEETMEM_EMBEDDER=self.embedder, MEETMEM_CLOSE_AFTER_SILENCE="0",
                   MEETMEM_VOICE_MODEL=self.voice_model)
        env.pop("MEETMEM_DATABASE_URL", None)
        if self.database_url:
            env["MEETMEM_DATABASE_URL"] = self.database_url
        env.update(self.env)
        self._output = self.log_path.open("ab")
        self.process = subprocess.Popen([*self.cli_command, "serve", "--db", str(self.db), "--port", str(self.port)],
                                        env=env, stdout=self._output, stderr=subprocess.STDOUT)
        try:
            wait_healthy(self.url, self.process, timeout)
        except AssertionError as exc:
            self.stop()
            raise AssertionError(f"{exc}\n{self.log_path.read_text(errors='replace')[-4000:]}") from None

    def stop(self, *, kill: bool = False) -> None:
        if self.process is not None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        if self._output is not None:
            self._output.close()
            self._output = None


@dataclass
class Server:
    """A running `meetmem serve` process (`database_url`: its PostgreSQL database; None: the SQLite file `db`)."""

    url: str
    db: Path
    process: subprocess.Popen
    token: Callable[[str], str]
    database_url: str | None = None

    def client(self, token: str, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, **kwargs)

    @property
    def store(self) -> str | Path:
        """What `meetmem.store.backends.open_log` opens to read the server's log beside it."""
        return self.database_url or self.db


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = 120.0) -> None:
    """Poll /healthz until it answers 200 (the models are loaded), failing early if the process died."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"meetmem serve exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(delay)  # polling a process we do not control; the deadline bounds it
        delay = min(delay * 2, 0.5)
    raise AssertionError(f"meetmem serve did not become ready within {timeout} s")


def make_token(meetmem_cli: Callable[..., Any], db: Path, tenant: str, database_url: str | None = None) -> str:
    extra = ("--database", database_url) if database_url else ()
    result = meetmem_cli("token", "create", "--tenant", tenant, *extra, db=db)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


#: The slow tiers, marked on every test that needs them (`pytest -m "not slow"` is the fast tier, about a minute
#: on two workers; CI runs everything). A test is `postgres` when it takes a PostgreSQL database or runs on that
#: store; `process` when it starts a process (the CLI, `meetmem serve`, a worker, an edge, a browser) or its
#: module drives processes itself; `model` when it loads a real embedding or speech model; `slow` when any
#: of these holds, or it is `llm`.
PROCESS_FIXTURES = frozenset({"meetmem_cli", "run_cli", "cli_command", "cli_store", "server", "serve_factory",
                              "token_maker", "blocked_cli", "browser", "page", "app_page"})
MODEL_FIXTURES = frozenset({"embedder", "base_asr", "tiny_asr"})
TIER_MARKERS = ("postgres", "process", "model", "llm")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        params = getattr(getattr(item, "callspec", None), "params", {})
        if names & {"pg_url", "pg_cluster"} or "postgres" in params.values():
            item.add_marker(pytest.mark.postgres)
        module = getattr(item, "module", None)
        if names & PROCESS_FIXTURES or "subprocess" in getattr(module, "__dict__", {}) \
                or "tests/web/" in Path(item.path).as_posix():
            item.add_marker(pytest.mark.process)
        if names & MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if any(item.get_closest_marker(name) for name in TIER_MARKERS):
            item.add_marker(pytest.mark.slow)
    # The longest files first (seconds measured in CI, tests/durations.json), so that on several workers the
    # run does not end with one worker on a long campaign while the others wait: the short files fill in.
    # A stable sort by file keeps each file's tests together and in order; a file not listed counts as short.
    weights = json.loads((Path(__file__).parent / "durations.json").read_text(encoding="utf-8"))
    root = Path(__file__).parent.parent
    items.sort(key=lambda item: -weights.get(Path(item.path).relative_to(root).as_posix(), 0))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A module that sets `BACKENDS = ("sqlite", "postgres")` runs its tests on a `server` of each store.
    # So does a module's CLI (`cli_backend`: `run_cli` and `cli_store`).
    for name in ("server_backend", "cli_backend"):
        if name in metafunc.fixturenames and hasattr(metafunc.module, "BACKENDS"):
            marker = metafunc.definition.get_closest_marker("backends")
            backends = marker.args if marker else metafunc.module.BACKENDS
            metafunc.parametrize(name, backends, indirect=True, scope="module")
    # A test that takes `cloud_backend` (the app's or an answerer's store, tests/cloud and tests/answers) runs
    # on SQLite, or on each store its module's BACKENDS (or its `backends` marker) name.
    if "cloud_backend" in metafunc.fixturenames:
        marker = metafunc.definition.get_closest_marker("backends")
        backends = marker.args if marker else getattr(metafunc.module, "BACKENDS", ("sqlite",))
        metafunc.parametrize("cloud_backend", backends, indirect=True)


@pytest.fixture
def cloud_backend(request: pytest.FixtureRequest) -> str | None:
    """None for the SQLite file, else the URL of a fresh PostgreSQL database."""
    return request.getfixturevalue("pg_url") if request.param == "postgres" else None


@pytest.fixture(scope="module")
def server_backend(request: pytest.FixtureRequest) -> str:
    """The store the module's `server` keeps its log in: `sqlite` unless the module's BACKENDS say more."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="module")
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, cli_command: list[str],
           meetmem_cli: Callable[..., Any], server_backend: str) -> Iterator[Server]:
    """`meetmem serve` with the real MiniLM model on a free loopback port, one per test module (and store):
    on a SQLite file, or on a fresh database of the run's PostgreSQL server."""
    cluster = request.getfixturevalue("pg_cluster") if server_backend == "postgres" else None
    database_url = cluster.fresh_database("serve") if cluster is not None else None
    serve = ServeProcess(cli_command, tmp_path_factory.mktemp(f"serve-{server_backend}") / "cloud.db",
                         database_url=database_url)
    try:
        serve.start()
        assert serve.process is not None
        yield Server(serve.url, serve.db, serve.process,
                     lambda tenant: make_token(meetmem_cli, serve.db, tenant, database_url), database_url)
    finally:
        serve.stop()
        if cluster is not None and database_url is not None:
            cluster.drop_database(database_url)


@pytest.fixture
def serve_factory(cli_command: list[str], tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """Make `ServeProcess`es on this test's tmp_path (not started); all are stopped at the end."""
    made: list[ServeProcess] = []

    def make(db: Path | None = None, port: int | None = None, *, embedder: str = "none",
             voice_model: str = "none", database_url: str | None = None,
             env: dict[str, str] | None = None) -> ServeProcess:
        serve = ServeProcess(cli_command, db or tmp_path / "cloud.db", port, embedder=embedder,
                             voice_model=voice_model, database_url=database_url, env=env)
        made.append(serve)
        return serve

    yield make
    for serve in made:
        serve.stop()


@pytest.fixture(scope="session")
def token_maker(meetmem_cli: Callable[..., Any]) -> Callable[[Path, str], str]:
    """`token_maker(db, tenant)`: a bearer token made by the real `meetmem token create`."""
    return lambda db, tenant: make_token(meetmem_cli, db, tenant)


# -- PostgreSQL: one real server per test run, a fresh database per test -----------------------------------

#: The database every test's database is copied from: migrated once per run (a copy takes ~0.1 s, a
#: migration from nothing about 0.5 s).
PG_TEMPLATE = "meetmem_template"


@dataclass
class PostgresCluster:
    """The run's PostgreSQL server (`server.url()` is the superuser's URL) and its migrated template."""

    server: Any
    created: int = 0

    def fresh_database(self, prefix: str = "t") -> str:
        """A new, migrated, empty database; returns its (owner's) URL."""
        self.created += 1
        return self.server.create_database(f"{prefix}_{os.getpid()}_{self.created}", template=PG_TEMPLATE)

    def drop_database(self, url: str) -> None:
        import psycopg
        from psycopg import sql

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.server.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    """A real PostgreSQL 18 with pgvector (the `postgres` extra's bundled server), started once per run.

    fsync is off (a test run is thrown away; nothing else about the server differs from a real one).
    `MEETMEM_TEST_DATABASE_URL=postgresql://...` uses a server already running instead (its user must be
    allowed to create databases and roles).
    """
    import tempfile

    pytest.importorskip("psycopg", reason="the PostgreSQL tests need the postgres extra (pip install -e '.[postgres]')")
    from meetmem.store.pg import migrate
    from meetmem.store.pg.server import LocalPostgres

    given = os.environ.get("MEETMEM_TEST_DATABASE_URL")
    data_dir = None
    if given:
        server: Any = _ExternalServer(given)
    else:
        data_dir = Path(tempfile.mkdtemp(prefix="meetmem-pg-"))
        server = LocalPostgres(data_dir / "data", durable=False)
        server.start()
    try:
        cluster = PostgresCluster(server)
        cluster.drop_database(server.url(PG_TEMPLATE))
        migrate.upgrade(server.create_database(PG_TEMPLATE))
        yield cluster
    finally:
        if data_dir is not None:
            server.remove()
            shutil.rmtree(data_dir, ignore_errors=True)


class _ExternalServer:
    """A PostgreSQL run by someone else, reached by URL (`MEETMEM_TEST_DATABASE_URL`)."""

    def __init__(self, url: str) -> None:
        self._base = url.rsplit("/", 1)[0]

    def url(self, database: str = "postgres") -> str:
        return f"{self._base}/{database}"

    def create_database(self, name: str, *, template: str | None = None) -> str:
        import psycopg
        from psycopg import sql

        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(statement)
        return self.url(name)


@pytest.fixture
def pg_url(pg_cluster: PostgresCluster) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for one test (its owner's URL); dropped afterwards."""
    url = pg_cluster.fresh_database()
    try:
        yield url
    finally:
        pg_cluster.drop_database(url)
