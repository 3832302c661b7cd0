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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList
from tests.support.apache_thrift import to_apache
from tests.support.cache import ours
from tests.support.repl_dump import add_write_event_info

READ_ONLY, REPL_CREATED = 2, 1  # TxnType
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

    def table(
        self,
        name: str,
        partitioned: bool = False,
        key: str = "ds",
        insert_only: bool = False,
    ) -> None:
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
        keys = [T.FieldSchema(name=key, type="string")] if partitioned else []
        params = dict(TXN)
        if insert_only:
            params["transactional_properties"] = "insert_only"
        self.c.create_table(
            T.Table(
                tableName=name,
                dbName=self.db,
                owner="hive",
                sd=sd,
                partitionKeys=keys,
                parameters=params,
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
        write_id = self.allocate(txn, table)
        self.write(txn, table, write_id, ds)
        return write_id

    def insert_overwrite(self, txn: int, table: str, ds: str | None = None) -> int:
        """INSERT OVERWRITE of a transactional table: a new base directory."""
        write_id = self.allocate(txn, table)
        self.write(txn, table, write_id, ds, kinds=("base",))
        return write_id

    def update(self, txn: int, table: str, ds: str | None = None) -> int:
        """UPDATE (or a MERGE's matched rows): a delete delta and a delta."""
        write_id = self.allocate(txn, table)
        self.write(txn, table, write_id, ds, kinds=("delete_delta", "delta"))
        return write_id

    def delete(self, txn: int, table: str, ds: str | None = None) -> int:
        write_id = self.allocate(txn, table)
        self.write(txn, table, write_id, ds, kinds=("delete_delta",))
        return write_id

    def partition(self, table: str, value: str, write_id: int | None = None) -> None:
        """The partition ``value`` of ``table`` (its one key), added if missing."""
        src = self.c.get_table(self.db, table)
        name = f"{src.partitionKeys[0].name}={value}"
        if name in self.c.get_partition_names(self.db, table, -1):
            return
        sd = src.sd
        sd.location = f"{src.sd.location}/{name}"
        part = self.T.Partition(
            dbName=self.db, tableName=table, values=[value], sd=sd, writeId=write_id
        )
        self.c.add_partitions_req(
            self.T.AddPartitionsRequest(
                dbName=self.db, tblName=table, parts=[part], ifNotExists=True
            )
        )

    def write(
        self,
        txn: int,
        table: str,
        write_id: int,
        ds: str | None = None,
        kinds: tuple[str, ...] = ("delta",),
        stmt: int = 0,
    ) -> None:
        """The files of one statement under ``write_id`` (in partition ``ds`` of a partitioned
        table, added with the write id if new), as add_write_notification_log reports them."""
        T = self.T
        vals = None
        if ds is not None:
            vals = [ds]
            self.partition(table, ds, write_id)
        w = f"{write_id:07d}"
        dirs = [f"base_{w}" if k == "base" else f"{k}_{w}_{w}_{stmt:04d}" for k in kinds]
        info = T.InsertEventRequestData(
            filesAdded=[f"hdfs://src/{self.db}/{table}/{d}/bucket_00000" for d in dirs],
            subDirectoryList=dirs,
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

    def alter_column(self, txn: int, table: str, old: str, new: str) -> int:
        """ALTER TABLE ... CHANGE old new: a DDL of a transactional table, under a write id."""
        write_id = self.allocate(txn, table)
        t = self.c.get_table(self.db, table)
        for c in t.sd.cols:
            if c.name == old:
                c.name = new
        t.writeId = write_id
        self.c.alter_table_req(
            self.T.AlterTableRequest(dbName=self.db, tableName=table, table=t, writeId=write_id)
        )
        return write_id

    def drop_partition(self, table: str, value: str) -> None:
        self.c.drop_partition(self.db, table, [value], True)

    def drop_table(self, table: str) -> None:
        self.c.drop_table(self.db, table, True)

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

    def stats(self, txn: int, table: str, write_id: int, high: int, ds: str | None = None) -> None:
        """The column statistics an insert's autogather writes in its txn (of partition ``ds``
        when given)."""
        T = self.T
        snapshot = self.T.GetValidWriteIdsRequest(
            fullTableNames=[f"{self.db}.{table}"], validTxnList=None, writeId=write_id
        )
        [tvwi] = self.c.get_valid_write_ids(snapshot).tblValidWriteIds
        from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

        vwil = ValidReaderWriteIdList.from_table_valid_write_ids(ours(tvwi)).to_string()
        data = T.LongColumnStatsData(lowValue=0, highValue=high, numNulls=0, numDVs=high)
        desc = T.ColumnStatisticsDesc(isTblLevel=ds is None, dbName=self.db, tableName=table)
        if ds is not None:
            key = self.c.get_table(self.db, table).partitionKeys[0].name
            desc.partName = f"{key}={ds}"
        stats = T.ColumnStatistics(
            statsDesc=desc,
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
        """TRUNCATE TABLE of a transactional table: a write id of its own, and the empty base
        directory it leaves, notified as the txn's write (the truncate's commit carries write
        info: TestReplicationFilterTransactions finds it in a dump that leaves out commits
        without any)."""
        write_id = self.allocate(txn, table)
        self.c.truncate_table_req(
            self.T.TruncateTableRequest(dbName=self.db, tableName=table, writeId=write_id)
        )
        self.write(txn, table, write_id, kinds=("base",))
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

    def incremental(self, after: int, filter_txns: bool = False) -> list[Dumped]:
        """Every event after ``after`` this database's load replays: txn events of every
        database, as Hive dumps them with hive.repl.filter.transactions off; with it on
        (``filter_txns``), no OPEN_TXN, no COMMIT_TXN of a txn that wrote nothing in this
        database and no ABORT_TXN whose dbsUpdated leaves it out (the dump's OpenTxnHandler,
        CommitTxnHandler and AbortTxnHandler)."""
        rqst = self.T.NotificationEventRequest(lastEvent=after, maxEvents=100_000)
        out = []
        for e in self.client.get_next_notification(rqst).events:
            body = messages.decode(e.message, e.messageFormat)
            if e.eventType == messages.OPEN_TXN and filter_txns:
                continue
            mine = self.db in (body.get("dbsUpdated") or [])
            if e.eventType == messages.ABORT_TXN and filter_txns and not mine:
                continue
            if e.eventType == messages.COMMIT_TXN:
                infos = self.client.get_all_write_event_info(
                    self.T.GetAllWriteEventInfoRequest(txnId=body["txnid"], dbName=self.db)
                )
                if filter_txns and not infos:
                    continue
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

    def __init__(
        self,
        client: Any,
        T: Any,
        db: str,
        filter_txns: bool = False,
        after_event: Callable[[Dumped], None] | None = None,
    ) -> None:
        self.c, self.T, self.db = client, T, db
        self.policy = policy_of(db)
        self.filter_txns = filter_txns
        """hive.repl.filter.transactions: the dump has no OPEN_TXN, so each allocation opens
        its txns first (ReplTxnTask's implicit open)."""
        self.after_event = after_event

    # bootstrap (LoadDatabase, LoadTable, LoadPartitions)

    def bootstrap(
        self,
        dump: Bootstrap,
        dump_dir: str = "/dump/1",
        before_table: Callable[[str], None] | None = None,
    ) -> None:
        """A bootstrap load, resumable as Hive's is: objects already loaded from the same dump
        (their ``hive.repl.ckpt.key`` is ``dump_dir``) are left as they are, so a load that
        failed part-way is retried with the same dump. ``before_table(name)`` runs before each
        table is loaded."""
        T = self.T
        ckpt = {"hive.repl.ckpt.key": dump_dir}
        names = self.c.get_all_databases()
        if self.db not in names:
            params = {
                k: v for k, v in (dump.database.parameters or {}).items() if k != "repl.source.for"
            }
            params.update({**ckpt, "repl.target.for": "true"})
            self.c.create_database(
                T.Database(name=self.db, description=dump.database.description, parameters=params)
            )
        loaded = set(self.c.get_all_tables(self.db))
        for table in dump.tables:
            if before_table is not None:
                before_table(table.tableName)
            if table.tableName in loaded:
                have = self.c.get_table(self.db, table.tableName)
                if (have.parameters or {}).get("hive.repl.ckpt.key") != dump_dir:
                    raise RuntimeError(f"{table.tableName} exists, not from this dump")
                continue
            table.id = None  # its writeId stays: a committed source write id, stored as given
            table.sd.location = None  # the target's warehouse
            table.parameters = {**(table.parameters or {}), **ckpt}
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
                p.parameters = {**(p.parameters or {}), **ckpt}
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
            if self.after_event is not None:
                self.after_event(ev)
            replayed += 1
            if stop_after is not None and replayed == stop_after:
                raise LoadStopped(ev.event_id)
            self.set_last_id(ev.event_id)
        return replayed

    def _ignore(self, ev: Dumped) -> None:
        """DefaultHandler: ACID_WRITE and kinds this harness does not replay."""

    def _on_open_txn(self, ev: Dumped) -> None:
        self._open(list(range(int(ev.body["fromTxnId"]), int(ev.body["toTxnId"]) + 1)))

    def _open(self, src: list[int]) -> None:
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
        if self.filter_txns:
            self._open(list(ev.body["txnIdList"]))
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

    def _on_update_part_col_stat_event(self, ev: Dumped) -> None:
        """UpdatePartColStatHandler: a partition's statistics, the same way."""
        self._on_update_tbl_col_stat_event(ev)

    def _on_alter_table(self, ev: Dumped) -> None:
        """TruncateTableHandler (isTruncateOp) or TableHandler's alter, each with the source's
        write id (that of the replayed txn, still open)."""
        write_id = messages.write_id(ev.body)
        if ev.body.get("isTruncateOp") == "true":
            self.c.truncate_table_req(
                self.T.TruncateTableRequest(
                    dbName=self.db, tableName=ev.body["table"], writeId=write_id
                )
            )
            return
        after = to_apache(messages.table_after(ev.body))
        have = self.c.get_table(self.db, ev.body["table"])
        after.sd.location, after.id = have.sd.location, None
        after.writeId = write_id if write_id and write_id > 0 else None
        self.c.alter_table_req(
            self.T.AlterTableRequest(
                dbName=self.db, tableName=ev.body["table"], table=after, writeId=after.writeId
            )
        )

    def _on_alter_partition(self, ev: Dumped) -> None:
        """The partition after the alter, in the target's location, with the source's write
        id."""
        after = to_apache(messages.partition_after(ev.body))
        have = self.c.get_partition(self.db, after.tableName, after.values)
        after.sd.location = have.sd.location
        write_id = messages.write_id(ev.body)
        write_id = write_id if write_id and write_id > 0 else None
        after.writeId = write_id
        self.c.alter_partitions_req(
            self.T.AlterPartitionsRequest(
                dbName=self.db, tableName=after.tableName, partitions=[after], writeId=write_id
            )
        )

    def _on_drop_partition(self, ev: Dumped) -> None:
        """DropPartitionHandler: the partitions named by their key values, if still there."""
        table = self.c.get_table(self.db, ev.body["table"])
        keys = [k.name for k in table.partitionKeys]
        have = set(self.c.get_partition_names(self.db, table.tableName, -1))
        for kv in ev.body.get("partitions") or []:
            values = [kv[k] for k in keys]
            if _part_name(keys, values) in have:
                self.c.drop_partition(self.db, table.tableName, values, True)

    def _on_drop_table(self, ev: Dumped) -> None:
        """DropTableHandler: a table already gone is not an error on a replay."""
        if ev.body["table"] in self.c.get_all_tables(self.db):
            self.c.drop_table(self.db, ev.body["table"], True)

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
        table = self.c.get_table(self.db, parts[0].tableName)
        keys = [k.name for k in table.partitionKeys]
        have = set(self.c.get_partition_names(self.db, table.tableName, -1))
        parts = [p for p in parts if _part_name(keys, p.values) not in have]
        if not parts:
            return
        for p in parts:
            p.sd.location = None  # writeId kept: the replayed txn's, forced to the source's
        self.c.add_partitions_req(
            self.T.AddPartitionsRequest(
                dbName=self.db, tblName=parts[0].tableName, parts=parts, ifNotExists=True
            )
        )


def _part_name(keys: list[str], values: list[str]) -> str:
    return "/".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))
