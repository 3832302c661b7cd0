"""The write-id statements keep to the table's index under PostgreSQL's generic plan.

A prepared statement is planned for its parameters five times, then PostgreSQL may keep one
generic plan that does not know the table's name. Once TXN_TO_WRITE_ID's statistics are
dominated by one other table (a history of finished inserts, after ANALYZE), the generic plan
of an ``EXISTS (... table's write ids at or below the hwm ...)`` expected a match at once and
scanned the whole heap instead (834 pages per call at 100,000 rows: issue 23's cache-server
get_valid_write_ids at 0.7 ms). The statements now ask for the lowest such write id
(``ORDER BY ... LIMIT 1``), which only the (database, table, write id) index answers cheaply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest
from sqlalchemy import text

from hms_cache_proxy.bench import txn_history
from hms_cache_proxy.store.db.prepared import Prepared
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList
from tests.support.stores import txn_service_on

OTHER_ROWS = 100_000


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


def _history_of_another_table(svc: TxnService) -> int:
    """A few write ids on default.t, many on default.other, statistics taken; the top txn."""
    for _ in range(3):
        [txn] = svc.open_txns(1, "u", "h")
        svc.allocate_table_write_ids("default", "t", [txn])
        svc.commit_txn(txn)

    def add(conn: Any) -> int:
        conn.execute(
            text(
                'INSERT INTO "TXN_TO_WRITE_ID" ("T2W_TXNID", "T2W_DATABASE", "T2W_TABLE", '
                "\"T2W_WRITEID\") SELECT 1000000 + g, 'default', 'other', g "
                "FROM generate_series(1, :n) g"
            ),
            {"n": OTHER_ROWS},
        )
        return int(conn.execute(text('SELECT max("TXN_ID") FROM "TXNS"')).scalar_one())

    top = svc.db.transaction(add)
    with svc.db.single_statement(write=True) as conn:
        conn.execute(text('ANALYZE "TXN_TO_WRITE_ID"'))
    return top


def _generic_plan(url: str, statement: Prepared, values: dict[str, Any]) -> str:
    raw = psycopg2.connect(url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute(statement._prepare)
            cur.execute("SET plan_cache_mode = force_generic_plan")
            cur.execute("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement._execute, values)
            return "\n".join(row[0] for row in cur.fetchall())
    finally:
        raw.close()


def _heap_pages_read(plan: str) -> int:
    """The statement's shared buffers (the plan's top line counts all of them)."""
    for line in plan.splitlines():
        if "Buffers: shared" in line:
            return int(line.split("hit=")[1].split()[0]) if "hit=" in line else 0
    return 0


def test_write_ids_now_generic_plan_uses_the_index(svc: TxnService, pg_url: str) -> None:
    top = _history_of_another_table(svc)
    values = {"window": 1000, "floor": top, "unsettled": [], "db": "default", "tbl": "t"}
    plan = _generic_plan(pg_url, pgsql._WRITE_IDS_NOW, values)
    assert 'Seq Scan on "TXN_TO_WRITE_ID"' not in plan, plan
    assert _heap_pages_read(plan) < 60, plan


def test_settled_write_ids_generic_plan_uses_the_indexes(svc: TxnService, pg_url: str) -> None:
    """With the bench's history (another table's 100,000 write ids, analysed) a lone lower
    bound on the txn id was estimated at a third of them: a sequential scan of the table."""
    txn_history.add(pg_url, stock=False, n=OTHER_ROWS, min_history_level=False)  # + ANALYZE
    [txn] = svc.open_txns(1, "u", "h")  # its write id unknown to the statistics
    svc.allocate_table_write_ids("default", "t", [txn])
    with svc.db.single_statement() as conn:
        top = int(conn.execute(text('SELECT max("TXN_ID") FROM "TXNS"')).scalar_one())
    values = {"window": 1000, "floor": top, "unsettled": [txn], "db": "default", "tbl": "t"}
    plan = _generic_plan(pg_url, pgsql._TABLE_WRITE_IDS_SETTLED, values)
    assert 'Seq Scan on "TXN_TO_WRITE_ID"' not in plan, plan
    assert 'Seq Scan on "TXNS"' not in plan, plan
    assert _heap_pages_read(plan) < 60, plan


def test_table_write_ids_generic_plan_uses_the_index(svc: TxnService, pg_url: str) -> None:
    top = _history_of_another_table(svc)
    values = {"txn_hwm": top, "db": "default", "tbl": "t", "invalid": [top + 1]}
    plan = _generic_plan(pg_url, pgsql._TABLE_WRITE_IDS, values)
    assert 'Seq Scan on "TXN_TO_WRITE_ID"' not in plan, plan
    assert _heap_pages_read(plan) < 60, plan


def test_answers_with_the_history_of_another_table(svc: TxnService) -> None:
    """The rewritten test still says whether a valid write id lies at or below the hwm."""
    top = _history_of_another_table(svc)
    [now] = svc.get_valid_write_ids(["default.t"])
    assert (now.writeIdHighWaterMark, now.invalidWriteIds) == (3, [])
    [opened] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "t", [opened])
    snapshot = ValidReadTxnList.from_open_txns_response(svc.get_open_txns())
    assert opened in snapshot.exceptions and top < opened
    [given] = svc.get_valid_write_ids(["default.t"], snapshot.to_string())
    assert given.writeIdHighWaterMark == 4 and list(given.invalidWriteIds) == [4]
    [later] = svc.get_valid_write_ids(["default.t"])
    assert later.writeIdHighWaterMark == 4 and list(later.invalidWriteIds) == [4]


def _plans_kept(url: str, statement: Prepared, values: dict[str, Any], calls: int = 8) -> Any:
    """(generic, custom) plans PostgreSQL made for ``statement`` over ``calls`` executions on
    one session in plan_cache_mode auto (pg_prepared_statements)."""
    raw = psycopg2.connect(url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute(statement._prepare)
            for _ in range(calls):
                cur.execute(statement._execute, values)
                cur.fetchall()
            cur.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s",
                (statement.name,),
            )
            return cur.fetchone()
    finally:
        raw.close()


@pytest.mark.parametrize(
    "statement",
    [
        pgsql._WRITE_IDS_NOW,
        pgsql._OPEN_TXN_LIST,
        pgsql._TABLE_WRITE_IDS_SETTLED,
        pgsql._TABLE_WRITE_IDS,
    ],
)
def test_generic_plan_kept_for_a_table_the_statistics_do_not_know(
    svc: TxnService, pg_url: str, statement: Prepared
) -> None:
    """The table read got its write ids after TXN_TO_WRITE_ID's statistics were taken (the
    bench's history of another table, analysed): custom plans knowing the name estimated it
    small, the generic plan could not, and PostgreSQL planned get_valid_write_ids' statement
    anew on every call (issue 23: 0.35 ms of planning per call). From the sixth call the
    generic plan is used (the open-txn list's statement: kept as it was; the read with a
    snapshot, acid_read_query's: planned on every call before it, 0.31 ms per query)."""
    txn_history.add(pg_url, stock=False, n=OTHER_ROWS, min_history_level=False)  # + ANALYZE
    txns = svc.open_txns(3, "u", "h")
    svc.allocate_table_write_ids("default", "fresh", txns)
    svc.commit_txn(txns[0])
    svc.abort_txn(txns[1])
    values = {
        "window": 1000,
        "floor": txns[0],
        "unsettled": [],
        "db": "default",
        "tbl": "fresh",
        "txn_hwm": txns[-1],
        "invalid": txns[1:],
    }
    generic, custom = _plans_kept(pg_url, statement, values)  # psycopg2 skips unused keys
    assert (generic, custom) == (3, 5)
    assert "JIT:" not in _generic_plan(pg_url, statement, values)  # estimated far below it


def _a_table_with_history(url: str, rows: int) -> None:
    """``rows`` txns with a write id each on default.t, every 50th still open."""
    raw = psycopg2.connect(url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute(
                'INSERT INTO "TXNS" ("TXN_ID", "TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", '
                '"TXN_USER", "TXN_HOST") SELECT 100 + g, CASE WHEN g %% 50 = 0 THEN \'o\' '
                "ELSE 'c' END, 0, 0, 'u', 'h' FROM generate_series(1, %(n)s) g",
                {"n": rows},
            )
            cur.execute(
                'INSERT INTO "TXN_TO_WRITE_ID" ("T2W_TXNID", "T2W_DATABASE", "T2W_TABLE", '
                "\"T2W_WRITEID\") SELECT 100 + g, 'default', 't', g "
                "FROM generate_series(1, %(n)s) g",
                {"n": rows},
            )
            cur.execute(
                'INSERT INTO "NEXT_WRITE_ID" ("NWI_DATABASE", "NWI_TABLE", "NWI_NEXT") '
                "VALUES ('default', 't', %(n)s + 1)",
                {"n": rows},
            )
    finally:
        raw.close()


def _plan(url: str, statement: Prepared, values: dict[str, Any], mode: str) -> list[str]:
    raw = psycopg2.connect(url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute(statement._prepare)
            cur.execute(f"SET plan_cache_mode = {mode}")
            cur.execute("EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF) " + statement._execute, values)
            return [row[0] for row in cur.fetchall()]
    finally:
        raw.close()


def _per_txn_lookups(plan: list[str]) -> list[tuple[str, list[str]]]:
    """(scan line, its detail lines) of each scan of TXN_TO_WRITE_ID that depends on a txn
    id ``c.id`` of the loop around it (the lookup of a txn's write id)."""
    found = []
    for i, line in enumerate(plan):
        if "Scan" not in line or 'on "TXN_TO_WRITE_ID"' not in line:
            continue
        details = []
        for after in plan[i + 1 :]:
            if "->" in after:
                break
            details.append(after)
        if any("c.id" in d for d in details):
            found.append((line, details))
    return found


@pytest.mark.parametrize("statistics", ["never", "of_an_empty_table", "fresh"])
def test_the_write_ids_of_open_txns_are_looked_up_by_the_txn_index(
    svc: TxnService, pg_url: str, statistics: str
) -> None:
    """Each open txn's write id is read from the (database, table, txn) index, with no, stale
    or fresh statistics and custom or generic plans: never all the table's rows per txn
    through the write-id index with the txn as a filter (the plan of ``T2W_TXNID = c.id`` on
    a TXN_TO_WRITE_ID never analyzed)."""
    if statistics == "of_an_empty_table":
        with svc.db.single_statement(write=True) as conn:
            conn.exec_driver_sql('ANALYZE "TXN_TO_WRITE_ID"')
    rows = 200 if statistics == "never" else 3000
    _a_table_with_history(pg_url, rows)
    hwm = 100 + rows - 50  # the last 50 txns above the snapshot's hwm, every 50th invalid
    if statistics == "fresh":
        with svc.db.single_statement(write=True) as conn:
            conn.exec_driver_sql('ANALYZE "TXN_TO_WRITE_ID"')
    cases = [
        (
            pgsql._WRITE_IDS_NOW,
            {"window": 1000, "floor": 0, "unsettled": [], "db": "default", "tbl": "t"},
        ),
        (
            pgsql._TABLE_WRITE_IDS,
            {"txn_hwm": hwm, "db": "default", "tbl": "t", "invalid": list(range(150, hwm, 50))},
        ),
    ]
    for statement, values in cases:
        for mode in ("force_custom_plan", "force_generic_plan"):
            plan = _plan(pg_url, statement, values, mode)
            lookups = _per_txn_lookups(plan)
            assert lookups, "\n".join(plan)
            for scan, details in lookups:
                assert '"TBL_TO_TXN_ID_IDX"' in scan, "\n".join(plan)
                assert not any("Rows Removed by Filter" in d for d in details), "\n".join(plan)
                assert "rows=1 " in scan, "\n".join(plan)


def test_read_with_a_snapshot_returns_to_its_generic_plan_after_an_analyze(
    svc: TxnService, pg_url: str
) -> None:
    """PostgreSQL's plan cache weighs a new generic plan against the average of every custom
    plan the statement had, those made before an ANALYZE included. With another table's
    history analysed, the write-id range above the snapshot's hwm, bounded below only, was
    estimated at a third of that history (8,169 against 124 before): the five cheap custom
    plans kept the average under it and every later call was planned anew (205 custom plans
    in 205 calls). Bounded above by the table's own top txn it estimates a two-sided range
    and the generic plan is back within a few dozen calls."""
    for _ in range(3):
        [txn] = svc.open_txns(1, "u", "h")
        svc.allocate_table_write_ids("default", "t", [txn])
        svc.commit_txn(txn)
    with svc.db.single_statement() as conn:
        top = int(conn.execute(text('SELECT max("TXN_ID") FROM "TXNS"')).scalar_one())
    statement = pgsql._TABLE_WRITE_IDS
    values = {"txn_hwm": top, "db": "default", "tbl": "t", "invalid": []}
    raw = psycopg2.connect(pg_url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute("SET jit = off")  # as the pools' sessions
            cur.execute(statement._prepare)
            for _ in range(8):
                cur.execute(statement._execute, values)
                cur.fetchall()
            txn_history.add(pg_url, stock=False, n=OTHER_ROWS, min_history_level=True)
            for _ in range(150):
                cur.execute(statement._execute, values)
                cur.fetchall()
            cur.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s",
                (statement.name,),
            )
            generic, custom = cur.fetchone()
    finally:
        raw.close()
    assert generic > 50, (generic, custom)
