"""Benchmark cases for transactions, write ids and locks (what Hive and PyIceberg call per query
or per commit). Each times one client's complete call sequence, as hmsbench's ACID cases do.

The stock Hive 2.3 server runs open/commit, get_open_txns and lock/unlock once its transaction
tables exist (the benchmark creates them, see targets.py); write ids came with Hive 3, so the
cases that allocate or read them are "n/a" for it. The two query cases (acid_read_query,
acid_insert) run Hive 2.3's equivalent sequence on it: the same calls without write ids (no
get_valid_write_ids or allocate_table_write_ids, plain get_table, get_partitions_by_names and
alter_partitions) on a table that is not transactional (2.3 has no insert-only tables).

The ``*_history`` cases are the same cases with txn_history.HISTORY_TXNS finished transactions
in the database (the command puts them in before and takes them out after those cases).
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from hms_cache_proxy.bench.cases import (
    BENCH_DB,
    DECODED,
    HOST,
    USER,
    Case,
    Ctx,
    Op,
    drop_table_if_exists,
    ensure_database,
    part_names,
    partitions,
    table,
)
from hms_cache_proxy.bench.txn_history import HISTORY_TXNS
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList

CYCLE_TABLE = "acid_cycle"
SNAPSHOT_TABLE = "acid_snapshot"
LOCK_TABLE = "iceberg_lock"

SNAPSHOT_COMMITTED = 200
"""Committed write ids of the table get_valid_write_ids reads (plus one open and one aborted)."""

NO_WRITE_IDS = "Hive 2.3 has no write ids (allocate_table_write_ids, get_valid_write_ids: Hive 3+)"

READ_TABLE = "acid_read"
INSERT_TABLE = "acid_insert"
QUERY_PARTITIONS = 10
STOCK = "stock"
"""The stock target's key (bench.targets.STOCK): it runs Hive 2.3's equivalent sequences."""

STOCK_EQUIVALENT = "stock: Hive 2.3's equivalent without write ids, on a non-ACID table"


def _open(client: Any, n: int = 1, host: str = HOST) -> list[int]:
    return list(client.open_txns(hms.OpenTxnRequest(num_txns=n, user=USER, hostname=host)).txn_ids)


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


def _snapshot_table(ctx: Ctx) -> str:
    """The table get_valid_write_ids reads: one per server, so the server measured second on a
    shared database reads as many write ids as the first (not both servers' setups)."""
    return f"{SNAPSHOT_TABLE}_{ctx.target}"


def _snapshot_setup(client: Any, ctx: Ctx) -> None:
    """The snapshot table's write ids. Opened as held txns: the one left open is aborted by the
    case's teardown (left open, it kept every later txn in TXNS and doubled the next server's
    get_valid_write_ids and get_open_txns on the shared database)."""
    ensure_database(client)
    txns = _open(client, SNAPSHOT_COMMITTED + 2, HELD_HOST)
    _allocate(client, _snapshot_table(ctx), txns)
    for txn in txns[:-2]:
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))
    client.abort_txn(hms.AbortTxnRequest(txnid=txns[-1]))  # txns[-2] stays open


def _snapshot_op(client: Any, ctx: Ctx) -> Op:
    """What a reader does per query: the table's write-id list."""
    names = [f"{BENCH_DB}.{_snapshot_table(ctx)}"]

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


# -- what a Hive query on a transactional table sends ----------------------------------------------


def _query_table(client: Any, ctx: Ctx, name: str) -> None:
    """A table with QUERY_PARTITIONS partitions: insert-only transactional on Hive 4 servers,
    plain on the stock 2.3 server."""
    ensure_database(client)
    tbl = table(name)
    if ctx.target != STOCK:
        tbl.tableType = "MANAGED_TABLE"
        tbl.parameters = {"transactional": "true", "transactional_properties": "insert_only"}
    drop_table_if_exists(client, name)
    client.create_table(tbl)
    client.add_partitions(partitions(name, 0, QUERY_PARTITIONS))


def _read_setup(client: Any, ctx: Ctx) -> None:
    _query_table(client, ctx, READ_TABLE)


def _insert_setup(client: Any, ctx: Ctx) -> None:
    _query_table(client, ctx, INSERT_TABLE)


def _component(kind: int, tbl: str, op: int, partition: str | None = None) -> Any:
    return hms.LockComponent(
        type=kind,
        level=hms.LockLevel.PARTITION if partition else hms.LockLevel.TABLE,
        dbname=BENCH_DB,
        tablename=tbl,
        partitionname=partition,
        operationType=op,
        isTransactional=True,
    )


def _acid_read_op(client: Any, ctx: Ctx) -> Op:
    """A SELECT on a transactional table: open, snapshot, write ids, SHARED_READ lock, the
    table and 10 partitions read with the ValidWriteIdList, commit."""
    names = part_names(0, QUERY_PARTITIONS)
    full = f"{BENCH_DB}.{READ_TABLE}"
    component = _component(hms.LockType.SHARED_READ, READ_TABLE, hms.DataOperationType.SELECT)
    stock = ctx.target == STOCK

    def op() -> None:
        (txn,) = _open(client)
        snapshot = ValidReadTxnList.from_open_txns_response(client.get_open_txns(), txn)
        lock = hms.LockRequest(component=[component], txnid=txn, user=USER, hostname=HOST)
        if stock:
            client.lock(lock)
            client.get_table(BENCH_DB, READ_TABLE)
            client.get_partitions_by_names(BENCH_DB, READ_TABLE, names)
        else:
            rqst = hms.GetValidWriteIdsRequest(
                fullTableNames=[full], validTxnList=snapshot.to_string()
            )
            (tvwi,) = client.get_valid_write_ids(rqst).tblValidWriteIds
            write_ids = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()
            client.lock(lock)
            client.get_table_req(
                hms.GetTableRequest(dbName=BENCH_DB, tblName=READ_TABLE, validWriteIdList=write_ids)
            )
            client.get_partitions_by_names_req(
                hms.GetPartitionsByNamesRequest(
                    db_name=BENCH_DB, tbl_name=READ_TABLE, names=names, validWriteIdList=write_ids
                )
            )
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))

    return op


def _acid_insert_op(client: Any, ctx: Ctx) -> Op:
    """An INSERT into an existing partition (each worker its own): open, write id, SHARED_WRITE
    lock, alter_partitions_req carrying the write id, commit."""
    (name,) = part_names(ctx.index % QUERY_PARTITIONS, 1)
    (part,) = client.get_partitions_by_names(BENCH_DB, INSERT_TABLE, [name])
    component = _component(
        hms.LockType.SHARED_WRITE, INSERT_TABLE, hms.DataOperationType.INSERT, name
    )
    counter = itertools.count()
    stock = ctx.target == STOCK

    def op() -> None:
        (txn,) = _open(client)
        part.parameters["bench.seq"] = str(next(counter))
        lock = hms.LockRequest(component=[component], txnid=txn, user=USER, hostname=HOST)
        if stock:
            client.lock(lock)
            client.alter_partitions(BENCH_DB, INSERT_TABLE, [part])
        else:
            (t2w,) = _allocate(client, INSERT_TABLE, [txn])
            client.lock(lock)
            part.writeId = t2w.writeId
            client.alter_partitions_req(
                hms.AlterPartitionsRequest(
                    dbName=BENCH_DB, tableName=INSERT_TABLE, partitions=[part], writeId=t2w.writeId
                )
            )
        client.commit_txn(hms.CommitTxnRequest(txnid=txn))

    return op


HELD_HOST = "hms-bench-held"
"""The host the held txns of heartbeat and check_lock name, so their teardown finds them."""


def _open_txn_with_lock(client: Any, ctx: Ctx) -> tuple[int, int]:
    """A txn of the worker's own holding a SHARED_READ lock (acquired) on a table of its own."""
    rqst = hms.OpenTxnRequest(num_txns=1, user=USER, hostname=HELD_HOST)
    (txn,) = client.open_txns(rqst).txn_ids
    # A table of its own: the txn stays open, and its lock must not hold up lock_unlock's
    # EXCLUSIVE locks on the next server (they share the database).
    component = _component(
        hms.LockType.SHARED_READ, ctx.unique("held"), hms.DataOperationType.SELECT
    )
    resp = client.lock(hms.LockRequest(component=[component], txnid=txn, user=USER, hostname=HOST))
    return txn, resp.lockid


def _heartbeat_op(client: Any, ctx: Ctx) -> Op:
    """What a running query's heartbeater sends (its txn; the txn's locks live with it)."""
    txn, _ = _open_txn_with_lock(client, ctx)
    request = hms.HeartbeatRequest(txnid=txn)
    return lambda: client.heartbeat(request)


def _abort_held(client: Any, ctx: Ctx) -> None:
    """End the txns the workers held open: an open txn keeps every later txn in TXNS (nothing
    above the lowest open txn is cleaned) and so slows the cases after it."""
    held = [
        t.id
        for t in client.get_open_txns_info().open_txns
        if t.hostname == HELD_HOST and t.state == hms.TxnState.OPEN
    ]
    if held:
        client.abort_txns(hms.AbortTxnsRequest(txn_ids=held))


def _check_lock_op(client: Any, ctx: Ctx) -> Op:
    """check_lock of an acquired lock of an open txn (what a waiting client polls with)."""
    txn, lock_id = _open_txn_with_lock(client, ctx)
    request = hms.CheckLockRequest(lockid=lock_id, txnid=txn)

    def op() -> None:
        if client.check_lock(request).state != hms.LockState.ACQUIRED:
            raise RuntimeError("lock not acquired")

    return op


def txn_cases() -> list[Case]:
    """Transaction, write-id and lock cases, then their ``*_history`` twins."""
    cases = _txn_cases()
    history = f"; with {HISTORY_TXNS:,} finished txns in the database"
    return cases + [
        dataclasses.replace(
            c,
            name=f"{c.name}_history",
            note=c.note + history,
            runs=((1, DECODED),),
            history=True,
            quick=False,
        )
        for c in cases
    ]


def _txn_cases() -> list[Case]:
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
            teardown=_abort_held,
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
        Case(
            "acid_read_query",
            "txn",
            "a SELECT's calls: open_txns, get_open_txns, get_valid_write_ids, lock SHARED_READ, "
            "get_table_req and get_partitions_by_names_req (10) with the ValidWriteIdList, "
            f"commit_txn ({STOCK_EQUIVALENT})",
            make_op=_acid_read_op,
            setup=_read_setup,
            runs=one_and_eight,
            max_calls=20_000,
        ),
        Case(
            "acid_insert",
            "txn",
            "an INSERT's calls: open_txns, allocate_table_write_ids, lock SHARED_WRITE, "
            f"alter_partitions_req with the write id, commit_txn ({STOCK_EQUIVALENT})",
            make_op=_acid_insert_op,
            setup=_insert_setup,
            runs=one_and_eight,
            max_calls=20_000,
        ),
        Case(
            "heartbeat",
            "txn",
            "heartbeat of an open txn holding a lock",
            make_op=_heartbeat_op,
            teardown=_abort_held,
            fixtures=("database",),
            runs=one_and_eight,
        ),
        Case(
            "check_lock",
            "txn",
            "check_lock of an acquired lock of an open txn",
            make_op=_check_lock_op,
            teardown=_abort_held,
            fixtures=("database",),
            runs=one_and_eight,
        ),
    ]
