"""The compaction queue through Apache Thrift's client, on SQLite and PostgreSQL: a request's
life as Hive's Initiator, Worker and Cleaner drive it, the refusals and filters, and the rows
as Hive keeps them in COMPACTION_QUEUE / COMPLETED_COMPACTIONS."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import select
from thrift.Thrift import TApplicationException

from hms_cache_proxy.store.db import schema
from tests.integration.test_txn_calls import (
    allocate,
    commit,
    db_rows,
    db_scalar,
    open_txns,
    transactional_table,
)


def request(T: object, table: str = "t", part: str | None = None, **kw: object) -> object:
    return T.CompactionRequest(  # type: ignore[attr-defined]
        dbname="default",
        tablename=table,
        partitionname=part,
        type=kw.pop("type", T.CompactionType.MAJOR),  # type: ignore[attr-defined]
        **kw,
    )


def test_compact2_queues_with_ids_from_next_compaction_queue_id(client, T, service) -> None:
    first = client.compact2(request(T, "T", runas="hive", properties={"k": "v"}))
    second = client.compact2(request(T, "t", "ds=1", type=T.CompactionType.MINOR))
    assert (first.accepted, first.state) == (True, "initiated")
    assert second.id == first.id + 1
    assert db_scalar(service, select(schema.NEXT_COMPACTION_QUEUE_ID.c.NCQ_NEXT)) == second.id + 1
    cq = schema.COMPACTION_QUEUE
    rows = db_rows(
        service,
        select(
            cq.c.CQ_ID,
            cq.c.CQ_TABLE,
            cq.c.CQ_PARTITION,
            cq.c.CQ_STATE,
            cq.c.CQ_TYPE,
            cq.c.CQ_TBLPROPERTIES,
            cq.c.CQ_RUN_AS,
        ).order_by(cq.c.CQ_ID),
    )
    assert rows == [
        (first.id, "t", None, "i", "a", "1:1:k1:v", "hive"),
        (second.id, "t", "ds=1", "i", "i", None, None),
    ]
    assert db_scalar(service, select(cq.c.CQ_ENQUEUE_TIME).where(cq.c.CQ_ID == first.id)) > 0


def test_a_second_request_for_the_same_place_is_refused_with_the_queued_id(client, T) -> None:
    queued = client.compact2(request(T))
    again = client.compact2(request(T, type=T.CompactionType.MINOR))
    assert (again.id, again.state, again.accepted) == (-1, "refused", False)
    assert again.errormessage == (
        f"Compaction is already scheduled with state='initiated' and id={queued.id}"
    )
    client.compact(request(T))  # the void form: no answer, nothing added
    assert [c.id for c in client.show_compact(T.ShowCompactRequest()).compacts] == [queued.id]
    # Another partition of the same table is another place.
    assert client.compact2(request(T, part="ds=2")).accepted


def test_a_request_without_a_type_gets_an_actionable_error(client, T) -> None:
    with pytest.raises(TApplicationException, match="CompactionRequest.type must be set"):
        client.compact2(T.CompactionRequest(dbname="default", tablename="t"))
    assert client.show_compact(T.ShowCompactRequest()).compacts == []


def test_worker_and_cleaner_drive_a_request_to_succeeded(client, T, service) -> None:
    transactional_table(client, T, "acid")
    (writer,) = open_txns(client, T)
    allocate(client, T, "acid", [writer])
    commit(client, T, writer)
    queued = client.compact2(request(T, "acid", initiatorId="init-1", initiatorVersion="4.0.0"))

    assert client.find_next_compact2(T.FindNextCompactRequest(poolName="other")).ci is None
    ci = client.find_next_compact2(
        T.FindNextCompactRequest(workerId="host-1", workerVersion="4.0.0")
    ).ci
    assert (ci.id, ci.dbname, ci.tablename, ci.type) == (queued.id, "default", "acid", 1 + 1)
    assert (ci.state, ci.workerId) == ("w", "host-1") and ci.start > 0
    assert client.find_next_compact("host-2").ci is None  # taken

    (compactor,) = open_txns(client, T, txn_type=T.TxnType.COMPACTION)
    ci.highestWriteId, ci.runas = 1, "hive"
    client.update_compactor_state(ci, compactor)
    client.set_hadoop_jobid("job_1", ci.id)
    shown = client.show_compact(T.ShowCompactRequest(id=ci.id)).compacts[0]
    assert (shown.state, shown.workerid, shown.hadoopJobId, shown.txnId) == (
        "working",
        "host-1",
        "job_1",
        compactor,
    )
    assert (shown.initiatorId, shown.workerVersion, shown.hightestWriteId) == (
        "init-1",
        "4.0.0",
        1,
    )
    client.mark_compacted(ci)
    commit(client, T, compactor)
    shown = client.show_compact(T.ShowCompactRequest(id=ci.id)).compacts[0]
    assert shown.state == "ready for cleaning" and shown.commitTime > 0 and shown.nextTxnId
    latest = client.get_latest_committed_compaction_info(
        T.GetLatestCommittedCompactionInfoRequest(dbname="default", tablename="acid")
    ).compactions
    assert [c.id for c in latest] == [ci.id]

    client.mark_cleaned(ci)
    assert db_rows(service, select(schema.COMPACTION_QUEUE.c.CQ_ID)) == []
    cc = schema.COMPLETED_COMPACTIONS
    row = db_rows(service, select(cc.c.CC_ID, cc.c.CC_STATE, cc.c.CC_WORKER_ID, cc.c.CC_END))[0]
    assert row[:2] == (ci.id, "s") and row[3] > 0
    ctc = schema.COMPLETED_TXN_COMPONENTS
    assert db_rows(service, select(ctc.c.CTC_TXNID).where(ctc.c.CTC_TABLE == "acid")) == []
    shown = client.show_compact(T.ShowCompactRequest(state="succeeded")).compacts
    assert [(c.id, c.state, c.hadoopJobId) for c in shown] == [(ci.id, "succeeded", "job_1")]
    later = client.get_latest_committed_compaction_info(
        T.GetLatestCommittedCompactionInfoRequest(
            dbname="default", tablename="acid", lastCompactionId=ci.id
        )
    )
    assert later.compactions == []
    # A new request for the same table is accepted once the old one is done.
    assert client.compact2(request(T, "acid")).accepted


def test_failed_refused_and_not_initiated_go_to_history(client, T, service) -> None:
    a = client.compact2(request(T, "a")).id
    b = client.compact2(request(T, "b")).id
    for worker in ("w1", "w2"):
        assert client.find_next_compact(worker).ci is not None
    client.mark_failed(
        T.CompactionInfoStruct(id=a, dbname="default", tablename="a", type=2, errorMessage="boom")
    )
    client.mark_refused(
        T.CompactionInfoStruct(id=b, dbname="default", tablename="b", type=2, errorMessage="no")
    )
    # The Initiator records a request it could not queue with id 0.
    client.mark_failed(
        T.CompactionInfoStruct(id=0, dbname="default", tablename="c", type=1, errorMessage="x")
    )
    shown = client.show_compact(T.ShowCompactRequest(order="cc_id asc")).compacts
    assert [(c.id, c.tablename, c.state, c.errorMessage) for c in shown] == [
        (a, "a", "failed", "boom"),
        (b, "b", "refused", "no"),
        (b + 1, "c", "did not initiate", "x"),
    ]
    assert all(c.endTime > 0 for c in shown)
    with pytest.raises(T.MetaException, match="No compaction with id 999"):
        client.mark_compacted(T.CompactionInfoStruct(id=999, dbname="d", tablename="t", type=1))
    with pytest.raises(T.MetaException, match="No record with CQ_ID=999 found in COMPACTION_QUE"):
        client.mark_failed(T.CompactionInfoStruct(id=999, dbname="d", tablename="t", type=1))
    with pytest.raises(TApplicationException, match="No compaction with id 999"):
        client.set_hadoop_jobid("job", 999)
    # A refusal before queueing (id 0) is recorded as refused, with a fresh id.
    client.mark_refused(T.CompactionInfoStruct(id=0, dbname="default", tablename="d", type=1))
    last = client.show_compact(T.ShowCompactRequest(tbName="d")).compacts
    assert [(c.id, c.state) for c in last] == [(b + 2, "refused")]


def test_show_compact_filters(client, T) -> None:
    major = client.compact2(request(T, "x", poolName="pool")).id
    minor = client.compact2(request(T, "y", "p=1", type=T.CompactionType.MINOR)).id
    client.find_next_compact2(T.FindNextCompactRequest(workerId="w", poolName="pool"))

    def ids(**kw: object) -> list[int]:
        return sorted(c.id for c in client.show_compact(T.ShowCompactRequest(**kw)).compacts)

    assert ids() == [major, minor]
    assert ids(poolName="pool") == [major]
    assert ids(dbName="DEFAULT", tbName="Y") == [minor]
    assert ids(partName="p=1") == [minor]
    assert ids(type=T.CompactionType.MAJOR) == [major]
    assert ids(state="working") == [major] and ids(state="i") == [minor]
    assert len(client.show_compact(T.ShowCompactRequest(limit=1)).compacts) == 1
    assert [
        c.id for c in client.show_compact(T.ShowCompactRequest(order="cc_id desc")).compacts
    ] == [
        minor,
        major,
    ]
    with pytest.raises(TApplicationException, match="Invalid show_compact order"):
        client.show_compact(T.ShowCompactRequest(order="1; drop table x"))
    with pytest.raises(TApplicationException, match="Unknown compaction state"):
        client.show_compact(T.ShowCompactRequest(state="sleeping"))


def test_abort_compactions_aborts_initiated_ones_only(client, T) -> None:
    waiting = client.compact2(request(T, "w")).id
    working = client.compact2(request(T, "x")).id
    client.compact2(request(T, "y"))
    # Take "x" only: abort "w" first so the worker cannot pick it.
    out = client.abort_Compactions(T.AbortCompactionRequest(compactionIds=[waiting, 12345]))
    assert (out.abortedcompacts[waiting].status, out.abortedcompacts[waiting].message) == (
        "Success",
        "Successfully aborted compaction",
    )
    assert out.abortedcompacts[12345].message == "No Such Compaction Id Available"
    assert client.find_next_compact("w").ci.id == working
    out = client.abort_Compactions(T.AbortCompactionRequest(compactionIds=[working, waiting]))
    assert out.abortedcompacts[working].message == (
        "Error while aborting compaction as compaction is in state-working"
    )
    assert out.abortedcompacts[waiting].message == (
        "Error while aborting compaction as compaction is in state-aborted"
    )
    shown = client.show_compact(T.ShowCompactRequest(id=waiting)).compacts[0]
    assert shown.state == "aborted"


def test_find_columns_with_stats_lists_the_columns_with_statistics(client, T) -> None:
    transactional_table(client, T, "st")
    table = client.get_table("default", "st")
    table.parameters = {}  # statistics of a plain table need no write id
    client.alter_table("default", "st", table)
    stats = T.ColumnStatistics(
        statsDesc=T.ColumnStatisticsDesc(isTblLevel=True, dbName="default", tableName="st"),
        statsObj=[
            T.ColumnStatisticsObj(
                colName="id",
                colType="int",
                statsData=T.ColumnStatisticsData(
                    longStats=T.LongColumnStatsData(numNulls=0, numDVs=1)
                ),
            )
        ],
        engine="hive",
    )
    client.update_table_column_statistics(stats)
    ci = T.CompactionInfoStruct(id=1, dbname="default", tablename="ST", type=2)
    assert client.find_columns_with_stats(ci) == ["id"]
    ci.partitionname = "ds=1"
    assert client.find_columns_with_stats(ci) == []


def test_concurrent_requests_for_one_table_queue_exactly_one(connect, T, service) -> None:
    """The NEXT_COMPACTION_QUEUE_ID row lock serialises enqueuers: of 8 clients asking at once,
    one is accepted and the others are refused with its id."""
    clients = [connect() for _ in range(8)]
    answers: list[object] = [None] * len(clients)
    start = threading.Barrier(len(clients))

    def ask(i: int) -> None:
        start.wait(timeout=10)
        answers[i] = clients[i].compact2(request(T, "contended"))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    accepted = [a for a in answers if a is not None and a.accepted]
    assert len(accepted) == 1
    refused = [a for a in answers if a is not None and not a.accepted]
    assert len(refused) == len(clients) - 1
    assert {a.errormessage for a in refused} == {
        f"Compaction is already scheduled with state='initiated' and id={accepted[0].id}"
    }
    assert db_rows(service, select(schema.COMPACTION_QUEUE.c.CQ_ID)) == [(accepted[0].id,)]
