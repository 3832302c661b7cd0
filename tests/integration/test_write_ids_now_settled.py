"""get_valid_write_ids with no snapshot given, on PostgreSQL once a settled floor is set: the
table's write ids of txns open or aborted now, read without the open-txn list
(pgsql.table_write_ids_settled), give the answer the list's snapshot gives
(get_valid_write_ids with get_open_txns' snapshot), including a txn whose row is gone (the
list's gap rule: open below a row younger than the open window, else finished), and read only
the table's rows above the floor, not every txn committed there; also through cache servers over
Thrift."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, text, update

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList
from tests.support.cache import abort, allocate, clients, commit, instances, open_txn
from tests.support.stores import txn_service_on


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


def _now_and_given(svc: TxnService, name: str) -> tuple[Any, Any]:
    (now,) = svc.get_valid_write_ids([name])
    snapshot = ValidReadTxnList.from_open_txns_response(svc.get_open_txns())
    (given,) = svc.get_valid_write_ids([name], snapshot.to_string())
    return now, given


def _fields(tvwi: Any) -> tuple[Any, ...]:
    return (
        tvwi.writeIdHighWaterMark,
        list(tvwi.invalidWriteIds),
        tvwi.minOpenWriteId,
        bytes(tvwi.abortedBits or b""),
    )


def _settle(svc: TxnService) -> int:
    """Set the settled floor (at the first young txn, or the top one); the floor."""
    assert svc.txns.settle_under_lock()
    settled = svc.txns._settled_txns
    assert settled is not None
    return settled.floor


def _make_old(svc: TxnService, txns: list[int]) -> None:
    with svc.db.write_engine.begin() as conn:
        conn.execute(
            update(schema.TXNS).where(schema.TXNS.c.TXN_ID.in_(txns)).values(TXN_STARTED=1)
        )


def test_open_aborted_and_committed_write_ids_as_the_snapshot_says(svc: TxnService) -> None:
    opened, aborted, committed, later = old = svc.open_txns(4, "u", "h")
    svc.allocate_table_write_ids("db", "t", [opened, aborted, committed])
    svc.commit_txn(committed)
    svc.abort_txn(aborted)
    _make_old(svc, old)
    [young] = svc.open_txns(1, "u", "h")
    assert _settle(svc) == young
    unsettled = svc.txns._settled_txns.unsettled  # type: ignore[union-attr]
    assert unsettled == {opened, aborted, later}  # below the floor, not committed
    svc.allocate_table_write_ids("db", "t", [later, young])
    now, given = _now_and_given(svc, "db.t")
    assert _fields(now) == _fields(given)
    assert list(now.invalidWriteIds) == [1, 2, 4, 5] and now.minOpenWriteId == 1
    svc.commit_txn(opened)
    svc.abort_txn(later)
    svc.commit_txn(young)
    now, given = _now_and_given(svc, "db.t")
    assert _fields(now) == _fields(given)
    assert list(now.invalidWriteIds) == [2, 4] and now.minOpenWriteId is None


def test_a_gone_txn_is_open_below_a_young_row_and_finished_below_an_old_one(
    svc: TxnService,
) -> None:
    [first] = svc.open_txns(1, "u", "h")
    svc.commit_txn(first)
    _settle(svc)
    gone, young = svc.open_txns(2, "u", "h")
    svc.allocate_table_write_ids("db", "t", [gone])
    svc.abort_txn(gone)
    with svc.db.write_engine.begin() as conn:  # housekeeping removed the aborted txn's row
        conn.execute(delete(schema.TXNS).where(schema.TXNS.c.TXN_ID == gone))
    now, given = _now_and_given(svc, "db.t")
    assert _fields(now) == _fields(given)
    assert list(now.invalidWriteIds) == [1] and now.minOpenWriteId == 1  # open, as the gap
    _make_old(svc, [young])  # the row above it is old now
    now, given = _now_and_given(svc, "db.t")
    assert _fields(now) == _fields(given)
    assert list(now.invalidWriteIds) == [] and now.writeIdHighWaterMark == 1


def test_reads_the_tables_rows_not_the_txns_committed_above_the_floor(svc: TxnService) -> None:
    [first] = svc.open_txns(1, "u", "h")
    svc.commit_txn(first)
    floor = _settle(svc)
    [opened] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("db", "t", [opened])
    with svc.db.write_engine.begin() as conn:  # a busy open window: 20,000 committed txns
        conn.execute(
            text(
                'INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", '
                "\"TXN_USER\", \"TXN_HOST\") SELECT 'c', 1, 1, 'u', 'h' "
                "FROM generate_series(1, 20000)"
            )
        )
    with svc.db.autocommit_cursor() as cur:
        cur.cursor.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "
            + pgsql._TABLE_WRITE_IDS_SETTLED.pooled_text(cur),
            {"window": 1000, "floor": floor, "unsettled": [], "db": "db", "tbl": "t"},
        )
        plan = "\n".join(row[0] for row in cur.cursor.fetchall())
    top = plan.splitlines()[1:4]
    buffers = next(int(line.split("hit=")[1].split()[0]) for line in top if "hit=" in line)
    assert buffers < 60, plan
    with svc.db.autocommit_cursor() as cur:
        answer = pgsql.table_write_ids_settled(cur, 1000, floor, [], "db", "t")
    assert answer == (1, False, [(1, False)])  # opened's write id, open


def test_cache_servers_answer_as_the_snapshot_says_over_thrift(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    """The default deployment: two instances with caches on one PostgreSQL, clients over
    Thrift; the second instance, its floor set, answers the first's writes at once."""
    with instances(pg_url, tmp_path) as (writer, reader), clients(writer, reader) as (w, r):
        committed, opened, aborted = open_txn(w, T), open_txn(w, T), open_txn(w, T)
        for txn in (committed, opened, aborted):
            allocate(w, T, "db", "t", txn)
        commit(w, T, committed)
        abort(w, T, aborted)
        assert reader.store.txn.txns.settle_under_lock()
        request = T.GetValidWriteIdsRequest(fullTableNames=["db.t"])

        def now_and_given() -> tuple[Any, Any]:
            (now,) = r.get_valid_write_ids(request).tblValidWriteIds
            snapshot = ValidReadTxnList.from_open_txns_response(r.get_open_txns())
            given = T.GetValidWriteIdsRequest(
                fullTableNames=["db.t"], validTxnList=snapshot.to_string()
            )
            return now, r.get_valid_write_ids(given).tblValidWriteIds[0]

        now, given = now_and_given()
        assert _fields(now) == _fields(given)
        assert list(now.invalidWriteIds) == [2, 3] and now.minOpenWriteId == 2
        commit(w, T, opened)  # on the other instance: seen by the next call
        now, given = now_and_given()
        assert _fields(now) == _fields(given)
        assert list(now.invalidWriteIds) == [3] and now.minOpenWriteId is None
