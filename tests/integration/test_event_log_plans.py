"""The poller's reads of NOTIFICATION_LOG use its EVENT_ID index on a log without statistics.

A log PostgreSQL never analysed (a fresh database, autovacuum off or not yet run) made
``EVENT_ID > x ORDER BY EVENT_ID LIMIT 1000`` a scan and sort of the whole table: 4 ms and
1,000 buffers per poll at 30,000 events, growing with the log (issue 23: the cache server with
two workers spent 0.4-6 ms of PostgreSQL's CPU per operation on it). Reads are bounded by
NEXT_EVENT_ID - 1 and ask for no more rows than there are ids up to it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.poller import Poller
from hms_cache_proxy.store.sql.bootstrap import init_db

pytestmark = pytest.mark.postgres

EVENTS = 30_000
BEHIND = 3
"""How far the poller is behind: the few events a notification announces."""


@pytest.fixture
def pg_db(pg_url: str, tmp_path: Path) -> Iterator[Database]:
    database = Database(pg_url)
    init_db(database, tmp_path.as_uri())
    raw = database.read_engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute('ALTER TABLE "NOTIFICATION_LOG" SET (autovacuum_enabled = false)')
        cur.execute(
            'INSERT INTO "NOTIFICATION_LOG" ("NL_ID", "EVENT_ID", "EVENT_TIME", "EVENT_TYPE", '
            '"MESSAGE", "MESSAGE_FORMAT") SELECT g, g, 0, %s, repeat(%s, 200), %s '
            "FROM generate_series(1, %s) g",
            (messages.OPEN_TXN, "x", messages.JSON_FORMAT, EVENTS),
        )
        cur.execute('UPDATE "NOTIFICATION_SEQUENCE" SET "NEXT_EVENT_ID" = %s', (EVENTS + 1,))
        cur.execute("SELECT reltuples FROM pg_class WHERE relname = 'NOTIFICATION_LOG'")
        assert cur.fetchone()[0] < 0, "the log must be one PostgreSQL has no statistics of"
        raw.commit()
    finally:
        raw.close()
    yield database
    database.dispose()


def _plans_of_log_reads(db: Database) -> list[str]:
    """Runs a pooled catch-up of a poller BEHIND events behind; EXPLAINs what it read."""
    log = EventLog(IdAllocator(db), messages.JSON_FORMAT)
    applied: list[Any] = []
    poller = Poller(db, log, applied.extend, lambda reason: None, position=EVENTS - BEHIND)
    statements: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if '"NOTIFICATION_LOG"' in statement:
            statements.append((statement, parameters))

    event.listen(db.read_engine, "before_cursor_execute", seen)
    try:
        assert poller.catch_up() == EVENTS
    finally:
        event.remove(db.read_engine, "before_cursor_execute", seen)
    assert [e.eventId for e in applied] == list(range(EVENTS - BEHIND + 1, EVENTS + 1))
    assert statements
    plans = []
    raw = db.read_engine.raw_connection()
    try:
        cur = raw.cursor()
        for statement, parameters in statements:
            cur.execute("EXPLAIN (FORMAT JSON) " + statement, parameters)
            plans.append(json.dumps(cur.fetchone()[0]))
    finally:
        raw.close()
    return plans


def test_the_pollers_log_read_uses_the_event_id_index_without_statistics(
    pg_db: Database,
) -> None:
    for plan in _plans_of_log_reads(pg_db):
        assert '"NOTIFICATION_LOG_EVENT_ID"' in plan, plan
        assert '"Sort"' not in plan and '"Seq Scan"' not in plan, plan


class _RecordingCursor:
    """A DB-API cursor that keeps what it ran (the read's SQL and values, to EXPLAIN)."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.ran: list[tuple[str, Any]] = []

    def execute(self, sql: str, values: Any = None) -> None:
        self.ran.append((sql, values))
        self.cursor.execute(sql, values)

    def fetchall(self) -> list[Any]:
        return self.cursor.fetchall()


def _nodes(plan: Any) -> Iterator[dict[str, Any]]:
    stack = [plan[0]["Plan"]]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.get("Plans", ()))


@pytest.mark.parametrize("mode", ["force_custom_plan", "force_generic_plan"])
@pytest.mark.parametrize("behind", [BEHIND, EVENTS])
def test_the_listening_sessions_one_statement_read_uses_the_event_id_index_without_statistics(
    pg_db: Database, behind: int, mode: str
) -> None:
    """NEXT_EVENT_ID and the events below it in one prepared statement: an ordered scan of
    the EVENT_ID index that stops at the batch's end, a few events behind or the whole log,
    in the plan made for its values and in the generic one PostgreSQL may switch to."""
    log = EventLog(IdAllocator(pg_db), messages.JSON_FORMAT)
    raw = pg_db.read_engine.raw_connection()
    try:
        cur = _RecordingCursor(raw.cursor())
        cur.cursor.execute(EventLog.listener_session_sql())
        cur.cursor.execute(f"SET plan_cache_mode = {mode}")
        for _ in range(2):
            current, rows = log.current_and_next_events_dbapi(cur, EVENTS - behind, 1000)
            assert current == EVENTS
            first = EVENTS - behind + 1
            assert [r.eventId for r in rows] == list(range(first, min(EVENTS, first + 999) + 1))
        ((sql, values), _) = cur.ran
        cur.cursor.execute("EXPLAIN (FORMAT JSON) " + sql, values)
        nodes = list(_nodes(cur.cursor.fetchone()[0]))
    finally:
        raw.close()
    scans = [n for n in nodes if n.get("Relation Name") == "NOTIFICATION_LOG"]
    assert [(n["Node Type"], n.get("Index Name")) for n in scans] == [
        ("Index Scan", "NOTIFICATION_LOG_EVENT_ID")
    ], nodes
    assert not [n for n in nodes if n["Node Type"] == "Sort"], nodes
