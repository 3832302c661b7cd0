"""The benchmark's databases: one per server measured, on one PostgreSQL server (a throwaway one
or --postgres-url) or as SQLite files in the work directory, dropped again at the end; with
--database-url, that one database for both of this service's servers (db path and cache)."""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path
from typing import Any

from hms_cache_proxy.bench import targets


class Databases:
    """A database per server: on one PostgreSQL server, or SQLite files in the work dir."""

    def __init__(
        self,
        kind: str,
        postgres_url: str | None,
        workdir: Path,
        database_url: str | None = None,
    ) -> None:
        self.urls: dict[str, str] = {}
        if database_url:
            # The user's database, as it is, for both of our servers (not dropped at the end).
            self.urls[targets.DB] = self.urls[targets.CACHE] = database_url
            if database_url.startswith("sqlite"):
                kind = "sqlite" if not postgres_url else "postgres"
            else:
                kind = "postgres"
                postgres_url = postgres_url or database_url
        self.kind = kind
        self.postgres_url = postgres_url
        self.workdir = workdir
        self.server: Any = None
        self.created: list[str] = []
        self.token = secrets.token_hex(3)
        self.version: str | None = None

    def __enter__(self) -> Databases:
        if self.kind == "postgres" and not self.postgres_url:
            from hms_cache_proxy.bench.postgres import PostgresServer

            self.server = PostgresServer.start()
        if self.kind == "postgres":
            self.version = self._query("SHOW server_version")
            if self.version:
                self.version = "PostgreSQL " + self.version
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.stop()
        elif self.postgres_url:
            for name in self.created:
                with contextlib.suppress(Exception):
                    self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def url(self, name: str) -> str:
        """The database for ``name`` (made on first use)."""
        if name not in self.urls:
            self.urls[name] = self._new(name)
        return self.urls[name]

    def _new(self, name: str) -> str:
        if self.kind == "sqlite":
            return f"sqlite:///{self.workdir / (name + '.db')}"
        if self.server is not None:
            return str(self.server.new_database(f"bench_{name}"))
        from sqlalchemy.engine import make_url

        dbname = f"hms_bench_{self.token}_{name}"
        self._execute(f'CREATE DATABASE "{dbname}"')
        self.created.append(dbname)
        return (
            make_url(self.postgres_url).set(database=dbname).render_as_string(hide_password=False)
        )

    def _connect(self) -> Any:
        import psycopg2
        from sqlalchemy.engine import make_url

        if self.server is not None:
            return self.server.connect()
        u = make_url(self.postgres_url)
        return psycopg2.connect(
            host=u.host or "127.0.0.1",
            port=u.port or 5432,
            user=u.username,
            password=u.password,
            dbname=u.database or "postgres",
        )

    def _execute(self, sql: str) -> None:
        conn = self._connect()
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()

    def _query(self, sql: str) -> str | None:
        try:
            conn = self._connect()
        except Exception:
            return None
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                return str(cur.fetchone()[0])
        finally:
            conn.close()
