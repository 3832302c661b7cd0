"""enqueue_locks' statement keeps one generic plan on a session, and that plan reads indexes.

A prepared statement is planned for its values five times; PostgreSQL then keeps its generic
plan only if that plan's estimate is no worse than the custom plans'. The lock statement's
custom plans knew the txn id (the newest), so its write-id lookup ``"T2W_TXNID" >= txn`` looked
like a row or two, against a third of TXN_TO_WRITE_ID for the generic plan: with a history in
the table the statement was planned on every acid insert (issue 23: 0.17 ms per call). Every
parameter now goes through an InitPlan (``prepared.generic_prepared``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest

from hms_cache_proxy.bench import txn_history
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.txn_service import TxnService
from tests.support.stores import txn_service_on

OTHER_ROWS = 100_000
CALLS = 8
STATEMENT = pgsql._ENQUEUE[True, True, False]
"""The statement of a lock in a txn with its components (an insert's)."""


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


def _an_insert_txn_after_history(svc: TxnService, pg_url: str) -> dict[str, Any]:
    """The bench's history of another table (analysed), then an open txn with a write id on
    default.fresh: the lock statement's values for that txn's insert."""
    txn_history.add(pg_url, stock=False, n=OTHER_ROWS, min_history_level=False)  # + ANALYZE
    [txn] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "fresh", [txn])
    return {
        "txn": txn,
        "user": "u",
        "host": "h",
        "agent": None,
        "l_int": [1],
        "l_db": ["default"],
        "l_tbl": ["fresh"],
        "l_part": [None],
        "l_kind": ["r"],
        "c_db": ["default"],
        "c_tbl": ["fresh"],
        "c_part": [None],
        "c_op": ["i"],
    }


@contextlib.contextmanager
def _lock_statement_prepared(svc: TxnService, pg_url: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    """An autocommit session's cursor with the lock statement prepared (as the pool would),
    and its values for an insert's txn after the history."""
    values = _an_insert_txn_after_history(svc, pg_url)
    raw = psycopg2.connect(pg_url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute(STATEMENT._prepare)
            yield cur, values
    finally:
        raw.close()


def test_lock_statement_keeps_its_generic_plan(svc: TxnService, pg_url: str) -> None:
    """From the sixth execution on one session the generic plan is used (the old text: 0
    generic plans, 8 custom ones). Each execution is rolled back: the rows stay as they were."""
    with _lock_statement_prepared(svc, pg_url) as (cur, values):
        for _ in range(CALLS):
            cur.execute("BEGIN")
            cur.execute(STATEMENT._execute, values)
            assert cur.fetchone() is not None  # the txn is open: a lock id
            cur.execute("ROLLBACK")
        cur.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = %s",
            (STATEMENT.name,),
        )
        assert cur.fetchone() == (CALLS - 5, 5)


def test_lock_statement_generic_plan_reads_indexes(svc: TxnService, pg_url: str) -> None:
    """The plan kept finds the txn's row and its write id by their indexes, with no sequential
    scan of TXNS or TXN_TO_WRITE_ID and an estimate far below JIT's threshold."""
    with _lock_statement_prepared(svc, pg_url) as (cur, values):
        cur.execute("SET plan_cache_mode = force_generic_plan")
        cur.execute("BEGIN")
        cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + STATEMENT._execute, values)
        plan = "\n".join(row[0] for row in cur.fetchall())
        cur.execute("ROLLBACK")
    assert 'Seq Scan on "TXNS"' not in plan, plan  # NEXT_LOCK_ID's one row: a scan
    assert 'Seq Scan on "TXN_TO_WRITE_ID"' not in plan, plan
    assert 'on "TXN_TO_WRITE_ID"' in plan and "JIT:" not in plan, plan
    top_cost = float(plan.splitlines()[0].split("..")[1].split()[0])
    assert top_cost < 1000, plan  # jit_above_cost is 100000
