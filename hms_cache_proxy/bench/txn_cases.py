"""Benchmark cases for transactions, write ids and locks (what Hive and PyIceberg call per query
or per commit). Each times one client's complete call sequence, as hmsbench's ACID cases do."""

from __future__ import annotations

import getpass
import socket
from collections.abc import Callable
from typing import Any

from hms_cache_proxy.bench.cases import BENCH_DB, Case, ensure_database
from hms_cache_proxy.idl import hms

USER = getpass.getuser()
HOST = socket.gethostname()

CYCLE_TABLE = "acid_cycle"
SNAPSHOT_TABLE = "acid_snapshot"
LOCK_TABLE = "iceberg_lock"

SNAPSHOT_COMMITTED = 200
"""Committed write ids of the table get_valid_write_ids reads (plus one open and one aborted)."""


def _open(client: Any, n: int = 1) -> list[int]:
    return list(client.open_txns(hms.OpenTxnRequest(num_txns=n, user=USER, hostname=HOST)).txn_ids)


def _allocate(client: Any, table: str, txns: list[int]) -> list[Any]:
    rqst = hms.AllocateTableWriteIdsRequest(dbName=BENCH_DB, tableName=table, txnIds=txns)
    return list(client.allocate_table_write_ids(rqst).txnToWriteIds)


def _cycle_op(client: Any) -> Callable[[], Any]:
    """open_txns + allocate_table_write_ids + commit_txn: one write txn's metastore calls."""

    def op() -> Any:
        (txn,) = _open(client)
        _allocate(client, CYCLE_TABLE, [txn])
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))

    return op


def _snapshot_setup(client: Any) -> None:
    ensure_database(client)
    txns = _open(client, SNAPSHOT_COMMITTED + 2)
    _allocate(client, SNAPSHOT_TABLE, txns)
    for txn in txns[:-2]:
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))
    client.abort_txn(hms.AbortTxnRequest(txnid=txns[-1]))  # txns[-2] stays open


def _snapshot_op(client: Any) -> Callable[[], Any]:
    """What a reader does per query: the txn snapshot, then the table's write-id list."""
    names = [f"{BENCH_DB}.{SNAPSHOT_TABLE}"]

    def op() -> Any:
        return client.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=names))

    return op


def _lock_op(client: Any) -> Callable[[], Any]:
    """PyIceberg's commit lock: EXCLUSIVE on the table without a txn, then unlock."""
    request = hms.LockRequest(
        component=[
            hms.LockComponent(
                type=hms.LockType.EXCLUSIVE,
                level=hms.LockLevel.TABLE,
                dbname=BENCH_DB,
                tablename=LOCK_TABLE,
                isTransactional=True,
            )
        ],
        user=USER,
        hostname=HOST,
    )

    def op() -> Any:
        resp = client.lock(request)
        client.unlock(hms.UnlockRequest(lockid=resp.lockid))
        if resp.state != hms.LockState.ACQUIRED:
            raise RuntimeError(f"lock not acquired: {resp}")

    return op


def _get_open_txns_op(client: Any) -> Callable[[], Any]:
    return client.get_open_txns


def txn_cases() -> list[Case]:
    """Transaction, write-id and lock cases."""
    return [
        Case(
            "txn_open_allocate_commit",
            lambda c: None,
            _cycle_op,
            "open_txns(1) + allocate_table_write_ids + commit_txn, one call sequence",
            max_calls=20_000,
        ),
        Case(
            "get_valid_write_ids",
            _snapshot_setup,
            _snapshot_op,
            f"one table, {SNAPSHOT_COMMITTED} committed write ids, 1 open, 1 aborted",
        ),
        Case(
            "get_open_txns",
            lambda c: None,
            _get_open_txns_op,
            "the txn snapshot every Hive query takes",
        ),
        Case(
            "lock_unlock_exclusive_table",
            ensure_database,
            _lock_op,
            "lock(EXCLUSIVE, TABLE, no txn) + unlock, as PyIceberg's commit",
            max_calls=20_000,
        ),
    ]
