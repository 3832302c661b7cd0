"""Locks through Apache Thrift's client, on SQLite and PostgreSQL: Hive's compatibility of the
four lock types at database, table and partition level, fair (in order) granting, the rows Hive
writes in HIVE_LOCKS, show_locks, unlock rules, and the time-outs housekeeping applies."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select
from thrift.Thrift import TApplicationException

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.txn.housekeeping import run_once
from tests.support.apache_thrift import apache_client
from tests.support.server import running_service

USER, HOST = "tester", "test-host"
R, W, X, E = "SHARED_READ", "SHARED_WRITE", "EXCL_WRITE", "EXCLUSIVE"


def component(
    T,
    kind: str,
    db: str = "db",
    table: str | None = "t",
    part: str | None = None,
    op: str = "NO_TXN",
    transactional: bool = False,
):
    level = T.LockLevel.PARTITION if part else T.LockLevel.TABLE if table else T.LockLevel.DB
    return T.LockComponent(
        type=getattr(T.LockType, kind),
        level=level,
        dbname=db,
        tablename=table,
        partitionname=part,
        operationType=getattr(T.DataOperationType, op),
        isTransactional=transactional,
    )


def lock(client, T, *components, txn: int | None = None):
    return client.lock(
        T.LockRequest(
            component=list(components), txnid=txn, user=USER, hostname=HOST, agentInfo="locks-test"
        )
    )


def state_name(T, state: int) -> str:
    return T.LockState._VALUES_TO_NAMES[state]


def open_txn(client, T) -> int:
    return client.open_txns(T.OpenTxnRequest(num_txns=1, user=USER, hostname=HOST)).txn_ids[0]


def hive_locks(service) -> list:
    hl = schema.HIVE_LOCKS
    with service.database.read() as conn:
        return list(
            conn.execute(select(hl).order_by(hl.c.HL_LOCK_EXT_ID, hl.c.HL_LOCK_INT_ID)).mappings()
        )


# Hive's compatibility on one table, txn-less locks: rows requested, columns held.
MATRIX = {
    R: {R: "ACQUIRED", W: "ACQUIRED", X: "ACQUIRED", E: "WAITING"},
    W: {R: "ACQUIRED", W: "ACQUIRED", X: "WAITING", E: "WAITING"},
    X: {R: "ACQUIRED", W: "WAITING", X: "WAITING", E: "WAITING"},
    E: {R: "WAITING", W: "WAITING", X: "WAITING", E: "WAITING"},
}


@pytest.mark.parametrize("held", [R, W, X, E])
def test_lock_type_compatibility_on_one_table(client, T, held: str) -> None:
    first = lock(client, T, component(T, held))
    assert state_name(T, first.state) == "ACQUIRED"
    for wanted, expected in ((w, MATRIX[w][held]) for w in (R, W, X, E)):
        resp = lock(client, T, component(T, wanted))
        assert state_name(T, resp.state) == expected, f"{wanted} after {held}"
        client.unlock(T.UnlockRequest(lockid=resp.lockid))  # a waiting lock can be given up
    client.unlock(T.UnlockRequest(lockid=first.lockid))


# (held, wanted, state of wanted): levels and places, from Hive's CheckLockFunction comments.
LEVEL_CASES = [
    ((E, "db", "t", None), (R, "db", None, None), "ACQUIRED"),  # table X does not block db read
    ((R, "db", None, None), (E, "db", "t", None), "ACQUIRED"),  # db read does not block table X
    ((E, "db", None, None), (R, "db", "t", None), "WAITING"),  # db exclusive blocks everything
    ((E, "db", None, None), (W, "db", "t", "p=1"), "WAITING"),
    ((E, "db", "t", "p=1"), (R, "db", "t", None), "WAITING"),  # partition X blocks table read
    ((E, "db", "t", "p=1"), (E, "db", "t", "p=2"), "ACQUIRED"),  # other partition
    ((E, "db", "t", None), (E, "db", "t", "p=2"), "WAITING"),  # the table covers its partitions
    ((X, "db", "t", None), (X, "db", "u", None), "ACQUIRED"),  # other table
    ((E, "db", "t", None), (E, "db2", "t", None), "ACQUIRED"),  # other database
    ((W, "db", None, None), (X, "db", "t", None), "WAITING"),
]


@pytest.mark.parametrize(("held", "wanted", "expected"), LEVEL_CASES)
def test_lock_levels(client, T, held, wanted, expected) -> None:
    first = lock(client, T, component(T, held[0], *held[1:]))
    assert state_name(T, first.state) == "ACQUIRED"
    resp = lock(client, T, component(T, wanted[0], *wanted[1:]))
    assert state_name(T, resp.state) == expected


def test_locks_of_one_txn_do_not_block_each_other(client, T) -> None:
    txn = open_txn(client, T)
    a = lock(client, T, component(T, E), txn=txn)
    b = lock(client, T, component(T, E), txn=txn)
    assert (a.state, b.state) == (T.LockState.ACQUIRED, T.LockState.ACQUIRED)
    other = lock(client, T, component(T, R))
    assert other.state == T.LockState.WAITING
    client.commit_txn(T.CommitTxnRequest(txnid=txn))  # releases the txn's locks
    assert client.check_lock(T.CheckLockRequest(lockid=other.lockid)).state == T.LockState.ACQUIRED


def test_all_components_granted_together_and_hive_locks_rows(client, T, service) -> None:
    holder = lock(client, T, component(T, X, table="t2"))
    txn = open_txn(client, T)
    resp = lock(
        client,
        T,
        component(T, R, table=None),
        component(T, W, table="T1", part="DS=1/Hr=2", op="INSERT", transactional=True),
        component(T, W, table="t2", op="INSERT", transactional=True),
        txn=txn,
    )
    assert resp.state == T.LockState.WAITING  # t2 is held: nothing of the request is granted
    rows = hive_locks(service)
    mine = [r for r in rows if r["HL_LOCK_EXT_ID"] == resp.lockid]
    assert [r["HL_LOCK_INT_ID"] for r in mine] == [1, 2, 3]
    assert {r["HL_LOCK_STATE"] for r in mine} == {"w"}
    assert [r["HL_LOCK_TYPE"] for r in mine] == ["r", "w", "w"]
    assert [(r["HL_DB"], r["HL_TABLE"], r["HL_PARTITION"]) for r in mine] == [
        ("db", None, None),
        ("db", "t1", "ds=1/hr=2"),  # names lower-cased, partition keys too (Hive)
        ("db", "t2", None),
    ]
    assert {r["HL_TXNID"] for r in mine} == {txn}
    assert {r["HL_LAST_HEARTBEAT"] for r in mine} == {0}  # a txn's locks heartbeat via the txn
    assert (mine[2]["HL_BLOCKEDBY_EXT_ID"], mine[2]["HL_BLOCKEDBY_INT_ID"]) == (holder.lockid, 1)
    assert {r["HL_USER"] for r in mine} == {USER} and {r["HL_AGENT_INFO"] for r in mine} == {
        "locks-test"
    }
    (held_row,) = [r for r in rows if r["HL_LOCK_EXT_ID"] == holder.lockid]
    assert held_row["HL_LOCK_STATE"] == "a" and held_row["HL_TXNID"] == 0
    assert held_row["HL_LAST_HEARTBEAT"] > 0 and held_row["HL_ACQUIRED_AT"] > 0
    tc = schema.TXN_COMPONENTS
    with service.database.read() as conn:
        comps = conn.execute(select(tc.c.TC_TABLE, tc.c.TC_PARTITION, tc.c.TC_OPERATION_TYPE)).all()
    assert sorted(comps, key=str) == sorted([("t1", "ds=1/hr=2", "i"), ("t2", None, "i")], key=str)

    client.unlock(T.UnlockRequest(lockid=holder.lockid))
    granted = client.check_lock(T.CheckLockRequest(lockid=resp.lockid))
    assert granted.state == T.LockState.ACQUIRED
    mine = [r for r in hive_locks(service) if r["HL_LOCK_EXT_ID"] == resp.lockid]
    assert {r["HL_LOCK_STATE"] for r in mine} == {"a"}
    assert {r["HL_BLOCKEDBY_EXT_ID"] for r in mine} == {None}


def test_waiting_locks_are_granted_in_order(client, T) -> None:
    first = lock(client, T, component(T, E))
    second = lock(client, T, component(T, E))
    third = lock(client, T, component(T, R))
    assert [x.state for x in (first, second, third)] == [
        T.LockState.ACQUIRED,
        T.LockState.WAITING,
        T.LockState.WAITING,
    ]
    client.unlock(T.UnlockRequest(lockid=first.lockid))
    # The read is compatible with nothing held now, but an earlier exclusive still waits.
    assert client.check_lock(T.CheckLockRequest(lockid=third.lockid)).state == T.LockState.WAITING
    assert client.check_lock(T.CheckLockRequest(lockid=second.lockid)).state == (
        T.LockState.ACQUIRED
    )
    assert client.check_lock(T.CheckLockRequest(lockid=third.lockid)).state == T.LockState.WAITING
    client.unlock(T.UnlockRequest(lockid=second.lockid))
    assert client.check_lock(T.CheckLockRequest(lockid=third.lockid)).state == (
        T.LockState.ACQUIRED
    )


def test_show_locks_lists_acquired_first_and_filters(client, T) -> None:
    txn = open_txn(client, T)
    a = lock(client, T, component(T, R, table="s1"))
    b = lock(client, T, component(T, E, table="s1"), txn=txn)
    c = lock(client, T, component(T, X, table="s2"))
    all_locks = client.show_locks(T.ShowLocksRequest()).locks
    assert [(x.lockid, x.state) for x in all_locks] == [
        (a.lockid, T.LockState.ACQUIRED),  # acquired first, less restrictive first
        (c.lockid, T.LockState.ACQUIRED),
        (b.lockid, T.LockState.WAITING),
    ]
    waiting = all_locks[2]
    assert (waiting.dbname, waiting.tablename, waiting.type, waiting.txnid) == (
        "db",
        "s1",
        T.LockType.EXCLUSIVE,
        txn,
    )
    assert (waiting.blockedByExtId, waiting.blockedByIntId, waiting.lockIdInternal) == (
        a.lockid,
        1,
        1,
    )
    assert waiting.user == USER and waiting.hostname == HOST and waiting.acquiredat is None
    assert [x.lockid for x in client.show_locks(T.ShowLocksRequest(tablename="s2")).locks] == [
        c.lockid
    ]
    assert [x.lockid for x in client.show_locks(T.ShowLocksRequest(txnid=txn)).locks] == [b.lockid]


def _heartbeats(service, ext_id: int, txn: int) -> tuple[list[int], int | None]:
    """The lock's rows' HL_LAST_HEARTBEAT and its txn's TXN_LAST_HEARTBEAT."""
    hl, txns = schema.HIVE_LOCKS, schema.TXNS
    with service.database.read() as conn:
        rows = conn.execute(
            select(hl.c.HL_LAST_HEARTBEAT).where(hl.c.HL_LOCK_EXT_ID == ext_id)
        ).scalars()
        beat = conn.execute(select(txns.c.TXN_LAST_HEARTBEAT).where(txns.c.TXN_ID == txn)).scalar()
        return [int(r) for r in rows], None if beat is None else int(beat)


def test_check_lock_of_a_held_lock_heartbeats_it_or_its_txn(client, T, service) -> None:
    txn = open_txn(client, T)
    of_txn = lock(client, T, component(T, R, table="hb1"), txn=txn)
    loose = lock(client, T, component(T, R, table="hb2"), component(T, R, table="hb3"))
    (txn_lock_beats, txn_before), (loose_before, _) = (
        _heartbeats(service, of_txn.lockid, txn),
        _heartbeats(service, loose.lockid, 0),
    )
    time.sleep(0.01)  # the heartbeats are in milliseconds
    for held in (of_txn, loose):
        resp = client.check_lock(T.CheckLockRequest(lockid=held.lockid))
        assert (resp.lockid, resp.state) == (held.lockid, T.LockState.ACQUIRED)
    txn_lock_after, txn_after = _heartbeats(service, of_txn.lockid, txn)
    loose_after, _ = _heartbeats(service, loose.lockid, 0)
    assert txn_lock_beats == txn_lock_after == [0]  # a txn's locks heartbeat via the txn
    assert txn_before is not None and txn_after is not None and txn_after > txn_before
    assert len(loose_after) == 2 and min(loose_after) > max(loose_before)


def test_check_lock_of_a_held_lock_whose_txn_is_no_longer_open(client, T, service) -> None:
    """Rows left acquired under a txn that is not open (written so here; Hive removes them
    with the txn): check_lock names the txn's state, as Hive's heartbeat does."""
    txn = open_txn(client, T)
    held = lock(client, T, component(T, R, table="gone"), txn=txn)
    txns = schema.TXNS
    service.database.transaction(
        lambda conn: conn.execute(txns.update().where(txns.c.TXN_ID == txn).values(TXN_STATE="a"))
    )
    with pytest.raises(T.TxnAbortedException, match=f"txnid:{txn} already aborted"):
        client.check_lock(T.CheckLockRequest(lockid=held.lockid))


def test_unlock_and_check_lock_rules(client, T) -> None:
    txn = open_txn(client, T)
    mine = lock(client, T, component(T, X, table="u1"), txn=txn)
    with pytest.raises(T.TxnOpenException) as held:
        client.unlock(T.UnlockRequest(lockid=mine.lockid))
    assert held.value.message == (
        "Unlocking locks associated with transaction not permitted.  "
        f"lockid:{mine.lockid} intLockId:1 txnid:{txn} db:db table:u1 partition:None "
        "state:ACQUIRED type:EXCL_WRITE"
    )
    client.unlock(T.UnlockRequest(lockid=123_456))  # unknown: a no-op (Hive 4 is idempotent)
    with pytest.raises(T.NoSuchLockException) as missing:
        client.check_lock(T.CheckLockRequest(lockid=123_456))
    assert missing.value.message == "No such lock lockid:123456"
    client.abort_txn(T.AbortTxnRequest(txnid=txn))
    with pytest.raises(T.NoSuchLockException):  # the abort released it
        client.check_lock(T.CheckLockRequest(lockid=mine.lockid))
    with pytest.raises(T.TxnAbortedException, match=f"Transaction txnid:{txn} already aborted"):
        lock(client, T, component(T, R), txn=txn)
    with pytest.raises(T.NoSuchTxnException, match="No such transaction txnid:98765"):
        lock(client, T, component(T, R), txn=98765)


def test_zero_wait_read_is_refused_instead_of_waiting(client, T, service) -> None:
    lock(client, T, component(T, E, table="z"))
    txn = open_txn(client, T)
    resp = client.lock(
        T.LockRequest(
            component=[component(T, R, table="z")],
            txnid=txn,
            user=USER,
            hostname=HOST,
            zeroWaitReadEnabled=True,
        )
    )
    assert resp.state == T.LockState.NOT_ACQUIRED
    assert resp.errorMessage.startswith("Unable to acquire read lock due to an existing exclusive")
    assert all(r["HL_TXNID"] != txn for r in hive_locks(service))


def test_housekeeping_expires_locks_and_aborts_txns_after_the_timeout(
    database_url, tmp_path
) -> None:
    with running_service(
        database_url,
        tmp_path / "warehouse",
        txn_timeout_seconds=1.0,
        txn_housekeeping_interval_seconds=0,
    ) as svc:
        from tests.support.apache_thrift import load_apache_modules

        T = load_apache_modules().ttypes
        client, trans = apache_client("127.0.0.1", svc.port)
        try:
            loose = lock(client, T, component(T, E, table="h"))
            idle = open_txn(client, T)
            # (it writes: an aborted txn with components stays in TXNS for the compactor)
            lock(client, T, component(T, W, table="h2", op="INSERT", transactional=True), txn=idle)
            kept = open_txn(client, T)
            alive = lock(client, T, component(T, R, table="h3"))
            start = client.get_current_notificationEventId().eventId
            for _ in range(6):  # 1.8 s: past the 1 s timeout for those not heartbeated
                time.sleep(0.3)
                client.heartbeat(T.HeartbeatRequest(txnid=kept))
                client.heartbeat(T.HeartbeatRequest(lockid=alive.lockid))
            result = run_once(svc.store.txn)
            assert result.locks_expired == 1 and result.txns_aborted == [idle]
            assert {x.lockid for x in client.show_locks(T.ShowLocksRequest()).locks} == {
                alive.lockid
            }
            with pytest.raises(T.NoSuchLockException):
                client.check_lock(T.CheckLockRequest(lockid=loose.lockid))
            with pytest.raises(T.TxnAbortedException):
                client.commit_txn(T.CommitTxnRequest(txnid=idle))
            client.commit_txn(T.CommitTxnRequest(txnid=kept))
            evs = client.get_next_notification(T.NotificationEventRequest(lastEvent=start)).events
            aborts = [
                messages.decode(e.message, e.messageFormat)
                for e in evs
                if e.eventType == messages.ABORT_TXN
            ]
            assert [a["txnid"] for a in aborts] == [idle]
            meta = schema.TXNS.c.TXN_META_INFO
            with svc.database.read() as conn:
                reason = conn.execute(select(meta).where(schema.TXNS.c.TXN_ID == idle)).scalar()
            assert reason == "heartbeat time-out"
        finally:
            trans.close()


def test_a_txn_lock_with_operation_type_and_transactional_unset_is_refused(
    client, T, service
) -> None:
    """Hive skips a component only when isTransactional is *set* to false; one that leaves it
    unset, with operationType unset (UNSET, the IDL default Java clients send), is refused."""
    txn = open_txn(client, T)
    unset = component(T, "SHARED_READ", op="UNSET")
    unset.isTransactional = None  # not sent at all
    # lock declares no MetaException: Hive's IllegalStateException and our refusal both reach
    # the client as an internal error carrying the message.
    with pytest.raises(TApplicationException) as refused:
        lock(client, T, unset, txn=txn)
    assert refused.value.message.endswith(
        f"Unexpected DataOperationType: UNSET agentInfo=locks-test txnid:{txn}')"
    )
    assert hive_locks(service) == []
    # Sent as false: a non-transactional resource, locked and not tracked.
    explicit = component(T, "SHARED_READ", op="UNSET", transactional=False)
    assert state_name(T, lock(client, T, explicit, txn=txn).state) == "ACQUIRED"
    tc = schema.TXN_COMPONENTS
    with service.database.read() as conn:
        assert list(conn.execute(select(tc.c.TC_TXNID).where(tc.c.TC_TXNID == txn))) == []
