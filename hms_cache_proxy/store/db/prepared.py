"""Statements PostgreSQL plans once per session (PREPARE / EXECUTE) for the hot calls.

A transaction call's statements are small and their planning costs as much as running them
(the open_txns statement: about 0.3 ms to plan, 0.2 ms to run). psycopg2 sends every statement
as text to be planned anew, so the hot ones are prepared on each pooled connection the first
time it needs them, by their own round trip outside any transaction, and from then on sent as
``EXECUTE name(...)``. A connection that cannot prepare (another driver, a database without the
tables yet), or one behind a transaction pooler (``database_pooler: transaction``: the next
transaction may run on another server connection), gets the statement's text: the answer is the
same either way.

A statement reached inside a write's transaction cannot be prepared there (the PREPARE would
be part of the transaction). The ones made with ``at_connect=True`` (``AT_CONNECT``) are
prepared when the pool hands out a session that lacks them (``prepare_at_checkout``: one
message when it is opened; again a few seconds later if the tables were not there yet), so
they go as EXECUTE inside transactions too. A schema change after that is PostgreSQL's to
handle: it re-plans a prepared statement whose tables changed.
"""

from __future__ import annotations

import re
import time
from typing import Any

from sqlalchemy import Connection
from sqlalchemy.dialects.postgresql import psycopg2 as postgresql_psycopg2

from hms_cache_proxy.store.db.engine import (
    PLAIN_SQL,
    SESSION_CHECKOUT,
    PooledCursor,
    begin_sent,
)

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")
_KEY = "hms_prepared"
"""conn.info key: the names this DB-API connection has prepared."""

AT_CONNECT: dict[str, Prepared] = {}
"""The statements every pooled PostgreSQL connection (psycopg2, no transaction pooler) has
prepared whenever the pool hands it out (``prepare_at_checkout``), by name: those run inside
write transactions on the hot calls."""
_AT_CONNECT_STATE = "hms_at_connect"
"""conn.info key: len(AT_CONNECT) once the session has them all, or (a float) when the last
try failed (the missing ones are tried again ``RETRY_SECONDS`` later)."""
RETRY_SECONDS = 1.0
_IDLE = 0
"""psycopg2's TRANSACTION_STATUS_IDLE: the session is not inside a transaction."""


class Prepared:
    """One statement with named psycopg2 placeholders (``%(name)s``), given the PostgreSQL
    type of each (``types``), prepared under ``name`` on first use per connection (and with
    ``at_connect`` whenever the pool hands out a connection: ``AT_CONNECT``)."""

    def __init__(
        self, name: str, sql: str, types: dict[str, str], *, at_connect: bool = False
    ) -> None:
        self.name = name
        self.sql = sql
        order: list[str] = []
        for found in _PLACEHOLDER.findall(sql):
            if found not in order:
                order.append(found)
        if set(order) != set(types):
            raise ValueError(f"{name}: types for {sorted(types)}, placeholders {sorted(order)}")
        number = {key: i + 1 for i, key in enumerate(order)}
        body = _PLACEHOLDER.sub(lambda m: f"${number[m.group(1)]}", sql)
        signature = ", ".join(types[key] for key in order)
        self._prepare = f"PREPARE {name} ({signature}) AS {body}"
        self._execute = f"EXECUTE {name} (" + ", ".join(f"%({k})s" for k in order) + ")"
        if at_connect:
            known = AT_CONNECT.setdefault(name, self)
            if known._prepare != self._prepare:
                raise ValueError(f"{name}: two statements prepared at connect under one name")

    def text(self, conn: Connection) -> str:
        """The text to send on ``conn`` for this statement: EXECUTE when the connection has it
        prepared (preparing it now if it can: call this before the transaction's first
        statement), else the statement itself."""
        if conn.dialect.driver != "psycopg2" or conn.get_execution_options().get(PLAIN_SQL):
            return self.sql
        prepared: set[str] | None = conn.info.get(_KEY)
        if prepared is None:
            prepared = conn.info[_KEY] = set()
        if self.name not in prepared:
            if not _prepare(conn, self._prepare):
                return self.sql
            prepared.add(self.name)
        return self._execute

    def pooled_text(self, pooled: PooledCursor) -> str:
        """``text`` for ``Database.autocommit_cursor``'s cursor (an autocommit session)."""
        if pooled.plain_sql:
            return self.sql
        prepared: set[str] | None = pooled.info.get(_KEY)
        if prepared is None:
            prepared = pooled.info[_KEY] = set()
        if self.name not in prepared:
            if not _prepare_on(pooled.connection, self._prepare, broken_raises=True):
                return self.sql
            prepared.add(self.name)
        return self._execute


def generic_prepared(
    name: str, sql: str, types: dict[str, str], *, at_connect: bool = False
) -> Prepared:
    """``Prepared`` whose every parameter is read through a one-row subquery
    (``(SELECT $n::type)``, an InitPlan), so the planner sees no parameter's value.

    PostgreSQL plans a prepared statement for its values five times, then keeps one generic
    plan only if that plan's estimate is below the average of those custom plans; otherwise
    it plans every call anew. With TXN_TO_WRITE_ID's statistics taken before the table read
    had write ids (a history of inserts elsewhere analysed, issue 23), the custom plans of
    store/txn/pgsql.py's ``hms_write_ids_now``, given a name the statistics did not hold,
    expected few rows, the generic plan a share of the whole table, and the statement was
    planned on every call: 0.35 ms of planning on a 0.1 ms execution. Behind InitPlans the
    custom plans estimate what the generic plan does, plus their planning charge, so the
    generic plan (tests/integration/test_write_id_generic_plans.py checks its reads) is kept
    from the sixth call on whatever the statistics say. A generic estimate past
    ``jit_above_cost`` would be JIT-compiled on every call where the session has JIT on; the
    pools' sessions run with ``jit = off`` (engine._jit_off; see pgsql._TABLE_WRITE_IDS)."""
    hidden = _PLACEHOLDER.sub(lambda m: f"(SELECT {m.group(0)}::{types[m.group(1)]})", sql)
    return Prepared(name, hidden, types, at_connect=at_connect)


class PreparedCore:
    """A SQLAlchemy Core statement of fixed shape (array parameters, no expanding lists or
    constants) prepared on psycopg2's sessions under ``name`` (``AT_CONNECT``): compiled once
    for psycopg2, its parameters' types left to PostgreSQL. Elsewhere (SQLite, another
    driver) it runs as the statement it is; so does it behind a transaction pooler, as text."""

    def __init__(self, name: str, statement: Any) -> None:
        self.statement = statement
        compiled = statement.compile(dialect=_PSYCOPG2)
        params = compiled.construct_params({}, _check=False)
        constants = {key: value for key, value in params.items() if value is not None}
        if constants:
            raise ValueError(f"{name}: constants {sorted(constants)} (bind them per call)")
        self.prepared = Prepared(
            name, str(compiled), {key: "unknown" for key in params}, at_connect=True
        )

    def execute(self, conn: Connection, params: dict[str, Any]) -> Any:
        """The statement's result on ``conn``: EXECUTE of the prepared statement (or its
        text) on psycopg2, else SQLAlchemy's execution of the statement."""
        if conn.dialect.driver != "psycopg2":
            return conn.execute(self.statement, params)
        return conn.exec_driver_sql(self.prepared.text(conn), params)


_PSYCOPG2 = postgresql_psycopg2.dialect()


def prepare_at_checkout(raw: Any, info: dict[str, Any]) -> None:
    """Make sure the pooled DB-API connection ``raw`` (psycopg2, handed out by the pool, so
    outside any transaction) has every ``AT_CONNECT`` statement prepared, recording in
    ``info`` (the pool record's, which ``text`` reads) the names the session has. Nothing to
    do (one look-up) once they are; the missing ones go in one autocommit message. When that
    fails (e.g. a session opened before the schema was made) no transaction is left behind
    and the next try waits ``RETRY_SECONDS``."""
    state = info.get(_AT_CONNECT_STATE)
    if state == len(AT_CONNECT) or (
        isinstance(state, float) and time.monotonic() - state < RETRY_SECONDS
    ):
        return
    prepared: set[str] = info.setdefault(_KEY, set())
    # A tuple first: statements made on first use (details.py's) may join meanwhile.
    missing = [s for s in tuple(AT_CONNECT.values()) if s.name not in prepared]
    if not missing:
        info[_AT_CONNECT_STATE] = len(AT_CONNECT)
        return
    if raw.closed or raw.info.transaction_status != _IDLE:
        return
    autocommit = raw.autocommit
    try:
        raw.autocommit = True
        with raw.cursor() as cursor:
            try:
                cursor.execute("; ".join(s._prepare for s in missing))
            except raw.Error:
                # Which ones the session has (a PREPARE is not undone with its message).
                cursor.execute("SELECT name FROM pg_prepared_statements")
                prepared.update(str(row[0]) for row in cursor.fetchall())
                info[_AT_CONNECT_STATE] = time.monotonic()
                return
        prepared.update(s.name for s in missing)
        info[_AT_CONNECT_STATE] = len(AT_CONNECT)
    except raw.Error:  # the connection broke: its next use reports it
        return
    finally:
        if not raw.closed and raw.autocommit != autocommit:
            raw.autocommit = autocommit


SESSION_CHECKOUT.append(prepare_at_checkout)


def _prepare(conn: Connection, statement: str) -> bool:
    """Run PREPARE on the raw autocommit session (no transaction: a failure leaves nothing
    behind); False when the database refuses it or the session is inside a transaction."""
    raw: Any = conn.connection.dbapi_connection
    if raw is None or begin_sent(conn):
        return False
    return _prepare_on(raw, statement)


def _prepare_on(raw: Any, statement: str, *, broken_raises: bool = False) -> bool:
    """PREPARE on DB-API connection ``raw`` if it is in autocommit (else False).
    ``broken_raises``: an error that closed the connection is raised (the caller's error
    handling then discards the connection), not answered with False."""
    if not raw.autocommit:
        return False
    try:
        with raw.cursor() as cursor:
            cursor.execute(statement)
    except raw.Error:  # e.g. the schema is not there yet: the text works the same
        if broken_raises and raw.closed:
            raise
        return False
    return True
