"""A throwaway PostgreSQL server, for the test suite and the benchmark command.

The tests and benchmarks use a real server rather than mocks, because what matters (row locks,
transactional DDL, the catalog PostgreSQL reports, concurrency) only shows on a real one. The
server lives in a temporary directory, listens on a free port of 127.0.0.1 with trust
authentication, trades durability for speed (fsync off) and is stopped at the end of the
session.

``initdb`` refuses to run as root; when the tests run as root, the server's programs run as the
``postgres`` system user (``runuser``, or ``setpriv`` where runuser is missing) and the
temporary directory is handed to that user.
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg2

INSTALL_HINT = (
    "PostgreSQL server programs (initdb, pg_ctl) were not found on PATH or under "
    "/usr/lib/postgresql/*/bin. Install them, e.g. `apt-get install -y postgresql-15` "
    "(Debian/Ubuntu; the test suite's setup script installs them), or put their bin "
    "directory on PATH."
)

SERVER_USER = "postgres"  # the system user the server runs as when the tests run as root
SUPERUSER = "postgres"  # the database superuser initdb creates

_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "max_connections": "200",
    "shared_buffers": "128MB",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "checkpoint_timeout": "30min",
    "max_wal_size": "1GB",
    "autovacuum": "off",
    "log_min_messages": "warning",
    "log_min_error_statement": "panic",
    "timezone": "'UTC'",
}


class PostgresUnavailable(RuntimeError):
    """The server programs are missing or the server could not be started."""


def find_bin_dir() -> Path:
    """The directory holding initdb and pg_ctl: PATH first, then Debian's versioned dirs."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)

    def version(d: str) -> int:
        m = re.search(r"/postgresql/(\d+)/", d)
        return int(m.group(1)) if m else 0

    # Prefer 15 (what production runs), then the newest.
    versioned = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=version, reverse=True)
    versioned.sort(key=lambda d: version(d) != 15)
    candidates += [Path(d) for d in versioned]
    for d in candidates:
        if (d / "initdb").is_file() and (d / "pg_ctl").is_file():
            return d
    raise PostgresUnavailable(INSTALL_HINT)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """One running server; ``new_database()`` hands out fresh empty databases on it."""

    def __init__(self, bin_dir: Path, base_dir: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.base_dir = base_dir
        self.data_dir = base_dir / "data"
        self.log_file = base_dir / "server.log"
        self.port = port
        self.host = "127.0.0.1"
        self.settings: dict[str, str] = {}
        self._names = itertools.count(1)
        self._running = False

    # -- life cycle ------------------------------------------------------------------------------

    @classmethod
    def start(cls, settings: dict[str, str] | None = None) -> PostgresServer:
        """initdb into a new temporary directory and start the server; raises if it cannot.
        ``settings``: postgresql.conf values over the defaults, e.g. {"max_connections": "20"}."""
        bin_dir = find_bin_dir()
        base = Path(tempfile.mkdtemp(prefix="hms-pg-"))
        server = cls(bin_dir, base, 0)
        server.settings = dict(settings or {})
        try:
            server._hand_to_server_user()
            server._initdb()
            for attempt in range(3):
                server.port = free_port()
                server._write_settings()
                # From here a postmaster may run even if this start is cut short (SIGTERM
                # while pg_ctl waits): stop() must then look for it.
                server._running = True
                try:
                    server._pg_ctl("start", "-w", "-t", "60", "-l", str(server.log_file))
                    break
                except PostgresUnavailable:
                    # Another process may have taken the port between probe and bind.
                    if attempt == 2 or "could not bind" not in server.log_tail():
                        raise
            server._running = True
            atexit.register(server.stop)
            return server
        except BaseException:
            server.stop()
            raise

    def stop(self) -> None:
        """Stop the server at once (nothing in it is worth keeping) and remove its files."""
        if self._running:
            self._running = False
            try:
                self._pg_ctl("stop", "-m", "immediate", "-w", "-t", "30")
            except PostgresUnavailable:
                # Not up, or not yet: a start cut short may leave a postmaster that writes its
                # pid file a moment later.
                deadline = time.monotonic() + 5
                while not (self.data_dir / "postmaster.pid").exists():
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                self._kill_postmaster()
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def restart(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: every connection is cut; ``immediate``: as a crash) and
        start it again on the same port and data: a fault the consistency checker injects."""
        if mode not in ("smart", "fast", "immediate"):
            raise ValueError(f"restart mode {mode!r}: use smart, fast or immediate")
        self._pg_ctl("stop", "-m", mode, "-w", "-t", "60")
        self._pg_ctl("start", "-w", "-t", "60", "-l", str(self.log_file))

    # -- databases -------------------------------------------------------------------------------

    def url_for(self, dbname: str) -> str:
        """SQLAlchemy URL of database ``dbname`` on this server."""
        return f"postgresql+psycopg2://{SUPERUSER}@{self.host}:{self.port}/{dbname}"

    def new_database(self, name: str | None = None) -> str:
        """Create a fresh empty database and return its SQLAlchemy URL."""
        name = name or f"t{next(self._names)}_{secrets.token_hex(3)}"
        _check_name(name)
        self.execute(f'CREATE DATABASE "{name}"')
        return self.url_for(name)

    def drop_database(self, name: str) -> None:
        """Drop ``name``, disconnecting whoever still uses it."""
        _check_name(name)
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def execute(self, sql: str, dbname: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
        conn = self.connect(dbname)
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()

    def connect(self, dbname: str = "postgres") -> psycopg2.extensions.connection:
        """A plain psycopg2 connection as the superuser."""
        return psycopg2.connect(host=self.host, port=self.port, user=SUPERUSER, dbname=dbname)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # -- helpers ---------------------------------------------------------------------------------

    def _run_as_server_user(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError as exc:
            raise PostgresUnavailable(
                f"the tests run as root and initdb refuses to; no {SERVER_USER!r} system user "
                "exists to run PostgreSQL as (installing the postgresql package creates it)"
            ) from exc
        if shutil.which("runuser"):
            return ["runuser", "-u", SERVER_USER, "--"]
        return ["setpriv", f"--reuid={SERVER_USER}", f"--regid={SERVER_USER}", "--init-groups"]

    def _hand_to_server_user(self) -> None:
        if os.geteuid() != 0:
            return
        entry = pwd.getpwnam(SERVER_USER)
        os.chown(self.base_dir, entry.pw_uid, entry.pw_gid)

    def _run(self, argv: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C"
        try:
            proc = subprocess.run(
                self._run_as_server_user() + argv,
                cwd=self.base_dir,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PostgresUnavailable(f"{argv[0]} failed: {exc}") from exc
        if proc.returncode != 0:
            raise PostgresUnavailable(
                f"{' '.join(argv)} exited with {proc.returncode}:\n{proc.stdout}{proc.stderr}"
                f"\n--- server log ---\n{self.log_tail()}"
            )

    def _initdb(self) -> None:
        self._run(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data_dir),
                "-U",
                SUPERUSER,
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",
                "--no-instructions",
            ]
        )

    def _write_settings(self) -> None:
        settings = {**_SETTINGS, **self.settings}
        settings["port"] = str(self.port)
        settings["unix_socket_directories"] = f"'{self.base_dir}'"
        # A file of our own, included last, so a retry on another port just rewrites it.
        (self.data_dir / "hms_tests.conf").write_text(
            "".join(f"{k} = {v}\n" for k, v in settings.items())
        )
        conf = self.data_dir / "postgresql.conf"
        text = conf.read_text()
        if "include = 'hms_tests.conf'" not in text:
            conf.write_text(text + "\ninclude = 'hms_tests.conf'\n")

    def _pg_ctl(self, *args: str) -> None:
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args])

    def _kill_postmaster(self) -> None:
        """Last resort when pg_ctl cannot stop the server: SIGQUIT is immediate shutdown."""
        try:
            pid = int((self.data_dir / "postmaster.pid").read_text().split()[0])
            os.kill(pid, 3)
        except (OSError, ValueError, IndexError):
            pass


def _check_name(name: str) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise ValueError(f"database name {name!r}: use lower-case letters, digits and _")
