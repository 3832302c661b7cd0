"""An append from Python takes its event ids with prepared statements (issue 23).

``EventLog.reserve`` moves NOTIFICATION_SEQUENCE on and reads the new ids in two statements
sent inside the write transaction. Sent as text, PostgreSQL planned both on every write that
logs events from Python (the ids' read: 0.107 ms of planning per acid_insert, more than its
0.024 ms of running). They
are prepared on every pooled session when the pool hands it out and go as EXECUTE, planned
once per session; behind a transaction pooler they stay text.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection

from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.events.log import EventLog, NewEvent
from hms_cache_proxy.store.sql.bootstrap import init_db

pytestmark = pytest.mark.postgres

WRITES = 12
"""More than PostgreSQL's five custom plans per prepared statement."""
RESERVE = ("hms_event_ids_advance", "hms_event_ids_reserved")


@pytest.fixture
def schema_url(pg_url: str, tmp_path: Path) -> str:
    setup = Database(pg_url)
    try:
        init_db(setup, tmp_path.as_uri())
    finally:
        setup.dispose()
    return pg_url


def _event(i: int) -> NewEvent:
    return NewEvent(messages.ALTER_TABLE, {"db": "d", "n": i}, db_name="d", table_name="t")


def _plans(conn: Connection) -> dict[str, tuple[int, int]]:
    """(generic, custom) plans of this session's reserve statements, by name."""
    rows = conn.exec_driver_sql(
        "SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
        "WHERE name = ANY(%(names)s)",
        {"names": list(RESERVE)},
    )
    return {str(name): (int(g), int(c)) for name, g, c in rows}


def _appends(db: Database, log: EventLog) -> Iterator[list[int]]:
    for i in range(WRITES):
        yield db.transaction(lambda conn, i=i: log.append(conn, [_event(i), _event(i + 100)]))


def test_appends_execute_the_prepared_reserve_statements_with_a_generic_plan(
    schema_url: str,
) -> None:
    db = Database(schema_url, pool_size=1)
    try:
        log = EventLog(IdAllocator(db), messages.JSON_FORMAT)
        ids = list(_appends(db, log))
        assert ids == [[2 * i + 1, 2 * i + 2] for i in range(WRITES)]
        with db.single_statement() as conn:
            plans = _plans(conn)
        # One pooled session ran every append: each statement executed once per write,
        # planned for its values five times, then with its one generic plan.
        assert plans == {name: (WRITES - 5, 5) for name in RESERVE}
    finally:
        db.dispose()


def test_an_extra_column_reads_through_its_own_prepared_statement(schema_url: str) -> None:
    """A caller's ``also`` (txns' OPEN_KEPT, writeids' ALLOCATED) gets a statement of its own,
    registered on first use and prepared by the sessions from their next checkout."""
    db = Database(schema_url, pool_size=1)
    try:
        log = EventLog(IdAllocator(db), messages.JSON_FORMAT)
        also = ", 7 * 6"

        def reserve(conn: Connection) -> tuple[int, tuple[object, ...]]:
            found = log.reserve(conn, 2, also=also)
            return found.first, found.extra

        assert db.transaction(reserve) == (1, (42,))  # the first time as text
        assert db.transaction(reserve) == (3, (42,))
        with db.single_statement() as conn:
            names = set(conn.exec_driver_sql("SELECT name FROM pg_prepared_statements").scalars())
        assert {n for n in names if n.startswith("hms_event_ids_reserved_")}, names
    finally:
        db.dispose()


def test_behind_a_transaction_pooler_the_reserve_statements_stay_text(schema_url: str) -> None:
    db = Database(schema_url, pool_size=1, pooler="transaction")
    try:
        log = EventLog(IdAllocator(db), messages.JSON_FORMAT)
        assert list(_appends(db, log))[-1] == [2 * WRITES - 1, 2 * WRITES]
        with db.single_statement() as conn:
            assert conn.exec_driver_sql("SELECT name FROM pg_prepared_statements").all() == []
    finally:
        db.dispose()
