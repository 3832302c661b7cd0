"""Connections to the metastore database and the transaction discipline every query follows.

Reads run in one snapshot per call (REPEATABLE READ on PostgreSQL, a deferred transaction on
SQLite) so that a call's few queries agree with each other. Writes run in READ COMMITTED with
explicit row locks (the way Hive's own metastore allocates ids), as one transaction per call,
retried when the database reports a deadlock or a serialization failure.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.pool import NullPool

log = logging.getLogger(__name__)

T = TypeVar("T")

# PostgreSQL SQLSTATEs worth retrying: serialization_failure, deadlock_detected.
_PG_RETRYABLE = {"40001", "40P01"}


class Database:
    """One metastore database: a read engine and a write engine over the same URL."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 8,
        timeout_seconds: float = 30.0,
        write_retries: int = 5,
    ) -> None:
        self.url = make_url(url)
        self.dialect = self.url.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(
                f"unsupported database {self.url.render_as_string(hide_password=True)!r}: "
                "use sqlite:///PATH or postgresql://USER@HOST/DB"
            )
        self.timeout_seconds = timeout_seconds
        self.write_retries = write_retries
        if self.dialect == "sqlite":
            self.read_engine = self._sqlite_engine(pool_size)
            self.write_engine = self.read_engine
        else:
            self.read_engine = self._pg_engine(pool_size, "REPEATABLE READ")
            self.write_engine = self._pg_engine(pool_size, "READ COMMITTED")
            self.autocommit_engine = self._pg_engine(pool_size, "AUTOCOMMIT")

    # -- engines ---------------------------------------------------------------------------------

    def _pg_engine(self, pool_size: int, isolation: str) -> Engine:
        ms = int(self.timeout_seconds * 1000)
        return create_engine(
            self.url,
            pool_size=pool_size,
            max_overflow=pool_size * 4,
            pool_timeout=self.timeout_seconds,
            pool_recycle=3600,
            isolation_level=isolation,
            connect_args={
                "connect_timeout": max(1, int(self.timeout_seconds)),
                "options": f"-c statement_timeout={ms} -c lock_timeout={ms}"
                f" -c idle_in_transaction_session_timeout={ms * 2}",
                "application_name": "hms-cache-proxy",
            },
        )

    def _sqlite_engine(self, pool_size: int) -> Engine:
        db = self.url.database or ""
        memory = db in ("", ":memory:")
        if not memory:
            parent = os.path.dirname(os.path.abspath(db))
            os.makedirs(parent, exist_ok=True)
        engine = create_engine(
            self.url,
            poolclass=NullPool if memory else None,
            connect_args={"check_same_thread": False, "timeout": self.timeout_seconds},
            **({} if memory else {"pool_size": pool_size, "max_overflow": pool_size * 4}),
        )
        busy_ms = int(self.timeout_seconds * 1000)

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # Take control of transactions from the sqlite3 module; see _on_begin.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {busy_ms}")
            if not memory:
                cur.execute("PRAGMA journal_mode = WAL")
                cur.execute("PRAGMA synchronous = NORMAL")
            cur.execute("PRAGMA foreign_keys = ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # Writers take the database lock up front: a deferred transaction that later
            # upgrades to a writer can fail with SQLITE_BUSY without waiting.
            if conn.get_execution_options().get("hms_write"):
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.exec_driver_sql("BEGIN")

        return engine

    # -- use -------------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection inside one read snapshot; rolled back (nothing to keep) on exit."""
        with self.read_engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def single_statement(self, *, write: bool = False) -> Iterator[Connection]:
        """A connection for one statement that needs no transaction around it: on PostgreSQL
        it runs in autocommit (a statement is atomic and sees one snapshot by itself), which
        saves the BEGIN and COMMIT round trips; on SQLite it is a read snapshot or, for a
        ``write``, a write transaction."""
        if self.dialect != "postgresql":
            if not write:
                with self.read() as conn:
                    yield conn
                return
            with self.write_engine.connect() as conn:
                conn = conn.execution_options(hms_write=True)
                with conn.begin():
                    yield conn
            return
        with self.autocommit_engine.connect() as conn:
            yield conn

    def transaction(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(conn)`` as one write transaction, committing on return.

        Deadlocks and serialization failures are retried with a short backoff; every other
        error rolls back and propagates.
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.write_engine.connect() as conn:
                    conn = conn.execution_options(hms_write=True)
                    with conn.begin():
                        return fn(conn)
            except DBAPIError as exc:
                if attempt > self.write_retries or not self.is_retryable(exc):
                    raise
                delay = min(0.5, 0.01 * (2**attempt))
                log.info("retrying write after %s (attempt %d)", _sqlstate(exc), attempt)
                time.sleep(delay)

    @contextmanager
    def side_connection(self, conn: Connection) -> Iterator[Connection]:
        """A connection for a short independent transaction next to ``conn``'s.

        On PostgreSQL this is a second pooled connection (id blocks are reserved and committed
        on their own, as DataNucleus does, so no sequence row stays locked for a whole call).
        On SQLite the writer already holds the database lock, so the same connection is used.
        """
        if self.dialect == "sqlite":
            yield conn
            return
        with self.write_engine.connect() as side, side.begin():
            yield side

    def is_retryable(self, exc: DBAPIError) -> bool:
        if self.dialect == "postgresql":
            return _sqlstate(exc) in _PG_RETRYABLE or bool(exc.connection_invalidated)
        return isinstance(exc, OperationalError) and "locked" in str(exc.orig).lower()

    def engines(self) -> list[Engine]:
        """Every distinct engine (for listeners that must see all the driver's work)."""
        found = [self.read_engine, self.write_engine, getattr(self, "autocommit_engine", None)]
        return list({id(e): e for e in found if e is not None}.values())

    def dispose(self) -> None:
        self.read_engine.dispose()
        if self.write_engine is not self.read_engine:
            self.write_engine.dispose()
            self.autocommit_engine.dispose()

    def describe(self) -> str:
        """The URL with any password hidden, for logs and messages."""
        return self.url.render_as_string(hide_password=True)


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "pgcode", None) or getattr(exc.orig, "sqlstate", None)


# What a client can do about each kind of database failure. The driver's own text names the
# host, port and SQL, which the client cannot act on and should not see; the log has it.
_RETRY = "; the call made no change, try it again"
_BY_SQLSTATE = {
    "57014": "The metastore database did not answer in time (statement timeout: it is "
    "overloaded, or another client holds a lock this call needs)" + _RETRY,
    "55P03": "The metastore database could not take a lock in time (lock timeout: another "
    "client holds it)" + _RETRY,
    "40001": "The metastore database kept reporting serialization failures after the "
    "retries (heavy contention)" + _RETRY,
    "40P01": "The metastore database kept reporting deadlocks after the retries (heavy "
    "contention)" + _RETRY,
    "53300": "The metastore database has no free connections (too many clients)" + _RETRY,
}
_LOST = (
    "The connection to the metastore database was lost (is the database restarting?); "
    "try the call again: a write may or may not have been applied"
)
_POOL = (
    "No connection to the metastore database became free in time (the service is "
    "overloaded or the database is slow)" + _RETRY
)


def database_error_message(exc: BaseException) -> str | None:
    """A message a client can act on for a database failure, without driver internals (no
    host, port or SQL text); None if ``exc`` is not a database failure."""
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    if isinstance(exc, PoolTimeout):
        return _POOL
    if not isinstance(exc, DBAPIError):
        return None
    state = _sqlstate(exc)
    if state in _BY_SQLSTATE:
        return _BY_SQLSTATE[state]
    if exc.connection_invalidated or (state or "").startswith(("08", "57P")):
        return _LOST
    if isinstance(exc, OperationalError) and state is None:
        if "locked" in str(exc.orig).lower():  # SQLite's busy timeout
            return "The metastore database stayed locked by another writer" + _RETRY
        return _LOST
    return (
        f"The metastore database refused the call ({type(exc.orig).__name__}"
        f"{', SQLSTATE ' + state if state else ''}); the service log has the details"
    )
