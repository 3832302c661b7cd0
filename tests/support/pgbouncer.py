"""A throwaway PgBouncer in transaction mode in front of the test PostgreSQL (Debian's
``pgbouncer`` package), started like the PostgreSQL server: as the server's system user when
the tests run as root (PgBouncer refuses root)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from hms_cache_proxy.bench.postgres import SUPERUSER, PostgresServer, free_port


def find_pgbouncer() -> str | None:
    return shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if os.access("/usr/sbin/pgbouncer", os.X_OK) else None
    )


class PgBouncer:
    """``pgbouncer`` with ``pool_mode = transaction`` forwarding every database to ``pg``."""

    def __init__(self, pg: PostgresServer, pool_size: int = 6) -> None:
        binary = find_pgbouncer()
        if binary is None:
            raise RuntimeError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
        self.pg = pg
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="hms-pgbouncer-"))
        (self.dir / "users.txt").write_text(f'"{SUPERUSER}" ""\n')
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={pg.host} port={pg.port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.dir / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\nmax_client_conn = 500\n"
            "ignore_startup_parameters = extra_float_digits\n"
            f"logfile = {self.dir / 'pgbouncer.log'}\n"
        )
        prefix = pg._run_as_server_user()
        if prefix:
            for path in (self.dir, *self.dir.iterdir()):
                shutil.chown(path, "postgres", "postgres")
        self.proc = subprocess.Popen(
            [*prefix, binary, str(self.dir / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"pgbouncer did not start:\n{self.log()}") from None
                time.sleep(0.05)

    def url_for(self, dbname: str) -> str:
        """SQLAlchemy URL of ``dbname`` through this pooler."""
        return f"postgresql+psycopg2://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def log(self) -> str:
        path = self.dir / "pgbouncer.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
