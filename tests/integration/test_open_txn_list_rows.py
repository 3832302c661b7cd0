"""The open-txn list and the write-id lists inside a busy open window, on PostgreSQL (one
statement that sends only the rows that matter: not committed, after a gap, the top one) and
on SQLite (every row read): the same answers. A gap in the txn ids inside the window lists as
open, its neighbours' committed rows do not, and the write ids of open and aborted txns are
invalid while those of committed ones are not."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import delete

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList
from tests.support.stores import sql_store

YOUNG_COMMITTED = 40
"""Committed txns on each side of the gap, all inside the open window."""


@pytest.fixture(params=["postgres", "sqlite"])
def svc(request: Any, tmp_path: Any) -> Iterator[TxnService]:
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
    else:
        url = request.getfixturevalue("sqlite_url")
    db = Database(url)
    init_db(db, "file:/tmp/wh")
    yield sql_store(db, "file:/tmp/wh").txn
    db.dispose()


def _committed(svc: TxnService, n: int) -> list[int]:
    ids = svc.open_txns(n, "u", "h")
    for txn in ids:
        svc.commit_txn(txn)
    return ids


def _busy_window(svc: TxnService) -> dict[str, int]:
    """An open and an aborted txn with write ids of db.t, committed ones around them, and a
    gap (a txn whose row is missing) between the young committed rows."""
    opened, aborted, *committed = svc.open_txns(5, "u", "h")
    svc.allocate_table_write_ids("db", "t", [opened, aborted, *committed])
    for txn in committed:
        svc.commit_txn(txn)
    svc.abort_txn(aborted)
    before = _committed(svc, YOUNG_COMMITTED)
    gap = before[len(before) // 2]
    with svc.db.write_engine.begin() as conn:
        conn.execute(delete(schema.TXNS).where(schema.TXNS.c.TXN_ID == gap))
    after = _committed(svc, YOUNG_COMMITTED)
    return {"open": opened, "aborted": aborted, "gap": gap, "top": after[-1]}


def test_get_open_txns_lists_the_gap_open_and_no_committed_row(svc: TxnService) -> None:
    ids = _busy_window(svc)
    got = svc.get_open_txns()
    assert got.txn_high_water_mark == ids["top"]
    assert list(got.open_txns) == [ids["open"], ids["aborted"], ids["gap"]]
    snapshot = ValidReadTxnList.from_open_txns_response(got)
    assert snapshot.is_txn_aborted(ids["aborted"]) and not snapshot.is_txn_aborted(ids["gap"])
    assert got.min_open_txn == ids["open"]
    info = svc.get_open_txns_info()
    assert [t.id for t in info.open_txns] == [ids["open"], ids["aborted"], ids["gap"]]
    assert [t.state for t in info.open_txns] == [
        hms.TxnState.OPEN,
        hms.TxnState.ABORTED,
        hms.TxnState.OPEN,
    ]


def test_postgres_sends_only_the_rows_that_matter(svc: TxnService) -> None:
    if svc.db.dialect != "postgresql":
        pytest.skip("SQLite reads every row of the window")
    ids = _busy_window(svc)
    with svc.db.single_statement() as conn:
        rows = pgsql.open_txn_rows(conn, svc.config.open_txn_timeout_ms, 0, [], False)
    sent = [int(r.TXN_ID) for r in rows]
    # the open and aborted rows, the committed row right after the gap, the top row, and at
    # most the window's predecessor row: not the 2 * YOUNG_COMMITTED committed ones
    assert ids["open"] in sent and ids["aborted"] in sent and ids["gap"] + 1 in sent
    assert sent[-1] == ids["top"] and len(sent) <= 5, sent


def test_valid_write_ids_now_and_with_a_snapshot(svc: TxnService) -> None:
    ids = _busy_window(svc)
    (now,) = svc.get_valid_write_ids(["db.t"])
    given = svc.get_open_txns()
    (snap,) = svc.get_valid_write_ids(
        ["db.t"], ValidReadTxnList.from_open_txns_response(given).to_string()
    )
    for tvwi in (now, snap):
        assert tvwi.fullTableName == "db.t"
        assert tvwi.writeIdHighWaterMark == 5
        assert list(tvwi.invalidWriteIds) == [1, 2]  # the open txn's and the aborted one's
        assert tvwi.minOpenWriteId == 1
    (none,) = svc.get_valid_write_ids(["db.none"])
    assert none.writeIdHighWaterMark == 0 and list(none.invalidWriteIds) == []
    assert ids["top"] > 5
