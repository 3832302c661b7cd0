"""Hive's replication scenarios for transactional tables, through the replay harness
(tests/support/repl_replay.py) between two instances on PostgreSQL: each test is named after
the Hive test it ports and asserts what that test asserts, as far as metadata shows it (a
Hive test's ``select`` reads data files; here the files a reader of the target would find,
its write notifications and write ids, must be the source's)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from hms_cache_proxy import failpoints
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.cache import FAST, ours
from tests.support.repl_replay import Dumped, Dumper, Loader, ReplIncompatible, Workload
from tests.support.server import running_service

pytestmark = [pytest.mark.postgres]

DB = "sales"


@pytest.fixture
def T() -> Any:
    return load_apache_modules().ttypes


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A source and a target (both caching), each on its own database."""
    a, b = pg_server.new_database(), pg_server.new_database()
    try:
        with ExitStack() as stack:
            out: dict[str, Any] = {}
            for name, url in (("source", a), ("target", b)):
                svc = stack.enter_context(
                    running_service(url, tmp_path / name, txn_open_timeout_ms=60_000, **FAST)
                )
                client, trans = apache_client("127.0.0.1", svc.port)
                stack.callback(trans.close)
                out[name], out[f"{name}_client"] = svc, client
            yield out
    finally:
        pg_server.drop_database(a.rsplit("/", 1)[1])
        pg_server.drop_database(b.rsplit("/", 1)[1])


def _write_ids(client: Any, T: Any, tables: list[str]) -> dict[str, str]:
    """A reader's ValidWriteIdLists under a fresh snapshot."""
    txns = ValidReadTxnList.from_open_txns_response(ours(client.get_open_txns()))
    rqst = T.GetValidWriteIdsRequest(
        fullTableNames=[f"{DB}.{t}" for t in tables], validTxnList=txns.to_string()
    )
    return {
        t.fullTableName.split(".", 1)[1]: ValidReaderWriteIdList.from_table_valid_write_ids(
            ours(t)
        ).to_string()
        for t in client.get_valid_write_ids(rqst).tblValidWriteIds
    }


def _visible_files(svc: Any, client: Any, T: Any) -> dict[tuple[str, str], set[str]]:
    """What a reader's ``select`` would scan: per (table, partition), the files (by delta or
    base directory and name) of the valid write ids' notifications, under the latest base."""
    tables = sorted(client.get_all_tables(DB))
    valid = {t: ValidReaderWriteIdList.parse(w) for t, w in _write_ids(client, T, tables).items()}
    wnl = schema.TXN_WRITE_NOTIFICATION_LOG
    with svc.database.read() as conn:
        rows = conn.execute(
            select(wnl.c.WNL_TABLE, wnl.c.WNL_PARTITION, wnl.c.WNL_WRITEID, wnl.c.WNL_FILES).where(
                wnl.c.WNL_DATABASE == DB
            )
        ).all()
    by_part: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for table, part, write_id, files in rows:
        if table not in valid or not valid[table].is_write_id_valid(int(write_id)):
            continue
        for f in files.split(","):
            path = f.split("#", 1)[0]
            by_part.setdefault((table, part or ""), []).append(
                (int(write_id), "/".join(path.rsplit("/", 2)[-2:]))
            )
    out = {}
    for key, found in by_part.items():
        bases = [w for w, f in found if f.startswith("base_")]
        floor = max(bases, default=0)
        out[key] = {f for w, f in found if w >= floor}
    return out


def _shape(client: Any) -> dict[str, Any]:
    """Tables, their columns, partitions and transactional properties."""
    out = {}
    for name in sorted(client.get_all_tables(DB)):
        t = client.get_table(DB, name)
        params = t.parameters or {}
        out[name] = (
            [(c.name, c.type) for c in t.sd.cols],
            sorted(client.get_partition_names(DB, name, -1)),
            params.get("transactional"),
            params.get("transactional_properties"),
        )
    return out


def _rows(svc: Any) -> dict[str, list[tuple[Any, ...]]]:
    tables = {
        "TXNS": (schema.TXNS, ["TXN_ID", "TXN_STATE"]),
        "TXN_TO_WRITE_ID": (schema.TXN_TO_WRITE_ID, ["T2W_TXNID", "T2W_TABLE", "T2W_WRITEID"]),
        "NEXT_WRITE_ID": (schema.NEXT_WRITE_ID, ["NWI_TABLE", "NWI_NEXT"]),
        "REPL_TXN_MAP": (schema.REPL_TXN_MAP, ["RTM_SRC_TXN_ID", "RTM_TARGET_TXN_ID"]),
        "TXN_WRITE_NOTIFICATION_LOG": (
            schema.TXN_WRITE_NOTIFICATION_LOG,
            ["WNL_TXNID", "WNL_TABLE", "WNL_PARTITION", "WNL_FILES"],
        ),
        "NOTIFICATION_LOG": (schema.NOTIFICATION_LOG, ["EVENT_ID", "EVENT_TYPE"]),
    }
    out = {}
    with svc.database.read() as conn:
        for name, (table, cols) in tables.items():
            stmt = select(*[table.c[c] for c in cols])
            out[name] = sorted(tuple(r) for r in conn.execute(stmt).all())
    return out


def _bootstrapped(pair: dict[str, Any], T: Any) -> tuple[Workload, Dumper, Loader]:
    src = pair["source_client"]
    src.create_database(T.Database(name=DB, parameters={"repl.source.for": "p1"}))
    dumper, loader = Dumper(src, T, DB), Loader(pair["target_client"], T, DB)
    loader.bootstrap(dumper.bootstrap())
    return Workload(src, T, DB), dumper, loader


def _one_txn(work: Workload, fn: Any) -> None:
    txn = work.open()
    fn(txn)
    work.commit(txn)


def _insert_records(work: Workload, name: str, insert_only: bool = False) -> None:
    """ReplicationTestUtils#insertIntoDB, shortened: a table partitioned by load_date with one
    partition added empty, an insert into each of three partitions, and its _nopart twin
    filled from it."""
    work.table(name, partitioned=True, key="load_date", insert_only=insert_only)
    work.table(f"{name}_nopart", insert_only=insert_only)
    work.partition(name, "2016-03-03")
    for ds in ("2016-03-01", "2016-03-02", "2016-03-03"):
        _one_txn(work, lambda txn, ds=ds: work.insert(txn, name, ds))
    _one_txn(work, lambda txn: work.insert(txn, f"{name}_nopart"))


def _acid_table_incremental_workload(work: Workload) -> None:
    """The steps of testAcidTableIncrementalReplication, as HiveServer2's metadata calls."""
    # insert (full ACID and insert-only), with partition statistics
    _insert_records(work, "testinsert")
    _insert_records(work, "testinsert_mm", insert_only=True)

    def part_stats(txn: int) -> None:
        w = work.insert(txn, "testinsert", "2016-03-01")
        work.stats(txn, "testinsert", w, high=2, ds="2016-03-01")

    _one_txn(work, part_stats)
    # delete, update
    _insert_records(work, "testdelete")
    for ds in ("2016-03-01", "2016-03-02", "2016-03-03"):
        _one_txn(work, lambda txn, ds=ds: work.delete(txn, "testdelete", ds))
    _insert_records(work, "testupdate")
    _one_txn(work, lambda txn: work.update(txn, "testupdate", "2016-03-02"))
    # truncate
    _insert_records(work, "testtruncate")
    _one_txn(work, lambda txn: work.truncate(txn, "testtruncate"))
    _one_txn(work, lambda txn: work.truncate(txn, "testtruncate_nopart"))
    # insert into ... select: a dynamic-partition insert
    work.table("testinsert_select", partitioned=True, key="load_date")

    def insert_select(txn: int) -> None:
        w = work.allocate(txn, "testinsert_select")
        for ds in ("2016-03-01", "2016-03-02", "2016-03-03"):
            work.write(txn, "testinsert_select", w, ds)

    _one_txn(work, insert_select)
    # merge: matched rows updated or deleted, unmatched inserted into a new partition
    work.table("testmerge", partitioned=True, key="tran_date")
    for ds in ("20170410", "20170413"):
        _one_txn(work, lambda txn, ds=ds: work.insert(txn, "testmerge", ds))

    def merge(txn: int) -> None:
        w = work.allocate(txn, "testmerge")
        work.write(txn, "testmerge", w, "20170410", kinds=("delete_delta", "delta"), stmt=0)
        work.write(txn, "testmerge", w, "20170413", kinds=("delete_delta",), stmt=1)
        work.write(txn, "testmerge", w, "20170415", kinds=("delta",), stmt=2)

    _one_txn(work, merge)

    # create table as select: the table created in the txn that writes it
    def ctas(txn: int) -> None:
        work.table("testinsert_ctas", partitioned=True, key="load_date")
        w = work.allocate(txn, "testinsert_ctas")
        for ds in ("2016-03-01", "2016-03-02", "2016-03-03"):
            work.write(txn, "testinsert_ctas", w, ds)

    _one_txn(work, ctas)

    # import: a new table, its partitions added under the import's write id
    def import_(txn: int) -> None:
        work.table("testinsert_import", partitioned=True, key="load_date")
        w = work.allocate(txn, "testinsert_import")
        for ds in ("2016-03-01", "2016-03-02", "2016-03-03"):
            work.partition("testinsert_import", ds, w)
            work.write(txn, "testinsert_import", w, ds)

    _one_txn(work, import_)
    # insert overwrite: a new base over the partition's and the table's earlier deltas
    _insert_records(work, "testinsert_ow")
    _one_txn(work, lambda txn: work.insert_overwrite(txn, "testinsert_ow", "2016-03-01"))
    _one_txn(work, lambda txn: work.insert_overwrite(txn, "testinsert_ow_nopart"))

    # multi-statement txn: several tables and partitions in one txn
    def multi(txn: int) -> None:
        for ds in ("2016-03-01", "2016-03-02"):
            work.insert(txn, "testinsert", ds)
        work.insert(txn, "testinsert_nopart")

    _one_txn(work, multi)
    # alter table ... change value value1
    _insert_records(work, "testaltertable")
    _one_txn(work, lambda txn: work.alter_column(txn, "testaltertable", "id", "value1"))
    _one_txn(work, lambda txn: work.alter_column(txn, "testaltertable_nopart", "id", "value1"))
    # not in Hive's steps: drops, so the load replays DROP_PARTITION and DROP_TABLE too
    work.drop_partition("testdelete", "2016-03-03")
    work.drop_table("testupdate_nopart")


def _partition_stats(client: Any, T: Any) -> Any:
    rqst = T.PartitionsStatsRequest(
        dbName=DB,
        tblName="testinsert",
        colNames=["id"],
        partNames=["load_date=2016-03-01"],
        engine="hive",
    )
    return {k: ours(v) for k, v in client.get_partitions_statistics_req(rqst).partStats.items()}


def test_acid_table_incremental_replication(pair, T) -> None:
    """TestReplicationScenariosIncrementalLoadAcidTables#testAcidTableIncrementalReplication:
    insert, delete, update, truncate, insert-select, merge, CTAS, import, insert overwrite, a
    multi-statement txn and alter, through one incremental load: REPL STATUS is the dump's
    last event, and every table reads on the target what it reads on the source; loading the
    same dump again changes nothing (REPL LOAD skips events at or below repl.last.id)."""
    work, dumper, loader = _bootstrapped(pair, T)
    _acid_table_incremental_workload(work)
    src, tgt = pair["source_client"], pair["target_client"]
    events = dumper.incremental(loader.last_id())
    kinds = {e.kind for e in events}
    assert {"ALTER_TABLE", "ADD_PARTITION", "UPDATE_PART_COL_STAT_EVENT"} <= kinds
    assert {"DROP_PARTITION", "DROP_TABLE"} <= kinds
    loader.incremental(events)
    status = src.get_current_notificationEventId().eventId
    assert loader.last_id() == events[-1].event_id == status  # REPL STATUS

    def same() -> None:
        assert _shape(tgt) == _shape(src)
        tables = sorted(src.get_all_tables(DB))
        assert _write_ids(tgt, T, tables) == _write_ids(src, T, tables)
        assert _visible_files(pair["target"], tgt, T) == _visible_files(pair["source"], src, T)
        assert _partition_stats(tgt, T) == _partition_stats(src, T) != {}

    same()
    cols = [c.name for c in tgt.get_table(DB, "testaltertable").sd.cols]
    assert cols == ["value1"]
    ow = _visible_files(pair["target"], tgt, T)[("testinsert_ow", "load_date=2016-03-01")]
    assert all(f.startswith("base_") for f in ow)  # the overwrite hides the earlier deltas
    settled = _rows(pair["target"])
    assert loader.incremental(events) == 0  # the same dump again: every event is skipped
    assert loader.last_id() == status
    assert _rows(pair["target"]) == settled
    same()


def test_acid_bootstrap_repl_load_retry_after_failure(pair, T) -> None:
    """TestReplicationScenariosAcidTables#testAcidBootstrapReplLoadRetryAfterFailure: a
    bootstrap load whose creation of t2 fails in the target metastore leaves no t2 and no
    REPL STATUS; the retry with the same dump loads t2 only and ends with REPL STATUS the
    dump's, both tables, t1's write ids and t2's partitions."""
    src = pair["source_client"]
    src.create_database(T.Database(name=DB, parameters={"repl.source.for": "p1"}))
    work = Workload(src, T, DB)
    work.table("t1")
    work.table("t2", partitioned=True, key="name", insert_only=True)
    _one_txn(work, lambda txn: work.insert(txn, "t1"))
    _one_txn(work, lambda txn: work.insert(txn, "t2", "bob"))
    _one_txn(work, lambda txn: work.insert(txn, "t2", "carl"))
    dumper, tgt = Dumper(src, T, DB), pair["target_client"]
    boot = dumper.bootstrap()
    loader = Loader(tgt, T, DB)

    def refuse(name: str, detail: str) -> None:
        raise failpoints.FailpointError("injected: the metastore refuses t2")

    def fail_at_t2(table: str) -> None:  # the injected ObjectStore refuses t2's creation
        if table == "t2":
            failpoints.set("write.before_commit", refuse)

    try:
        with pytest.raises(T.MetaException):
            loader.bootstrap(boot, before_table=fail_at_t2)
    finally:
        failpoints.clear("write.before_commit")
    assert "repl.last.id" not in (tgt.get_database(DB).parameters or {})  # REPL STATUS: null
    assert tgt.get_tables(DB, "t2") == []
    before = tgt.get_current_notificationEventId().eventId
    loader.bootstrap(boot)  # the same dump
    retried = tgt.get_next_notification(T.NotificationEventRequest(lastEvent=before)).events
    created = [e.tableName for e in retried if e.eventType == messages.CREATE_TABLE]
    assert created == ["t2"]  # t1, loaded from this dump already, is not created again
    assert loader.last_id() == boot.last_event
    assert sorted(tgt.get_all_tables(DB)) == ["t1", "t2"]
    assert _write_ids(tgt, T, ["t1", "t2"]) == boot.write_ids
    assert tgt.get_partition_names(DB, "t2", -1) == ["name=bob", "name=carl"]
    db = tgt.get_database(DB).parameters
    assert db["repl.target.for"] == "true"  # verifyReplTargetProperty


def test_target_db_repl_incompatible_with_no_prop_set(pair, T) -> None:
    """TestReplicationScenariosAcidTables#testTargetDbReplIncompatibleWithNoPropSet (and, with
    repl.incompatible=false set first, ...WithPropSet): a source txn aborted and another left
    open replay without making the target incompatible; aborting the open one's target txn
    outside replication does, and the next load fails with REPL_INCOMPATIBLE."""
    _target_db_repl_incompatible(pair, T, set_prop=False)


def test_target_db_repl_incompatible_with_prop_set(pair, T) -> None:
    """TestReplicationScenariosAcidTables#testTargetDbReplIncompatibleWithPropSet."""
    _target_db_repl_incompatible(pair, T, set_prop=True)


def _target_db_repl_incompatible(pair: dict[str, Any], T: Any, set_prop: bool) -> None:
    work, dumper, loader = _bootstrapped(pair, T)
    work.table("t1")
    tgt = pair["target_client"]
    loader.incremental(dumper.incremental(loader.last_id()))
    if set_prop:
        db = tgt.get_database(DB)
        db.parameters = {**db.parameters, "repl.incompatible": "false"}
        tgt.alter_database(DB, db)
        assert tgt.get_database(DB).parameters["repl.incompatible"] == "false"

    def incompatible() -> bool:
        return (tgt.get_database(DB).parameters or {}).get("repl.incompatible") == "true"

    assert not incompatible()
    work.abort(work.open())
    left_open = work.open()
    loader.incremental(dumper.incremental(loader.last_id()))
    assert not incompatible()
    rtm = schema.REPL_TXN_MAP
    with pair["target"].database.read() as conn:
        [target] = conn.execute(
            select(rtm.c.RTM_TARGET_TXN_ID).where(rtm.c.RTM_SRC_TXN_ID == left_open)
        ).scalars()
    tgt.abort_txn(T.AbortTxnRequest(txnid=int(target)))
    assert incompatible()
    with pytest.raises(ReplIncompatible):
        loader.incremental(dumper.incremental(loader.last_id()))
    work.abort(left_open)


TXN_KINDS = (messages.OPEN_TXN, messages.COMMIT_TXN, messages.ABORT_TXN)


def _txn_event_counts(client: Any, T: Any, after: int) -> dict[str, int]:
    found = client.get_next_notification(T.NotificationEventRequest(lastEvent=after)).events
    return {k: sum(1 for e in found if e.eventType == k) for k in TXN_KINDS}


def _filter_transactions(pair: dict[str, Any], T: Any, optimized: bool) -> None:
    """TestReplicationFilterTransactions: the source's incremental workload opens 9 txns,
    commits 7 and aborts 2, some in a database that is not replicated. Unoptimized, the dump
    holds every txn event and the replica replays them all; with hive.repl.filter.transactions
    the dump holds no OPEN_TXN and the commit and abort of the other database's txns are left
    out (4 opens, 3 commits, 1 abort fewer on the replica), each allocation opening its txn.
    Every replica txn maps one source txn, at one offset (the source burnt txn ids first); the
    map is empty after the load."""
    src, tgt = pair["source_client"], pair["target_client"]
    src.create_database(T.Database(name=DB, parameters={"repl.source.for": "1,2,3"}))
    src.create_database(T.Database(name="other"))
    work, other = Workload(src, T, DB), Workload(src, T, "other")
    # prepareBootstrapData: txn ids burnt on a dropped table, then t10, t1, t2, t3 written
    work.table("t999")
    for _ in range(10):
        _one_txn(work, lambda txn: work.insert(txn, "t999"))
    work.drop_table("t999")
    for w in (work, other):
        w.table("t10" if w is work else "t0")
        w.table("t1")
        w.table("t2", partitioned=True, key="country")
        w.table("t3")
    _one_txn(work, lambda txn: work.insert(txn, "t10"))
    for w, country in ((work, "india"), (other, "usa")):
        _one_txn(w, lambda txn, w=w: w.insert(txn, "t1"))
        _one_txn(w, lambda txn, w=w, c=country: w.insert(txn, "t2", c))
        _one_txn(w, lambda txn, w=w: w.insert(txn, "t3"))
    dumper = Dumper(src, T, DB)
    boot = dumper.bootstrap()
    mapping: dict[int, int] = {}

    def poll_map(ev: Dumped) -> None:  # the replica listener's read of REPL_TXN_MAP
        rtm = schema.REPL_TXN_MAP
        with pair["target"].database.read() as conn:
            rows = conn.execute(select(rtm.c.RTM_SRC_TXN_ID, rtm.c.RTM_TARGET_TXN_ID)).all()
        mapping.update({int(s): int(t) for s, t in rows})

    loader = Loader(tgt, T, DB, filter_txns=optimized, after_event=poll_map)
    loader.bootstrap(boot)
    # prepareIncrementalData: 4 commits and an aborted update here, the same in the other db
    src_start = src.get_current_notificationEventId().eventId
    _one_txn(work, lambda txn: work.insert(txn, "t1"))
    _one_txn(work, lambda txn: work.insert(txn, "t2", "india"))
    _one_txn(work, lambda txn: work.insert(txn, "t2", "india"))
    _one_txn(work, lambda txn: work.truncate(txn, "t10"))
    failed = work.open()
    work.allocate(failed, "t3")  # the update fails after its write id was allocated
    work.abort(failed)
    _one_txn(other, lambda txn: other.insert(txn, "t1"))
    _one_txn(other, lambda txn: other.insert(txn, "t2", "usa"))
    _one_txn(other, lambda txn: other.insert(txn, "t2", "usa"))
    failed = other.open()
    other.allocate(failed, "t3")
    other.abort(failed)
    assert _txn_event_counts(src, T, src_start) == {
        messages.OPEN_TXN: 9,
        messages.COMMIT_TXN: 7,
        messages.ABORT_TXN: 2,
    }
    events = dumper.incremental(loader.last_id(), filter_txns=optimized)
    filtered = (4, 3, 1) if optimized else (0, 0, 0)
    dumped = {k: sum(1 for e in events if e.kind == k) for k in TXN_KINDS}
    assert dumped == {
        messages.OPEN_TXN: 0 if optimized else 9,
        messages.COMMIT_TXN: 7 - filtered[1],
        messages.ABORT_TXN: 2 - filtered[2],
    }
    tgt_start = tgt.get_current_notificationEventId().eventId
    loader.incremental(events)
    replica = _txn_event_counts(tgt, T, tgt_start)
    assert replica == {
        messages.OPEN_TXN: 9 - filtered[0],
        messages.COMMIT_TXN: 7 - filtered[1],
        messages.ABORT_TXN: 2 - filtered[2],
    }
    assert len(mapping) == replica[messages.OPEN_TXN]
    assert len({s - t for s, t in mapping.items()}) == 1  # one offset
    assert all(s != t for s, t in mapping.items())
    assert _rows(pair["target"])["REPL_TXN_MAP"] == []
    assert loader.last_id() == events[-1].event_id


def test_txn_events_unoptimized(pair, T) -> None:
    """TestReplicationFilterTransactions#testTxnEventsUnoptimized."""
    _filter_transactions(pair, T, optimized=False)


def test_txn_events_optimized(pair, T) -> None:
    """TestReplicationFilterTransactions#testTxnEventsOptimized."""
    _filter_transactions(pair, T, optimized=True)
