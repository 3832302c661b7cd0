"""The checker's objects: its database and tables, the keys the history records them under,
the Thrift objects clients write, and what the clients share (see .workload for the plan)."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList

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


def txn_list(client: Any, txn: int) -> str:
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
