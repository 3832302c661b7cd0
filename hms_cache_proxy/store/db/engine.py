"""Connections to the metastore database and the transaction discipline every query follows.

Reads run in one snapshot per call (REPEATABLE READ on PostgreSQL, a deferred transaction on
SQLite) so that a call's few queries agree with each other. Writes run in READ COMMITTED with
explicit row locks (the way Hive's own metastore allocates ids), as one transaction per call,
retried when the database reports a deadlock or a serialization failure.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.pool import ConnectionPoolEntry, NullPool, QueuePool
from sqlalchemy.util import queue as sqla_queue

from hms_cache_proxy import dburl, failpoints

log = logging.getLogger(__name__)

T = TypeVar("T")

# PostgreSQL SQLSTATEs worth retrying: serialization_failure, deadlock_detected.
_PG_RETRYABLE = {"40001", "40P01"}

APPLICATION_NAME = "hms-cache-proxy"


def application_name(instance: str | None) -> str:
    """What our PostgreSQL sessions call themselves (pg_stat_activity.application_name):
    ``hms-cache-proxy/<instance>``, cut to PostgreSQL's 63 bytes."""
    name = f"{APPLICATION_NAME}/{instance}" if instance else APPLICATION_NAME
    return name.encode()[:63].decode(errors="ignore")


class Database:
    """One metastore database. On PostgreSQL two pools over the same URL: ``read`` (read
    snapshots and single statements, in autocommit; with psycopg2 the write transactions too,
    their BEGIN folded into their first statement) and ``write`` (READ COMMITTED: the write
    transactions of other drivers, and what a call inside a transaction takes next to it);
    one shared pool on SQLite. An instance whose calls read and write one after the other
    thus opens (and keeps idle for ``pool_idle_seconds``) one connection, not one per kind."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 8,
        timeout_seconds: float = 30.0,
        statement_timeout_seconds: float | None = None,
        write_retries: int = 5,
        pool_idle_seconds: float = 0.0,
        instance_name: str | None = None,
        pooler: str = "none",
        listen_url: str | None = None,
    ) -> None:
        # An explicit, installed driver (dburl.resolve raises one clear line otherwise).
        self.url = dburl.resolve(url)
        self.dialect = self.url.get_backend_name()
        self.timeout_seconds = timeout_seconds
        # PostgreSQL cancels a statement running longer (None: timeout_seconds; 0: no limit)
        self.statement_timeout_seconds = (
            timeout_seconds if statement_timeout_seconds is None else statement_timeout_seconds
        )
        self.write_retries = write_retries
        self.pool_idle_seconds = pool_idle_seconds
        self.application_name = application_name(instance_name)
        self.refusals = Refusals()
        self.driver_errors = DriverErrors()
        # "transaction": PgBouncer (or alike) in transaction mode between us and PostgreSQL:
        # no session state (no PREPARE, no startup options; timeouts by SET LOCAL per
        # transaction), and LISTEN only on a direct connection (``listen_url``) if any.
        self.pooler = pooler
        self.listen_url = dburl.resolve(listen_url) if listen_url else None
        self._set_local = ""
        self._end_listeners: list[Callable[[Connection, bool], None]] = []
        # The engine whose connection this thread's write transaction holds, if any.
        self._local = threading.local()
        self.folds_round_trips = False
        # Whether the pools' checkout event runs SESSION_CHECKOUT (a parked session gets it too)
        self._checkout_hooks = False
        self.backend_pids: frozenset[int] | None = None
        """PostgreSQL backend PIDs of this process's pooled sessions (its writers'), so the
        poller can tell a NOTIFY of this process's own commit from another instance's (a
        notification carries the sending backend's PID). None: not known (SQLite, another
        driver, or a transaction pooler, whose sessions are not the backends')."""
        self.pool_limit = pool_size * 5  # pool_size plus max_overflow, per engine
        if self.dialect == "sqlite":
            self.read_engine = self._sqlite_engine(pool_size)
            self.write_engine = self.read_engine
        else:
            # One pool for read snapshots and single statements: its connections are in
            # autocommit, and a read snapshot asks for REPEATABLE READ on its own BEGIN (psycopg2
            # sends BEGIN ISOLATION LEVEL ...; no session setting changes).
            if self.pooler != "transaction" and self.url.get_driver_name() == "psycopg2":
                self.backend_pids = frozenset()
            self.read_engine = self._pg_engine(pool_size, "AUTOCOMMIT")
            self.autocommit_engine = self.read_engine
            self.write_engine = self._pg_engine(pool_size, "READ COMMITTED")
            self.folds_round_trips = self.url.get_driver_name() == "psycopg2"
            if self.folds_round_trips:
                # Write transactions share the read pool: their connections are the same
                # autocommit ones (BEGIN travels with the first statement), so a write after a
                # read reuses its connection. What a transaction takes next to itself (a read
                # nested in it) comes from the write pool, so nesting cannot starve this one.
                self.folded_engine = self.read_engine
                event.listen(self.folded_engine, "before_cursor_execute", _send_begin, retval=True)
                self.folded_engine.update_execution_options(**{_BEGIN_TEXT: self._begin_text()})
        for engine in self.engines():
            event.listen(engine, "handle_error", self._engine_error)

    # -- engines ---------------------------------------------------------------------------------

    def _begin_text(self) -> str:
        """What a folded transaction's first message starts with."""
        return "BEGIN ISOLATION LEVEL READ COMMITTED; " + self._set_local

    def _pg_engine(self, pool_size: int, isolation: str) -> Engine:
        ms = int(self.timeout_seconds * 1000)
        statement_ms = int(self.statement_timeout_seconds * 1000)
        idle_ms = 2 * max(ms, statement_ms)
        options = (
            f"-c statement_timeout={statement_ms} -c lock_timeout={ms}"
            f" -c idle_in_transaction_session_timeout={idle_ms}"
        )
        connect_args: dict[str, Any] = {
            "connect_timeout": max(1, int(self.timeout_seconds)),
            "application_name": self.application_name,
        }
        if self.pooler == "transaction":
            self._set_local = (
                f"SET LOCAL statement_timeout = {statement_ms}; SET LOCAL lock_timeout = {ms}; "
                f"SET LOCAL idle_in_transaction_session_timeout = {idle_ms}; "
            )
        else:
            connect_args["options"] = options
        engine = create_engine(
            self.url,
            poolclass=IdleClosingPool,
            pool_size=pool_size,
            max_overflow=pool_size * 4,
            pool_timeout=self.timeout_seconds,
            pool_recycle=3600,
            # The most recently used connection first: the others stay idle and close.
            pool_use_lifo=True,
            isolation_level=isolation,
            connect_args=connect_args,
            execution_options={PLAIN_SQL: self.pooler == "transaction"},
        )
        if self._set_local:  # every BEGIN (on the autocommit pool: read snapshots')
            set_local = self._set_local

            @event.listens_for(engine, "begin")
            def _timeouts(conn: Connection) -> None:
                conn.exec_driver_sql(set_local)

        if self.backend_pids is not None:
            self._track_backends(engine)
        if self.pooler != "transaction" and self.url.get_driver_name() == "psycopg2":
            _jit_off(engine)
            _prepare_hot_statements(engine)
            self._checkout_hooks = True
        assert isinstance(engine.pool, IdleClosingPool)
        engine.pool.refusals = self.refusals
        if self.url.get_driver_name() == "psycopg2":  # autocommit_cursor checks its sessions
            engine.pool.park_limit = pool_size
        if self.pool_idle_seconds > 0:
            _REAPER.watch(engine.pool, self.pool_idle_seconds)
        return engine

    def _track_backends(self, engine: Engine) -> None:
        """Keep ``backend_pids`` up to date with ``engine``'s pooled sessions (a new set on
        each change: readers take it without a lock)."""
        lock = threading.Lock()

        def pid(dbapi_conn: Any) -> int | None:
            try:
                return int(dbapi_conn.info.backend_pid)
            except Exception:  # noqa: BLE001 - a closed or broken connection
                return None

        @event.listens_for(engine, "connect")
        def _added(dbapi_conn: Any, record: Any) -> None:
            found = pid(dbapi_conn)
            if found is not None:
                record.info[_BACKEND_PID] = found
                with lock:
                    self.backend_pids = frozenset((self.backend_pids or frozenset()) | {found})

        def _gone(_dbapi_conn: Any, record: Any, *_: Any) -> None:
            found = record.info.pop(_BACKEND_PID, None) if record is not None else None
            if found is not None:
                with lock:
                    self.backend_pids = frozenset((self.backend_pids or frozenset()) - {found})

        event.listen(engine, "close", _gone)
        event.listen(engine, "invalidate", _gone)
        event.listen(engine, "detach", _gone)

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

    # -- errors ----------------------------------------------------------------------------------

    def _engine_error(self, context: Any) -> None:
        """SQLAlchemy's handle_error hook: every driver error in our engines (connects too)."""
        exc = context.sqlalchemy_exception or context.original_exception
        self.driver_errors.record(type(exc).__name__)

    def raw_error(self, exc: BaseException) -> DBAPIError | None:
        """A driver error raised outside SQLAlchemy's statements (the poller's LISTEN session,
        a pooled connection's isolation change): counted in ``driver_errors`` under the name
        SQLAlchemy gives it, and a refused connection recorded in ``refusals``, as the pools'
        errors are. Returns it as SQLAlchemy's DBAPIError (None: not a driver error)."""
        dbapi = self.read_engine.dialect.loaded_dbapi
        wrapped: Any = exc
        if not isinstance(exc, DBAPIError) and dbapi is not None and isinstance(exc, dbapi.Error):
            wrapped = DBAPIError.instance(None, None, exc, dbapi.Error)
        if not isinstance(wrapped, DBAPIError):
            return None
        if refused_connection(wrapped):
            self.refusals.record(wrapped)
        self.driver_errors.record(type(wrapped).__name__)
        return wrapped

    # -- use -------------------------------------------------------------------------------------

    def _beside(self, engine: Engine) -> Engine:
        """``engine``, or the other pool when this thread's write transaction holds one of
        ``engine``'s connections (a call that reads inside its transaction: truncate's
        location checks): a second connection from the pool the transactions use could
        wait for ever once every one of them is held by a transaction waiting likewise."""
        if getattr(self._local, "engine", None) is engine and self.write_engine is not engine:
            return self.write_engine if engine is self.read_engine else self.read_engine
        return engine

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection inside one read snapshot; rolled back (nothing to keep) on exit."""
        with self._beside(self.read_engine).connect() as conn:
            if self.dialect == "postgresql":
                self._repeatable_read(conn)
            with conn.begin():
                yield conn

    def _repeatable_read(self, conn: Connection) -> None:
        """REPEATABLE READ on ``conn`` until it is returned. The driver may talk to the server
        here, outside any statement SQLAlchemy wraps: a connection that broke meanwhile (the
        server restarted, the database was dropped) is discarded and its error raised as a
        statement's would be (a DBAPIError, counted in ``driver_errors``)."""
        try:
            conn.execution_options(isolation_level="REPEATABLE READ")
        except DBAPIError:
            raise
        except Exception as exc:
            wrapped = self.raw_error(exc)
            if wrapped is None:
                raise
            conn.invalidate()
            wrapped.connection_invalidated = True
            raise wrapped from exc

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
        engine = self._beside(self.autocommit_engine)
        with engine.connect() as conn:
            if engine is not self.autocommit_engine:
                conn.execution_options(isolation_level="AUTOCOMMIT")  # until returned
            yield conn

    @contextmanager
    def autocommit_cursor(self) -> Iterator[PooledCursor]:
        """A DB-API cursor on a pooled autocommit PostgreSQL connection, for a hot call's one
        statement whose rows need none of SQLAlchemy's statement and result handling (at 8
        clients that handling was a third of the Python an open or commit costs). The same
        pool and session state as ``single_statement``'s; a driver error comes out as
        SQLAlchemy's DBAPIError, counted in ``driver_errors``, and a connection it broke is
        discarded and the error marked ``connection_invalidated``, as the pools do."""
        if self.dialect != "postgresql":
            raise RuntimeError("autocommit_cursor is PostgreSQL's")
        plain = self.pooler == "transaction"
        engine = self._beside(self.autocommit_engine)
        if engine is not self.autocommit_engine:
            # Inside this thread's transaction on the autocommit pool: the other pool's
            # connection, in autocommit until returned (as single_statement does).
            with engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT")
                with self._raw_cursor(engine, conn.connection, plain) as cur:
                    yield cur
            return
        # A connection parked by an earlier call (no pool checkout, checkin or reset: at one
        # client those were a quarter of get_valid_write_ids' server time), else the pool's.
        pool: IdleClosingPool = engine.pool  # type: ignore[assignment]
        raw = pool.unpark()
        if raw is None:
            raw = engine.raw_connection()
        elif self._checkout_hooks:  # what the pool's checkout event would have run
            _session_checkout(raw.dbapi_connection, raw.info)
        done = False
        try:
            with self._raw_cursor(engine, raw, plain) as cur:
                yield cur
            done = True
        finally:
            # Parked again only after a clean use, outside any transaction; else back to the
            # pool (or, invalidated, closed) as before.
            if not (
                done
                and raw.dbapi_connection is not None
                and raw.dbapi_connection.info.transaction_status == _PG_IDLE
                and pool.park(raw)
            ):
                raw.close()

    @contextmanager
    def _raw_cursor(self, engine: Engine, fairy: Any, plain: bool) -> Iterator[PooledCursor]:
        cur = fairy.cursor()
        try:
            yield PooledCursor(cur, fairy.info, fairy.dbapi_connection, plain)
        except Exception as exc:
            wrapped = self.raw_error(exc)
            if wrapped is None:
                raise
            orig: Any = exc
            if engine.dialect.is_disconnect(orig, fairy.dbapi_connection, cur):
                # The whole pool, as a statement's disconnect does in SQLAlchemy: the other
                # sessions (parked ones too) opened before now are replaced on their next use.
                engine.pool._invalidate(fairy, exc)
                wrapped.connection_invalidated = True
            raise wrapped from exc
        finally:
            if not cur.closed:
                cur.close()

    def transaction(self, fn: Callable[[Connection], T]) -> T:
        """Run ``fn(conn)`` as one write transaction, committing on return.

        Deadlocks and serialization failures are retried with a short backoff; every other
        error rolls back and propagates.
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                if self.folds_round_trips:
                    return self._folded_transaction(fn)
                with self.write_engine.connect() as conn, self._holding(conn, self.write_engine):
                    conn = conn.execution_options(hms_write=True)
                    try:
                        with conn.begin():
                            result = fn(conn)
                            failpoints.hit("write.before_commit")
                    except BaseException:
                        self._ended(conn, committed=False)
                        raise
                    self._ended(conn, committed=True)
                    return result
            except DBAPIError as exc:
                if attempt > self.write_retries or not self.is_retryable(exc):
                    raise
                delay = min(0.5, 0.01 * (2**attempt))
                log.info("retrying write after %s (attempt %d)", _sqlstate(exc), attempt)
                time.sleep(delay)

    def _folded_transaction(self, fn: Callable[[Connection], T]) -> T:
        """``transaction`` on PostgreSQL through psycopg2 without the BEGIN and COMMIT round
        trips of its own: on an autocommit connection, BEGIN travels in front of the first
        statement (``_send_begin``) and COMMIT after the last one (``commit_after``) or, when
        the call did not fold it, as one message at the end. The server's transaction is the
        same; only the messages are fewer."""
        with self.folded_engine.connect() as conn, self._holding(conn, self.folded_engine):
            info = conn.info
            info[_BEGIN] = True
            try:
                result = fn(conn)
                failpoints.hit("write.before_commit")
                if info[_BEGIN] is False and not info.get(_COMMITTED):
                    conn.exec_driver_sql("COMMIT")
            except BaseException:
                # A failed message skips its COMMIT; after a COMMIT, ROLLBACK only warns.
                if info.get(_BEGIN) is False:
                    _roll_back(conn)
                self._ended(conn, committed=False)
                raise
            finally:
                info.pop(_BEGIN, None)
                info.pop(_COMMITTED, None)
            self._ended(conn, committed=True)
            return result

    @contextmanager
    def _holding(self, conn: Connection, engine: Engine) -> Iterator[None]:
        """While a ``transaction`` attempt runs on ``conn`` (of ``engine``): this thread's
        reads go beside it (``_beside``), and its ``TransactionState`` is on the connection."""
        outer = getattr(self._local, "engine", None)
        self._local.engine = engine
        conn.info[_STATE] = TransactionState()
        try:
            yield
        finally:
            conn.info.pop(_STATE, None)
            self._local.engine = outer

    @staticmethod
    def transaction_state(conn: Connection) -> TransactionState | None:
        """The state of the ``transaction`` attempt ``conn`` runs (None: in none, e.g. a
        connection of a test's own, or SQLite's side transactions)."""
        return conn.info.get(_STATE)

    def on_transaction_end(self, listener: Callable[[Connection, bool], None]) -> None:
        """Call ``listener(conn, committed)`` after every ``transaction`` attempt, once its
        commit has succeeded (True) or it has rolled back or failed (False)."""
        self._end_listeners.append(listener)

    def _ended(self, conn: Connection, committed: bool) -> None:
        for listener in self._end_listeners:
            listener(conn, committed)
        state = conn.info.get(_STATE)
        if committed and state is not None:
            for action in state.on_commit:
                action()

    @contextmanager
    def side_connection(self, conn: Connection | None) -> Iterator[Connection]:
        """A connection for a short independent transaction next to ``conn``'s (None: the
        caller runs in none; PostgreSQL only).

        On PostgreSQL this is a second pooled connection, from the pool ``conn``'s transaction
        does not use. On SQLite the writer already holds the database lock, so the same
        connection is used.
        """
        if self.dialect == "sqlite":
            if conn is None:
                raise RuntimeError("on SQLite a side transaction is the caller's own")
            yield conn
            return
        engine = self._beside(self.write_engine)
        with engine.connect() as side:
            if engine is not self.write_engine:
                side.execution_options(isolation_level="READ COMMITTED")  # until returned
            with side.begin():
                yield side

    def is_retryable(self, exc: DBAPIError) -> bool:
        if self.dialect == "postgresql":
            return _sqlstate(exc) in _PG_RETRYABLE or bool(exc.connection_invalidated)
        return isinstance(exc, OperationalError) and "locked" in str(exc.orig).lower()

    def engines(self) -> list[Engine]:
        """Every distinct engine (for listeners that must see all the driver's work)."""
        found = [
            self.read_engine,
            self.write_engine,
            getattr(self, "autocommit_engine", None),
            getattr(self, "folded_engine", None),
        ]
        return list({id(e): e for e in found if e is not None}.values())

    def dispose(self) -> None:
        for engine in self.engines():
            engine.dispose()

    def pool_usage(self) -> dict[str, tuple[int, int]]:
        """Connections checked out now and the most the pool opens, per engine: read (read
        snapshots, single statements and, on psycopg2, write transactions), write (other
        drivers' write transactions; on psycopg2 only what a transaction takes next to itself)
        on PostgreSQL, one shared engine on SQLite (none for in-memory SQLite, which pools
        nothing). Past the limit a call waits up to ``timeout_seconds``."""
        engines = (
            {"shared": self.read_engine}
            if self.write_engine is self.read_engine
            else {"read": self.read_engine, "write": self.write_engine}
        )
        return {
            name: (_in_use(engine.pool), self.pool_limit)
            for name, engine in engines.items()
            if isinstance(engine.pool, QueuePool)
        }

    def describe(self) -> str:
        """The URL with any password hidden (also a ?password= field), for logs and messages."""
        return dburl.masked(self.url)


class TransactionState:
    """What lasts as long as one ``Database.transaction`` attempt: ``values`` its statements'
    callers keep for the rest of it (the id blocks it reserved), and ``on_commit``, what runs
    once it has committed (dropped when it rolls back or fails)."""

    __slots__ = ("values", "on_commit")

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.on_commit: list[Callable[[], None]] = []


_STATE = "hms_transaction_state"
"""conn.info key: the TransactionState of the ``transaction`` attempt running on it."""

_IDLE_SINCE = "hms_idle_since"
"""ConnectionPoolEntry.info key: when the connection was last returned to the pool."""


_BACKEND_PID = "hms_backend_pid"
"""Pool record info key: the PostgreSQL backend PID of the record's connection."""

_PARKED_SINCE = "hms_parked_since"
"""ConnectionPoolEntry.info key: when ``IdleClosingPool.park`` took the connection (its idle
time, should it go back to the pool from there)."""

_PG_IDLE = 0
"""psycopg2's TRANSACTION_STATUS_IDLE: the session is not inside a transaction."""


def _in_use(pool: QueuePool) -> int:
    """Connections ``pool`` has handed out, less the ones parked idle (``IdleClosingPool``)."""
    return pool.checkedout() - (pool.parked() if isinstance(pool, IdleClosingPool) else 0)


def refused_connection(exc: BaseException) -> bool:
    """PostgreSQL turned a new connection away for want of a slot (max_connections, or the
    slots left are reserved): the server is up, and connections already open still work."""
    orig = getattr(exc, "orig", None) or exc
    if getattr(orig, "pgcode", None) == "53300":
        return True
    text = str(orig)
    return "too many clients" in text or "remaining connection slots are reserved" in text


class Refusals:
    """When PostgreSQL last refused us a connection, how often, and who wants to know
    (``listeners``, e.g. a metric); logged once per ``log_every`` seconds."""

    def __init__(self, log_every: float = 60.0) -> None:
        self.count = 0
        self.last: float | None = None  # time.monotonic() of the last refusal
        self.log_every = log_every
        self._logged = -log_every
        self.listeners: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def record(self, exc: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self.count += 1
            self.last = now
            log_now = now - self._logged >= self.log_every
            if log_now:
                self._logged = now
            count = self.count
        if log_now:
            log.warning(
                "the metastore database refused a new connection (%s); calls go on with the "
                "connections open (%d refusals so far; logged once per %gs)",
                str(getattr(exc, "orig", exc)).strip().splitlines()[0],
                count,
                self.log_every,
            )
        for listener in self.listeners:
            listener()

    def recent(self, within: float) -> float | None:
        """Seconds since the last refusal if it is at most ``within`` ago, else None."""
        if self.last is None:
            return None
        ago = time.monotonic() - self.last
        return ago if ago <= within else None


class PooledCursor(NamedTuple):
    """``Database.autocommit_cursor``'s cursor with its pooled connection's ``info`` (what the
    session has prepared), the DB-API connection, and whether statements must go as plain
    text (behind a transaction pooler a session's PREPAREs are not there next time)."""

    cursor: Any
    info: dict[str, Any]
    connection: Any
    plain_sql: bool


class DriverErrors:
    """Who wants to know of every error the database driver raises for us (``listeners``,
    e.g. a metric; each gets the name of SQLAlchemy's class for it, e.g. OperationalError),
    whether in the pools' statements and connects or on connections of our own."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[str], None]] = []

    def record(self, name: str) -> None:
        for listener in self.listeners:
            listener(name)


class IdleClosingPool(QueuePool):
    """A QueuePool that opens connections on demand (as QueuePool does) and closes the ones
    nobody has used for a while (``close_idle``; SQLAlchemy keeps them for good). When the
    server refuses a new connection (``refused_connection``) the caller does not fail at once:
    while this pool has some in use it waits for one of them to come back; with none, it tries
    again with backoff (other clients' idle connections close: many instances that each hold
    one a moment after their calls), either up to the pool timeout. The refusal is recorded in
    ``refusals`` (once per wait).

    It also keeps up to ``park_limit`` connections checked out but idle (``park``, ``unpark``:
    ``Database.autocommit_cursor``'s hot single statements skip the checkout and checkin).
    They count towards the pool's bounds, and with the queue's they are at most pool_size idle
    ones (what QueuePool keeps); one goes back to the queue whenever the queue is empty and
    someone asks the pool for a connection, and none is parked while anyone does (so no caller
    waits on a parked one); idle ones close as the queue's do; and one opened before the pool
    was invalidated (a disconnect), or due for recycling, is not reused."""

    refusals: Refusals | None = None
    park_limit = 0
    """How many connections ``park`` keeps (0: none)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._parked: list[Any] = []  # _ConnectionFairy, the most recently parked last
        self._park_lock = threading.Lock()
        self._getting = 0  # callers inside _do_get: while any, nothing is parked

    def recreate(self) -> IdleClosingPool:
        """The new pool of ``Engine.dispose``, with this one's settings and idle closing."""
        new: IdleClosingPool = super().recreate()  # type: ignore[assignment]
        new.refusals = self.refusals
        new.park_limit = self.park_limit
        _REAPER.rewatch(self, new)
        return new

    def parked(self) -> int:
        """How many connections are parked (checked out, idle)."""
        return len(self._parked)

    def park(self, fairy: Any) -> bool:
        """Keep ``fairy`` (checked out from this pool, idle, outside any transaction) for
        ``unpark``; False when not kept (the caller closes it: back to the queue)."""
        if fairy._pool is not self:  # the engine's pool was replaced meanwhile
            return False
        with self._park_lock:
            # Idle ones, parked or queued, stay at most pool_size (as in a QueuePool alone).
            idle = len(self._parked) + self._pool.qsize()
            if self._getting or idle >= min(self.park_limit, self._pool.maxsize):
                return False
            fairy.info[_PARKED_SINCE] = time.monotonic()
            self._parked.append(fairy)
            return True

    def unpark(self) -> Any | None:
        """A parked connection to use (None: none), the most recently parked first; one
        opened before the pool's invalidation or due for recycling goes back to the queue,
        whose checkout replaces it."""
        while True:
            with self._park_lock:
                if not self._parked:
                    return None
                fairy = self._parked.pop()
            record = fairy._connection_record
            if (
                record is not None
                and fairy.dbapi_connection is not None
                and self._invalidate_time <= record.starttime
                and (self._recycle < 0 or time.time() - record.starttime <= self._recycle)
            ):
                record.info.pop(_PARKED_SINCE, None)
                return fairy
            fairy.close()

    def _release_parked(self, idle_cut: float | None = None) -> int:
        """Return parked connections to the queue (with ``idle_cut``: the ones parked before
        it); how many."""
        with self._park_lock:
            if idle_cut is None:
                going, self._parked = self._parked, []
            else:
                going = [f for f in self._parked if f.info.get(_PARKED_SINCE, 0.0) <= idle_cut]
                self._parked = [f for f in self._parked if f not in going]
        for fairy in going:
            fairy.close()
        return len(going)

    def dispose(self) -> None:
        self._release_parked()
        super().dispose()

    def _do_get(self) -> ConnectionPoolEntry:
        with self._park_lock:
            self._getting += 1
            spare = self._parked.pop(0) if self._parked and self._pool.empty() else None
        try:
            if spare is not None:
                spare.close()  # into the queue, for this caller (or another one waiting)
            return self._do_get_refused()
        finally:
            with self._park_lock:
                self._getting -= 1

    def _do_get_refused(self) -> ConnectionPoolEntry:
        try:
            return super()._do_get()
        except Exception as exc:
            if not refused_connection(exc):
                raise
            if self.refusals is not None:
                self.refusals.record(exc)
            self._release_parked()
            if self.checkedout() > 0:
                try:
                    return self._pool.get(True, self._timeout)
                except sqla_queue.Empty:
                    pass
                raise
            found = self._retry_refused(time.monotonic() + self._timeout)
            if found is None:
                raise
            return found

    def _retry_refused(self, deadline: float) -> ConnectionPoolEntry | None:
        """Connect again (or take one of ours returned meanwhile) until ``deadline``, while the
        server keeps refusing; None when it still does then."""
        delay = 0.05
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(delay, left))
            delay = min(delay * 2, 1.0)
            try:
                return super()._do_get()
            except Exception as exc:
                if not refused_connection(exc):
                    raise

    def _do_return_conn(self, record: ConnectionPoolEntry) -> None:
        parked = record.info.pop(_PARKED_SINCE, None)  # idle since it was parked
        record.info[_IDLE_SINCE] = time.monotonic() if parked is None else parked
        if self._parked and self._pool.qsize() + len(self._parked) >= self._pool.maxsize:
            # Full with the parked ones: closed, as QueuePool closes one the queue cannot take
            try:
                record.close()
            finally:
                self._dec_overflow()
            return
        super()._do_return_conn(record)

    def close_idle(self, idle_seconds: float) -> int:
        """Close the pooled connections returned (or parked) more than ``idle_seconds`` ago;
        returns how many. Connections in use are not touched."""
        cut = time.monotonic() - idle_seconds
        self._release_parked(cut)
        closed = 0
        keep: list[ConnectionPoolEntry] = []
        for _ in range(self.checkedin()):
            try:
                record = self._pool.get(False)
            except sqla_queue.Empty:
                break
            if record.info.get(_IDLE_SINCE, cut) <= cut:
                try:
                    record.close()
                finally:
                    self._dec_overflow()
                closed += 1
            else:
                keep.append(record)
        # Back in the order they came out (the queue is LIFO: the freshest one last).
        for record in reversed(keep):
            try:
                self._pool.put(record, False)
            except sqla_queue.Full:
                record.close()
                self._dec_overflow()
        return closed


# SQLAlchemy names a pool's logger after its class: ours would log "Pool disposed" and the
# like at INFO under hms_cache_proxy's own level, where SQLAlchemy's pools stay quiet.
logging.getLogger(f"{__name__}.{IdleClosingPool.__name__}").setLevel(logging.WARNING)


class _Reaper:
    """One daemon thread for the process that closes idle pooled connections (of every
    Database with ``pool_idle_seconds``; pools of disposed or forgotten engines drop out)."""

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[IdleClosingPool, float] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, pool: IdleClosingPool, idle_seconds: float) -> None:
        with self._lock:
            self._pools[pool] = idle_seconds
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="hms-db-pool-reaper", daemon=True
                )
                self._thread.start()

    def rewatch(self, old: IdleClosingPool, new: IdleClosingPool) -> None:
        """``new`` replaces ``old`` (``Engine.dispose``): watched likewise, if ``old`` was."""
        with self._lock:
            idle = self._pools.get(old)
        if idle is not None:
            self.watch(new, idle)

    def _run(self) -> None:
        while True:
            with self._lock:
                pools = list(self._pools.items())
            shortest = min((idle for _, idle in pools), default=60.0)
            for pool, idle in pools:
                try:
                    pool.close_idle(idle)
                except Exception:  # noqa: BLE001 - a close that fails is left to the next round
                    log.debug("closing idle database connections failed", exc_info=True)
            del pools
            time.sleep(min(15.0, max(0.2, shortest / 4)))


_REAPER = _Reaper()


def _sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "pgcode", None)


# SQLSTATEs with their own words: query_canceled (statement_timeout), lock_not_available
# (lock_timeout), and the classes of connection failures and resource shortages.
_STATEMENT_TIMEOUT = "57014"
_LOCK_TIMEOUT = "55P03"


def client_message(exc: BaseException) -> str | None:
    """What a client is told about a database error (None: not one): what happened and what to
    do, never the SQL, its parameters, the server's host or port (those go to the log)."""
    if not isinstance(exc, DBAPIError):
        return None
    code = _sqlstate(exc) or ""
    if code == _STATEMENT_TIMEOUT:
        return (
            "the call took too long: the metastore database stopped it after "
            "database_statement_timeout_seconds; ask for less in one call (fewer partitions, "
            "a narrower filter) or ask the operator to raise the setting"
        )
    if refused_connection(exc):
        return (
            "the metastore database refused a new connection (too many clients: its "
            "max_connections is reached) and no connection became free within "
            "database_timeout_seconds; "
            "the call was not run; retry it later"
        )
    if code == _LOCK_TIMEOUT or (
        isinstance(exc, OperationalError) and "locked" in str(exc.orig).lower()
    ):
        return "the metastore database is busy (a lock was not granted in time); retry the call"
    if code in _PG_RETRYABLE:
        return (
            "the metastore database kept reporting conflicting concurrent changes "
            "(serialization failure or deadlock) after the retries; retry the call"
        )
    if exc.connection_invalidated or code.startswith("08") or code.startswith("57P"):
        return "the metastore database is unreachable; retry the call later"
    detail = f"SQLSTATE {code}" if code else type(exc.orig).__name__
    return f"metastore database error ({detail}); the service log has the details"


PLAIN_SQL = "hms_plain_sql"
"""Engine execution option: no PREPARE (a transaction pooler hands each transaction any server
connection; store/db/prepared.py sends the statement's text instead)."""
_BEGIN_TEXT = "hms_begin_text"
"""Folded engine execution option: the BEGIN (and SET LOCAL timeouts) put before a folded
transaction's first statement."""
_BEGIN = "hms_begin_pending"
"""conn.info key: a folded transaction whose BEGIN is not sent yet (False once it is)."""
_COMMITTED = "hms_commit_folded"
"""conn.info key: the next statement carries the COMMIT (armed), or carried it (sent)."""
_COMMIT_ARMED, _COMMIT_SENT = 1, 2


SESSION_CHECKOUT: list[Callable[[Any, dict[str, Any]], None]] = []
"""Called with (DB-API connection, the pool record's info) whenever a pool of a psycopg2
engine not behind a transaction pooler hands out a session: store/db/prepared.py's
``prepare_at_checkout`` (which imports this module, so it adds itself)."""


def _jit_off(engine: Engine) -> None:
    """Each new session turns PostgreSQL's JIT compiler off (PostgreSQL 11 and later).

    Every statement here reads or writes a few rows by index, where compiling never pays: a
    plan whose estimate crosses ``jit_above_cost`` (a generic plan over a long history, issue
    23) was compiled on every call, 13 ms for a statement that runs in 0.1 ms. A session SET,
    so not behind a transaction pooler (the next transaction's server session is another's)."""

    @event.listens_for(engine, "connect")
    def _set_jit(dbapi_conn: Any, _record: Any) -> None:
        if getattr(dbapi_conn, "server_version", 0) < 110000:
            return
        autocommit = dbapi_conn.autocommit
        dbapi_conn.autocommit = True
        try:
            with dbapi_conn.cursor() as cursor:
                cursor.execute("SET jit = off")
        finally:
            dbapi_conn.autocommit = autocommit


def _prepare_hot_statements(engine: Engine) -> None:
    """Each pooled session the pool hands out goes through SESSION_CHECKOUT (it prepares
    prepared.AT_CONNECT's statements the session lacks)."""

    @event.listens_for(engine, "checkout")
    def _prepare(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        _session_checkout(dbapi_conn, record.info)


def _session_checkout(dbapi_conn: Any, info: dict[str, Any]) -> None:
    """Run SESSION_CHECKOUT on a session handed out (by the pool, or unparked)."""
    for hook in SESSION_CHECKOUT:
        hook(dbapi_conn, info)


def begin_sent(conn: Connection) -> bool:
    """Whether ``conn`` is inside a folded transaction whose BEGIN has gone out."""
    return conn.info.get(_BEGIN) is False


def commit_after(conn: Connection) -> str:
    """``"; COMMIT"`` for the last statement of a folded transaction (``Database.transaction``
    on psycopg2) to end with, when nothing may follow it; else ``""`` (other drivers and
    databases, or an armed failpoint: ``write.before_commit`` must run before the commit)."""
    info = conn.info
    if failpoints.ACTIVE or _BEGIN not in info:
        return ""
    info[_COMMITTED] = _COMMIT_ARMED
    return "; COMMIT"


def _send_begin(
    conn: Connection, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool
) -> tuple[str, Any]:
    """Put the pending BEGIN of a folded transaction in front of its first statement."""
    info = conn.info
    if info.get(_BEGIN):
        info[_BEGIN] = False
        begin = conn.get_execution_options()[_BEGIN_TEXT]
        if executemany:
            cursor.execute(begin)
        else:
            statement = begin + statement
    committed = info.get(_COMMITTED)
    if committed == _COMMIT_ARMED:
        info[_COMMITTED] = _COMMIT_SENT  # this statement carries it
    elif committed == _COMMIT_SENT and statement != "ROLLBACK":
        raise RuntimeError("a statement after the COMMIT of a folded transaction")
    return statement, parameters


def _roll_back(conn: Connection) -> None:
    """End a folded transaction that failed; a connection that cannot is not reused."""
    try:
        conn.exec_driver_sql("ROLLBACK")
    except Exception:  # noqa: BLE001 - the original error is what the caller reports
        conn.invalidate()
