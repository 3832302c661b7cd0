"""Hive replication of transactional tables between two instances on PostgreSQL, driven by the
replay harness (tests/support/repl_replay.py): a workload on the source, REPL DUMP's reads of
it, REPL LOAD's calls on the target, bootstrap then incremental cycles, a load stopped
mid-cycle and replayed. After each cycle the target must answer what the source did at dump
time, and a caching target instance what a cache-off one answers."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.cache import FAST, Counted, ours, settle
from tests.support.repl_replay import Dumper, Loader, LoadStopped, Workload
from tests.support.server import running_service

pytestmark = [pytest.mark.postgres]

DB = "sales"
TABLES = ["parted", "plain"]
TARGET = {"txn_open_timeout_ms": 60_000}
"""A replayed open slower than the open window withdraws and opens again, writing events of
its own; the event-count checks must not depend on the machine's load."""


@pytest.fixture
def T() -> Any:
    return load_apache_modules().ttypes


@pytest.fixture
def world(pg_server: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """source (cache on), target and target2 (cache on) and target_direct (cache off), the
    three on one database."""
    a, b = pg_server.new_database(), pg_server.new_database()
    try:
        with ExitStack() as stack:
            svcs = {
                "source": running_service(a, tmp_path / "src", **FAST),
                "target": running_service(b, tmp_path / "tgt", **TARGET, **FAST),
                "target2": running_service(b, tmp_path / "tgt", **TARGET, **FAST),
                "target_direct": running_service(
                    b, tmp_path / "tgt", **TARGET, cache_enabled=False
                ),
            }
            out: dict[str, Any] = {}
            for name, cm in svcs.items():
                svc = stack.enter_context(cm)
                svc.name = name
                client, trans = apache_client("127.0.0.1", svc.port)
                stack.callback(trans.close)
                out[name], out[f"{name}_client"] = svc, client
            yield out
    finally:
        pg_server.drop_database(a.rsplit("/", 1)[1])
        pg_server.drop_database(b.rsplit("/", 1)[1])


def _rows(svc: Any) -> dict[str, list[tuple[Any, ...]]]:
    """The target's txn tables and log, compared before and after a replay."""
    tables = {
        "TXNS": (schema.TXNS, ["TXN_ID", "TXN_STATE", "TXN_TYPE"]),
        "TXN_TO_WRITE_ID": (schema.TXN_TO_WRITE_ID, ["T2W_TXNID", "T2W_TABLE", "T2W_WRITEID"]),
        "NEXT_WRITE_ID": (schema.NEXT_WRITE_ID, ["NWI_TABLE", "NWI_NEXT"]),
        "REPL_TXN_MAP": (schema.REPL_TXN_MAP, ["RTM_SRC_TXN_ID", "RTM_TARGET_TXN_ID"]),
        "COMPLETED_TXN_COMPONENTS": (
            schema.COMPLETED_TXN_COMPONENTS,
            ["CTC_TXNID", "CTC_TABLE", "CTC_PARTITION", "CTC_WRITEID"],
        ),
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


def _target_write_ids(client: Any, T: Any) -> dict[str, str]:
    """A reader's view on the target: a fresh txn snapshot, then its ValidWriteIdLists."""
    txns = ValidReadTxnList.from_open_txns_response(ours(client.get_open_txns()))
    rqst = T.GetValidWriteIdsRequest(
        fullTableNames=[f"{DB}.{t}" for t in TABLES], validTxnList=txns.to_string()
    )
    got = client.get_valid_write_ids(rqst).tblValidWriteIds
    return {
        t.fullTableName.split(".", 1)[1]: ValidReaderWriteIdList.from_table_valid_write_ids(
            ours(t)
        ).to_string()
        for t in got
    }


def _next_write_ids(client: Any, T: Any) -> dict[str, int]:
    return {
        t: client.get_max_allocated_table_write_id(
            T.MaxAllocatedTableWriteIdRequest(dbName=DB, tableName=t)
        ).maxWriteId
        for t in TABLES
    }


def _repl_map(svc: Any) -> set[int]:
    rtm = schema.REPL_TXN_MAP
    with svc.database.read() as conn:
        return {int(r[0]) for r in conn.execute(select(rtm.c.RTM_SRC_TXN_ID)).all()}


def _event_count(svc: Any) -> int:
    with svc.database.read() as conn:
        return int(conn.execute(select(func.count()).select_from(schema.NOTIFICATION_LOG)).scalar())


def _check_cycle(world: dict[str, Any], T: Any, at_dump: dict[str, str], still_open: set[int]):
    src, tgt = world["source_client"], world["target_client"]
    assert _target_write_ids(tgt, T) == at_dump
    assert _next_write_ids(tgt, T) == _next_write_ids(src, T)
    assert _repl_map(world["target"]) == still_open
    _check_cache(world, T)


def _check_cache(world: dict[str, Any], T: Any) -> None:
    """The caching target answers what the cache-off one does, from the cache only when the
    entry's write ids are the reader's."""
    tgt, direct = world["target_client"], world["target_direct_client"]
    settle(world["target"])
    now = _target_write_ids(tgt, T)
    for name in TABLES:
        rqst = T.GetTableRequest(dbName=DB, tblName=name, validWriteIdList=now[name])
        assert ours(tgt.get_table_req(rqst).table) == ours(direct.get_table_req(rqst).table)
    settle(world["target"])
    with Counted() as counted:
        for name in TABLES:
            rqst = T.GetTableRequest(dbName=DB, tblName=name, validWriteIdList=now[name])
            assert ours(tgt.get_table_req(rqst).table) == ours(direct.get_table_req(rqst).table)
            parts = T.PartitionsRequest(dbName=DB, tblName=name, maxParts=-1)
            parts.validWriteIdList = now[name]
            assert ours(tgt.get_partitions_req(parts).partitions) == ours(
                direct.get_partitions_req(parts).partitions
            )
    assert counted.hits("get_table") == len(TABLES), counted.delta  # W == S: from the cache
    settle(world["target2"])  # a second caching instance followed the same log
    other = world["target2_client"]
    for name in TABLES:
        rqst = T.GetTableRequest(dbName=DB, tblName=name, validWriteIdList=now[name])
        assert ours(other.get_table_req(rqst).table) == ours(direct.get_table_req(rqst).table)


def _events_a_load_adds(events: list[Any]) -> int:
    """One per dumped event (TestReplicationScenariosAcidTables#
    testReplAlterDbEventsNotCapturedInNotificationLog): the target's own ACID_WRITE, written by
    the replayed commit, takes the place of the source's. An aborted txn's ACID_WRITE has no
    commit to replace it."""
    committed = {e.body["txnid"] for e in events if e.kind == "COMMIT_TXN"}
    lost = [e for e in events if e.kind == "ACID_WRITE_EVENT" and e.body["txnid"] not in committed]
    return len(events) - len(lost)


def test_bootstrap_and_incremental_cycles_keep_the_target_equal_to_the_source(world, T) -> None:
    src_client, tgt_client = world["source_client"], world["target_client"]
    work = Workload(src_client, T, DB)
    work.create()
    t1 = work.open()
    work.insert(t1, "plain")
    work.commit(t1)
    t2 = work.open()
    work.insert(t2, "parted", ds="a")
    work.commit(t2)
    t3 = work.open()
    work.insert(t3, "plain")
    work.abort(t3)

    dumper, loader = Dumper(src_client, T, DB), Loader(tgt_client, T, DB)
    boot = dumper.bootstrap()
    loader.bootstrap(boot)
    _check_cycle(world, T, boot.write_ids, set())

    # cycle 1: a multi-statement txn, an aborted partition write, a txn left open
    t4 = work.open()
    work.insert(t4, "plain")
    work.insert(t4, "parted", ds="a")
    work.commit(t4)
    t5 = work.open()
    work.insert(t5, "parted", ds="b")
    work.abort(t5)
    t6 = work.open()
    work.allocate(t6, "plain")
    events = dumper.incremental(loader.last_id())
    at_dump = dumper.write_ids(TABLES)
    before = _event_count(world["target"])
    assert loader.incremental(events) == len(events)
    assert _event_count(world["target"]) - before == _events_a_load_adds(events)
    assert loader.last_id() == events[-1].event_id
    _check_cycle(world, T, at_dump, {t6})

    # cycle 2: the open txn commits; the load stops after an event's calls and runs again
    work.commit(t6)
    t7 = work.open()
    work.insert(t7, "parted", ds="c")
    work.commit(t7)
    events = dumper.incremental(loader.last_id())
    at_dump = dumper.write_ids(TABLES)
    with pytest.raises(LoadStopped):
        loader.incremental(events, stop_after=3)
    loader.incremental(events)
    _check_cycle(world, T, at_dump, set())

    # replaying any suffix of the cycle changes nothing
    settled = _rows(world["target"])
    for start in range(len(events)):
        loader.set_last_id(events[start].event_id - 1)
        loader.incremental(events)
        now = _rows(world["target"])
        assert now == settled, {
            k: set(now[k]) ^ set(settled[k]) for k in now if now[k] != settled[k]
        }
    _check_cycle(world, T, at_dump, set())


def test_aborted_writes_stay_invisible_on_the_target(world, T) -> None:
    """No file of an aborted txn reaches the target's write notifications; its write ids are
    aborted there; COMPLETED_TXN_COMPONENTS holds exactly the committed writes."""
    src_client, tgt_client = world["source_client"], world["target_client"]
    work = Workload(src_client, T, DB)
    work.create()
    dumper, loader = Dumper(src_client, T, DB), Loader(tgt_client, T, DB)
    loader.bootstrap(dumper.bootstrap())
    kept = work.open()
    kept_id = work.insert(kept, "plain")
    work.commit(kept)
    lost = work.open()
    lost_id = work.insert(lost, "plain")
    work.abort(lost)
    loader.incremental(dumper.incremental(loader.last_id()))
    rows = _rows(world["target"])
    assert [r[3] for r in rows["COMPLETED_TXN_COMPONENTS"]] == [kept_id]
    assert all(f"delta_{lost_id:07d}" not in r[3] for r in rows["TXN_WRITE_NOTIFICATION_LOG"])
    w = ValidReaderWriteIdList.parse(_target_write_ids(tgt_client, T)["plain"])
    assert lost_id in w.aborted_write_ids() and w.is_write_id_valid(kept_id)


def _loaded(world: dict[str, Any], T: Any, tables: bool = True) -> tuple[Workload, Dumper, Loader]:
    work = Workload(world["source_client"], T, DB)
    if tables:
        work.create()
    else:
        world["source_client"].create_database(
            T.Database(name=DB, parameters={"repl.source.for": "p1"})
        )
    dumper, loader = Dumper(world["source_client"], T, DB), Loader(world["target_client"], T, DB)
    loader.bootstrap(dumper.bootstrap())
    return work, dumper, loader


def _load_twice(world: dict[str, Any], dumper: Dumper, loader: Loader) -> None:
    """Load the next dump, check REPL STATUS, then load the same dump again: nothing moves."""
    first = loader.last_id()
    events = dumper.incremental(first)
    loader.incremental(events)
    status = world["source_client"].get_current_notificationEventId().eventId
    assert loader.last_id() == events[-1].event_id == status  # REPL STATUS
    settled = _rows(world["target"])
    loader.set_last_id(first)
    loader.incremental(events)
    assert _rows(world["target"]) == settled and loader.last_id() == status


def test_open_txn_event(world, T) -> None:
    """TestReplicationScenariosAcidTables#testOpenTxnEvent."""
    work, dumper, loader = _loaded(world, T)
    txn = work.open()
    work.insert(txn, "plain")
    work.commit(txn)
    _load_twice(world, dumper, loader)
    _check_cycle(world, T, dumper.write_ids(TABLES), set())


def test_abort_txn_event(world, T) -> None:
    """TestReplicationScenariosAcidTables#testAbortTxnEvent."""
    work, dumper, loader = _loaded(world, T)
    txn = work.open()
    work.insert(txn, "plain")
    work.abort(txn)
    _load_twice(world, dumper, loader)
    _check_cycle(world, T, dumper.write_ids(TABLES), set())


def test_repl_alter_db_events_not_captured_in_notification_log(world, T) -> None:
    """TestReplicationScenariosAcidTables#testReplAlterDbEventsNotCapturedInNotificationLog:
    an empty bootstrap adds one event to the target's log, the dump's and load's own database
    alters none, an incremental load as many as it replayed; repl.last.id is the source's
    last event."""
    before = _event_count(world["target"])
    work, dumper, loader = _loaded(world, T, tables=False)
    assert _event_count(world["target"]) - before == 1
    src = world["source_client"]
    db = src.get_database(DB)
    db.parameters = {**db.parameters, "bootstrap.dump.state.4c1f": "ACTIVE"}
    src.alter_database(DB, db)  # REPL DUMP's bootstrap bookkeeping: no event
    work.table("plain")
    txn = work.open()
    work.insert(txn, "plain")
    work.commit(txn)
    events = dumper.incremental(loader.last_id())
    assert "ALTER_DATABASE" not in [e.kind for e in events]
    before = _event_count(world["target"])
    assert loader.incremental(events) == len(events)
    assert _event_count(world["target"]) - before == len(events)
    assert loader.last_id() == src.get_current_notificationEventId().eventId


def test_acid_tables_bootstrap_with_open_txns_timeout(world, T) -> None:
    """TestReplicationScenariosAcidTables#testAcidTablesBootstrapWithOpenTxnsTimeout: REPL
    DUMP aborts the open txns of the database after its timeout and leaves others alone; the
    target's NEXT_WRITE_ID is the source's, it maps the aborted write ids (one
    TXN_TO_WRITE_ID row each), queues one compaction for the table with aborted writes, and
    readers see only committed writes."""
    src = world["source_client"]
    work = Workload(src, T, DB)
    work.create()
    done = work.open()
    work.insert(done, "plain")
    work.commit(done)
    left = work.open()
    work.lock(left, "plain")
    left_id = work.allocate(left, "plain")
    other = Workload(src, T, "other")
    src.create_database(T.Database(name="other"))
    other.table("elsewhere")
    bystander = other.open()
    other.lock(bystander, "elsewhere")

    dumper, loader = Dumper(src, T, DB), Loader(world["target_client"], T, DB)
    assert dumper.abort_open_txns() == [left]
    assert bystander in src.get_open_txns().open_txns
    boot = dumper.bootstrap()
    loader.bootstrap(boot)
    assert _next_write_ids(world["target_client"], T) == _next_write_ids(src, T)
    t2w = schema.TXN_TO_WRITE_ID
    with world["target"].database.read() as conn:
        rows = conn.execute(select(t2w.c.T2W_WRITEID).where(t2w.c.T2W_TABLE == "plain")).all()
    assert [int(r[0]) for r in rows] == [left_id]
    cq = schema.COMPACTION_QUEUE
    with world["target"].database.read() as conn:
        queued = conn.execute(select(cq.c.CQ_TABLE, cq.c.CQ_TYPE)).all()
    assert [tuple(r) for r in queued] == [("plain", "a")]
    w = ValidReaderWriteIdList.parse(_target_write_ids(world["target_client"], T)["plain"])
    assert w.aborted_write_ids() == (left_id,) and w.is_write_id_valid(1)
    assert _target_write_ids(world["target_client"], T) == boot.write_ids


def test_stats_replication_scenarios_acid(world, T) -> None:
    """TestStatsReplicationScenariosACID#verifyReplicatedStatsForTable: after a load, the
    target's column statistics and statistics parameters of a transactional table are the
    source's, written under the replayed txn with the source's write id."""
    work, dumper, loader = _loaded(world, T)
    txn = work.open()
    write_id = work.insert(txn, "plain")
    work.stats(txn, "plain", write_id, high=42)
    work.commit(txn)
    loader.incremental(dumper.incremental(loader.last_id()))
    rqst = T.TableStatsRequest(dbName=DB, tblName="plain", colNames=["id"], engine="hive")
    src, tgt = world["source_client"], world["target_client"]
    want = ours(src.get_table_statistics_req(rqst).tableStats)
    assert want and ours(tgt.get_table_statistics_req(rqst).tableStats) == want
    params = [(c.get_table(DB, "plain").parameters or {}) for c in (src, tgt)]
    accurate = [p.get("COLUMN_STATS_ACCURATE") for p in params]
    assert accurate[0] == accurate[1] and accurate[0] is not None
    assert tgt.get_table(DB, "plain").writeId == write_id


def test_acid_table_incremental_replication_truncate(world, T) -> None:
    """TestReplicationScenariosIncrementalLoadAcidTables#testAcidTableIncrementalReplication,
    its insert then truncate steps: the truncate replays under the replayed txn with the
    source's write id, and the target's write ids and table are the source's."""
    work, dumper, loader = _loaded(world, T)
    txn = work.open()
    work.insert(txn, "plain")
    work.commit(txn)
    txn = work.open()
    truncated = work.truncate(txn, "plain")
    work.commit(txn)
    events = dumper.incremental(loader.last_id())
    assert "ALTER_TABLE" in [e.kind for e in events]
    loader.incremental(events)
    _check_cycle(world, T, dumper.write_ids(TABLES), set())
    src, tgt = world["source_client"], world["target_client"]
    assert tgt.get_table(DB, "plain").writeId == truncated == src.get_table(DB, "plain").writeId
    for key in ("numFiles", "totalSize"):
        assert (tgt.get_table(DB, "plain").parameters or {}).get(key) == (
            src.get_table(DB, "plain").parameters or {}
        ).get(key)
