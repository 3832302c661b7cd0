"""Benchmark cases for transactions, write ids and locks (what Hive and PyIceberg call per query
or per commit). Each times one client's complete call sequence, as hmsbench's ACID cases do.

The stock Hive 2.3 server runs open/commit, get_open_txns and lock/unlock once its transaction
tables exist (the benchmark creates them, see targets.py); write ids came with Hive 3, so the
cases that allocate or read them are "n/a" for it.
"""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.bench.cases import (
    BENCH_DB,
    DECODED,
    HOST,
    USER,
    Case,
    Ctx,
    Op,
    ensure_database,
)
from hms_cache_proxy.idl import hms

CYCLE_TABLE = "acid_cycle"
SNAPSHOT_TABLE = "acid_snapshot"
LOCK_TABLE = "iceberg_lock"

SNAPSHOT_COMMITTED = 200
"""Committed write ids of the table get_valid_write_ids reads (plus one open and one aborted)."""

NO_WRITE_IDS = "Hive 2.3 has no write ids (allocate_table_write_ids, get_valid_write_ids: Hive 3+)"


def _open(client: Any, n: int = 1) -> list[int]:
    return list(client.open_txns(hms.OpenTxnRequest(num_txns=n, user=USER, hostname=HOST)).txn_ids)


def _allocate(client: Any, table: str, txns: list[int]) -> list[Any]:
    rqst = hms.AllocateTableWriteIdsRequest(dbName=BENCH_DB, tableName=table, txnIds=txns)
    return list(client.allocate_table_write_ids(rqst).txnToWriteIds)


def _cycle_op(client: Any, ctx: Ctx) -> Op:
    """open_txns + allocate_table_write_ids + commit_txn: one write txn's metastore calls."""

    def op() -> None:
        (txn,) = _open(client)
        _allocate(client, CYCLE_TABLE, [txn])
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))

    return op


def _open_commit_op(client: Any, ctx: Ctx) -> Op:
    """open_txns + commit_txn (a read-only query's transaction; Hive 2.3 has these too)."""

    def op() -> None:
        (txn,) = _open(client)
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))

    return op


def _snapshot_setup(client: Any, ctx: Ctx) -> None:
    ensure_database(client)
    txns = _open(client, SNAPSHOT_COMMITTED + 2)
    _allocate(client, SNAPSHOT_TABLE, txns)
    for txn in txns[:-2]:
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))
    client.abort_txn(hms.AbortTxnRequest(txnid=txns[-1]))  # txns[-2] stays open


def _snapshot_op(client: Any, ctx: Ctx) -> Op:
    """What a reader does per query: the table's write-id list."""
    names = [f"{BENCH_DB}.{SNAPSHOT_TABLE}"]

    def op() -> Any:
        client.get_valid_write_ids(hms.GetValidWriteIdsRequest(fullTableNames=names))

    return op


def _lock_op(client: Any, ctx: Ctx) -> Op:
    """PyIceberg's commit lock: EXCLUSIVE on the table without a txn, then unlock. Each worker
    locks a table of its own (concurrent commits to one table would wait for each other)."""
    request = hms.LockRequest(
        component=[
            hms.LockComponent(
                type=hms.LockType.EXCLUSIVE,
                level=hms.LockLevel.TABLE,
                dbname=BENCH_DB,
                tablename=f"{LOCK_TABLE}_{ctx.index}",
                isTransactional=True,
            )
        ],
        user=USER,
        hostname=HOST,
    )

    def op() -> None:
        resp = client.lock(request)
        client.unlock(hms.UnlockRequest(lockid=resp.lockid))
        if resp.state != hms.LockState.ACQUIRED:
            raise RuntimeError(f"lock not acquired: {resp}")

    return op


def _get_open_txns_op(client: Any, ctx: Ctx) -> Op:
    return client.get_open_txns


def txn_cases() -> list[Case]:
    """Transaction, write-id and lock cases."""
    one_and_eight = ((1, DECODED), (8, DECODED))
    return [
        Case(
            "txn_open_commit",
            "txn",
            "open_txns(1) + commit_txn, one call sequence",
            make_op=_open_commit_op,
            runs=one_and_eight,
            max_calls=20_000,
        ),
        Case(
            "txn_open_allocate_commit",
            "txn",
            "open_txns(1) + allocate_table_write_ids + commit_txn, one call sequence",
            make_op=_cycle_op,
            fixtures=("database",),
            max_calls=20_000,
            stock=NO_WRITE_IDS,
        ),
        Case(
            "get_valid_write_ids",
            "txn",
            f"one table, {SNAPSHOT_COMMITTED} committed write ids, 1 open, 1 aborted",
            make_op=_snapshot_op,
            setup=_snapshot_setup,
            runs=one_and_eight,
            stock=NO_WRITE_IDS,
        ),
        Case(
            "get_open_txns",
            "txn",
            "the txn snapshot every Hive query takes",
            make_op=_get_open_txns_op,
        ),
        Case(
            "lock_unlock",
            "txn",
            "lock(EXCLUSIVE, TABLE, no txn) + unlock, as PyIceberg's commit",
            make_op=_lock_op,
            fixtures=("database",),
            runs=one_and_eight,
            max_calls=20_000,
        ),
    ]
