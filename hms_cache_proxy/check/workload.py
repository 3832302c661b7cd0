"""What the checker's clients do: random writes and reads, every call recorded.

Objects, in the database ``chk``:

- Transactional tables ``x0`` to ``x3`` (partitioned by ``p``), shared by every client and
  written only by multi-statement transactions: open, lock the table (exclusive), allocate a
  write id ``w``, set the table parameter ``wmax=w``, add partitions among ``p=s0..s7`` that
  are missing and set ``w=w`` on 1-3 of them, then commit (or abort, one in ten). Each
  transaction's intent is recorded on its commit call (``Op.txn``) before it is sent.
- Tables ``o<client>_<n>`` owned by one client each (plain tables, partitioned by ``p``):
  created, altered (parameter ``ver``), dropped; their partitions added, altered, dropped.
  Only the owner writes them, so the versions it numbers them with are in write order.
  The owner also renames them (the old name is dropped, the new one holds the next version)
  and re-creates a dropped one once (its versions then start above ``DROPPED``). Any client
  truncates any owned table: truncate changes no version, so a truncate that wrote back a
  stale copy shows up as a lost write.
- Transactions also commit with ``keyValue`` (``_meta.k=w``, TABLE_PARAMS set by the commit)
  and write column statistics of ``a`` with ``highValue=w`` under their write id.

Reads: a transactional table with a snapshot (get_valid_write_ids, then get_table_req,
get_partitions_req and get_table_statistics_req carrying it), or any client's owned table
(get_table, get_partitions).
A call that fails leaves its outcome unknown; the client reconnects and goes on, aborting
the transaction it was in when it can (otherwise the instance's txn timeout ends it).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from hms_cache_proxy.bench.cases import connect
from hms_cache_proxy.check.history import ABSENT, DROPPED, History, Op
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList, ValidReadTxnList

DB = "chk"
TXN_TABLES = ("x0", "x1", "x2", "x3")
PROBE_TABLE = "probe"
"""A plain table the purge fault writes to (through the database path) to make events."""
SLOTS = tuple(f"s{i}" for i in range(8))
KV_KEY = "_meta.k"
"""The table parameter transactions set with commit_txn's keyValue (Hive's ``_meta`` prefix)."""
TXN_PARAMS = {"transactional": "true", "transactional_properties": "default", KV_KEY: "0"}
MAX_LIVE_TABLES = 3
MAX_LIVE_PARTS = 6
LOCK_WAIT_SECONDS = 45.0
RECHECKS = 4
"""How many of its next steps a client reads a table it dropped or renamed away again."""


def table_key(name: str) -> str:
    return f"tbl:{DB}.{name}"


def part_key(name: str, part: str) -> str:
    return f"part:{DB}.{name}/p={part}"


def storage() -> Any:
    return hms.StorageDescriptor(
        cols=[
            hms.FieldSchema(name="a", type="int", comment=None),
            hms.FieldSchema(name="b", type="string", comment=None),
        ],
        location=None,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(
            name=None,
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
            parameters={"serialization.format": "1"},
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )


def new_table(name: str, params: dict[str, str]) -> Any:
    return hms.Table(
        tableName=name,
        dbName=DB,
        owner="checker",
        createTime=0,
        lastAccessTime=0,
        retention=0,
        sd=storage(),
        partitionKeys=[hms.FieldSchema(name="p", type="string", comment=None)],
        parameters=dict(params),
        tableType="MANAGED_TABLE",
    )


def new_partition(table: str, value: str, params: dict[str, str], write_id: int = -1) -> Any:
    return hms.Partition(
        values=[value],
        dbName=DB,
        tableName=table,
        createTime=0,
        lastAccessTime=0,
        sd=storage(),
        parameters=dict(params),
        writeId=write_id,
    )


def _txn_list(client: Any, txn: int) -> str:
    """The ValidTxnList of ``txn`` (its own snapshot), as Hive's string."""
    return ValidReadTxnList.from_open_txns_response(client.get_open_txns(), txn).to_string()


def declared(exc: BaseException) -> bool:
    """An exception the IDL declares (the server answered); others cut the connection."""
    return getattr(hms, type(exc).__name__, None) is type(exc)


@dataclass
class Owned:
    """A table one client owns, and what the owner knows of it."""

    name: str
    version: int = 0
    obj: Any = None
    live: bool = True  # created (acknowledged) and not dropped
    writable: bool = True  # no write of unknown outcome that makes further writes moot
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)
    next_part: int = 0
    recreated: bool = False  # re-created once after a drop (versions above DROPPED)
    dropped_cleanly: bool = False  # its drop was acknowledged
    settled: bool = True  # no partition write of unknown outcome (a rename may carry them)


class Shared:
    """What clients share: every owned table and partition ever named (readers look them up
    after a read, to learn which registers it observed)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: dict[str, int] = {}  # owned table -> owner
        self.parts: dict[str, list[str]] = {}  # owned table -> partition values ever written

    def register(self, table: str, owner: int, part: str | None = None) -> None:
        with self.lock:
            self.tables.setdefault(table, owner)
            parts = self.parts.setdefault(table, [])
            if part is not None and part not in parts:
                parts.append(part)

    def names(self) -> list[str]:
        """Every owned table name ever used (renamed and dropped ones too)."""
        with self.lock:
            return sorted(self.tables)

    def random_table(self, rng: random.Random) -> str | None:
        with self.lock:
            if not self.tables:
                return None
            return rng.choice(list(self.tables))

    def parts_of(self, table: str) -> list[str]:
        with self.lock:
            return list(self.parts.get(table, ()))


class Client:
    """One client thread's state: its connection (to ``port``), its owned tables."""

    def __init__(
        self,
        index: int,
        instance: int,
        port: int,
        history: History,
        shared: Shared,
        seed: int,
        timeout_s: float = 60.0,
        txn_share: float = 0.15,
        write_share: float = 0.35,
    ) -> None:
        self.index = index
        self.instance = instance
        self.port = port
        self.history = history
        self.shared = shared
        self.rng = random.Random(seed)
        self.timeout_s = timeout_s
        self.txn_share = txn_share
        self.write_share = write_share
        self.owned: list[Owned] = []
        self.created = 0
        self.recheck: dict[str, int] = {}  # names dropped or renamed away -> reads still due
        self._client: Any = None

    # -- connection ------------------------------------------------------------------------------

    def _conn(self) -> Any:
        if self._client is None:
            self._client = connect("127.0.0.1", self.port, timeout_s=self.timeout_s)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001
                pass
        self._client = None

    def ensure_connected(self, stop: threading.Event) -> bool:
        """Connect (retrying while the instance is down); False when asked to stop first."""
        while not stop.is_set():
            try:
                self._conn()
                return True
            except Exception:  # noqa: BLE001 - down (killed, restarting): try again
                self.close()
                stop.wait(0.2)
        return False

    def call(self, name: str, fn: Any, **args: Any) -> tuple[Op, Any]:
        """Make one recorded call; ``fn(client, op)`` sends it (and may fill the op in).
        Raises what the call raised; a connection-level error also drops the connection."""
        conn = self._conn()  # failing to connect is no call (the instance is down)
        with self.history.call(self.index, self.instance, name, **args) as op:
            try:
                result = fn(conn, op)
            except Exception as exc:
                if not declared(exc):
                    self.close()
                raise
        return op, result

    # -- one step --------------------------------------------------------------------------------

    def step(self) -> None:
        r = self.rng.random()
        try:
            if self.recheck:
                self._recheck()
            if r < self.txn_share:
                self.txn_write()
            elif r < self.txn_share + self.write_share:
                self.owned_write()
            elif self.rng.random() < 0.5:
                self.txn_read(self.rng.choice(TXN_TABLES))
            else:
                name = self.shared.random_table(self.rng)
                if name is not None:
                    self.owned_read(name)
        except Exception:  # noqa: BLE001 - recorded in the history; go on
            if self._client is None:
                time.sleep(0.1)  # the connection broke: do not hammer an instance restarting

    def _recheck(self) -> None:
        """Read a table this client dropped (or renamed away) again, at each of its next few
        steps: a load older than the drop that installed anyway (issue 14, finding 1) is
        visible only until the tiny cache budget evicts it."""
        name = next(iter(self.recheck))
        self.recheck[name] -= 1
        if self.recheck[name] <= 0:
            del self.recheck[name]
        self.call("get_table", lambda c, op: self._observe_table(c, op, name))

    # -- transactions ----------------------------------------------------------------------------

    def txn_write(self) -> None:
        tbl = self.rng.choice(TXN_TABLES)
        _, opened = self.call(
            "open_txns",
            lambda c, op: c.open_txns(
                hms.OpenTxnRequest(num_txns=1, user="checker", hostname=f"client{self.index}")
            ),
        )
        txn = opened.txn_ids[0]
        try:
            self._txn_body(tbl, txn)
        except Exception:
            self._abort_quietly(txn)
            raise

    def _txn_body(self, tbl: str, txn: int) -> None:
        self._lock(tbl, txn)
        _, alloc = self.call(
            "allocate_table_write_ids",
            lambda c, op: c.allocate_table_write_ids(
                hms.AllocateTableWriteIdsRequest(dbName=DB, tableName=tbl, txnIds=[txn])
            ),
            table=tbl,
            txn=txn,
        )
        wid = alloc.txnToWriteIds[0].writeId
        _, current = self.call("get_table", lambda c, op: c.get_table(DB, tbl), table=tbl)
        current.parameters["wmax"] = str(wid)
        self.call(
            "alter_table_req",
            lambda c, op: c.alter_table_req(
                hms.AlterTableRequest(dbName=DB, tableName=tbl, table=current, writeId=wid)
            ),
            table=tbl,
            write_id=wid,
        )
        stats = self.rng.random() < 0.3
        if stats:
            self._write_stats(tbl, txn, wid)
        slots = sorted(self.rng.sample(SLOTS, self.rng.randint(1, 3)))
        adds = [new_partition(tbl, s, {"w": str(wid)}, wid) for s in slots]
        self.call(
            "add_partitions_req",
            lambda c, op: c.add_partitions_req(
                hms.AddPartitionsRequest(
                    dbName=DB, tblName=tbl, parts=adds, ifNotExists=True, needResult=False
                )
            ),
            table=tbl,
            write_id=wid,
            partitions=slots,
        )
        names = [f"p={s}" for s in slots]
        _, parts = self.call(
            "get_partitions_by_names",
            lambda c, op: c.get_partitions_by_names(DB, tbl, names),
            table=tbl,
        )
        for p in parts:
            p.parameters["w"] = str(wid)
        self.call(
            "alter_partitions_req",
            lambda c, op: c.alter_partitions_req(
                hms.AlterPartitionsRequest(dbName=DB, tableName=tbl, partitions=parts, writeId=wid)
            ),
            table=tbl,
            write_id=wid,
            partitions=slots,
        )
        commit = self.rng.random() >= 0.1
        key_value = self.rng.random() < 0.3
        intent = {
            "table": tbl,
            "txn": txn,
            "write_id": wid,
            "partitions": slots,
            "kv": key_value,
            "stats": stats,
        }
        if commit:
            kv = None
            if key_value:
                kv = hms.CommitTxnKeyValue(tableId=current.id, key=KV_KEY, value=str(wid))

            def send(c: Any, op: Op) -> Any:
                op.txn = intent
                return c.commit_txn(hms.CommitTxnRequest(txnid=txn, keyValue=kv))

            self.call("commit_txn", send, txn=txn)
        else:
            self.call(
                "abort_txn", lambda c, op: c.abort_txn(hms.AbortTxnRequest(txnid=txn)), txn=txn
            )

    def _write_stats(self, tbl: str, txn: int, wid: int) -> None:
        """Column statistics of ``a`` with ``highValue=wid``, written under the write id."""

        def snap(c: Any, op: Op) -> str:
            req = hms.GetValidWriteIdsRequest(
                fullTableNames=[f"{DB}.{tbl}"], validTxnList=_txn_list(c, txn)
            )
            tvwi = c.get_valid_write_ids(req).tblValidWriteIds[0]
            return ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()

        _, writer_snapshot = self.call("get_valid_write_ids", snap, txn=txn)
        desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=DB, tableName=tbl)
        data = hms.ColumnStatisticsData(
            longStats=hms.LongColumnStatsData(lowValue=0, highValue=wid, numNulls=0, numDVs=1)
        )
        stats = hms.ColumnStatistics(
            statsDesc=desc,
            statsObj=[hms.ColumnStatisticsObj(colName="a", colType="int", statsData=data)],
            engine="hive",
        )
        request = hms.SetPartitionsStatsRequest(
            colStats=[stats], writeId=wid, validWriteIdList=writer_snapshot, engine="hive"
        )
        self.call(
            "update_table_column_statistics_req",
            lambda c, op: c.update_table_column_statistics_req(request),
            table=tbl,
            write_id=wid,
        )

    def _lock(self, tbl: str, txn: int) -> None:
        component = hms.LockComponent(
            type=hms.LockType.EXCLUSIVE,
            level=hms.LockLevel.TABLE,
            dbname=DB,
            tablename=tbl,
            isTransactional=True,
            operationType=hms.DataOperationType.UPDATE,
        )
        request = hms.LockRequest(
            component=[component], txnid=txn, user="checker", hostname=f"client{self.index}"
        )
        _, resp = self.call("lock", lambda c, op: c.lock(request), table=tbl, txn=txn)
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        pause = 0.02
        while resp.state == hms.LockState.WAITING:
            if time.monotonic() > deadline:
                raise TimeoutError(f"lock on {tbl} not granted in {LOCK_WAIT_SECONDS:g}s")
            time.sleep(pause)
            pause = min(0.5, pause * 1.5)
            request_check = hms.CheckLockRequest(lockid=resp.lockid, txnid=txn)
            _, resp = self.call(
                "check_lock", lambda c, op, r=request_check: c.check_lock(r), txn=txn
            )
        if resp.state != hms.LockState.ACQUIRED:
            raise RuntimeError(f"lock on {tbl}: {resp.state}")

    def _abort_quietly(self, txn: int) -> None:
        """Abort a transaction a failure interrupted (a few tries: the instance may be down)."""
        for _ in range(3):
            try:
                self._conn()
                self.call(
                    "abort_txn",
                    lambda c, op: c.abort_txn(hms.AbortTxnRequest(txnid=txn)),
                    txn=txn,
                )
                return
            except Exception as exc:  # noqa: BLE001
                self.close()
                if declared(exc):  # already aborted (timed out) or unknown: nothing to do
                    return
                time.sleep(0.3)

    def txn_read(self, tbl: str) -> None:
        def snap(c: Any, op: Op) -> str:
            req = hms.GetValidWriteIdsRequest(fullTableNames=[f"{DB}.{tbl}"])
            tvwi = c.get_valid_write_ids(req).tblValidWriteIds[0]
            op.snapshot = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()
            return op.snapshot

        _, s = self.call("get_valid_write_ids", snap, table=tbl)

        def read_table(c: Any, op: Op) -> None:
            op.snapshot = s
            t = c.get_table_req(
                hms.GetTableRequest(dbName=DB, tblName=tbl, validWriteIdList=s)
            ).table
            op.result = {
                "wmax": int(t.parameters.get("wmax", "0")),
                "kv": int(t.parameters.get(KV_KEY, "0")),
            }

        self.call("get_table_req", read_table, table=tbl)

        def read_parts(c: Any, op: Op) -> None:
            op.snapshot = s
            parts = c.get_partitions_req(
                hms.PartitionsRequest(dbName=DB, tblName=tbl, maxParts=-1, validWriteIdList=s)
            ).partitions
            op.result = {"parts": {p.values[0]: int(p.parameters.get("w", "0")) for p in parts}}

        self.call("get_partitions_req", read_parts, table=tbl)

        def read_stats(c: Any, op: Op) -> None:
            op.snapshot = s
            found = c.get_table_statistics_req(
                hms.TableStatsRequest(
                    dbName=DB, tblName=tbl, colNames=["a"], engine="hive", validWriteIdList=s
                )
            ).tableStats
            high = found[0].statsData.longStats.highValue if found else 0
            op.result = {"stats": int(high or 0)}

        self.call("get_table_statistics_req", read_stats, table=tbl)

    # -- owned tables ----------------------------------------------------------------------------

    def owned_write(self) -> None:
        live = [t for t in self.owned if t.live]
        writable = [t for t in live if t.writable and t.obj is not None]
        rng = self.rng
        dropped = [t for t in self.owned if not t.live and t.dropped_cleanly and not t.recreated]
        if dropped and len(live) < MAX_LIVE_TABLES and rng.random() < 0.1:
            self.recreate_table(rng.choice(dropped))
            return
        if not writable or (len(live) < MAX_LIVE_TABLES and rng.random() < 0.05):
            self.create_table()
            return
        if len(live) >= MAX_LIVE_TABLES and rng.random() < 0.05:
            self.drop_table(live[0])
            return
        r = rng.random()
        settled = [t for t in writable if t.settled]
        if r < 0.03 and settled:
            self.rename_table(rng.choice(settled))
            return
        if r < 0.08:
            self.truncate_any()
            return
        t = rng.choice(writable)
        parts = [v for v, p in t.parts.items() if p["live"] and p["writable"]]
        r = rng.random()
        if r < 0.3:
            self.alter_table(t)
        elif r < 0.55 and sum(p["live"] for p in t.parts.values()) < MAX_LIVE_PARTS:
            self.add_partition(t)
        elif r < 0.85 and parts:
            self.alter_partition(t, rng.choice(parts))
        elif parts:
            self.drop_partition(t, rng.choice(parts))
        else:
            self.add_partition(t)

    def create_table(self) -> None:
        name = f"o{self.index}_{self.created}"
        self.created += 1
        t = Owned(name, version=1)
        self.owned.append(t)
        self.shared.register(name, self.index)

        def send(c: Any, op: Op) -> None:
            op.writes = [(table_key(name), 1)]
            c.create_table(new_table(name, {"ver": "1"}))

        try:
            self.call("create_table", send, table=name)
        except Exception:
            t.live = t.writable = False  # may exist or not: only a drop may follow
            raise
        _, t.obj = self.call("get_table", lambda c, op: self._observe_table(c, op, name))

    def _observe_table(self, c: Any, op: Op, name: str) -> Any:
        op.args = {"table": name}
        try:
            t = c.get_table(DB, name)
        except hms.NoSuchObjectException:
            op.reads = [(table_key(name), ABSENT)]
            return None
        op.reads = [(table_key(name), int(t.parameters.get("ver", "0")))]
        return t

    def alter_table(self, t: Owned) -> None:
        t.version += 1
        version = t.version
        t.obj.parameters["ver"] = str(version)

        def send(c: Any, op: Op) -> None:
            op.writes = [(table_key(t.name), version)]
            c.alter_table(DB, t.name, t.obj)

        self.call("alter_table", send, table=t.name, version=version)

    def drop_table(self, t: Owned) -> None:
        # Read, drop, read again: with a tiny cache budget the first read misses and starts a
        # load that is still running when the drop lands (issue 14, finding 1).
        self.call("get_table", lambda c, op: self._observe_table(c, op, t.name))
        t.live = t.writable = False
        writes = [(table_key(t.name), DROPPED)] + [
            (part_key(t.name, v), DROPPED) for v, p in t.parts.items() if not p["dropped"]
        ]
        for p in t.parts.values():
            p["dropped"] = True

        def send(c: Any, op: Op) -> None:
            op.writes = writes
            c.drop_table(DB, t.name, True)

        self.call("drop_table", send, table=t.name)
        t.dropped_cleanly = True
        self.call("get_table", lambda c, op: self._observe_table(c, op, t.name))
        self.recheck[t.name] = RECHECKS

    def recreate_table(self, old: Owned) -> None:
        """Create a dropped table's name again (once): versions go on above ``DROPPED``, so a
        read of the old table after the new one was acknowledged is stale."""
        old.recreated = True
        t = Owned(old.name, version=DROPPED + 1, next_part=old.next_part, recreated=True)
        self.owned.append(t)
        version = t.version

        def send(c: Any, op: Op) -> None:
            op.writes = [(table_key(t.name), version)]
            c.create_table(new_table(t.name, {"ver": str(version)}))

        try:
            self.call("create_table", send, table=t.name, recreate=True)
        except Exception:
            t.live = t.writable = False
            raise
        _, t.obj = self.call("get_table", lambda c, op: self._observe_table(c, op, t.name))

    def rename_table(self, t: Owned) -> None:
        """alter_table to a new name: the old name is dropped, the new one holds the next
        version and the partitions at their versions."""
        new_name = f"o{self.index}_{self.created}"
        self.created += 1
        old_name = t.name
        self.call("get_table", lambda c, op: self._observe_table(c, op, old_name))
        t.version += 1
        version = t.version
        live_parts = {v: p for v, p in t.parts.items() if not p["dropped"]}
        self.shared.register(new_name, self.index)
        for v in live_parts:
            self.shared.register(new_name, self.index, v)
        obj = t.obj
        obj.tableName = new_name
        obj.parameters["ver"] = str(version)
        writes = [(table_key(old_name), DROPPED), (table_key(new_name), version)]
        writes += [(part_key(old_name, v), DROPPED) for v in live_parts]
        writes += [(part_key(new_name, v), p["version"]) for v, p in live_parts.items()]
        t.name = new_name
        for p in live_parts.values():
            if p["obj"] is not None:
                p["obj"].tableName = new_name

        def send(c: Any, op: Op) -> None:
            op.writes = writes
            c.alter_table(DB, old_name, obj)

        try:
            self.call("alter_table", send, table=old_name, rename_to=new_name, version=version)
        except Exception:
            t.live = t.writable = False  # under either name, or none: stop writing it
            raise
        for name in (old_name, new_name):
            self.call("get_table", lambda c, op, n=name: self._observe_table(c, op, n))
        self.recheck[old_name] = RECHECKS

    def truncate_any(self) -> None:
        """truncate_table on any client's table (it may be gone): changes no version."""
        name = self.shared.random_table(self.rng)
        if name is None:
            return

        def send(c: Any, op: Op) -> None:
            try:
                c.truncate_table(DB, name, None)
            except hms.MetaException as exc:
                if "not found" not in (exc.message or ""):
                    raise
                op.result = {"absent": True}

        self.call("truncate_table", send, table=name)

    def add_partition(self, t: Owned) -> None:
        value = f"q{t.next_part}"
        t.next_part += 1
        state = {"version": 1, "obj": None, "live": True, "writable": True, "dropped": False}
        t.parts[value] = state
        self.shared.register(t.name, self.index, value)

        def send(c: Any, op: Op) -> Any:
            op.writes = [(part_key(t.name, value), 1)]
            req = hms.AddPartitionsRequest(
                dbName=DB,
                tblName=t.name,
                parts=[new_partition(t.name, value, {"ver": "1"})],
                ifNotExists=False,
                needResult=True,
            )
            return c.add_partitions_req(req).partitions[0]

        try:
            _, state["obj"] = self.call("add_partitions_req", send, table=t.name, partition=value)
        except Exception:
            state["writable"] = t.settled = False
            raise

    def alter_partition(self, t: Owned, value: str) -> None:
        state = t.parts[value]
        state["version"] += 1
        version = state["version"]
        obj = state["obj"]
        obj.parameters["ver"] = str(version)

        def send(c: Any, op: Op) -> None:
            op.writes = [(part_key(t.name, value), version)]
            c.alter_partition(DB, t.name, obj)

        try:
            self.call("alter_partition", send, table=t.name, partition=value, version=version)
        except Exception:
            t.settled = False
            raise

    def drop_partition(self, t: Owned, value: str) -> None:
        state = t.parts[value]
        state["live"] = state["writable"] = False
        state["dropped"] = True

        def send(c: Any, op: Op) -> None:
            op.writes = [(part_key(t.name, value), DROPPED)]
            c.drop_partition(DB, t.name, [value], True)

        try:
            self.call("drop_partition", send, table=t.name, partition=value)
        except Exception:
            t.settled = False
            raise

    def probe_write(self) -> None:
        """A write to ``chk.probe`` (no history of its own): the purge fault makes events."""
        t = self._conn().get_table(DB, PROBE_TABLE)
        t.parameters["n"] = str(int(t.parameters.get("n", "0")) + 1)
        self._conn().alter_table(DB, PROBE_TABLE, t)

    def owned_read(self, name: str) -> None:
        self.call("get_table", lambda c, op: self._observe_table(c, op, name))

        def read_parts(c: Any, op: Op) -> None:
            try:
                parts = c.get_partitions(DB, name, -1)
            except hms.NoSuchObjectException:
                op.reads = [(table_key(name), ABSENT)]
                return
            seen = {p.values[0]: int(p.parameters.get("ver", "0")) for p in parts}
            # Registered before any write of them was sent: every partition seen is known.
            known = self.shared.parts_of(name)
            op.reads = [(part_key(name, v), seen.get(v, ABSENT)) for v in known]
            op.reads += [(part_key(name, v), n) for v, n in seen.items() if v not in known]

        self.call("get_partitions", read_parts, table=name)
