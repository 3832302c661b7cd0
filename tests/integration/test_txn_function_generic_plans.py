"""The transaction functions' statements keep one generic plan per session (issue 23).

PL/pgSQL plans each statement of a function like a prepared statement: five custom plans,
then the generic one only if its estimate is not above theirs. ``generate_series(1, p_n)``
and ``unnest(p_txns)`` were estimated at their real size in a custom plan and at 1000 or 100
rows in the generic one, so open_txns' INSERT and allocate_table_write_ids' reads were planned
on every call. Read through scalar subqueries (InitPlans, as ``prepared.generic_prepared``
does) they estimate the same either way and the generic plan is kept.

PL/pgSQL does not say which plan a statement ran with, so each statement is taken from the
function's text in plpgsql.py, its variables made parameters of the same types, PREPAREd and
executed as the function runs it; pg_prepared_statements counts the generic and custom plans
(PostgreSQL's plan cache decides the same way for both).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest
from sqlalchemy import text

from hms_cache_proxy.store.txn import plpgsql
from hms_cache_proxy.store.txn.txn_service import TxnService
from tests.support.stores import txn_service_on

pytestmark = pytest.mark.postgres

CALLS = 12
"""More than PostgreSQL's five custom plans per statement."""
TYPES = {
    "p_n": "integer",
    "p_user": "text",
    "p_host": "text",
    "p_agent": "text",
    "p_type": "integer",
    "p_floor": "bigint",
    "p_unsettled": "bigint[]",
    "p_window": "bigint",
    "p_txns": "bigint[]",
    "p_db": "text",
    "p_tbl": "text",
    "v_first": "bigint",
    "v_missing": "bigint[]",
}
_VARIABLE = re.compile(r"\b([pv]_\w+)\b")
_INTO = re.compile(r"\s+INTO\s+[pv]_\w+(?:,\s*[pv]_\w+)*")


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


def _statements(function: str, start: str) -> list[str]:
    """The function's statements that begin with ``start``, up to their ``;``."""
    return [start + rest.split(";")[0] for rest in function.split(start)[1:]]


def _prepared(statement: str) -> tuple[str, list[str]]:
    """The statement as PREPARE's text (INTO dropped, variables as $n) and its variables."""
    statement = _INTO.sub("", statement)
    names: list[str] = []
    for name in _VARIABLE.findall(statement):
        if name not in names:
            names.append(name)
    body = _VARIABLE.sub(lambda m: f"${names.index(m.group(1)) + 1}", statement)
    return body, names


def _plans(url: str, statement: str, values: dict[str, Any]) -> tuple[int, int]:
    """(generic, custom) plans of the statement after CALLS executions on one session."""
    body, names = _prepared(statement)
    raw = psycopg2.connect(url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute(f"PREPARE s ({', '.join(TYPES[n] for n in names)}) AS {body}")
            args = ", ".join(f"%({n})s::{TYPES[n]}" for n in names)
            for _ in range(CALLS):
                cur.execute(f"EXECUTE s ({args})", values)
            cur.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements")
            generic, custom = cur.fetchone()
            return int(generic), int(custom)
    finally:
        raw.close()


OPEN_VALUES = {
    "p_n": 1,
    "p_user": "tester",
    "p_host": "test-host",
    "p_agent": "agent",
    "p_type": 0,
    "p_floor": 1,
    "p_unsettled": [],
    "p_window": 300_000,
}


@pytest.mark.parametrize("branch", [0, 1, 2], ids=["on_floor", "min_history", "no_level"])
def test_open_txns_insert_keeps_a_generic_plan(svc: TxnService, pg_url: str, branch: int) -> None:
    statement = _statements(plpgsql.OPEN_FUNCTION, "WITH now AS")[branch]
    assert ("MIN_HISTORY_LEVEL" in statement) == (branch < 2)
    generic, custom = _plans(pg_url, statement, OPEN_VALUES)
    assert (generic, custom) == (CALLS - 5, 5)


@pytest.mark.parametrize(
    "start",
    ["SELECT COALESCE(array_agg(x ORDER BY x)", "SELECT array_agg(x ORDER BY x)"],
    ids=["missing", "write_ids"],
)
def test_allocate_reads_keep_a_generic_plan(svc: TxnService, pg_url: str, start: str) -> None:
    for _ in range(3):
        [txn] = svc.open_txns(1, "tester", "test-host")
        svc.allocate_table_write_ids("default", "t", [txn])
        svc.commit_txn(txn)
    with svc.db.single_statement(write=True) as conn:
        conn.execute(text('ANALYZE "TXN_TO_WRITE_ID"'))
    [txn] = svc.open_txns(1, "tester", "test-host")
    [statement] = _statements(plpgsql.ALLOCATE_FUNCTION, start)
    values = {"p_txns": [txn], "p_db": "default", "p_tbl": "t", "v_first": 4, "v_missing": [txn]}
    generic, custom = _plans(pg_url, statement, values)
    assert (generic, custom) == (CALLS - 5, 5)


def _txns_scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of an EXPLAIN (FORMAT JSON) plan that ran and read TXNS."""
    found = []
    if plan.get("Relation Name") == "TXNS" and plan.get("Actual Loops", 0) > 0:
        found.append(plan)
    for child in plan.get("Plans", []):
        found += _txns_scans(child)
    return found


@pytest.mark.parametrize("unsettled", [False, True], ids=["none_unsettled", "one_unsettled"])
@pytest.mark.parametrize("branch", [0, 1], ids=["on_floor", "min_history"])
def test_open_txns_watermark_reads_txns_by_index_after_it_grew(
    svc: TxnService, pg_url: str, branch: int, unsettled: bool
) -> None:
    """The watermark's reads of TXNS stay index probes when the generic plan was made while
    TXNS was small and it then grew (with autovacuum off nothing re-plans it): no sequential
    scan, a few buffers, with no unsettled txn and with one still open below the floor. As
    ``= ANY(p_unsettled)`` the plan was a scan of every row (2,675 rows per open, 0.27 ms)."""
    [held] = svc.open_txns(1, "tester", "test-host")  # stays open: unsettled below the floor
    statement = _statements(plpgsql.OPEN_FUNCTION, "WITH now AS")[branch]
    body, names = _prepared(statement)
    args = ", ".join(f"%({n})s::{TYPES[n]}" for n in names)
    raw = psycopg2.connect(pg_url.replace("postgresql+psycopg2", "postgresql"))
    raw.autocommit = True
    try:
        with raw.cursor() as cur:
            cur.execute(f"PREPARE s ({', '.join(TYPES[n] for n in names)}) AS {body}")
            for _ in range(CALLS):  # the generic plan, made while TXNS has a few rows
                cur.execute(f"EXECUTE s ({args})", OPEN_VALUES)
            cur.execute(
                'INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", '
                "\"TXN_USER\", \"TXN_HOST\") SELECT 'c', 1, 1, 'u', 'h' "
                "FROM generate_series(1, 20000)"
            )
            cur.execute('SELECT max("TXN_ID") FROM "TXNS"')
            (top,) = cur.fetchone()
            values = OPEN_VALUES | {"p_floor": top, "p_unsettled": [held] if unsettled else []}
            cur.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE s ({args})", values)
            (explained,) = cur.fetchone()
            cur.execute("SELECT generic_plans FROM pg_prepared_statements WHERE name = 's'")
            (generic,) = cur.fetchone()
    finally:
        raw.close()
    assert generic > CALLS - 5  # the plan made before the rows came was the one that ran
    scans = _txns_scans(explained[0]["Plan"])
    assert [s["Node Type"] for s in scans if s["Node Type"] == "Seq Scan"] == []
    assert sum(s["Shared Hit Blocks"] + s["Shared Read Blocks"] for s in scans) < 40
    assert sum(s.get("Rows Removed by Filter", 0) for s in scans) < 10
