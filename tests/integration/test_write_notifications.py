"""ACID write notifications through Apache Thrift's client, on SQLite and PostgreSQL: a row
per (txn, table, partition) in TXN_WRITE_NOTIFICATION_LOG, an ACID_WRITE_EVENT per notice,
get_all_write_event_info answering them, bad notices refused."""

from __future__ import annotations

import pytest
from thrift.Thrift import TApplicationException

from tests.integration.test_txn_calls import (
    allocate,
    commit,
    events,
    last_event_id,
    open_txns,
    transactional_table,
)


def _notice(T, txn, write_id, files, table="acid", **kw):
    info = T.InsertEventRequestData(filesAdded=files, **kw)
    return T.WriteNotificationLogRequest(
        txnId=txn, writeId=write_id, db="default", table=table, fileInfo=info
    )


def test_write_notification_records_files_and_writes_an_acid_write_event(client, T):
    transactional_table(client, T, "acid")
    [txn] = open_txns(client, T)
    write_id = allocate(client, T, "acid", [txn])[txn]
    since = last_event_id(client)
    client.add_write_notification_log(
        _notice(T, txn, write_id, ["file:/w/acid/delta_1/b0"], filesAddedChecksum=["c0"])
    )
    client.add_write_notification_log(_notice(T, txn, write_id, ["file:/w/acid/delta_1/b1"]))
    got = events(client, T, since)
    assert [e[0] for e in got] == ["ACID_WRITE_EVENT", "ACID_WRITE_EVENT"]
    body = got[0][1]
    assert list(body)[:8] == [
        "txnid",
        "writeId",
        "timestamp",
        "server",
        "servicePrincipal",
        "database",
        "table",
        "partition",
    ]
    assert (body["txnid"], body["writeId"], body["table"]) == (txn, write_id, "acid")
    assert body["files"] == ["file:/w/acid/delta_1/b0###"]
    assert (got[0][2].dbName, got[0][2].tableName) == ("default", "acid")
    info = client.get_all_write_event_info(T.GetAllWriteEventInfoRequest(txnId=txn))
    assert len(info) == 1  # one row per (txn, table, partition): files appended
    assert (info[0].writeId, info[0].database, info[0].table) == (write_id, "default", "acid")
    assert info[0].files == "file:/w/acid/delta_1/b0###,file:/w/acid/delta_1/b1###"
    assert '"acid"' in info[0].tableObj and info[0].partitionObj is None
    other = T.GetAllWriteEventInfoRequest(txnId=txn, dbName="default", tableName="other")
    assert client.get_all_write_event_info(other) == []
    commit(client, T, txn)


def test_batch_notifications_are_recorded_together(client, T):
    transactional_table(client, T, "acid")
    txns = open_txns(client, T, 2)
    ids = allocate(client, T, "acid", txns)
    batch = T.WriteNotificationLogBatchRequest(
        catalog="hive",
        db="default",
        table="acid",
        requestList=[_notice(T, t, ids[t], [f"file:/w/acid/delta_{ids[t]}/b0"]) for t in txns],
    )
    since = last_event_id(client)
    client.add_write_notification_log_in_batch(batch)
    assert [e[0] for e in events(client, T, since)] == ["ACID_WRITE_EVENT"] * 2
    for t in txns:
        [info] = client.get_all_write_event_info(T.GetAllWriteEventInfoRequest(txnId=t))
        assert info.writeId == ids[t]


def test_a_notice_for_another_write_or_a_closed_txn_is_refused(client, T):
    transactional_table(client, T, "acid")
    first, second = open_txns(client, T, 2)
    ids = allocate(client, T, "acid", [first, second])
    with pytest.raises(TApplicationException, match=f"belongs to txnid:{first}"):
        client.add_write_notification_log(_notice(T, second, ids[first], ["f"]))
    with pytest.raises(TApplicationException, match="table not found"):
        client.add_write_notification_log(_notice(T, first, ids[first], ["f"], table="nope"))
    commit(client, T, first)
    with pytest.raises(TApplicationException, match="committed"):
        client.add_write_notification_log(_notice(T, first, ids[first], ["f"]))
    assert client.get_all_write_event_info(T.GetAllWriteEventInfoRequest(txnId=first)) == []
