"""The cache's races of issue 14, each made to happen on purpose: two instances on one
PostgreSQL, failpoints (hms_cache_proxy/failpoints.py) holding a load or a poll at the point
where the race window opens, and the test releasing it once the other side has run. Each test
failed on 289ef4f (before the fixes) and asserts the rule of docs/cache.md that closes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete

from hms_cache_proxy import failpoints
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages
from tests.support.cache import (
    TXN,
    allocate,
    clients,
    commit,
    entry,
    get_table_req,
    instances,
    open_txn,
    settle,
    snapshot,
    wait_until,
)
from tests.support.metastore import partition, table, warehouse_dir

pytestmark = [pytest.mark.postgres]

DB = "races"


class Gate:
    """A failpoint action for the loads of one table (``detail``): the first hit waits until
    ``release``; later hits run ``then``."""

    def __init__(self, detail: str, then: Callable[[int], None] | None = None) -> None:
        self.detail = detail
        self.hits = 0
        self.reached = threading.Event()
        self.release = threading.Event()
        self.then = then
        self._lock = threading.Lock()

    def __call__(self, _name: str, detail: str) -> None:
        if detail != self.detail:
            return
        with self._lock:
            self.hits += 1
            n = self.hits
        if n == 1:
            self.reached.set()
            assert self.release.wait(30), "the test never released the failpoint"
        elif self.then is not None:
            self.then(n)


@pytest.fixture(autouse=True)
def no_failpoints() -> Any:
    yield
    failpoints.clear()


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path) as svcs, clients(*svcs) as cls:
        cls[0].create_database(_database())
        settle(*svcs)
        yield svcs, cls
    pg_server.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture
def strong_pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path, consistency="strong") as svcs, clients(*svcs) as cls:
        cls[0].create_database(_database())
        settle(*svcs)
        yield svcs, cls
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _database() -> Any:
    from tests.support.apache_thrift import load_apache_modules

    T = load_apache_modules().ttypes
    return T.Database(name=DB, description="issue 14")


def _flush(svc: Any, name: str) -> None:
    svc.cache.flush(DB, name)
    assert entry(svc, DB, name) is None


def _read_starts_a_load(client: Any, svc: Any, name: str, gate: Gate) -> None:
    """A read on ``svc`` misses; the load it queues reads the table and stops at the gate."""
    try:
        client.get_table(DB, name)
    except Exception:  # noqa: BLE001 - a dropped table: the read itself does not matter
        pass
    assert gate.reached.wait(10), "the load never reached its snapshot"


def _loads_left(svc: Any, n: int) -> None:
    wait_until(lambda: svc.cache.loader.pending() == n, what=f"{n} load(s) under way")


def _second_load_done(svc: Any, gate: Gate) -> None:
    """The second load of the table (the first still held at the gate) ran to its end."""
    wait_until(lambda: gate.hits >= 2, what="a second load")
    _loads_left(svc, 1)


# -- finding 1: two loads of one table ---------------------------------------------------------


@pytest.mark.parametrize("change", ["drop", "rename"])
def test_a_load_older_than_a_drop_or_rename_never_installs(pair, T, change: str) -> None:
    """Load 1 reads the table and is slow; B drops (renames) it; a read on A starts load 2,
    which finds no table; load 1 must not install the old table."""
    (a, b), (ca, cb) = pair
    cb.create_table(table(T, DB, "t", keys=("p:string",)))
    settle(a, b)
    _flush(a, "t")
    gate = Gate(f"{DB}.t")
    failpoints.set("load.after_snapshot", gate)
    _read_starts_a_load(ca, a, "t", gate)
    if change == "drop":
        cb.drop_table(DB, "t", True)
    else:
        renamed = cb.get_table(DB, "t")
        renamed.tableName = "t2"
        cb.alter_table(DB, "t", renamed)
    settle(b)
    assert a.cache.poller.wait_for(b.store.current_notification_event_id(), 10)
    _loads_left(a, 1)  # A loaded the new name of a renamed table
    with pytest.raises(T.NoSuchObjectException):
        ca.get_table(DB, "t")  # misses: load 2 starts and finds no table
    _second_load_done(a, gate)
    gate.release.set()
    settle(a)
    assert entry(a, DB, "t") is None
    with pytest.raises(T.NoSuchObjectException):
        ca.get_table(DB, "t")


def test_a_failed_load_does_not_let_a_stale_load_install(strong_pair, T) -> None:
    """Load 1 reads version 1 and is slow; B alters the table (acknowledged); load 2 fails (a
    database timeout); in strong mode A must serve version 2 once load 1 ends."""
    (a, b), (ca, cb) = strong_pair
    cb.create_table(table(T, DB, "t", params={"ver": "1"}))
    settle(a, b)
    _flush(a, "t")

    def fail(_n: int) -> None:
        raise failpoints.FailpointError("database timeout (failpoint)")

    gate = Gate(f"{DB}.t", then=fail)
    failpoints.set("load.after_snapshot", gate)
    _read_starts_a_load(ca, a, "t", gate)
    t = cb.get_table(DB, "t")
    t.parameters["ver"] = "2"
    cb.alter_table(DB, "t", t)
    assert a.cache.poller.wait_for(b.store.current_notification_event_id(), 10)
    assert ca.get_table(DB, "t").parameters["ver"] == "2"  # strong: from the database
    _second_load_done(a, gate)
    failpoints.clear()
    gate.release.set()
    settle(a)
    assert ca.get_table(DB, "t").parameters["ver"] == "2"
    cached = entry(a, DB, "t")
    assert cached is None or cached.table.parameters["ver"] == "2"


# -- finding 2: commit_txn with keyValue -------------------------------------------------------


def test_commit_with_key_value_is_seen_by_every_instance(pair, T) -> None:
    (a, b), (ca, cb) = pair
    ca.create_table(table(T, DB, "kv", params={**TXN, "_meta.v": "0"}))
    settle(a, b)
    table_id = ca.get_table(DB, "kv").id
    txn = open_txn(ca, T)
    allocate(ca, T, DB, "kv", txn)
    kv = T.CommitTxnKeyValue(tableId=table_id, key="_meta.v", value="1")
    ca.commit_txn(T.CommitTxnRequest(txnid=txn, keyValue=kv))
    settle(a, b)
    for client in (ca, cb):
        s_now = snapshot(client, T, DB, "kv")
        assert get_table_req(client, T, DB, "kv", s_now).parameters["_meta.v"] == "1"
        assert get_table_req(client, T, DB, "kv", s_now).parameters["_meta.v"] == "1"


# -- finding 3: truncate_table on a lagging instance ------------------------------------------


def test_truncate_on_a_lagging_instance_overwrites_no_write_made_elsewhere(pair, T) -> None:
    (a, b), (ca, cb) = pair
    cb.create_table(table(T, DB, "tr", keys=("p:string",)))
    cb.add_partition(partition(T, DB, "tr", ["1"], params={"ver": "1"}))
    settle(a, b)
    assert entry(a, DB, "tr") is not None and entry(a, DB, "tr").parts is not None
    with a.cache.poller._poll_lock:  # A applies nothing: its cache lags
        p1 = cb.get_partition(DB, "tr", ["1"])
        p1.parameters["ver"] = "2"
        cb.alter_partition(DB, "tr", p1)  # acknowledged through B
        cb.add_partition(partition(T, DB, "tr", ["2"]))
        p2_dir = warehouse_dir(b) / f"{DB}.db" / "tr" / "p=2"
        p2_dir.mkdir(parents=True, exist_ok=True)
        (p2_dir / "data.txt").write_text("1,a\n")
        mark = b.store.current_notification_event_id()
        done = threading.Thread(target=lambda: ca.truncate_table(DB, "tr", None), daemon=True)
        done.start()  # A's catch-up after the write waits for the poll lock
        wait_until(lambda: b.store.current_notification_event_id() > mark, what="the truncate")
    done.join(10)
    assert not done.is_alive()
    settle(a, b)
    for client in (ca, cb):
        parts = {p.values[0]: p for p in client.get_partitions(DB, "tr", -1)}
        assert parts["1"].parameters["ver"] == "2"  # the acknowledged write survived
        assert set(parts) == {"1", "2"}
    assert list(p2_dir.iterdir()) == []  # the partition added elsewhere was truncated too


# -- finding 4: statistics rows newer than their entry ----------------------------------------


def test_statistics_read_ahead_of_the_poller_are_not_installed(pair, T) -> None:
    (a, b), (ca, cb) = pair
    ca.create_table(table(T, DB, "st", params=dict(TXN)))
    settle(a, b)
    before = snapshot(ca, T, DB, "st")  # excludes the write below
    request = T.TableStatsRequest(
        dbName=DB, tblName="st", colNames=["a"], engine="hive", validWriteIdList=before
    )
    with a.cache.poller._poll_lock:  # A lags behind the write below
        txn = open_txn(cb, T)
        wid = allocate(cb, T, DB, "st", txn)
        desc = T.ColumnStatisticsDesc(isTblLevel=True, dbName=DB, tableName="st")
        data = T.ColumnStatisticsData(
            longStats=T.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=3)
        )
        stats = T.ColumnStatistics(
            statsDesc=desc,
            statsObj=[T.ColumnStatisticsObj(colName="a", colType="int", statsData=data)],
            engine="hive",
        )
        cb.update_table_column_statistics_req(
            T.SetPartitionsStatsRequest(
                colStats=[stats],
                writeId=wid,
                validWriteIdList=snapshot(cb, T, DB, "st", txn),
                engine="hive",
            )
        )
        commit(cb, T, txn)
        assert cb.get_table_statistics_req(request).tableStats == []  # the database path
        assert ca.get_table_statistics_req(request).tableStats == []  # loads the rows
        assert a.cache.loader.wait_idle(10)
        assert ca.get_table_statistics_req(request).tableStats == []
    settle(a, b)
    assert ca.get_table_statistics_req(request).tableStats == []
    now = T.TableStatsRequest(
        dbName=DB,
        tblName="st",
        colNames=["a"],
        engine="hive",
        validWriteIdList=snapshot(ca, T, DB, "st"),
    )
    assert ca.get_table_statistics_req(now) == cb.get_table_statistics_req(now)


# -- finding 5: a hole in the middle of a batch ------------------------------------------------


def test_a_hole_in_the_middle_of_a_batch_is_noticed(pair, T) -> None:
    (a, b), (ca, cb) = pair
    for name in ("h", "u"):
        cb.create_table(table(T, DB, name, params={"ver": "1"}))
    settle(a, b)
    assert entry(a, DB, "h") is not None

    def alter(name: str, version: str) -> int:
        t = cb.get_table(DB, name)
        t.parameters["ver"] = version
        cb.alter_table(DB, name, t)
        return b.store.current_notification_event_id()

    with a.cache.poller._poll_lock:  # A reads the three events below in one batch
        alter("u", "2")
        lost = alter("h", "2")
        alter("u", "3")
        nl = schema.NOTIFICATION_LOG
        b.store.db.transaction(lambda conn: conn.execute(delete(nl).where(nl.c.EVENT_ID == lost)))
    settle(a)
    assert ca.get_table(DB, "h").parameters["ver"] == "2"
    assert ca.get_table(DB, "u").parameters["ver"] == "3"


# -- also noticed: transactions withdrawn after a slow open -----------------------------------


def test_transactions_withdrawn_after_a_slow_open_get_their_abort_events(
    pg_server: Any, tmp_path: Path, T
) -> None:
    """open_txns withdraws ids it took too long to open; their OPEN_TXN events are in the log
    already, so ABORT_TXN events must follow (else every reader of the log sees them open)."""
    url = pg_server.new_database()
    with instances(url, tmp_path, n=1, txn_open_timeout_ms=100) as (a,), clients(a) as (ca,):
        start = a.store.current_notification_event_id()
        slowed: list[str] = []

        def slow_first_commit(_name: str, _detail: str) -> None:
            # Only a call's commit: not housekeeping's, nor the floor primer's at start.
            if threading.current_thread().name.startswith("hms-txn-") or slowed:
                return
            slowed.append(threading.current_thread().name)
            threading.Event().wait(0.5)  # past the open timeout: the opener withdraws its ids

        failpoints.set("write.before_commit", slow_first_commit)
        opened = ca.open_txns(T.OpenTxnRequest(num_txns=2, user="u", hostname="h")).txn_ids
        failpoints.clear()
        found = ca.get_next_notification(
            T.NotificationEventRequest(lastEvent=start, maxEvents=100)
        ).events
        kinds = [(e.eventType, messages.decode(e.message, e.messageFormat)) for e in found]
        opens = [
            list(range(b["fromTxnId"], b["toTxnId"] + 1))
            for t, b in kinds
            if t == messages.OPEN_TXN
        ]
        aborts = sorted(b["txnid"] for t, b in kinds if t == messages.ABORT_TXN)
    pg_server.drop_database(url.rsplit("/", 1)[1])
    # The first open was slowed (a busy machine may slow another: it is withdrawn as well).
    assert slowed and len(opens) >= 2 and opens[-1] == list(opened)
    assert aborts == sorted(i for ids in opens[:-1] for i in ids)
