"""A replay harness for Hive replication of transactional tables between two instances.

- ``Workload`` sends a source what HiveServer2 sends for ACID writes: open_txns,
  allocate_table_write_ids, add_partitions_req, add_write_notification_log (with the delta
  directory), commit_txn or abort_txn.
- ``Dumper`` reads the source as REPL DUMP does: a bootstrap (objects, and per transactional
  table the ValidWriteIdList under a txn snapshot that leaves out READ_ONLY and REPL_CREATED
  txns) and incremental cycles (the notification log after the last replicated event, each
  COMMIT_TXN extended with ``get_all_write_event_info`` as JSONCommitTxnMessage does).
- ``Loader`` makes the calls Hive's load handlers make on a target: bootstrap in LoadTable's
  order (create, repl_tbl_writeid_state, partitions), then one event at a time, each followed
  by ``alter_database(repl.last.id=<event id>)``; events at or below ``repl.last.id`` are
  skipped, so a load stopped after an event's calls and before that update replays them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList
from tests.support.apache_thrift import to_apache
from tests.support.cache import ours
from tests.support.repl_dump import add_write_event_info

READ_ONLY, REPL_CREATED = 5, 1
LONG_MAX = 9223372036854775807
TXN = {"transactional": "true", "transactional_properties": "default"}


def policy_of(db: str) -> str:
    """HiveUtils#getReplPolicy for a database-level dump."""
    return f"{db.lower()}.*"


# -- the source's workload ------------------------------------------------------------------


class Workload:
    """ACID writes on the source, as HiveServer2 makes them."""

    def __init__(self, client: Any, T: Any, db: str) -> None:
        self.c, self.T, self.db = client, T, db

    def create(self) -> None:
        T = self.T
        self.c.create_database(T.Database(name=self.db, parameters={"repl.source.for": "p1"}))
        self.table("plain")
        self.table("parted", partitioned=True)

    def table(self, name: str, partitioned: bool = False) -> None:
        T = self.T
        sd = T.StorageDescriptor(
            cols=[T.FieldSchema(name="id", type="int")],
            inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
            serdeInfo=T.SerDeInfo(
                serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={}
            ),
            numBuckets=-1,
            compressed=False,
            parameters={},
            bucketCols=[],
            sortCols=[],
        )
        keys = [T.FieldSchema(name="ds", type="string")] if partitioned else []
        self.c.create_table(
            T.Table(
                tableName=name,
                dbName=self.db,
                owner="hive",
                sd=sd,
                partitionKeys=keys,
                parameters=dict(TXN),
                tableType="MANAGED_TABLE",
            )
        )

    def open(self) -> int:
        rqst = self.T.OpenTxnRequest(num_txns=1, user="hive", hostname="hs2")
        return int(self.c.open_txns(rqst).txn_ids[0])

    def allocate(self, txn: int, table: str) -> int:
        rqst = self.T.AllocateTableWriteIdsRequest(dbName=self.db, tableName=table, txnIds=[txn])
        return int(self.c.allocate_table_write_ids(rqst).txnToWriteIds[0].writeId)

    def insert(self, txn: int, table: str, ds: str | None = None) -> int:
        """One insert's metadata calls; returns the write id."""
        T = self.T
        write_id = self.allocate(txn, table)
        vals = None
        if ds is not None:
            vals = [ds]
            have = self.c.get_partition_names(self.db, table, -1)
            if f"ds={ds}" not in have:
                src = self.c.get_table(self.db, table)
                sd = src.sd
                sd.location = f"{src.sd.location}/ds={ds}"
                part = T.Partition(
                    dbName=self.db, tableName=table, values=vals, sd=sd, writeId=write_id
                )
                self.c.add_partitions_req(
                    T.AddPartitionsRequest(
                        dbName=self.db, tblName=table, parts=[part], ifNotExists=True
                    )
                )
        delta = f"delta_{write_id:07d}_{write_id:07d}_0000"
        info = T.InsertEventRequestData(
            filesAdded=[f"hdfs://src/{self.db}/{table}/{delta}/bucket_00000"],
            subDirectoryList=[delta],
        )
        self.c.add_write_notification_log(
            T.WriteNotificationLogRequest(
                txnId=txn,
                writeId=write_id,
                db=self.db,
                table=table,
                fileInfo=info,
                partitionVals=vals,
            )
        )
        return write_id

    def lock(self, txn: int, table: str) -> None:
        """The shared-write lock an insert takes (what REPL DUMP's bootstrap finds the open
        txns of a database by)."""
        T = self.T
        component = T.LockComponent(
            type=T.LockType.SHARED_WRITE,
            level=T.LockLevel.TABLE,
            dbname=self.db,
            tablename=table,
            operationType=T.DataOperationType.INSERT,
            isTransactional=True,
        )
        self.c.lock(T.LockRequest(component=[component], txnid=txn, user="hive", hostname="hs2"))

    def stats(self, txn: int, table: str, write_id: int, high: int) -> None:
        """The column statistics an insert's autogather writes in its txn."""
        T = self.T
        snapshot = self.T.GetValidWriteIdsRequest(
            fullTableNames=[f"{self.db}.{table}"], validTxnList=None, writeId=write_id
        )
        [tvwi] = self.c.get_valid_write_ids(snapshot).tblValidWriteIds
        from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

        vwil = ValidReaderWriteIdList.from_table_valid_write_ids(ours(tvwi)).to_string()
        data = T.LongColumnStatsData(lowValue=0, highValue=high, numNulls=0, numDVs=high)
        stats = T.ColumnStatistics(
            statsDesc=T.ColumnStatisticsDesc(isTblLevel=True, dbName=self.db, tableName=table),
            statsObj=[
                T.ColumnStatisticsObj(
                    colName="id", colType="int", statsData=T.ColumnStatisticsData(longStats=data)
                )
            ],
            engine="hive",
        )
        self.c.set_aggr_stats_for(
            T.SetPartitionsStatsRequest(
                colStats=[stats], writeId=write_id, validWriteIdList=vwil, engine="hive"
            )
        )

    def truncate(self, txn: int, table: str) -> int:
        """TRUNCATE TABLE of a transactional table: a write id of its own."""
        write_id = self.allocate(txn, table)
        self.c.truncate_table_req(
            self.T.TruncateTableRequest(dbName=self.db, tableName=table, writeId=write_id)
        )
        return write_id

    def commit(self, txn: int) -> None:
        self.c.commit_txn(self.T.CommitTxnRequest(txnid=txn))

    def abort(self, txn: int) -> None:
        self.c.abort_txn(self.T.AbortTxnRequest(txnid=txn))


# -- REPL DUMP --------------------------------------------------------------------------------


@dataclass
class Bootstrap:
    last_event: int
    database: Any
    tables: list[Any]
    partitions: dict[str, list[Any]]
    write_ids: dict[str, str]


@dataclass
class Dumped:
    event_id: int
    kind: str
    body: dict[str, Any]
    db_name: str | None


@dataclass
class Dumper:
    client: Any
    T: Any
    db: str
    dumps: list[Any] = field(default_factory=list)

    def txn_snapshot(self) -> str:
        rqst = self.T.GetOpenTxnsRequest(excludeTxnTypes=[READ_ONLY, REPL_CREATED])
        return ValidReadTxnList.from_open_txns_response(
            ours(self.client.get_open_txns_req(rqst))
        ).to_string()

    def write_ids(self, tables: list[str]) -> dict[str, str]:
        """Each transactional table's ValidWriteIdList under REPL DUMP's txn snapshot."""
        from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

        if not tables:
            return {}
        rqst = self.T.GetValidWriteIdsRequest(
            fullTableNames=[f"{self.db}.{t}" for t in tables], validTxnList=self.txn_snapshot()
        )
        got = self.client.get_valid_write_ids(rqst).tblValidWriteIds
        return {
            t.fullTableName.split(".", 1)[1]: ValidReaderWriteIdList.from_table_valid_write_ids(
                ours(t)
            ).to_string()
            for t in got
        }

    def abort_open_txns(self) -> list[int]:
        """ReplDumpTask#getValidTxnListForReplDump after hive.repl.bootstrap.dump.open.txn.timeout
        with abort.write.txn.after.timeout: the open txns holding locks on this database are
        aborted (those of other databases are left alone)."""
        rqst = self.T.GetOpenTxnsRequest(excludeTxnTypes=[READ_ONLY, REPL_CREATED])
        listed = ours(self.client.get_open_txns_req(rqst))
        snapshot = ValidReadTxnList.from_open_txns_response(listed)
        open_ids = {t for t in listed.open_txns if not snapshot.is_txn_aborted(t)}
        locks = self.client.show_locks(self.T.ShowLocksRequest(dbname=self.db)).locks or []
        mine = sorted({lk.txnid for lk in locks if lk.txnid in open_ids})
        if mine:
            self.client.abort_txns(self.T.AbortTxnsRequest(txn_ids=mine))
        return mine

    def bootstrap(self) -> Bootstrap:
        last = int(self.client.get_current_notificationEventId().eventId)
        names = sorted(self.client.get_all_tables(self.db))
        tables = self.client.get_table_objects_by_name(self.db, names)
        partitions = {
            t.tableName: self.client.get_partitions(self.db, t.tableName, -1) for t in tables
        }
        acid = [t.tableName for t in tables if (t.parameters or {}).get("transactional") == "true"]
        return Bootstrap(
            last, self.client.get_database(self.db), tables, partitions, self.write_ids(acid)
        )

    def incremental(self, after: int) -> list[Dumped]:
        """Every event after ``after`` this database's load replays (txn events of every
        database, as Hive dumps them with hive.repl.filter.transactions off)."""
        rqst = self.T.NotificationEventRequest(lastEvent=after, maxEvents=100_000)
        out = []
        for e in self.client.get_next_notification(rqst).events:
            body = messages.decode(e.message, e.messageFormat)
            if e.eventType == messages.COMMIT_TXN:
                infos = self.client.get_all_write_event_info(
                    self.T.GetAllWriteEventInfoRequest(txnId=body["txnid"], dbName=self.db)
                )
                body = add_write_event_info(body, infos)
            if e.dbName and e.dbName.lower() != self.db and e.eventType != messages.COMMIT_TXN:
                continue
            out.append(Dumped(int(e.eventId), e.eventType, body, e.dbName))
        return out


# -- REPL LOAD --------------------------------------------------------------------------------


class ReplIncompatible(Exception):
    """REPL_INCOMPATIBLE_EXCEPTION: the target database was changed outside replication."""


class LoadStopped(Exception):
    """The load stopped after an event's calls and before its repl.last.id update."""


class Loader:
    """The calls Hive's REPL LOAD makes on a target, one method per load handler."""

    def __init__(self, client: Any, T: Any, db: str) -> None:
        self.c, self.T, self.db = client, T, db
        self.policy = policy_of(db)

    # bootstrap (LoadDatabase, LoadTable, LoadPartitions)

    def bootstrap(self, dump: Bootstrap) -> None:
        T = self.T
        params = {
            k: v for k, v in (dump.database.parameters or {}).items() if k != "repl.source.for"
        }
        params.update({"hive.repl.ckpt.key": "/dump/1", "repl.target.for": "true"})
        self.c.create_database(
            T.Database(name=self.db, description=dump.database.description, parameters=params)
        )
        for table in dump.tables:
            table.id = None  # its writeId stays: a committed source write id, stored as given
            table.sd.location = None  # the target's warehouse
            self.c.create_table(table)
            state = dump.write_ids.get(table.tableName)
            if state is not None:
                self.c.repl_tbl_writeid_state(
                    T.ReplTblWriteIdStateRequest(
                        validWriteIdlist=state,
                        user="hive",
                        hostName="load",
                        dbName=self.db,
                        tableName=table.tableName,
                    )
                )
            parts = dump.partitions.get(table.tableName) or []
            for p in parts:
                p.sd.location = None  # (LoadPartitions passes the source's writeId)
            if parts:
                self.c.add_partitions(parts)
        self.set_last_id(dump.last_event)

    # incremental (IncrementalLoadTasksBuilder)

    def last_id(self) -> int:
        return int((self.c.get_database(self.db).parameters or {}).get("repl.last.id", "0"))

    def set_last_id(self, event_id: int) -> None:
        db = self.c.get_database(self.db)
        db.parameters = {**(db.parameters or {}), "repl.last.id": str(event_id)}
        self.c.alter_database(self.db, db)

    def incremental(self, events: list[Dumped], stop_after: int | None = None) -> int:
        """Replay ``events`` (those at or below repl.last.id skipped); ``stop_after``: stop
        after that many events' calls, before the last one's repl.last.id update. Returns how
        many events were replayed."""
        params = self.c.get_database(self.db).parameters or {}
        if params.get("repl.incompatible", "").lower() == "true":
            raise ReplIncompatible(self.db)
        done = self.last_id()
        replayed = 0
        for ev in events:
            if ev.event_id <= done:
                continue
            getattr(self, f"_on_{ev.kind.lower()}", self._ignore)(ev)
            replayed += 1
            if stop_after is not None and replayed == stop_after:
                raise LoadStopped(ev.event_id)
            self.set_last_id(ev.event_id)
        return replayed

    def _ignore(self, ev: Dumped) -> None:
        """DefaultHandler: ACID_WRITE and kinds this harness does not replay."""

    def _on_open_txn(self, ev: Dumped) -> None:
        src = list(range(int(ev.body["fromTxnId"]), int(ev.body["toTxnId"]) + 1))
        self.c.open_txns(
            self.T.OpenTxnRequest(
                num_txns=len(src),
                user="hive",
                hostname="load",
                replPolicy=self.policy,
                replSrcTxnIds=src,
                txn_type=REPL_CREATED,
            )
        )

    def _on_alloc_write_id_event(self, ev: Dumped) -> None:
        pairs = zip(ev.body["txnIdList"], ev.body["writeIdList"], strict=True)
        self.c.allocate_table_write_ids(
            self.T.AllocateTableWriteIdsRequest(
                dbName=self.db,
                tableName=ev.body["tableName"],
                replPolicy=self.policy,
                srcTxnToWriteIdList=[self.T.TxnToWriteId(txnId=t, writeId=w) for t, w in pairs],
            )
        )

    def _on_commit_txn(self, ev: Dumped) -> None:
        b = ev.body
        infos = [
            self.T.WriteEventInfo(writeId=w, database=d, table=t, files=f, partition=p or None)
            for w, d, t, f, p in zip(
                b.get("writeIds") or [],
                b.get("databases") or [],
                b.get("tables") or [],
                b.get("files") or [],
                b.get("partitions") or [],
                strict=True,
            )
        ]
        self.c.commit_txn(
            self.T.CommitTxnRequest(
                txnid=b["txnid"],
                replPolicy=self.policy,
                txn_type=REPL_CREATED,
                writeEventInfos=infos or None,
            )
        )

    def _on_abort_txn(self, ev: Dumped) -> None:
        self.c.abort_txn(
            self.T.AbortTxnRequest(
                txnid=ev.body["txnid"], replPolicy=self.policy, txn_type=REPL_CREATED
            )
        )

    def _on_update_tbl_col_stat_event(self, ev: Dumped) -> None:
        """UpdateTableColStatHandler -> ColumnStatsUpdateTask: the source's write id, and a
        write-id list naming it as the high-water mark."""
        stats = to_apache(messages.column_statistics(ev.body))
        write_id = messages.write_id(ev.body)
        table = stats.statsDesc.tableName
        vwil = None if write_id is None else f"{self.db}.{table}:{write_id}:{LONG_MAX}::"
        self.c.set_aggr_stats_for(
            self.T.SetPartitionsStatsRequest(
                colStats=[stats], writeId=write_id, validWriteIdList=vwil, engine="hive"
            )
        )

    def _on_alter_table(self, ev: Dumped) -> None:
        """TruncateTableHandler (isTruncateOp) with the source's write id; other alters are
        not replayed by this harness."""
        if ev.body.get("isTruncateOp") != "true":
            return
        self.c.truncate_table_req(
            self.T.TruncateTableRequest(
                dbName=self.db,
                tableName=ev.body["table"],
                writeId=messages.write_id(ev.body),
            )
        )

    def _on_create_table(self, ev: Dumped) -> None:
        """CreateTableHandler's import, in the target's warehouse."""
        table = to_apache(messages.table(ev.body))
        if table.tableName in self.c.get_all_tables(self.db):
            return
        table.sd.location, table.writeId, table.id = None, None, None
        self.c.create_table(table)

    def _on_add_partition(self, ev: Dumped) -> None:
        """AddPartitionHandler's import: a partition the target already has is not added
        again (ImportSemanticAnalyzer replaces into it or skips it)."""
        parts = [to_apache(p) for p in messages.partitions(ev.body)]
        if not parts:
            return
        have = set(self.c.get_partition_names(self.db, parts[0].tableName, -1))
        parts = [p for p in parts if "ds=" + p.values[0] not in have]
        if not parts:
            return
        for p in parts:
            p.sd.location = None  # writeId kept: the replayed txn's, forced to the source's
        self.c.add_partitions_req(
            self.T.AddPartitionsRequest(
                dbName=self.db, tblName=parts[0].tableName, parts=parts, ifNotExists=True
            )
        )
