"""get_valid_write_ids on PostgreSQL reads only the write ids a snapshot holds invalid (the
committed history stays in the database), and without a snapshot reads the open-txn list and
the write ids in one statement: its answers are those of the general path, which takes the
snapshot first and then reads every row at or below the hwm, for each shape of history."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import delete

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn import writeids
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList
from tests.support.stores import txn_service_on

TABLE = "default.t"


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


def both_paths(svc: TxnService, snapshot: ValidReadTxnList) -> tuple[str, str]:
    """(PostgreSQL's statement, the general path) as Hive's strings."""
    with svc.db.single_statement() as conn:
        fast = svc.table_write_ids(conn, TABLE, snapshot)
        hwm, rows = svc.write_ids._table_write_ids(conn, "default", "t", snapshot.high_watermark)
    general = writeids._valid_write_ids(TABLE, snapshot, hwm, rows)

    def text(tvwi: object) -> str:
        return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()  # type: ignore[arg-type]

    return text(fast), text(general)


def now_both_ways(svc: TxnService) -> tuple[str, str]:
    """get_valid_write_ids without a snapshot (one statement), and the snapshot taken first."""
    [folded] = svc.get_valid_write_ids([TABLE])
    snapshot = snapshot_now(svc)
    with svc.db.single_statement() as conn:
        hwm, rows = svc.write_ids._table_write_ids(conn, "default", "t", snapshot.high_watermark)
    general = writeids._valid_write_ids(TABLE, snapshot, hwm, rows)
    return tuple(  # type: ignore[return-value]
        ValidReaderWriteIdList.from_table_valid_write_ids(t).to_string() for t in (folded, general)
    )


def write(svc: TxnService, end: str = "commit") -> int:
    [txn] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "t", [txn])
    if end == "commit":
        svc.commit_txn(txn)
    elif end == "abort":
        svc.abort_txn(txn)
    return txn


def snapshot_now(svc: TxnService) -> ValidReadTxnList:
    return ValidReadTxnList.from_open_txns_response(svc.get_open_txns())


def test_committed_open_and_aborted_write_ids(svc: TxnService) -> None:
    for _ in range(5):
        write(svc)
    write(svc, "open")
    write(svc, "abort")
    write(svc)
    fast, general = both_paths(svc, snapshot_now(svc))
    assert fast == general == "default.t:8:6:6:7"
    assert now_both_ways(svc) == (fast, fast)


def test_a_later_txn_with_a_lower_write_id_is_invalid(svc: TxnService) -> None:
    write(svc)
    [early] = svc.open_txns(1, "u", "h")
    snapshot = snapshot_now(svc)  # early is open in it, late does not exist yet
    [late] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "t", [late])  # write id 2, txn above the hwm
    svc.allocate_table_write_ids("default", "t", [early])  # write id 3
    svc.commit_txn(late)
    fast, general = both_paths(svc, snapshot)
    assert fast == general == "default.t:3:2:2,3:"


def test_only_invalid_rows_left_after_cleaning(svc: TxnService) -> None:
    committed = [write(svc) for _ in range(3)]
    write(svc, "open")
    write(svc, "abort")
    t2w = schema.TXN_TO_WRITE_ID
    with svc.db.write_engine.begin() as conn:  # what housekeeping's cleaning leaves
        conn.execute(delete(t2w).where(t2w.c.T2W_TXNID.in_(committed)))
    fast, general = both_paths(svc, snapshot_now(svc))
    assert fast == general == "default.t:4:4:4:"
    assert now_both_ways(svc) == (fast, fast)


def test_no_write_ids_and_an_everything_valid_snapshot(svc: TxnService) -> None:
    fast, general = both_paths(svc, ValidReadTxnList())
    assert fast == general == "default.t:0:9223372036854775807::"
    write(svc)
    write(svc, "open")
    fast, general = both_paths(svc, ValidReadTxnList())
    assert fast == general == "default.t:2:9223372036854775807::"


def test_without_a_snapshot_one_statement_answers_every_shape(svc: TxnService) -> None:
    assert now_both_ways(svc) == ("default.t:0:9223372036854775807::",) * 2
    write(svc)
    [other] = svc.open_txns(1, "u", "h")  # open, no write id on the table
    opened = write(svc, "open")
    write(svc, "abort")
    write(svc)
    svc.abort_txn(other)
    assert now_both_ways(svc) == ("default.t:4:2:2:3",) * 2
    svc.commit_txn(opened)
    assert now_both_ways(svc) == ("default.t:4:9223372036854775807::3",) * 2
