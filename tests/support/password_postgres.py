"""A PostgreSQL server that checks passwords (the session's server trusts every login).

The tests of database URLs need a server that refuses a wrong password, so that a password
arriving intact (``@ : / & %`` included) is proven by the login succeeding.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hms_cache_proxy.bench.postgres import PostgresServer


@contextmanager
def password_server(roles: dict[str, str]) -> Iterator[PostgresServer]:
    """A new server where each of ``roles`` (name -> password) logs in over TCP with
    scram-sha-256; the superuser keeps the suite's trust login for setup."""
    server = PostgresServer.start()
    try:
        for role, password in roles.items():
            set_password(server, role, password, create=True)
        hba = server.data_dir / "pg_hba.conf"
        names = ",".join(roles)
        # First matching line wins: these roles must authenticate, whatever follows.
        hba.write_text(f"host all {names} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        server.execute("SELECT pg_reload_conf()")
        yield server
    finally:
        server.stop()


def set_password(server: PostgresServer, role: str, password: str, create: bool = False) -> None:
    conn = server.connect()
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            verb = "CREATE ROLE" if create else "ALTER ROLE"
            login = " LOGIN" if create else ""
            # Identifiers are test constants; the password is a bound literal.
            cur.execute(f'{verb} "{role}"{login} PASSWORD %s', (password,))
    finally:
        conn.close()


def database_owned_by(server: PostgresServer, owner: str) -> str:
    """A new empty database owned by ``owner`` (who may then create the schema); its name."""
    name = server.new_database().rsplit("/", 1)[1]
    server.execute(f'ALTER DATABASE "{name}" OWNER TO "{owner}"')
    return name
