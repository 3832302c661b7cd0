"""Transactions and write ids through Apache Thrift's client, on SQLite and PostgreSQL.

Covers every transaction call (open, commit, abort, lists, heartbeats, write ids, dynamic
partitions), Hive's exception types and messages, the events written with each change, and the
seed scenarios of Hive's cache design (write id 1 on a new table; ``[10:7,8]`` moving to
``[11:7,8]``), compared as the strings Hive's ValidReaderWriteIdList would write.
"""

from __future__ import annotations

import socket
import struct

import pytest
from sqlalchemy import func, select

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.txn_snapshots import (
    ValidReaderWriteIdList,
    ValidReadTxnList,
    bitset_from_bytes,
)

USER, HOST = "tester", "test-host"


# -- helpers ----------------------------------------------------------------------------------


def open_txns(client: object, T: object, n: int = 1, **kw: object) -> list[int]:
    rqst = T.OpenTxnRequest(num_txns=n, user=USER, hostname=HOST, **kw)  # type: ignore[attr-defined]
    return list(client.open_txns(rqst).txn_ids)  # type: ignore[attr-defined]


def commit(client: object, T: object, txn: int) -> None:
    client.commit_txn(T.CommitTxnRequest(txnid=txn))  # type: ignore[attr-defined]


def abort(client: object, T: object, txn: int) -> None:
    client.abort_txn(T.AbortTxnRequest(txnid=txn))  # type: ignore[attr-defined]


def allocate(client: object, T: object, table: str, txns: list[int], db: str = "default") -> dict:
    rqst = T.AllocateTableWriteIdsRequest(dbName=db, tableName=table, txnIds=txns)  # type: ignore[attr-defined]
    resp = client.allocate_table_write_ids(rqst)  # type: ignore[attr-defined]
    return {p.txnId: p.writeId for p in resp.txnToWriteIds}


def write_ids(client: object, T: object, *tables: str, valid_txns: str | None = None) -> list:
    rqst = T.GetValidWriteIdsRequest(fullTableNames=list(tables), validTxnList=valid_txns)  # type: ignore[attr-defined]
    return list(client.get_valid_write_ids(rqst).tblValidWriteIds)  # type: ignore[attr-defined]


def as_string(tvwi: object) -> str:
    return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()  # type: ignore[arg-type]


def events(client: object, T: object, since: int = 0) -> list[tuple[str, dict, object]]:
    resp = client.get_next_notification(T.NotificationEventRequest(lastEvent=since))  # type: ignore[attr-defined]
    return [(e.eventType, messages.decode(e.message, e.messageFormat), e) for e in resp.events]


def last_event_id(client: object) -> int:
    return client.get_current_notificationEventId().eventId  # type: ignore[attr-defined]


def transactional_table(client: object, T: object, name: str, db: str = "default") -> None:
    sd = T.StorageDescriptor(  # type: ignore[attr-defined]
        cols=[T.FieldSchema(name="id", type="int")],  # type: ignore[attr-defined]
        inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
        serdeInfo=T.SerDeInfo(  # type: ignore[attr-defined]
            serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={}
        ),
        numBuckets=-1,
        compressed=False,
        parameters={},
        bucketCols=[],
        sortCols=[],
    )
    client.create_table(  # type: ignore[attr-defined]
        T.Table(  # type: ignore[attr-defined]
            tableName=name,
            dbName=db,
            owner=USER,
            sd=sd,
            partitionKeys=[],
            parameters={"transactional": "true", "transactional_properties": "default"},
            tableType="MANAGED_TABLE",
        )
    )


def db_scalar(service: object, stmt: object) -> object:
    with service.database.read() as conn:  # type: ignore[attr-defined]
        return conn.execute(stmt).scalar()


def db_rows(service: object, stmt: object) -> list:
    with service.database.read() as conn:  # type: ignore[attr-defined]
        return list(conn.execute(stmt).all())


# -- opening and listing ----------------------------------------------------------------------


def test_open_txns_gives_fresh_ascending_ids_and_lists_them(client, T, service) -> None:
    first = open_txns(client, T, 3)
    second = open_txns(client, T, 2)
    assert first == sorted(first) and second == sorted(second)
    assert len(set(first + second)) == 5 and min(second) > max(first)

    resp = client.get_open_txns()
    assert resp.txn_high_water_mark == max(second)
    assert resp.open_txns == first + second
    assert resp.min_open_txn == first[0]
    assert bitset_from_bytes(resp.abortedBits) == 0
    # As Hive stores them: state 'o', user, host, the TXN_TYPE, a MIN_HISTORY_LEVEL row each.
    rows = db_rows(
        service,
        select(schema.TXNS.c.TXN_STATE, schema.TXNS.c.TXN_USER, schema.TXNS.c.TXN_HOST).where(
            schema.TXNS.c.TXN_ID.in_(first)
        ),
    )
    assert rows == [("o", USER, HOST)] * 3
    mhl = schema.MIN_HISTORY_LEVEL
    assert db_scalar(service, select(func.count()).select_from(mhl)) == 5


def test_open_txns_rejects_a_count_below_one(client, T) -> None:
    from thrift.Thrift import TApplicationException

    with pytest.raises(TApplicationException, match="Invalid input for number of txns: 0"):
        open_txns(client, T, 0)
    assert open_txns(client, T, 1)  # the connection still serves


def test_get_open_txns_marks_aborted_and_excludes_read_only(client, T) -> None:
    a, b, c = open_txns(client, T, 3)
    (ro,) = open_txns(client, T, 1, txn_type=T.TxnType.READ_ONLY)
    abort(client, T, b)
    resp = client.get_open_txns()
    assert resp.open_txns == [a, b, c]  # READ_ONLY left out, aborted kept
    assert bitset_from_bytes(resp.abortedBits) == 0b010
    assert resp.txn_high_water_mark == ro
    snapshot = ValidReadTxnList.from_open_txns_response(resp)
    assert snapshot.to_string() == f"{ro}:{a}:{a},{c}:{b}"

    everything = client.get_open_txns_req(T.GetOpenTxnsRequest(excludeTxnTypes=[]))
    assert everything.open_txns == [a, b, c, ro]
    info = client.get_open_txns_info()
    assert [(t.id, t.state) for t in info.open_txns] == [
        (a, T.TxnState.OPEN),
        (b, T.TxnState.ABORTED),
        (c, T.TxnState.OPEN),
        (ro, T.TxnState.OPEN),
    ]
    assert {t.user for t in info.open_txns} == {USER}
    assert all(t.startedTime > 0 and t.lastHeartbeatTime >= t.startedTime for t in info.open_txns)


# -- commit and abort -------------------------------------------------------------------------


def test_commit_and_abort_follow_hives_states_and_messages(client, T, service) -> None:
    a, b, c = open_txns(client, T, 3)
    commit(client, T, a)
    commit(client, T, a)  # Nth commit of a committed txn: a no-op
    abort(client, T, b)
    abort(client, T, b)  # aborting an aborted txn: a no-op

    with pytest.raises(T.TxnAbortedException) as aborted:
        commit(client, T, b)
    assert aborted.value.message == f"Transaction txnid:{b} already aborted"
    with pytest.raises(T.NoSuchTxnException) as done:
        abort(client, T, a)
    assert done.value.message == f"Transaction txnid:{a} is already committed."
    with pytest.raises(T.NoSuchTxnException) as missing:
        commit(client, T, 999_999)
    assert missing.value.message == "No such transaction txnid:999999"

    states = dict(db_rows(service, select(schema.TXNS.c.TXN_ID, schema.TXNS.c.TXN_STATE)))
    assert (states[a], states[b], states[c]) == ("c", "a", "o")
    meta = db_scalar(service, select(schema.TXNS.c.TXN_META_INFO).where(schema.TXNS.c.TXN_ID == b))
    assert meta == "none"
    # Commit and abort remove the txn's MIN_HISTORY_LEVEL row; the open one keeps its own.
    mhl = schema.MIN_HISTORY_LEVEL
    assert [r[0] for r in db_rows(service, select(mhl.c.MHL_TXNID))] == [c]


def test_abort_txns_aborts_the_open_ones_and_skips_the_rest(client, T) -> None:
    a, b, c = open_txns(client, T, 3)
    commit(client, T, a)
    client.abort_txns(T.AbortTxnsRequest(txn_ids=[a, b, c, 999_999], errorCode=50005))
    resp = client.get_open_txns()
    assert resp.open_txns == [b, c]
    assert bitset_from_bytes(resp.abortedBits) == 0b11
    assert resp.min_open_txn is None


def test_heartbeats(client, T) -> None:
    a, b, c = open_txns(client, T, 3)
    abort(client, T, b)
    commit(client, T, c)
    before = {t.id: t.lastHeartbeatTime for t in client.get_open_txns_info().open_txns}
    client.heartbeat(T.HeartbeatRequest(txnid=a))
    after = {t.id: t.lastHeartbeatTime for t in client.get_open_txns_info().open_txns}
    assert after[a] >= before[a]

    with pytest.raises(T.TxnAbortedException, match=f"Transaction txnid:{b} already aborted"):
        client.heartbeat(T.HeartbeatRequest(txnid=b))
    with pytest.raises(T.NoSuchTxnException, match=f"Transaction txnid:{c} is already committed"):
        client.heartbeat(T.HeartbeatRequest(txnid=c))
    with pytest.raises(T.NoSuchLockException) as no_lock:
        client.heartbeat(T.HeartbeatRequest(lockid=424242))
    assert no_lock.value.message == "No such lock: lockid:424242"
    client.heartbeat(T.HeartbeatRequest())  # neither: nothing to do

    resp = client.heartbeat_txn_range(T.HeartbeatTxnRangeRequest(min=a, max=c + 2))
    assert resp.aborted == {b}
    assert resp.nosuch == {c, c + 1, c + 2}
    ok = client.heartbeat_txn_range(T.HeartbeatTxnRangeRequest(min=a, max=a))
    assert ok.aborted == set() and ok.nosuch == set()


# -- write ids --------------------------------------------------------------------------------


def test_new_transactional_table_gets_write_id_1_and_the_same_id_when_asked_twice(
    client, T, service
) -> None:
    transactional_table(client, T, "acid1")
    assert as_string(write_ids(client, T, "default.acid1")[0]) == (
        "default.acid1:0:9223372036854775807::"
    )
    (txn,) = open_txns(client, T)
    assert allocate(client, T, "acid1", [txn]) == {txn: 1}
    assert allocate(client, T, "ACID1", [txn]) == {txn: 1}  # same txn, same id (names lower-cased)
    resp = client.get_max_allocated_table_write_id(
        T.MaxAllocatedTableWriteIdRequest(dbName="default", tableName="acid1")
    )
    assert resp.maxWriteId == 1
    # While open, write 1 is invalid to everyone else...
    assert as_string(write_ids(client, T, "default.acid1")[0]) == "default.acid1:1:1:1:"
    # ...and valid to the txn itself (Hive's snapshot of the writing txn).
    own = ValidReadTxnList.from_open_txns_response(client.get_open_txns(), txn).to_string()
    assert as_string(write_ids(client, T, "default.acid1", valid_txns=own)[0]) == (
        "default.acid1:1:9223372036854775807::"
    )
    commit(client, T, txn)
    assert as_string(write_ids(client, T, "default.acid1")[0]) == (
        "default.acid1:1:9223372036854775807::"
    )
    t2w = schema.TXN_TO_WRITE_ID
    assert db_rows(service, select(t2w)) == [(txn, "default", "acid1", 1)]
    nwi = schema.NEXT_WRITE_ID
    assert db_rows(service, select(nwi)) == [("default", "acid1", 2)]


def test_write_id_list_moves_from_10_to_11_keeping_open_and_aborted_invalid(client, T) -> None:
    """Hive's cache design: with 7 open and 8 aborted, hwm 10 moves to 11 on a new commit."""
    transactional_table(client, T, "moving")
    txns = open_txns(client, T, 10)
    got = allocate(client, T, "moving", txns)
    assert sorted(got.values()) == list(range(1, 11))
    by_write = {w: t for t, w in got.items()}
    for w in range(1, 11):
        if w == 8:
            abort(client, T, by_write[w])
        elif w != 7:
            commit(client, T, by_write[w])
    before = write_ids(client, T, "default.moving")[0]
    assert as_string(before) == "default.moving:10:7:7:8"
    assert before.invalidWriteIds == [7, 8] and before.minOpenWriteId == 7
    snapshot_then = ValidReadTxnList.from_open_txns_response(client.get_open_txns()).to_string()

    (new,) = open_txns(client, T)
    assert allocate(client, T, "moving", [new]) == {new: 11}
    assert as_string(write_ids(client, T, "default.moving")[0]) == "default.moving:11:7:7,11:8"
    commit(client, T, new)
    assert as_string(write_ids(client, T, "default.moving")[0]) == "default.moving:11:7:7:8"
    # A reader holding the earlier snapshot still sees hwm 10.
    old = write_ids(client, T, "default.moving", valid_txns=snapshot_then)[0]
    assert as_string(old) == "default.moving:10:7:7:8"
    # The snapshot of the txn that wrote id 11 (GetValidWriteIdsRequest.writeId).
    by_write_id = client.get_valid_write_ids(
        T.GetValidWriteIdsRequest(fullTableNames=["default.moving"], writeId=11)
    ).tblValidWriteIds[0]
    assert as_string(by_write_id) == "default.moving:11:7:7:8"
    # Committing the open one and aborting nothing else: only 8 stays invalid.
    commit(client, T, by_write[7])
    assert as_string(write_ids(client, T, "default.moving")[0]) == (
        "default.moving:11:9223372036854775807::8"
    )


def test_write_ids_of_several_tables_and_a_table_without_writes(client, T) -> None:
    transactional_table(client, T, "wa")
    transactional_table(client, T, "wb")
    a, b = open_txns(client, T, 2)
    allocate(client, T, "wa", [a, b])
    allocate(client, T, "wb", [b])
    abort(client, T, a)
    got = write_ids(client, T, "default.wa", "default.wb", "default.never")
    # Hive's rule when no committed write id is left: only the lowest invalid id is kept and
    # becomes the hwm (minOpenWriteId still names the open one).
    assert [as_string(t) for t in got] == [
        "default.wa:1:2::1",
        "default.wb:1:1:1:",
        "default.never:0:9223372036854775807::",
    ]
    with pytest.raises(T.MetaException, match="invalid write id 5 for table default.wa"):
        client.get_valid_write_ids(
            T.GetValidWriteIdsRequest(fullTableNames=["default.wa"], writeId=5)
        )


def test_allocate_refuses_txns_that_are_not_open(client, T) -> None:
    a, b = open_txns(client, T, 2)
    (ro,) = open_txns(client, T, 1, txn_type=T.TxnType.READ_ONLY)
    commit(client, T, a)
    abort(client, T, b)
    with pytest.raises(T.NoSuchTxnException, match=f"Transaction txnid:{a} is already committed"):
        allocate(client, T, "x", [a])
    with pytest.raises(T.TxnAbortedException, match=f"Transaction txnid:{b} already aborted"):
        allocate(client, T, "x", [b])
    with pytest.raises(T.NoSuchTxnException, match="No such transaction txnid:777777"):
        allocate(client, T, "x", [777_777])
    with pytest.raises(T.MetaException, match="not all input txns in open state or read-only"):
        allocate(client, T, "x", [ro])


def test_seed_write_id(client, T) -> None:
    client.seed_write_id(
        T.SeedTableWriteIdsRequest(dbName="default", tableName="seeded", seedWriteId=41)
    )
    (txn,) = open_txns(client, T)
    assert allocate(client, T, "seeded", [txn]) == {txn: 42}
    with pytest.raises(T.MetaException, match="already has write ids"):
        client.seed_write_id(
            T.SeedTableWriteIdsRequest(dbName="default", tableName="seeded", seedWriteId=1)
        )


# -- events -----------------------------------------------------------------------------------


def test_txn_calls_write_hives_events_in_the_same_transaction(client, T) -> None:
    start = last_event_id(client)
    a, b = open_txns(client, T, 2)
    got = allocate(client, T, "ev", [a, b])
    allocate(client, T, "ev2", [a])
    (ro,) = open_txns(client, T, 1, txn_type=T.TxnType.READ_ONLY)
    commit(client, T, a)
    abort(client, T, b)
    commit(client, T, ro)
    evs = events(client, T, start)
    assert [e[0] for e in evs] == [
        messages.OPEN_TXN,
        messages.ALLOC_WRITE_ID_EVENT,
        messages.ALLOC_WRITE_ID_EVENT,
        messages.COMMIT_TXN,
        messages.ABORT_TXN,
    ]  # nothing for the READ_ONLY txn, as Hive's DbNotificationListener
    open_body = evs[0][1]
    assert (open_body["fromTxnId"], open_body["toTxnId"]) == (a, b)
    alloc_body, alloc_event = evs[1][1], evs[1][2]
    assert alloc_body["txnIdList"] == [a, b]
    assert alloc_body["writeIdList"] == [got[a], got[b]]
    assert (alloc_event.dbName, alloc_event.tableName) == ("default", "ev")
    commit_body = evs[3][1]
    assert commit_body["txnid"] == a
    assert commit_body["writeIds"] is None  # Hive's lists are REPL DUMP's to fill
    assert messages.commit_writes(commit_body) == [("default", "ev", 1), ("default", "ev2", 1)]
    abort_body = evs[4][1]
    assert abort_body["txnid"] == b and abort_body["dbsUpdated"] == ["default"]
    assert all(e[2].catName is None for e in evs if e[0] != messages.ALLOC_WRITE_ID_EVENT)


def test_commit_of_an_empty_txn_lists_no_writes(client, T) -> None:
    start = last_event_id(client)
    (txn,) = open_txns(client, T)
    commit(client, T, txn)
    ((_, body, _),) = [e for e in events(client, T, start) if e[0] == messages.COMMIT_TXN]
    assert body["txnid"] == txn and messages.commit_writes(body) == []


# -- dynamic partitions and components --------------------------------------------------------


def test_add_dynamic_partitions_records_components_moved_on_commit(client, T, service) -> None:
    (txn,) = open_txns(client, T)
    wid = allocate(client, T, "dp", [txn])[txn]
    lock = client.lock(
        T.LockRequest(
            component=[
                T.LockComponent(
                    type=T.LockType.SHARED_WRITE,
                    level=T.LockLevel.TABLE,
                    dbname="default",
                    tablename="dp",
                    operationType=T.DataOperationType.INSERT,
                    isTransactional=True,
                    isDynamicPartitionWrite=True,
                )
            ],
            txnid=txn,
            user=USER,
            hostname=HOST,
        )
    )
    assert lock.state == T.LockState.ACQUIRED
    tc = schema.TXN_COMPONENTS
    cols = (tc.c.TC_TABLE, tc.c.TC_PARTITION, tc.c.TC_OPERATION_TYPE, tc.c.TC_WRITEID)
    assert db_rows(service, select(*cols)) == [("dp", None, "i", wid)]
    client.add_dynamic_partitions(
        T.AddDynamicPartitions(
            txnid=txn,
            writeid=wid,
            dbname="default",
            tablename="dp",
            partitionnames=["ds=1", "ds=2"],
            operationType=T.DataOperationType.INSERT,
        )
    )
    assert sorted(db_rows(service, select(*cols))) == [
        ("dp", "ds=1", "i", wid),
        ("dp", "ds=2", "i", wid),
    ]
    commit(client, T, txn)
    ctc = schema.COMPLETED_TXN_COMPONENTS
    done = db_rows(
        service,
        select(ctc.c.CTC_TXNID, ctc.c.CTC_PARTITION, ctc.c.CTC_WRITEID, ctc.c.CTC_UPDATE_DELETE),
    )
    assert sorted(done) == [(txn, "ds=1", wid, "N"), (txn, "ds=2", wid, "N")]
    assert db_scalar(service, select(func.count()).select_from(tc)) == 0
    with pytest.raises(T.NoSuchTxnException, match="is already committed"):
        client.add_dynamic_partitions(
            T.AddDynamicPartitions(
                txnid=txn, writeid=wid, dbname="default", tablename="dp", partitionnames=["ds=3"]
            )
        )


def test_update_commit_records_write_set_and_key_value(client, T, service) -> None:
    transactional_table(client, T, "kv")
    table = client.get_table("default", "kv")
    (txn,) = open_txns(client, T)
    allocate(client, T, "kv", [txn])
    client.lock(
        T.LockRequest(
            component=[
                T.LockComponent(
                    type=T.LockType.EXCL_WRITE,
                    level=T.LockLevel.TABLE,
                    dbname="default",
                    tablename="kv",
                    operationType=T.DataOperationType.UPDATE,
                    isTransactional=True,
                )
            ],
            txnid=txn,
            user=USER,
            hostname=HOST,
        )
    )
    tp = schema.TABLE_PARAMS
    tbl_id = db_scalar(service, select(schema.TBLS.c.TBL_ID).where(schema.TBLS.c.TBL_NAME == "kv"))
    assert table.parameters["transactional"] == "true"
    with service.database.write_engine.begin() as conn:
        conn.execute(tp.insert().values(TBL_ID=tbl_id, PARAM_KEY="_meta_x", PARAM_VALUE="old"))
    client.commit_txn(
        T.CommitTxnRequest(
            txnid=txn, keyValue=T.CommitTxnKeyValue(tableId=tbl_id, key="_meta_x", value="new")
        )
    )
    value = db_scalar(
        service, select(tp.c.PARAM_VALUE).where(tp.c.TBL_ID == tbl_id, tp.c.PARAM_KEY == "_meta_x")
    )
    assert value == "new"
    ws = schema.WRITE_SET
    assert db_rows(service, select(ws.c.WS_TABLE, ws.c.WS_TXNID, ws.c.WS_OPERATION_TYPE)) == [
        ("kv", txn, "u")
    ]
    assert db_scalar(service, select(ws.c.WS_COMMIT_ID)) >= txn
    ctc = schema.COMPLETED_TXN_COMPONENTS
    assert db_scalar(service, select(ctc.c.CTC_UPDATE_DELETE)) == "Y"


def test_hive2_layout_of_add_dynamic_partitions_is_refused_and_connection_survives(
    client, T, service
) -> None:
    """Hive 2.3 sends (1 txnid, 2 dbname, 3 tablename, 4 partitionnames, 5 operationType)."""
    (txn,) = open_txns(client, T)

    def string(fid: int, value: str) -> bytes:
        data = value.encode()
        return struct.pack(">bhi", 11, fid, len(data)) + data

    name = b"add_dynamic_partitions"
    args = (
        struct.pack(">bh", 12, 1)  # field 1: the AddDynamicPartitions struct
        + struct.pack(">bhq", 10, 1, txn)
        + string(2, "default")
        + string(3, "t")
        + struct.pack(">bhbi", 15, 4, 11, 1)
        + struct.pack(">i", 4)
        + b"ds=1"
        + struct.pack(">bhi", 8, 5, 2)
        + b"\x00"  # end of AddDynamicPartitions
        + b"\x00"  # end of args
    )
    msg = struct.pack(">Ii", 0x80010001, len(name)) + name + struct.pack(">i", 1) + args
    with socket.create_connection(("127.0.0.1", service.port), timeout=10) as sock:
        sock.sendall(msg)
        reply = sock.recv(65536)
        assert b"Hive 2 client" in reply
        # Same connection: a well-formed call still works.
        get = b"get_open_txns"
        sock.sendall(
            struct.pack(">Ii", 0x80010001, len(get)) + get + struct.pack(">i", 2) + b"\x00"
        )
        assert get in sock.recv(65536)
    assert client.get_open_txns().open_txns == [txn]


def test_a_replayed_allocation_without_source_write_ids_is_refused_clearly(client, T) -> None:
    (txn,) = open_txns(client, T)
    with pytest.raises(T.MetaException, match="needs replPolicy and srcTxnToWriteIdList"):
        client.allocate_table_write_ids(
            T.AllocateTableWriteIdsRequest(
                dbName="default", tableName="r", replPolicy="p", srcTxnToWriteIdList=[]
            )
        )
    assert client.get_open_txns().open_txns == [txn]


def test_first_committer_wins_when_exclusive_writes_are_off(client, T, service) -> None:
    a, b = open_txns(client, T, 2)
    for txn in (a, b):
        allocate(client, T, "wc", [txn])
        resp = client.lock(
            T.LockRequest(
                component=[
                    T.LockComponent(
                        type=T.LockType.SHARED_WRITE,  # concurrent updaters (Hive 3 style)
                        level=T.LockLevel.TABLE,
                        dbname="default",
                        tablename="wc",
                        operationType=T.DataOperationType.UPDATE,
                        isTransactional=True,
                    )
                ],
                txnid=txn,
                user=USER,
                hostname=HOST,
            )
        )
        assert resp.state == T.LockState.ACQUIRED
    client.commit_txn(T.CommitTxnRequest(txnid=a, exclWriteEnabled=False))
    assert client.get_latest_txnid_in_conflict(b) == a
    with pytest.raises(T.TxnAbortedException) as lost:
        client.commit_txn(T.CommitTxnRequest(txnid=b, exclWriteEnabled=False))
    assert lost.value.message.startswith(f"Aborting [txnid:{b},")
    assert lost.value.message.endswith(
        f"due to a write conflict on default/wc committed by [txnid:{a},{b}] u/u"
    )
    state = db_scalar(service, select(schema.TXNS.c.TXN_STATE).where(schema.TXNS.c.TXN_ID == b))
    assert state == "a"  # the abort was committed before the exception was sent
    ws = schema.WRITE_SET
    assert [r[0] for r in db_rows(service, select(ws.c.WS_TXNID))] == [a]
