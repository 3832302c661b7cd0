"""Concurrent writers and readers on two instances over one PostgreSQL database, every read
checked against docs/design.md's invariants:

1. a read of a transactional table with snapshot S never lacks a write S reports committed;
2. after a transaction commits, no read returns some but not all of its metadata writes;
5. a cached answer equals the database path's (checked whenever the writers pause, for every
   table and call, on both instances).

Transactions write the way Hive does: lock the table, then (with their write id) alter the
table, add partitions and alter them, then commit (or abort). Each transaction leaves markers
(a table parameter, its partitions with a parameter) that readers look for.
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList
from tests.support.apache_thrift import apache_client
from tests.support.cache import (
    TXN,
    Counted,
    allocate,
    clients,
    instances,
    open_txn,
    ours,
    settle,
    snapshot,
)
from tests.support.metastore import partition, table

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DB = "rnd"
TXN_TABLES = ("x0", "x1")
PLAIN_TABLES = ("n0", "n1")
SECONDS = 4.0
ROUNDS = 2
KINDS = (("writer", "writer", "reader"), ("reader", "reader", "reader"))
"""Per instance: its client threads. The lagging instance mostly reads."""


class Log:
    """What writers intended per write id (before committing), and what readers found."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.intended: dict[tuple[str, int], set[str]] = {}
        self.problems: list[str] = []
        self.checked = 0
        self.hits = 0


def _lock(c: Any, T: Any, tbl: str, txn: int) -> None:
    rqst = T.LockRequest(
        component=[
            T.LockComponent(
                type=T.LockType.EXCLUSIVE,
                level=T.LockLevel.TABLE,
                dbname=DB,
                tablename=tbl,
                isTransactional=True,
                operationType=T.DataOperationType.UPDATE,
            )
        ],
        txnid=txn,
        user="rnd",
        hostname="test",
    )
    resp = c.lock(rqst)
    while resp.state == T.LockState.WAITING:
        time.sleep(0.005)
        resp = c.check_lock(T.CheckLockRequest(lockid=resp.lockid, txnid=txn))
    assert resp.state == T.LockState.ACQUIRED, resp


def _txn_write(c: Any, T: Any, rng: random.Random, log: Log) -> None:
    tbl = rng.choice(TXN_TABLES)
    txn = open_txn(c, T)
    _lock(c, T, tbl, txn)
    wid = allocate(c, T, DB, tbl, txn)
    marker = f"w{wid}"
    markers = {f"table:{marker}"}
    t = c.get_table(DB, tbl)
    t.parameters[marker] = "1"
    c.alter_table_req(T.AlterTableRequest(dbName=DB, tableName=tbl, table=t, writeId=wid))
    names = [f"p={marker}_{i}" for i in range(rng.randint(1, 3))]
    adds = [partition(T, DB, tbl, [n.split("=")[1]]) for n in names]
    for p in adds:
        p.writeId = wid
    c.add_partitions_req(
        T.AddPartitionsRequest(dbName=DB, tblName=tbl, parts=adds, ifNotExists=False)
    )
    news = c.get_partitions_by_names(DB, tbl, names)
    for p in news:
        p.parameters[marker] = "1"
    c.alter_partitions_req(
        T.AlterPartitionsRequest(dbName=DB, tableName=tbl, partitions=news, writeId=wid)
    )
    markers |= {f"part:{n}:{marker}" for n in names}
    with log.lock:
        log.intended[(tbl, wid)] = markers
    if rng.random() < 0.1:
        c.abort_txn(T.AbortTxnRequest(txnid=txn))
    else:
        c.commit_txn(T.CommitTxnRequest(txnid=txn))


def _plain_write(c: Any, T: Any, rng: random.Random) -> None:
    tbl = rng.choice(PLAIN_TABLES)
    if rng.random() < 0.5:
        t = c.get_table(DB, tbl)
        t.parameters[f"k{rng.randint(0, 5)}"] = str(rng.random())
        c.alter_table(DB, tbl, t)
    elif rng.random() < 0.5:
        c.add_partitions_req(
            T.AddPartitionsRequest(
                dbName=DB,
                tblName=tbl,
                parts=[partition(T, DB, tbl, [f"v{rng.randint(0, 40)}"])],
                ifNotExists=True,
            )
        )
    else:
        names = c.get_partition_names(DB, tbl, -1)
        if names:
            c.drop_partitions_req(
                T.DropPartitionsRequest(
                    dbName=DB,
                    tblName=tbl,
                    parts=T.RequestPartsSpec(names=[rng.choice(names)]),
                    ifExists=True,
                )
            )


def _read_and_check(c: Any, T: Any, rng: random.Random, log: Log) -> None:
    tbl = rng.choice(TXN_TABLES)
    s = snapshot(c, T, DB, tbl)
    valid = ValidReaderWriteIdList.parse(s)
    with Counted() as counted:
        t = c.get_table_req(T.GetTableRequest(dbName=DB, tblName=tbl, validWriteIdList=s)).table
        parts = c.get_partitions_req(
            T.PartitionsRequest(dbName=DB, tblName=tbl, maxParts=-1, validWriteIdList=s)
        ).partitions
    found = {f"table:{k}" for k in t.parameters}
    for p in parts:
        name = f"p={p.values[0]}"
        found |= {f"part:{name}:{k}" for k in p.parameters}
    with log.lock:
        wanted = [(w, m) for (tb, w), m in log.intended.items() if tb == tbl]
    for wid, markers in wanted:
        if valid.is_write_id_valid(wid) and not markers <= found:
            missing = sorted(markers - found)
            with log.lock:
                log.problems.append(f"{tbl} read with {s} lacks committed write {wid}: {missing}")
    with log.lock:
        log.checked += 1
        log.hits += int(counted.hits("get_table") + counted.hits("get_partitions"))


def _worker(port: int, seed: int, stop: threading.Event, log: Log, kind: str) -> None:
    rng = random.Random(seed)
    c, tr = apache_client("127.0.0.1", port)
    try:
        while not stop.is_set():
            if kind == "reader":
                _read_and_check(c, T_, rng, log)
            elif rng.random() < 0.6:
                _txn_write(c, T_, rng, log)
            else:
                _plain_write(c, T_, rng)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        with log.lock:
            log.problems.append(f"{kind} failed: {exc!r}")
    finally:
        tr.close()


T_: Any = None


def _compare_everything(svcs: list[Any], T: Any) -> None:
    """Invariant 5 at rest: each instance's answers equal the database path's, and hit."""
    settle(*svcs)
    for svc in svcs:
        with clients(svc) as (c,):
            for tbl in TXN_TABLES + PLAIN_TABLES:
                s = snapshot(c, T, DB, tbl)
                expected_parts = svc.store.get_partitions("hive", DB, tbl)
                with Counted() as counted:
                    t = c.get_table_req(
                        T.GetTableRequest(dbName=DB, tblName=tbl, validWriteIdList=s)
                    ).table
                    parts = c.get_partitions_req(
                        T.PartitionsRequest(dbName=DB, tblName=tbl, maxParts=-1, validWriteIdList=s)
                    ).partitions
                    names = c.get_partition_names(DB, tbl, -1)
                assert ours(t) == svc.store.get_table("hive", DB, tbl), (svc.name, tbl)
                assert ours(parts) == expected_parts, (svc.name, tbl)
                assert names == svc.store.get_partition_names("hive", DB, tbl), (svc.name, tbl)
                assert counted.hits("get_table") == 1, (svc.name, tbl, counted.delta)
                assert counted.hits("get_partitions") == 1, (svc.name, tbl, counted.delta)


def test_concurrent_writers_and_readers_keep_the_invariants(
    pg_server: Any, tmp_path: Path, T
) -> None:
    global T_
    T_ = T
    url = pg_server.new_database()
    log = Log()
    # The second instance lags (no LISTEN, polls every 1.5 s): readers there often hold lists
    # newer than what its cache has applied, which is what the write-id rules are for.
    lagging = {"cache_listen": False, "cache_poll_interval_seconds": 1.5}
    with (
        instances(url, tmp_path, n=1) as fast,
        instances(url, tmp_path, n=1, **lagging) as slow,
        clients(fast[0]) as (c,),
    ):
        svcs = [fast[0], slow[0]]
        c.create_database(T.Database(name=DB))
        for tbl in TXN_TABLES:
            c.create_table(table(T, DB, tbl, keys=("p:string",), params=dict(TXN)))
        for tbl in PLAIN_TABLES:
            c.create_table(table(T, DB, tbl, keys=("p:string",)))
        for round_ in range(ROUNDS):
            stop = threading.Event()
            threads = [
                threading.Thread(
                    target=_worker, args=(svc.port, 100 * round_ + 10 * i + j, stop, log, kind)
                )
                for i, svc in enumerate(svcs)
                for j, kind in enumerate(KINDS[i])
            ]
            for th in threads:
                th.start()
            time.sleep(SECONDS)
            stop.set()
            for th in threads:
                th.join(60)
            assert not log.problems, log.problems[:10]
            _compare_everything(svcs, T)
    print(f"reads checked: {log.checked}, cache hits: {log.hits}, txns: {len(log.intended)}")
    assert log.checked > 50 and log.hits > 10, (log.checked, log.hits)
    committed = [w for (_, w) in log.intended]
    assert len(committed) > 5
    pg_server.drop_database(url.rsplit("/", 1)[1])
