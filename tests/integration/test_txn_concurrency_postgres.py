"""Two `serve` processes on one PostgreSQL database, 16 clients opening, allocating, locking,
committing, aborting and abandoning transactions at once.

Checked afterwards: no txn id or write id handed out twice; write ids of each table are
1..N without a hole; every acknowledged commit is committed (its write id valid, one COMMIT_TXN
event) and every abort aborted; no two clients ever held the EXCLUSIVE lock of one table at the
same time; and once the (short, configured) timeout has passed, housekeeping has aborted every
abandoned txn and released every lock.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

CLIENTS_PER_SERVER = 8
ROUNDS = 12
TABLES = ["t0", "t1", "t2"]
TIMEOUT_S = 4.0
HOUSEKEEPING_S = 0.5


class Holders:
    """Who is inside each table's EXCLUSIVE lock, as the clients see it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._inside: Counter[str] = Counter()
        self.overlaps: list[str] = []

    def enter(self, table: str) -> None:
        with self._guard:
            self._inside[table] += 1
            if self._inside[table] > 1:
                self.overlaps.append(table)

    def leave(self, table: str) -> None:
        with self._guard:
            self._inside[table] -= 1


def _component(T: Any, table: str, kind: str = "EXCLUSIVE") -> Any:
    return T.LockComponent(
        type=getattr(T.LockType, kind),
        level=T.LockLevel.TABLE,
        dbname="conc",
        tablename=table,
        operationType=T.DataOperationType.INSERT,
        isTransactional=True,
    )


def test_sixteen_clients_on_two_servers(pg_server: Any, tmp_path: Path) -> None:
    url = pg_server.new_database()
    config = tmp_path / "hms.yaml"
    config.write_text(
        f"txn_timeout_seconds: {TIMEOUT_S}\ntxn_housekeeping_interval_seconds: {HOUSEKEEPING_S}\n"
    )
    servers = [
        ServerProcess(
            url, tmp_path / "warehouse", tmp_path / f"server{i}.log", "--config", str(config)
        )
        for i in range(2)
    ]
    T = load_apache_modules().ttypes
    holders = Holders()
    guard = threading.Lock()
    opened: list[int] = []
    allocated: list[tuple[str, int, int]] = []  # (table, write id, txn)
    committed: set[int] = set()
    aborted: set[int] = set()
    abandoned: set[int] = set()
    errors: list[BaseException] = []

    def worker(port: int, seed: int) -> None:
        rnd = random.Random(seed)
        try:
            client, trans = apache_client("127.0.0.1", port)
            try:
                for _ in range(ROUNDS):
                    rqst = T.OpenTxnRequest(num_txns=rnd.choice([1, 1, 2]), user="u", hostname="h")
                    txns = list(client.open_txns(rqst).txn_ids)
                    with guard:
                        opened.extend(txns)
                    table = rnd.choice(TABLES)
                    got = client.allocate_table_write_ids(
                        T.AllocateTableWriteIdsRequest(dbName="conc", tableName=table, txnIds=txns)
                    ).txnToWriteIds
                    with guard:
                        allocated.extend((table, p.writeId, p.txnId) for p in got)
                    if len(txns) > 1:  # the second txn of a batch writes nothing and aborts
                        # (its lock records a component: Hive keeps such an aborted txn until
                        # the compactor cleans it, while one with no component is forgotten)
                        client.lock(
                            T.LockRequest(
                                component=[_component(T, table, "SHARED_WRITE")],
                                txnid=txns[1],
                                user="u",
                                hostname="h",
                            )
                        )
                        client.abort_txns(T.AbortTxnsRequest(txn_ids=txns[1:]))
                        with guard:
                            aborted.update(txns[1:])
                    txn = txns[0]
                    if rnd.random() < 0.08:
                        # Walk away holding (or waiting for) locks: housekeeping must clean up.
                        client.lock(
                            T.LockRequest(
                                component=[_component(T, "abandoned")],
                                txnid=txn,
                                user="u",
                                hostname="h",
                            )
                        )
                        client.lock(
                            T.LockRequest(
                                component=[_component(T, "loose")], user="u", hostname="h"
                            )
                        )
                        with guard:
                            abandoned.add(txn)
                        continue
                    resp = client.lock(
                        T.LockRequest(
                            component=[_component(T, table)], txnid=txn, user="u", hostname="h"
                        )
                    )
                    while resp.state == T.LockState.WAITING:
                        time.sleep(0.01)
                        resp = client.check_lock(T.CheckLockRequest(lockid=resp.lockid))
                    assert resp.state == T.LockState.ACQUIRED
                    holders.enter(table)
                    time.sleep(rnd.random() * 0.005)
                    holders.leave(table)
                    if rnd.random() < 0.75:
                        client.commit_txn(T.CommitTxnRequest(txnid=txn))
                        with guard:
                            committed.add(txn)
                    else:
                        client.abort_txn(T.AbortTxnRequest(txnid=txn))
                        with guard:
                            aborted.add(txn)
            finally:
                trans.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    try:
        client, trans = apache_client("127.0.0.1", servers[0].port)
        client.create_database(T.Database(name="conc"))
        threads = [
            threading.Thread(target=worker, args=(srv.port, i * 100 + j))
            for i, srv in enumerate(servers)
            for j in range(CLIENTS_PER_SERVER)
        ]
        assert len(threads) >= 16
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        assert not errors, errors
        assert not holders.overlaps, f"two EXCLUSIVE holders at once on {holders.overlaps}"

        # Unique ids.
        assert len(opened) == len(set(opened))
        per_table: dict[str, list[int]] = defaultdict(list)
        for table, wid, _ in allocated:
            per_table[table].append(wid)
        for table, wids in per_table.items():
            assert sorted(wids) == list(range(1, len(wids) + 1)), table

        # One more commit per table keeps a committed write id above every cleaned one.
        for table in TABLES:
            (txn,) = client.open_txns(T.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
            (pair,) = client.allocate_table_write_ids(
                T.AllocateTableWriteIdsRequest(dbName="conc", tableName=table, txnIds=[txn])
            ).txnToWriteIds
            allocated.append((table, pair.writeId, txn))
            client.commit_txn(T.CommitTxnRequest(txnid=txn))
            committed.add(txn)

        # After the timeout every abandoned txn is aborted and every lock is gone.
        deadline = time.monotonic() + TIMEOUT_S + 10 * HOUSEKEEPING_S + 10
        while time.monotonic() < deadline:
            locks = client.show_locks(T.ShowLocksRequest()).locks
            still_open = client.get_open_txns().min_open_txn
            if not locks and still_open is None:
                break
            time.sleep(HOUSEKEEPING_S)
        assert client.show_locks(T.ShowLocksRequest()).locks == []
        assert client.get_open_txns().min_open_txn is None
        for txn in abandoned:
            with pytest.raises(T.TxnAbortedException):
                client.commit_txn(T.CommitTxnRequest(txnid=txn))

        # Commits and aborts, as every reader now sees them.
        for srv in servers:
            c, tr = apache_client("127.0.0.1", srv.port)
            try:
                got = c.get_valid_write_ids(
                    T.GetValidWriteIdsRequest(fullTableNames=[f"conc.{t}" for t in TABLES])
                ).tblValidWriteIds
            finally:
                tr.close()
            for table, tvwi in zip(TABLES, got, strict=True):
                snapshot = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi)
                for name, wid, txn in allocated:
                    if name != table:
                        continue
                    if txn in committed:
                        assert snapshot.is_write_id_valid(wid), (table, wid, txn)
                    else:
                        assert snapshot.is_write_id_aborted(wid), (table, wid, txn)
        trans.close()
    finally:
        for srv in servers:
            srv.stop()

    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            events = conn.execute(
                text(
                    'SELECT "EVENT_ID", "EVENT_TYPE", "MESSAGE", "MESSAGE_FORMAT" '
                    'FROM "NOTIFICATION_LOG" ORDER BY "EVENT_ID"'
                )
            ).all()
            nwi = dict(
                ((r[0], r[1]), r[2])
                for r in conn.execute(
                    text('SELECT "NWI_TABLE", "NWI_DATABASE", "NWI_NEXT" FROM "NEXT_WRITE_ID"')
                )
            )
    finally:
        engine.dispose()
    ids = [e[0] for e in events]
    assert ids == list(range(1, len(ids) + 1))  # gap-free, in commit order
    commits = Counter(
        messages.decode(e[2], e[3])["txnid"] for e in events if e[1] == messages.COMMIT_TXN
    )
    assert set(commits) == committed and set(commits.values()) == {1}
    aborts = {messages.decode(e[2], e[3])["txnid"] for e in events if e[1] == messages.ABORT_TXN}
    assert aborts == aborted | abandoned
    for table in TABLES:
        assert nwi[(table, "conc")] == len([a for a in allocated if a[0] == table]) + 1
