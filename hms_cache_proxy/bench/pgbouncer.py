"""A throwaway PgBouncer in transaction mode in front of a throwaway PostgreSQL (Debian's
``pgbouncer`` package), for the tests and ``hms-cache-proxy fanout``, started like the
PostgreSQL server: as the server's system user when run as root (PgBouncer refuses root). Its
admin console (database ``pgbouncer``) takes the superuser, for SHOW POOLS."""

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

    def __init__(
        self,
        pg: PostgresServer,
        pool_size: int = 6,
        max_client_conn: int = 500,
        users: tuple[str, ...] = (SUPERUSER,),
    ) -> None:
        binary = find_pgbouncer()
        if binary is None:
            raise RuntimeError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
        self.pg = pg
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="hms-pgbouncer-"))
        (self.dir / "users.txt").write_text("".join(f'"{u}" ""\n' for u in users))
        (self.dir / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={pg.host} port={pg.port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.dir / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\nmax_client_conn = {max_client_conn}\n"
            f"admin_users = {SUPERUSER}\n"
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

    def url_for(self, dbname: str, user: str = SUPERUSER) -> str:
        """SQLAlchemy URL of ``dbname`` through this pooler."""
        return f"postgresql+psycopg2://{user}@127.0.0.1:{self.port}/{dbname}"

    def pools(self) -> list[dict[str, object]]:
        """SHOW POOLS of the admin console: one row per database and user."""
        import psycopg2

        conn = psycopg2.connect(
            host="127.0.0.1", port=self.port, user=SUPERUSER, dbname="pgbouncer"
        )
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SHOW POOLS")
                names = [d[0] for d in cur.description]
                return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        finally:
            conn.close()

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
