"""This service as a REPL LOAD target, through Apache Thrift's client on SQLite and PostgreSQL:
the calls Hive's load handlers make for replayed (REPL_CREATED) txns, each safe to replay.
Tests named after a Hive test follow it (TestTxnHandler, TestReplicationScenariosAcidTables)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import select
from thrift.Thrift import TApplicationException

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.txn.housekeeping import perform_timeouts, run_once
from tests.integration.test_txn_calls import (
    abort,
    as_string,
    db_rows,
    db_scalar,
    events,
    last_event_id,
    open_txns,
    transactional_table,
    write_ids,
)
from tests.support.server import running_service

POLICY = "repl_db.*"
REPL_CREATED = 1


def repl_open(client: Any, T: Any, src: list[int], policy: str = POLICY) -> list[int]:
    rqst = T.OpenTxnRequest(
        num_txns=len(src),
        user="hive",
        hostname="load-host",
        replPolicy=policy,
        replSrcTxnIds=src,
        txn_type=REPL_CREATED,
    )
    return list(client.open_txns(rqst).txn_ids)


def repl_alloc(client: Any, T: Any, table: str, pairs: list[tuple[int, int]], db: str = "repl_db"):
    rqst = T.AllocateTableWriteIdsRequest(
        dbName=db,
        tableName=table,
        replPolicy=POLICY,
        srcTxnToWriteIdList=[T.TxnToWriteId(txnId=t, writeId=w) for t, w in pairs],
    )
    return [(p.txnId, p.writeId) for p in client.allocate_table_write_ids(rqst).txnToWriteIds]


def repl_commit(client: Any, T: Any, src: int, infos: list[Any] | None = None) -> None:
    client.commit_txn(
        T.CommitTxnRequest(
            txnid=src, replPolicy=POLICY, txn_type=REPL_CREATED, writeEventInfos=infos
        )
    )


def repl_abort(client: Any, T: Any, src: int) -> None:
    client.abort_txn(T.AbortTxnRequest(txnid=src, replPolicy=POLICY, txn_type=REPL_CREATED))


def repl_map(service: Any) -> list[tuple[str, int, int]]:
    rtm = schema.REPL_TXN_MAP
    stmt = select(rtm.c.RTM_REPL_POLICY, rtm.c.RTM_SRC_TXN_ID, rtm.c.RTM_TARGET_TXN_ID)
    return sorted((p, int(s), int(t)) for p, s, t in db_rows(service, stmt))


def next_write_id(service: Any, table: str, db: str = "repl_db") -> int | None:
    nwi = schema.NEXT_WRITE_ID
    stmt = select(nwi.c.NWI_NEXT).where(nwi.c.NWI_DATABASE == db, nwi.c.NWI_TABLE == table)
    found = db_scalar(service, stmt)
    return None if found is None else int(found)


@pytest.fixture
def repl_db(client: Any, T: Any) -> str:
    client.create_database(T.Database(name="repl_db", parameters={"repl.target.for": "true"}))
    return "repl_db"


def test_repl_open_txn(client, T, service, repl_db) -> None:
    """TestTxnHandler#testReplOpenTxn: the map holds (policy, src -> target) in order; a
    re-open returns the same targets and opens nothing; repl aborts empty the map."""
    src = list(range(1000, 1500))
    start = last_event_id(client)
    targets = repl_open(client, T, src)
    assert len(targets) == 500 and targets == sorted(targets)
    assert repl_map(service) == sorted((POLICY, s, t) for s, t in zip(src, targets, strict=True))
    opened = events(client, T, start)
    # one OPEN_TXN for the targets (an open slower than the open window withdraws its rows
    # with ABORT_TXN events and opens again, as any open_txns does)
    assert {e[0] for e in opened} <= {messages.OPEN_TXN, messages.ABORT_TXN}
    last = opened[-1][1]
    assert opened[-1][0] == messages.OPEN_TXN
    assert (last["fromTxnId"], last["toTxnId"]) == (targets[0], targets[-1])
    open_now = client.get_open_txns()
    assert set(targets) <= set(open_now.open_txns)  # readers see replayed txns as open
    excluded = client.get_open_txns_req(T.GetOpenTxnsRequest(excludeTxnTypes=[REPL_CREATED]))
    assert not set(targets) & set(excluded.open_txns)  # REPL DUMP's bootstrap leaves them out

    again = last_event_id(client)
    assert repl_open(client, T, src) == targets
    assert events(client, T, again) == []
    for s in src:
        repl_abort(client, T, s)
    assert repl_map(service) == []


def test_repl_alloc_write_id(client, T, service, repl_db) -> None:
    """TestTxnHandler#testReplAllocWriteId: the target write id is the source's, pairs name
    target txns, a repeated call answers the same, a write id unlike NEXT_WRITE_ID is taken,
    and an allocation after the txns were aborted is a silent no-op."""
    transactional_table(client, T, "t1", db=repl_db)
    targets = repl_open(client, T, [21, 22])
    got = repl_alloc(client, T, "t1", [(21, 7), (22, 8)])
    assert got == [(targets[0], 7), (targets[1], 8)]
    assert repl_alloc(client, T, "t1", [(21, 7), (22, 8)]) == got
    assert next_write_id(service, "t1") == 9
    repl_abort(client, T, 21)
    repl_abort(client, T, 22)
    assert repl_alloc(client, T, "t1", [(21, 7), (22, 8)]) == []


def test_a_forced_write_id_wipes_the_stale_mapping(client, T, service, repl_db) -> None:
    transactional_table(client, T, "t2", db=repl_db)
    [a] = repl_open(client, T, [31])
    repl_alloc(client, T, "t2", [(31, 1)])
    repl_commit(client, T, 31)
    [b] = repl_open(client, T, [32])
    assert repl_alloc(client, T, "t2", [(32, 10)]) == [(b, 10)]  # the source table was recreated
    t2w = schema.TXN_TO_WRITE_ID
    rows = db_rows(
        service, select(t2w.c.T2W_TXNID, t2w.c.T2W_WRITEID).where(t2w.c.T2W_TABLE == "t2")
    )
    assert [(int(t), int(w)) for t, w in rows] == [(b, 10)]
    assert a != b and next_write_id(service, "t2") == 11


def test_repl_commit_records_the_writes_and_is_idempotent(client, T, service, repl_db) -> None:
    transactional_table(client, T, "t3", db=repl_db)
    [target] = repl_open(client, T, [41])
    repl_alloc(client, T, "t3", [(41, 1)])
    info = T.WriteEventInfo(
        writeId=1,
        database=repl_db,
        table="t3",
        files="hdfs://src/w/t3/delta_1_1_0000/bucket_0###delta_1_1_0000",
    )
    start = last_event_id(client)
    repl_commit(client, T, 41, [info])
    kinds = [e[0] for e in events(client, T, start)]
    assert kinds == [messages.ACID_WRITE_EVENT, messages.COMMIT_TXN]
    [written] = client.get_all_write_event_info(T.GetAllWriteEventInfoRequest(txnId=target))
    location = client.get_table(repl_db, "t3").sd.location
    assert written.files == f"{location}/delta_1_1_0000/bucket_0###delta_1_1_0000"
    ctc = schema.COMPLETED_TXN_COMPONENTS
    stmt = select(ctc.c.CTC_TXNID, ctc.c.CTC_TABLE, ctc.c.CTC_WRITEID, ctc.c.CTC_UPDATE_DELETE)
    assert [tuple(r) for r in db_rows(service, stmt)] == [(target, "t3", 1, "N")]
    assert repl_map(service) == []
    [w] = write_ids(client, T, f"{repl_db}.t3")
    assert as_string(w) == f"{repl_db}.t3:1:9223372036854775807::"

    again = last_event_id(client)
    repl_commit(client, T, 41, [info])  # a load stopped before repl.last.id replays it
    assert events(client, T, again) == []
    assert len(db_rows(service, stmt)) == 1


def test_repl_abort_names_the_target_txn_and_is_idempotent(client, T, service, repl_db) -> None:
    transactional_table(client, T, "t4", db=repl_db)
    [target] = repl_open(client, T, [51])
    repl_alloc(client, T, "t4", [(51, 3)])
    start = last_event_id(client)
    repl_abort(client, T, 51)
    [(kind, body, _)] = events(client, T, start)
    assert kind == messages.ABORT_TXN and body["txnid"] == target
    repl_abort(client, T, 51)
    assert events(client, T, start) == [(kind, body, events(client, T, start)[0][2])]
    [w] = write_ids(client, T, f"{repl_db}.t4")
    assert 3 in ValidAborted.of(w)


class ValidAborted:
    @staticmethod
    def of(tvwi: Any) -> set[int]:
        from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

        w = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi)
        return set(w.aborted_write_ids())


def test_target_db_repl_incompatible_with_prop_set(client, T, service, repl_db) -> None:
    """TestReplicationScenariosAcidTables#testTargetDbReplIncompatibleWithPropSet: aborting a
    replayed txn outside replication marks the database repl.incompatible."""
    [target] = repl_open(client, T, [61])
    abort(client, T, target)
    assert client.get_database(repl_db).parameters["repl.incompatible"] == "true"
    assert repl_map(service) == []


def test_abort_txns(client, T, service, repl_db) -> None:
    """TestTxnHandler#testAbortTxns: a plain abort_txns of replayed txns deletes their map
    rows."""
    targets = repl_open(client, T, [71, 72])
    client.abort_txns(T.AbortTxnsRequest(txn_ids=targets))
    assert repl_map(service) == []
    assert client.get_database(repl_db).parameters["repl.incompatible"] == "true"


def test_repl_tbl_writeid_state_seeds_the_sources_write_ids(client, T, service, repl_db) -> None:
    """TestReplicationScenariosAcidTables#testAcidTablesBootstrapWithOpenTxnsTimeout, target
    side: NEXT_WRITE_ID after the source's hwm, one TXN_TO_WRITE_ID row per aborted id (and,
    unlike Hive, one for the committed hwm), and the source's ValidWriteIdList read back; a
    second call changes nothing."""
    transactional_table(client, T, "t5", db=repl_db)
    source_list = f"{repl_db}.t5:5:9223372036854775807::2,4"
    rqst = T.ReplTblWriteIdStateRequest(
        validWriteIdlist=source_list, user="hive", hostName="h", dbName=repl_db, tableName="t5"
    )
    client.repl_tbl_writeid_state(rqst)
    assert next_write_id(service, "t5") == 6
    t2w = schema.TXN_TO_WRITE_ID
    rows = db_rows(service, select(t2w.c.T2W_WRITEID).where(t2w.c.T2W_TABLE == "t5"))
    assert sorted(int(r[0]) for r in rows) == [2, 4, 5]
    [w] = write_ids(client, T, f"{repl_db}.t5")
    assert as_string(w) == source_list
    cq = schema.COMPACTION_QUEUE
    queued = select(cq.c.CQ_TABLE, cq.c.CQ_PARTITION, cq.c.CQ_TYPE)
    assert [tuple(r) for r in db_rows(service, queued)] == [("t5", None, "a")]  # MAJOR
    start = last_event_id(client)
    client.repl_tbl_writeid_state(rqst)
    assert events(client, T, start) == [] and next_write_id(service, "t5") == 6
    assert len(db_rows(service, queued)) == 1


def test_replication_requests_missing_their_parts_are_refused(client, T, repl_db) -> None:
    """open_txns and repl_tbl_writeid_state declare no exception: the message travels in a
    TApplicationException; allocate_table_write_ids declares MetaException."""
    with pytest.raises(TApplicationException, match="needs replPolicy"):
        client.open_txns(
            T.OpenTxnRequest(num_txns=1, user="u", hostname="h", txn_type=REPL_CREATED)
        )
    with pytest.raises(TApplicationException, match="does not match"):
        client.open_txns(
            T.OpenTxnRequest(
                num_txns=3,
                user="u",
                hostname="h",
                replPolicy=POLICY,
                replSrcTxnIds=[5],
                txn_type=REPL_CREATED,
            )
        )
    with pytest.raises(T.MetaException, match="srcTxnToWriteIdList"):
        client.allocate_table_write_ids(
            T.AllocateTableWriteIdsRequest(dbName=repl_db, tableName="x", replPolicy=POLICY)
        )
    with pytest.raises(TApplicationException, match="invalid validWriteIdlist"):
        client.repl_tbl_writeid_state(
            T.ReplTblWriteIdStateRequest(
                validWriteIdlist="nonsense", user="u", hostName="h", dbName=repl_db, tableName="x"
            )
        )


def test_replayed_txns_time_out_after_the_replication_timeout(database_url, tmp_path) -> None:
    """REPL_CREATED txns are never heartbeated: the txn timeout leaves them alone, the
    replication txn timeout aborts them and marks the database repl.incompatible (Hive's
    PerformTimeoutsFunction)."""
    from tests.support.apache_thrift import apache_client, load_apache_modules

    T = load_apache_modules().ttypes
    fast = {"txn_timeout_seconds": 0.2, "txn_housekeeping_interval_seconds": 0}
    with running_service(
        database_url, tmp_path / "w", repl_txn_timeout_seconds=3600, **fast
    ) as svc:
        client, trans = apache_client("127.0.0.1", svc.port)
        try:
            client.create_database(T.Database(name="repl_db", parameters={"repl.target.for": "t"}))
            [replayed] = repl_open(client, T, [81])
            [plain] = open_txns(client, T)
            time.sleep(0.5)
            assert run_once(svc.store.txn).txns_aborted == [plain]
        finally:
            trans.close()
    with running_service(database_url, tmp_path / "w", repl_txn_timeout_seconds=0.2, **fast) as svc:
        client, trans = apache_client("127.0.0.1", svc.port)
        try:
            time.sleep(0.5)
            assert run_once(svc.store.txn).txns_aborted == [replayed]
            assert client.get_database("repl_db").parameters["repl.incompatible"] == "true"
            assert repl_map(svc) == []
        finally:
            trans.close()


def test_bootstrap_objects_keep_the_sources_committed_write_ids(client, T, repl_db) -> None:
    """LoadTable/LoadPartitions pass the source's write ids, committed there, unknown here:
    a replication target stores them as given and as committed (no writeId in the events, so
    no cache waits for a commit); elsewhere such an id is still refused."""
    start = last_event_id(client)
    transactional_table(client, T, "boot", db=repl_db)
    table = client.get_table(repl_db, "boot")
    table.writeId = 7
    client.alter_table(repl_db, "boot", table)
    assert client.get_table(repl_db, "boot").writeId == 7
    assert all(messages.write_id(body) is None for _, body, _ in events(client, T, start))
    transactional_table(client, T, "other")
    plain = client.get_table("default", "other")
    plain.writeId = 7
    with pytest.raises(T.MetaException, match="invalid write id 7"):
        client.alter_table("default", "other", plain)


def test_repl_loads_own_txn_writes_no_txn_events(client, T, service, repl_db) -> None:
    """REPL LOAD's statement txn (replPolicy, DEFAULT): Hive writes no OPEN_TXN, COMMIT_TXN or
    ABORT_TXN for it (OpenTxnsFunction, CommitTxnFunction, TxnHandler#abortTxn)."""
    start = last_event_id(client)
    [load] = open_txns(client, T, replPolicy=POLICY)
    client.commit_txn(T.CommitTxnRequest(txnid=load, replPolicy=POLICY))
    [failed] = open_txns(client, T, replPolicy=POLICY)
    client.abort_txn(T.AbortTxnRequest(txnid=failed, replPolicy=POLICY))
    assert events(client, T, start) == []
    txns = schema.TXNS
    states = db_rows(
        service, select(txns.c.TXN_ID, txns.c.TXN_STATE).where(txns.c.TXN_ID.in_([load, failed]))
    )
    assert sorted(tuple(r) for r in states) == [(load, "c"), (failed, "a")]


def test_replication_calls_under_an_allow_list_act_for_the_policys_database(
    database_url, tmp_path
) -> None:
    """A replayed txn's id is a source id: the allow-list checks the policy's database, not
    the target txns that id happens to name."""
    from tests.support.apache_thrift import apache_client, load_apache_modules

    T = load_apache_modules().ttypes
    with running_service(database_url, tmp_path / "w", allowed_databases=["repl_db"]) as svc:
        client, trans = apache_client("127.0.0.1", svc.port)
        try:
            client.create_database(T.Database(name="repl_db", parameters={"repl.target.for": "t"}))
            transactional_table(client, T, "t", db="repl_db")
            repl_open(client, T, [91])
            repl_alloc(client, T, "t", [(91, 1)])
            repl_commit(client, T, 91)
            assert repl_map(svc) == []
            with pytest.raises(TApplicationException, match="may not use"):
                repl_open(client, T, [92], policy="other.*")
            with pytest.raises(TApplicationException, match="may not use"):
                repl_open(client, T, [93], policy="*.*")
        finally:
            trans.close()


def test_a_forced_allocation_drops_the_cached_table(client, T, service, repl_db) -> None:
    """A replayed allocation that jumps the table's write ids (the source recreated it) drops
    the cached entry rather than moving its write ids on across ids the table never had."""
    from tests.support.cache import entry, settle

    transactional_table(client, T, "jump", db=repl_db)
    [w] = write_ids(client, T, f"{repl_db}.jump")
    client.get_table_req(
        T.GetTableRequest(dbName=repl_db, tblName="jump", validWriteIdList=as_string(w))
    )
    service.name = "target"
    settle(service)
    assert entry(service, repl_db, "jump") is not None
    repl_open(client, T, [101])
    start = last_event_id(client)
    repl_alloc(client, T, "jump", [(101, 40)])
    [(_, body, _)] = events(client, T, start)
    assert messages.write_ids_forced(body)
    settle(service)
    found = entry(service, repl_db, "jump")
    assert found is None or found.as_of > start  # dropped, then (maybe) loaded again


def _txn_events(client: Any, T: Any, kind: str, txn_ids: list[int]) -> int:
    """How many events of ``kind`` name one of ``txn_ids`` (an OPEN_TXN by its first id, as
    the Hive tests read OpenTxnMessage#getTxnIds().get(0))."""
    found = 0
    for k, body, _ in events(client, T, 0):
        if k != kind:
            continue
        named = body["fromTxnId"] if k == messages.OPEN_TXN else body["txnid"]
        found += int(named) in txn_ids
    return found


def _txns_in_state(client: Any, txn_ids: list[int], state: int) -> int:
    txns = client.get_open_txns_info().open_txns
    return sum(1 for t in txns if t.id in txn_ids and t.state == state)


FAST_TIMEOUT = {"txn_timeout_seconds": 0.2, "txn_housekeeping_interval_seconds": 0}


def _txn_notification_logging(client: Any, T: Any, svc: Any, txn_type: int, expected: int):
    """Three txns of ``txn_type`` opened one by one: ``expected`` OPEN_TXN events name them;
    after the txn timeout, housekeeping aborts all but the replayed ones, with ``expected``
    ABORT_TXN events.

    Only the round's timeouts step runs (Hive's test runs AcidHouseKeeperService, whose
    performTimeOuts this is): the cleaning step (AcidTxnCleanerService's
    cleanEmptyAbortedAndCommittedTxns) removes aborted txns without components once they
    began more than open_txn_timeout_ms ago, so on a slow run the first two of the three had
    already left TXNS when the test counted them."""
    txn_ids: list[int] = []
    for n in range(3, 0, -1):
        if txn_type == REPL_CREATED:
            txn_ids += repl_open(client, T, [11 + n], policy="testPolicy")
        else:
            txn_ids += open_txns(client, T, txn_type=txn_type)
    assert _txns_in_state(client, txn_ids, T.TxnState.OPEN) == len(txn_ids)
    assert _txn_events(client, T, messages.OPEN_TXN, txn_ids) == expected
    time.sleep(0.4)
    perform_timeouts(svc.store.txn)
    if txn_type != REPL_CREATED:
        assert _txns_in_state(client, txn_ids, T.TxnState.ABORTED) == len(txn_ids)
        assert _txn_events(client, T, messages.ABORT_TXN, txn_ids) == expected
    else:  # replayed txns answer to the replication timeout only
        assert _txns_in_state(client, txn_ids, T.TxnState.OPEN) == len(txn_ids)


TXN_LOGGING_CASES = [(REPL_CREATED, 3), (0, 3), (2, 0)]  # REPL_CREATED, DEFAULT, READ_ONLY


@pytest.mark.parametrize(("txn_type", "expected"), TXN_LOGGING_CASES)
def test_txn_notification_logging(database_url, tmp_path, txn_type, expected) -> None:
    """TestTxnNotificationLogging#testTxnNotificationLogging: OPEN_TXN for replayed and
    default txns, none for read-only ones; timed-out txns aborted with ABORT_TXN events (none
    for read-only ones), replayed txns left open."""
    from tests.support.apache_thrift import apache_client, load_apache_modules

    T = load_apache_modules().ttypes
    with running_service(database_url, tmp_path / "w", **FAST_TIMEOUT) as svc:
        client, trans = apache_client("127.0.0.1", svc.port)
        try:
            _txn_notification_logging(client, T, svc, txn_type, expected)
        finally:
            trans.close()


def test_timed_out_txn_notification_logging(database_url, tmp_path) -> None:
    """TestTimedOutTxnNotificationLogging#testTxnNotificationLogging, its three cases on one
    instance: the same assertions through the housekeeping round that aborts timed-out txns
    (AcidHouseKeeperService), each case counting only its own txns' events."""
    from tests.support.apache_thrift import apache_client, load_apache_modules

    T = load_apache_modules().ttypes
    with running_service(database_url, tmp_path / "w", **FAST_TIMEOUT) as svc:
        client, trans = apache_client("127.0.0.1", svc.port)
        try:
            for txn_type, expected in TXN_LOGGING_CASES:
                _txn_notification_logging(client, T, svc, txn_type, expected)
        finally:
            trans.close()


def test_replayed_stats_with_a_committed_source_write_id_are_accepted(client, T, repl_db) -> None:
    """ColumnStatsUpdateTask on a target sends the source's write id with a list naming it as
    the high-water mark; when that id is committed (a bootstrap table's, or a replayed txn's
    on a reload) Hive's verifyStatsChangeCtx accepts it as the request's write id. The
    statistics are taken, under that write id."""
    transactional_table(client, T, "st", db=repl_db)
    table = client.get_table(repl_db, "st")
    table.writeId = 7  # LoadTable: the source's committed write id and statistics state
    table.parameters = {**table.parameters, "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}
    client.alter_table(repl_db, "st", table)
    data = T.LongColumnStatsData(lowValue=0, highValue=9, numNulls=0, numDVs=9)
    stats = T.ColumnStatistics(
        statsDesc=T.ColumnStatisticsDesc(isTblLevel=True, dbName=repl_db, tableName="st"),
        statsObj=[
            T.ColumnStatisticsObj(
                colName="id", colType="int", statsData=T.ColumnStatisticsData(longStats=data)
            )
        ],
        engine="hive",
    )
    for _ in range(2):  # and again, as a load resumed after it replays it
        client.set_aggr_stats_for(
            T.SetPartitionsStatsRequest(
                colStats=[stats],
                writeId=7,
                validWriteIdList=f"{repl_db}.st:7:9223372036854775807::",
                engine="hive",
            )
        )
    rqst = T.TableStatsRequest(dbName=repl_db, tblName="st", colNames=["id"], engine="hive")
    [got] = client.get_table_statistics_req(rqst).tableStats
    assert got.statsData.longStats.highValue == 9


def test_bootstrap_partitions_keep_each_its_own_committed_write_id(client, T, repl_db) -> None:
    """LoadPartitions adds a bootstrapped table's partitions in one call, each with the
    source's committed write id it was last written with: a target stores each its own (one
    write id per call was refused, failing the bootstrap of any table whose partitions were
    written by different txns); elsewhere partitions of one call still share one."""
    for db in (repl_db, "default"):
        transactional_table(client, T, "pt", db=db)
        table = client.get_table(db, "pt")
        table.partitionKeys = [T.FieldSchema(name="name", type="string")]
        client.drop_table(db, "pt", True)
        table.id = None
        client.create_table(table)
        parts = [
            T.Partition(dbName=db, tableName="pt", values=[v], sd=table.sd, writeId=w)
            for v, w in (("bob", 1), ("carl", 2))
        ]
        for p in parts:
            p.sd = T.StorageDescriptor(**{**table.sd.__dict__, "location": None})
        if db == repl_db:
            client.add_partitions(parts)
            got = {p.values[0]: p.writeId for p in client.get_partitions(db, "pt", -1)}
            assert got == {"bob": 1, "carl": 2}
        else:
            with pytest.raises(T.MetaException, match="carry different write ids"):
                client.add_partitions(parts)
