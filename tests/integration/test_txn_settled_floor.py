"""The txn calls' bounded reads on PostgreSQL: with old committed history skipped (the settled
floor), open_txns still records the lowest open txn (below the floor) in MIN_HISTORY_LEVEL; the
commit still reads every write id of its txn (found per table through Hive's index)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn import pgsql
from hms_cache_proxy.store.txn.txn_service import TxnService
from tests.support.stores import txn_service_on


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


def _settle(svc: TxnService) -> None:
    """Age every txn past the open window, then two reads, the first one's aged too."""
    with svc.db.write_engine.begin() as conn:
        conn.execute(schema.TXNS.update().values(TXN_STARTED=schema.TXNS.c.TXN_STARTED - 60_000))
    svc.txns._settle_marks.clear()
    svc.get_open_txns()
    top, _ = svc.txns._settle_marks[-1]
    svc.txns._settle_marks.clear()
    svc.txns._settle_marks.append((top, time.monotonic() - 3600))
    svc.get_open_txns()


def test_open_below_the_floor_is_the_new_txns_min_history_level(svc: TxnService) -> None:
    [old_open] = svc.open_txns(1, "u", "h")
    for _ in range(5):
        [txn] = svc.open_txns(1, "u", "h")
        svc.commit_txn(txn)
    _settle(svc)
    settled = svc.txns._settled_txns
    assert settled is not None and settled.floor > old_open
    assert old_open in settled.unsettled
    [new] = svc.open_txns(1, "u", "h")
    mhl = schema.MIN_HISTORY_LEVEL
    with svc.db.read() as conn:
        mark = conn.execute(
            select(mhl.c.MHL_MIN_OPEN_TXNID).where(mhl.c.MHL_TXNID == new)
        ).scalar_one()
    assert mark == old_open
    assert svc.get_open_txns().open_txns == [old_open, new]


def test_commit_reads_every_write_id_of_the_txn(svc: TxnService) -> None:
    [other] = svc.open_txns(1, "u", "h")
    [txn] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("db", "t1", [other, txn])
    svc.allocate_table_write_ids("db", "t2", [txn])
    with svc.db.read() as conn:
        _, writes = pgsql.commit_facts(conn, txn)
    assert writes == [(2, "db", "t1"), (1, "db", "t2")]
