"""Hive's notification messages: their bodies, built from Thrift objects, and the MESSAGE column.

A NOTIFICATION_LOG row carries the message of one metastore change. Hive's replication, Impala,
StarRocks and other event processors read it with Hive's own classes
(``org.apache.hadoop.hive.metastore.messaging.json.JSON*Message``, deserialized by Jackson), so the
bodies here have the same keys, in the order Jackson writes them (the declaration order of the
class's ``@JsonProperty`` fields), with ``null`` for fields Hive leaves unset. Embedded Thrift
objects (``tableObjJson``, ``partitionListJson``, ...) are strings in Apache Thrift's
TJSONProtocol (:mod:`.tjson`). ``timestamp`` is in seconds. Booleans Hive keeps as strings
(``isTruncateOp``, ``replace``, ``refreshEvent``) are ``"true"``/``"false"``.

The layouts are those of Hive 4.0's classes. Newer Hive (master, 2025) adds a catalog field to
some messages (``cat``, ``catalog`` or ``catName``) and ``locOwner`` to ALTER_TABLE and
ADD_PARTITION; Hive's readers ignore fields they do not know (FAIL_ON_UNKNOWN_PROPERTIES is off),
so either layout reads back with any version.

Our extra fields
----------------
Every message that concerns one table (CREATE/ALTER/DROP_TABLE, ADD/ALTER/DROP_PARTITION,
ALTER_PARTITIONS, INSERT, the four column-statistics events, ALLOC_WRITE_ID_EVENT, RELOAD) may
carry, after Hive's own fields:

- ``"validWriteIdList"``: the ValidWriteIdList string (``db.table:hwm:minOpen:open:aborted``)
  of the call that made the change: the caller's, or, for a write in a transaction whose call
  carried none, the writing transaction's own snapshot (its write id valid). Caches that tail
  the log use it to tag the state the event produces; Hive's readers skip it.
- ``"writeId"``: Hive has it in ALTER_TABLE, ALTER_PARTITION(S) and the UPDATE_*_COL_STAT
  events (always written there, -1 for none). Our store also adds it to CREATE_TABLE and
  ADD_PARTITION when the write belongs to a transaction. In events our store writes, a
  ``writeId`` > 0 always names a write id of a transaction that was open (and share-locked)
  when the event was written, on a transactional table: its COMMIT_TXN (or ABORT_TXN) follows.
- ``"partitionsChanged"`` (ALTER_TABLE, our store's always): true when the change also
  changed the table's partitions without partition events of their own (a rename, which
  changes their names and may move their locations; ALTER ... CASCADE column changes; a
  truncate). A cache drops the table's partitions then.
- ``"partitionObjJson"`` (UPDATE_PART_COL_STAT_EVENT, our store's): the partition after the
  change (parameters with COLUMN_STATS_ACCURATE, writeId), as TJSON.
- ``"writer": "hms-cache-proxy"``, last, in every message our store writes (transaction
  events included). It promises that every embedded object (tables, partitions, databases,
  catalogs, functions, column statistics) is exactly what the database path reads back, field
  for field: the store reads them back in the writing transaction after the change, so a
  cache may apply the event instead of invalidating. Embedded column statistics are the stored
  rows of the columns written, bit vectors and histograms included (reads leave those out
  unless ``stats_fetch_bitvector`` / ``stats_fetch_kll``). A builder with
  ``exclude_parameters`` leaves the field out: its embedded objects lack parameters.
  Messages without it (every message Hive wrote) make no such promise.

The MESSAGE column
------------------
``json-0.2`` is the JSON text itself (Jackson's compact form); ``gzip(json-2.0)`` (Hive 4's
default) is that text in UTF-8, gzipped, in standard base64 without line breaks.
"""

from __future__ import annotations

import base64
import binascii
import copy
import gzip
import json
import re
import time
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import tjson

# -- event types (MessageBuilder.*_EVENT in Hive) ----------------------------------------------

ADD_PARTITION = "ADD_PARTITION"
ALTER_PARTITION = "ALTER_PARTITION"
ALTER_PARTITIONS = "ALTER_PARTITIONS"
DROP_PARTITION = "DROP_PARTITION"
CREATE_TABLE = "CREATE_TABLE"
ALTER_TABLE = "ALTER_TABLE"
DROP_TABLE = "DROP_TABLE"
CREATE_DATABASE = "CREATE_DATABASE"
ALTER_DATABASE = "ALTER_DATABASE"
DROP_DATABASE = "DROP_DATABASE"
INSERT = "INSERT"
CREATE_FUNCTION = "CREATE_FUNCTION"
DROP_FUNCTION = "DROP_FUNCTION"
ADD_PRIMARYKEY = "ADD_PRIMARYKEY"
ADD_FOREIGNKEY = "ADD_FOREIGNKEY"
ADD_UNIQUECONSTRAINT = "ADD_UNIQUECONSTRAINT"
ADD_NOTNULLCONSTRAINT = "ADD_NOTNULLCONSTRAINT"
ADD_DEFAULTCONSTRAINT = "ADD_DEFAULTCONSTRAINT"
ADD_CHECKCONSTRAINT = "ADD_CHECKCONSTRAINT"
DROP_CONSTRAINT = "DROP_CONSTRAINT"
CREATE_ISCHEMA = "CREATE_ISCHEMA"
ALTER_ISCHEMA = "ALTER_ISCHEMA"
DROP_ISCHEMA = "DROP_ISCHEMA"
ADD_SCHEMA_VERSION = "ADD_SCHEMA_VERSION"
ALTER_SCHEMA_VERSION = "ALTER_SCHEMA_VERSION"
DROP_SCHEMA_VERSION = "DROP_SCHEMA_VERSION"
CREATE_CATALOG = "CREATE_CATALOG"
DROP_CATALOG = "DROP_CATALOG"
ALTER_CATALOG = "ALTER_CATALOG"
OPEN_TXN = "OPEN_TXN"
COMMIT_TXN = "COMMIT_TXN"
ABORT_TXN = "ABORT_TXN"
ALLOC_WRITE_ID_EVENT = "ALLOC_WRITE_ID_EVENT"
ACID_WRITE_EVENT = "ACID_WRITE_EVENT"
BATCH_ACID_WRITE_EVENT = "BATCH_ACID_WRITE_EVENT"
UPDATE_TBL_COL_STAT_EVENT = "UPDATE_TBL_COL_STAT_EVENT"
DELETE_TBL_COL_STAT_EVENT = "DELETE_TBL_COL_STAT_EVENT"
UPDATE_PART_COL_STAT_EVENT = "UPDATE_PART_COL_STAT_EVENT"
UPDATE_PART_COL_STAT_EVENT_BATCH = "UPDATE_PART_COL_STAT_EVENT_BATCH"
DELETE_PART_COL_STAT_EVENT = "DELETE_PART_COL_STAT_EVENT"
COMMIT_COMPACTION_EVENT = "COMMIT_COMPACTION_EVENT"
CREATE_DATACONNECTOR = "CREATE_DATACONNECTOR"
ALTER_DATACONNECTOR = "ALTER_DATACONNECTOR"
DROP_DATACONNECTOR = "DROP_DATACONNECTOR"
RELOAD = "RELOAD"

ALL_EVENT_TYPES: frozenset[str] = frozenset(
    {
        ADD_PARTITION,
        ALTER_PARTITION,
        ALTER_PARTITIONS,
        DROP_PARTITION,
        CREATE_TABLE,
        ALTER_TABLE,
        DROP_TABLE,
        CREATE_DATABASE,
        ALTER_DATABASE,
        DROP_DATABASE,
        INSERT,
        CREATE_FUNCTION,
        DROP_FUNCTION,
        ADD_PRIMARYKEY,
        ADD_FOREIGNKEY,
        ADD_UNIQUECONSTRAINT,
        ADD_NOTNULLCONSTRAINT,
        ADD_DEFAULTCONSTRAINT,
        ADD_CHECKCONSTRAINT,
        DROP_CONSTRAINT,
        CREATE_ISCHEMA,
        ALTER_ISCHEMA,
        DROP_ISCHEMA,
        ADD_SCHEMA_VERSION,
        ALTER_SCHEMA_VERSION,
        DROP_SCHEMA_VERSION,
        CREATE_CATALOG,
        DROP_CATALOG,
        ALTER_CATALOG,
        OPEN_TXN,
        COMMIT_TXN,
        ABORT_TXN,
        ALLOC_WRITE_ID_EVENT,
        ACID_WRITE_EVENT,
        BATCH_ACID_WRITE_EVENT,
        UPDATE_TBL_COL_STAT_EVENT,
        DELETE_TBL_COL_STAT_EVENT,
        UPDATE_PART_COL_STAT_EVENT,
        UPDATE_PART_COL_STAT_EVENT_BATCH,
        DELETE_PART_COL_STAT_EVENT,
        COMMIT_COMPACTION_EVENT,
        CREATE_DATACONNECTOR,
        ALTER_DATACONNECTOR,
        DROP_DATACONNECTOR,
        RELOAD,
    }
)
"""Every event type string Hive 4 writes (EVENT_TYPE is VARCHAR(32); all fit)."""

# -- formats ------------------------------------------------------------------------------------

JSON_FORMAT = "json-0.2"
GZIP_FORMAT = "gzip(json-2.0)"
DEFAULT_FORMAT = GZIP_FORMAT
_GZIP_ALIASES = frozenset({"gzip(json-2.0)", "gzip"})
_JSON_ALIASES = frozenset({"json-0.2"})

VALID_WRITE_ID_LIST = "validWriteIdList"
"""Our extra field: the ValidWriteIdList string of the call that made the change."""
WRITE_ID = "writeId"
"""Hive's field (ALTER_*, UPDATE_*_COL_STAT); our extra in CREATE_TABLE and ADD_PARTITION."""
PARTITIONS_CHANGED = "partitionsChanged"
"""Our extra field of ALTER_TABLE: the change touched the partitions without partition events."""
PARTITION_OBJ_JSON = "partitionObjJson"
"""Our extra field of UPDATE_PART_COL_STAT_EVENT: the partition after the change."""
TXN_WRITES = "txnWrites"
"""Our extra field of COMMIT_TXN: the txn's writes as [database, table, writeId]. Hive's own
lists (writeIds, databases, tables, ...) stay null: REPL DUMP appends the txn's write-event info
to them (JSONCommitTxnMessage#addWriteEventInfo) and reads them by index, so lists we filled
would come first and hold no table objects."""
REPL_LEFT_OUT = "replPropertiesLeftOut"
"""Our extra field of ALTER_DATABASE: Hive's replication properties were left out of its
objects (as Hive's AlterDatabaseEvent does), so they are not the database as stored."""
WRITE_IDS_FORCED = "writeIdsForced"
"""Our extra field of ALLOC_WRITE_ID_EVENT: a replayed allocation took the source's write ids
where the table's did not stand (NEXT_WRITE_ID jumped, TXN_TO_WRITE_ID rows wiped), so a
cache cannot move its write-id list on from what it held."""
TABLES_ALTERED = "tablesAltered"
"""Our extra field of COMMIT_TXN: tables ([cat, db, table]) whose parameters the commit changed
(CommitTxnRequest.keyValue). No other event describes that change: caches drop those tables."""
WRITER = "writer"
"""Our extra field in every message our store writes: its embedded objects are exact reads."""
WRITER_NAME = "hms-cache-proxy"


def _jackson_escapes(text: str) -> str:
    """Jackson writes control-character escapes in upper-case hex (\\u001F); Python in lower."""
    return _ESCAPE_RE.sub(_upper_escape, text)


_ESCAPE_RE = re.compile(r"\\(u00[0-9a-f]{2}|.)", re.DOTALL)


def _upper_escape(m: re.Match[str]) -> str:
    s = m.group(1)
    return "\\" + ("u00" + s[3:].upper() if s[0] == "u" else s)


def to_json(body: Mapping[str, Any]) -> str:
    """The body as Jackson writes it: compact, non-ASCII raw, '/' unescaped."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return _jackson_escapes(text) if "\\u00" in text else text


def encode(body: Mapping[str, Any], fmt: str = DEFAULT_FORMAT) -> str:
    """The MESSAGE column text of ``body`` in format ``fmt`` (json-0.2 or gzip(json-2.0))."""
    text = to_json(body)
    kind = _kind(fmt)
    if kind == "json":
        return text
    # mtime 0 keeps the output a function of the body; level 6 is java.util.zip's default.
    raw = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
    return base64.b64encode(raw).decode("ascii")


def decode(message: str, fmt: str | None) -> dict[str, Any]:
    """The body of a MESSAGE column written in ``fmt`` (any case; None means plain JSON)."""
    kind = "json" if fmt is None or fmt == "" else _kind(fmt)
    if kind == "gzip":
        try:
            raw = gzip.decompress(base64.b64decode(message, validate=True))
        except (binascii.Error, OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"message is not valid {fmt} (base64 of gzip): {exc}") from exc
        message = raw.decode("utf-8")
    body = json.loads(message)
    if not isinstance(body, dict):
        raise ValueError(f"message is not a JSON object: {message[:80]!r}")
    return body


def canonical_format(fmt: str) -> str:
    """The MESSAGE_FORMAT value Hive writes for a configured format name ("gzip" and any case
    become "gzip(json-2.0)")."""
    return GZIP_FORMAT if _kind(fmt) == "gzip" else JSON_FORMAT


def _kind(fmt: str) -> str:
    f = fmt.strip().lower()
    if f in _GZIP_ALIASES:
        return "gzip"
    if f in _JSON_ALIASES:
        return "json"
    raise ValueError(
        f"message format {fmt!r} is not supported (expected json-0.2, gzip(json-2.0) or gzip)"
    )


# -- builders -----------------------------------------------------------------------------------


def _tf(flag: bool) -> str:
    return "true" if flag else "false"


def partition_key_values(table: Any, partition: Any) -> dict[str, str]:
    """Partition key name to value, in key order (MessageBuilder.getPartitionKeyValues)."""
    keys = table.partitionKeys or []
    values = partition.values or []
    return {k.name: v for k, v in zip(keys, values, strict=False)}


class MessageBuilder:
    """Builds message bodies the way Hive's MessageBuilder does, from Thrift objects.

    ``server`` is what Hive puts there (its metastore.thrift.uris, "" when unset) and
    ``service_principal`` its Kerberos principal ("" without Kerberos). ``exclude_parameters``
    are regular expressions (metastore.notification.parameters.exclude.patterns): Table and
    Partition parameters whose key matches one are left out of the embedded objects (the
    caller's objects are not changed). ``writer`` (our store passes :data:`WRITER_NAME`) ends
    every body with ``"writer"``; None builds Hive's layouts exactly.
    """

    def __init__(
        self,
        server: str = "",
        service_principal: str = "",
        clock: Callable[[], float] = time.time,
        exclude_parameters: Iterable[str] = (),
        writer: str | None = None,
    ) -> None:
        self.server = server
        self.service_principal = service_principal
        self._clock = clock
        self._exclude = [re.compile(p) for p in exclude_parameters if p]
        # Filtered objects are not what the database reads back: no promise then.
        self.writer = None if self._exclude else writer

    def now(self) -> int:
        """Seconds since the epoch, as Hive's ``now()`` (currentTimeMillis / 1000)."""
        return int(self._clock())

    # -- embedded objects --

    def _filtered(self, obj: Any) -> Any:
        params = getattr(obj, "parameters", None)
        if not self._exclude or not params:
            return obj
        keep = {k: v for k, v in params.items() if not any(p.search(k) for p in self._exclude)}
        if len(keep) == len(params):
            return obj
        clone = copy.copy(obj)
        clone.parameters = keep
        return clone

    def table_json(self, table: Any) -> str:
        return tjson.dumps(self._filtered(table))

    def partition_json(self, partition: Any) -> str:
        return tjson.dumps(self._filtered(partition))

    def _extra(
        self, body: dict[str, Any], valid_write_ids: str | None, **extras: Any
    ) -> dict[str, Any]:
        """Our fields after Hive's: validWriteIdList, then ``extras`` that are not None."""
        if valid_write_ids is not None:
            body[VALID_WRITE_ID_LIST] = valid_write_ids
        for key, value in extras.items():
            if value is not None:
                body[key] = value
        return self._finish(body)

    def _finish(self, body: dict[str, Any]) -> dict[str, Any]:
        """The last field of every body: ``writer`` (when this builder has one)."""
        if self.writer is not None:
            body[WRITER] = self.writer
        return body

    @staticmethod
    def _txn_write_id(write_id: int | None) -> int | None:
        """Our extra ``writeId``: only for a write in a transaction."""
        return write_id if write_id is not None and write_id > 0 else None

    # -- databases: JSONCreateDatabaseMessage, JSONAlterDatabaseMessage, JSONDropDatabaseMessage

    def create_database(self, db: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": db.name,
                "dbJson": tjson.dumps(db),
                "timestamp": self.now(),
            }
        )

    def alter_database(
        self, before: Any, after: Any, repl_left_out: bool = False
    ) -> dict[str, Any]:
        """``repl_left_out``: replication properties were taken out of the objects."""
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": before.name,
            "dbObjBeforeJson": tjson.dumps(before),
            "dbObjAfterJson": tjson.dumps(after),
            "timestamp": self.now(),
        }
        return self._extra(body, None, **{REPL_LEFT_OUT: True if repl_left_out else None})

    def drop_database(self, db: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": db.name,
                "dbJson": tjson.dumps(db),
                "timestamp": self.now(),
            }
        )

    # -- tables: JSONCreateTableMessage, JSONAlterTableMessage, JSONDropTableMessage

    def create_table(
        self,
        table: Any,
        files: Iterable[str] = (),
        valid_write_ids: str | None = None,
        write_id: int | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
            "files": list(files),
        }
        return self._extra(body, valid_write_ids, **{WRITE_ID: self._txn_write_id(write_id)})

    def alter_table(
        self,
        before: Any,
        after: Any,
        is_truncate: bool = False,
        write_id: int = -1,
        valid_write_ids: str | None = None,
        partitions_changed: bool | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": before.dbName,
            "table": before.tableName,
            "tableType": before.tableType,
            "tableObjBeforeJson": self.table_json(before),
            "tableObjAfterJson": self.table_json(after),
            "isTruncateOp": _tf(is_truncate),
            "timestamp": self.now(),
            "writeId": write_id,
        }
        return self._extra(body, valid_write_ids, **{PARTITIONS_CHANGED: partitions_changed})

    def drop_table(self, table: Any, valid_write_ids: str | None = None) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
        }
        return self._extra(body, valid_write_ids)

    # -- partitions: JSONAddPartitionMessage, JSONAlterPartitionMessage,
    #    JSONAlterPartitionsMessage, JSONDropPartitionMessage

    def add_partition(
        self,
        table: Any,
        partitions: Sequence[Any],
        partition_files: Iterable[tuple[str, Sequence[str]]] = (),
        valid_write_ids: str | None = None,
        write_id: int | None = None,
    ) -> dict[str, Any]:
        """``partition_files``: (partition name, file paths) pairs, as Hive's PartitionFiles."""
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
            "partitions": [partition_key_values(table, p) for p in partitions],
            "partitionListJson": [self.partition_json(p) for p in partitions],
            "partitionFiles": [
                {"partitionName": name, "files": list(files)} for name, files in partition_files
            ],
        }
        return self._extra(body, valid_write_ids, **{WRITE_ID: self._txn_write_id(write_id)})

    def alter_partition(
        self,
        table: Any,
        before: Any,
        after: Any,
        is_truncate: bool = False,
        write_id: int = -1,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "isTruncateOp": _tf(is_truncate),
            "timestamp": self.now(),
            "writeId": write_id,
            "keyValues": partition_key_values(table, before),
            "partitionObjBeforeJson": self.partition_json(before),
            "partitionObjAfterJson": self.partition_json(after),
        }
        return self._extra(body, valid_write_ids)

    def alter_partitions(
        self,
        table: Any,
        partitions: Sequence[Any],
        is_truncate: bool = False,
        write_id: int = -1,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        """ALTER_PARTITIONS: one event for a batch of altered partitions (Hive 4, HIVE-27746)."""
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "isTruncateOp": _tf(is_truncate),
            "timestamp": self.now(),
            "writeId": write_id,
            "partitions": [partition_key_values(table, p) for p in partitions],
            "partitionListJson": [self.partition_json(p) for p in partitions],
        }
        return self._extra(body, valid_write_ids)

    def drop_partition(
        self, table: Any, partitions: Sequence[Any], valid_write_ids: str | None = None
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "timestamp": self.now(),
            "partitions": [partition_key_values(table, p) for p in partitions],
        }
        return self._extra(body, valid_write_ids)

    # -- functions: JSONCreateFunctionMessage, JSONDropFunctionMessage

    def create_function(self, fn: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": fn.dbName,
                "functionObjJson": tjson.dumps(fn),
                "timestamp": self.now(),
            }
        )

    def drop_function(self, fn: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "db": fn.dbName,
                "functionName": fn.functionName,
                "timestamp": self.now(),
            }
        )

    # -- INSERT: JSONInsertMessage

    def insert(
        self,
        table: Any,
        partition: Any | None = None,
        replace: bool = False,
        files: Iterable[str] = (),
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableType": table.tableType,
            "tableObjJson": self.table_json(table),
            "ptnObjJson": None if partition is None else self.partition_json(partition),
            "timestamp": self.now(),
            "replace": _tf(replace),
            "files": list(files),
        }
        return self._extra(body, valid_write_ids)

    # -- column statistics: JSONUpdateTableColumnStatMessage, JSONDeleteTableColumnStatMessage,
    #    JSONUpdatePartitionColumnStatMessage, JSONDeletePartitionColumnStatMessage

    def update_table_column_stats(
        self,
        stats: Any,
        table: Any,
        parameters: Mapping[str, str] | None,
        write_id: int = -1,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "writeId": write_id,
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": stats.statsDesc.dbName,
            "colStatsJson": tjson.dumps(stats),
            "parameters": None if parameters is None else dict(parameters),
            "tableObjJson": self.table_json(table),
        }
        return self._extra(body, valid_write_ids)

    def delete_table_column_stats(
        self, db_name: str, col_name: str | None, valid_write_ids: str | None = None
    ) -> dict[str, Any]:
        """Hive's message names only the database and column (None: all of them were deleted);
        the table is the row's TBL_NAME."""
        body = {
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": db_name,
            "colName": col_name,
        }
        return self._extra(body, valid_write_ids)

    def update_partition_column_stats(
        self,
        stats: Any,
        part_vals: Sequence[str],
        parameters: Mapping[str, str] | None,
        table: Any,
        write_id: int = -1,
        valid_write_ids: str | None = None,
        partition: Any | None = None,
    ) -> dict[str, Any]:
        """``partition``: the partition after the change (our ``partitionObjJson``)."""
        body = {
            "writeId": write_id,
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": stats.statsDesc.dbName,
            "colStatsJson": tjson.dumps(stats),
            "parameters": None if parameters is None else dict(parameters),
            "partVals": list(part_vals),
            "tableObjJson": self.table_json(table),
        }
        partition_json = None if partition is None else self.partition_json(partition)
        return self._extra(body, valid_write_ids, **{PARTITION_OBJ_JSON: partition_json})

    def delete_partition_column_stats(
        self,
        db_name: str,
        col_name: str | None,
        part_name: str,
        part_values: Sequence[str],
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": db_name,
            "colName": col_name,
            "partName": part_name,
            "partValues": list(part_values),
        }
        return self._extra(body, valid_write_ids)

    # -- catalogs: JSONCreateCatalogMessage, JSONAlterCatalogMessage, JSONDropCatalogMessage

    def create_catalog(self, catalog: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catalog": catalog.name,
                "timestamp": self.now(),
            }
        )

    def alter_catalog(self, before: Any, after: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catObjBeforeJson": tjson.dumps(before),
                "catObjAfterJson": tjson.dumps(after),
                "timestamp": self.now(),
            }
        )

    def drop_catalog(self, catalog: Any) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catalog": catalog.name,
                "timestamp": self.now(),
            }
        )

    # -- constraints: JSONAdd{PrimaryKey,ForeignKey,UniqueConstraint,NotNullConstraint,
    #    DefaultConstraint,CheckConstraint}Message, JSONDropConstraintMessage

    def add_constraints(self, list_key: str, items: Sequence[Any]) -> dict[str, Any]:
        """``list_key`` is the message's list field (``primaryKeyListJson``, ...): one TJSON
        text per constraint column, as stored (generated names filled in)."""
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "timestamp": self.now(),
                list_key: [tjson.dumps(item) for item in items],
            }
        )

    def drop_constraint(self, cat: str, db: str, table: str, name: str) -> dict[str, Any]:
        return self._finish(
            {
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "catName": cat,
                "dbName": db,
                "tableName": table,
                "constraintName": name,
                "timestamp": self.now(),
            }
        )

    # -- JSONAcidWriteMessage

    def acid_write(
        self,
        txn_id: int,
        write_id: int,
        table: Any,
        partition_name: str,
        partition: Any | None,
        files: Sequence[str],
    ) -> dict[str, Any]:
        """``partition`` is the partition's name ("" for the table); ``files`` are encoded
        as ReplChangeManager encodes them."""
        return self._finish(
            {
                "txnid": txn_id,
                "writeId": write_id,
                "timestamp": self.now(),
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "database": table.dbName,
                "table": table.tableName,
                "partition": partition_name,
                "tableObjJson": self.table_json(table),
                "partitionObjJson": (
                    self.partition_json(partition) if partition is not None else None
                ),
                "files": list(files),
            }
        )

    # -- transactions: JSONOpenTxnMessage, JSONCommitTxnMessage, JSONAbortTxnMessage,
    #    JSONAllocWriteIdMessage

    def open_txn(self, from_txn_id: int, to_txn_id: int) -> dict[str, Any]:
        """Hive 4 writes the range; ``txnIds`` stays null (readers expand from..to)."""
        return self._finish(
            {
                "txnIds": None,
                "timestamp": self.now(),
                "fromTxnId": from_txn_id,
                "toTxnId": to_txn_id,
                "server": self.server,
                "servicePrincipal": self.service_principal,
            }
        )

    def commit_txn(
        self,
        txn_id: int,
        write_events: Sequence[Any] | None = None,
        tables_altered: Sequence[tuple[str, str, str]] = (),
    ) -> dict[str, Any]:
        """``write_events``: WriteEventInfo objects (database, table, writeId), written under
        our :data:`TXN_WRITES`; Hive's seven lists stay null for REPL DUMP to fill.
        ``tables_altered``: (cat, db, table) whose parameters the commit set (keyValue)."""
        body: dict[str, Any] = {
            "txnid": txn_id,
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "writeIds": None,
            "databases": None,
            "tables": None,
            "partitions": None,
            "tableObjs": None,
            "partitionObjs": None,
            "files": None,
        }
        if write_events:
            body[TXN_WRITES] = [[w.database, w.table, w.writeId] for w in write_events]
        if tables_altered:
            body[TABLES_ALTERED] = [list(t) for t in tables_altered]
        return self._finish(body)

    def abort_txn(self, txn_id: int, dbs_updated: Sequence[str] | None = None) -> dict[str, Any]:
        return self._finish(
            {
                "txnid": txn_id,
                "timestamp": self.now(),
                "server": self.server,
                "servicePrincipal": self.service_principal,
                "dbsUpdated": None if dbs_updated is None else list(dbs_updated),
            }
        )

    def alloc_write_id(
        self,
        txn_to_write_ids: Sequence[Any],
        db_name: str,
        table_name: str,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        """``txn_to_write_ids``: TxnToWriteId objects (or (txnId, writeId) pairs)."""
        pairs = [
            (p.txnId, p.writeId) if hasattr(p, "txnId") else tuple(p) for p in txn_to_write_ids
        ]
        body = {
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "dbName": db_name,
            "tableName": table_name,
            "txnIdList": [t for t, _ in pairs],
            "writeIdList": [w for _, w in pairs],
            "timestamp": self.now(),
        }
        return self._extra(body, valid_write_ids)

    # -- RELOAD: JSONReloadMessage (fire_listener_event with refreshEvent)

    def reload(
        self,
        table: Any,
        partition: Any | None = None,
        partitions: Sequence[Any] | None = None,
        refresh: bool = True,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "db": table.dbName,
            "table": table.tableName,
            "tableObjJson": self.table_json(table),
            "ptnObjJson": None if partition is None else self.partition_json(partition),
            "refreshEvent": _tf(refresh),
            "partitionListJson": (
                None if partitions is None else [self.partition_json(p) for p in partitions]
            ),
        }
        return self._extra(body, valid_write_ids)


# Module-level shortcuts: a builder with server "" and principal "" (what Hive writes when
# metastore.thrift.uris and Kerberos are unset). Code that knows its server URI keeps its own
# MessageBuilder.
_default = MessageBuilder()
create_database = _default.create_database
alter_database = _default.alter_database
drop_database = _default.drop_database
create_table = _default.create_table
alter_table = _default.alter_table
drop_table = _default.drop_table
add_partition = _default.add_partition
alter_partition = _default.alter_partition
alter_partitions = _default.alter_partitions
drop_partition = _default.drop_partition
create_function = _default.create_function
drop_function = _default.drop_function
insert = _default.insert
update_table_column_stats = _default.update_table_column_stats
delete_table_column_stats = _default.delete_table_column_stats
update_partition_column_stats = _default.update_partition_column_stats
delete_partition_column_stats = _default.delete_partition_column_stats
create_catalog = _default.create_catalog
alter_catalog = _default.alter_catalog
drop_catalog = _default.drop_catalog
open_txn = _default.open_txn
commit_txn = _default.commit_txn
abort_txn = _default.abort_txn
alloc_write_id = _default.alloc_write_id
reload = _default.reload


# -- reading embedded objects back ------------------------------------------------------------


def embedded(body: Mapping[str, Any], key: str, cls: type) -> Any:
    """The Thrift object stored as TJSON under ``key``; None when the field is null/absent."""
    text = body.get(key)
    return None if text is None else tjson.loads(text, cls)


def embedded_list(body: Mapping[str, Any], key: str, cls: type) -> list[Any]:
    """A list of TJSON objects under ``key`` ([] when null/absent; null items stay None)."""
    return [None if t is None else tjson.loads(t, cls) for t in body.get(key) or []]


def table(body: Mapping[str, Any]) -> Any:
    """The table of CREATE/DROP_TABLE, partition, INSERT, stats and RELOAD messages."""
    return embedded(body, "tableObjJson", hms.Table)


def table_before(body: Mapping[str, Any]) -> Any:
    return embedded(body, "tableObjBeforeJson", hms.Table)


def table_after(body: Mapping[str, Any]) -> Any:
    return embedded(body, "tableObjAfterJson", hms.Table)


def partitions(body: Mapping[str, Any]) -> list[Any]:
    """The partitions of ADD_PARTITION, ALTER_PARTITIONS and RELOAD messages."""
    return embedded_list(body, "partitionListJson", hms.Partition)


def partition(body: Mapping[str, Any]) -> Any:
    """The partition of INSERT and RELOAD messages (None for a table-level event)."""
    return embedded(body, "ptnObjJson", hms.Partition)


def partition_before(body: Mapping[str, Any]) -> Any:
    return embedded(body, "partitionObjBeforeJson", hms.Partition)


def partition_after(body: Mapping[str, Any]) -> Any:
    return embedded(body, "partitionObjAfterJson", hms.Partition)


def database(body: Mapping[str, Any]) -> Any:
    """The database of CREATE_DATABASE and DROP_DATABASE messages."""
    return embedded(body, "dbJson", hms.Database)


def database_before(body: Mapping[str, Any]) -> Any:
    return embedded(body, "dbObjBeforeJson", hms.Database)


def database_after(body: Mapping[str, Any]) -> Any:
    return embedded(body, "dbObjAfterJson", hms.Database)


def function(body: Mapping[str, Any]) -> Any:
    return embedded(body, "functionObjJson", hms.Function)


def column_statistics(body: Mapping[str, Any]) -> Any:
    return embedded(body, "colStatsJson", hms.ColumnStatistics)


def catalog_before(body: Mapping[str, Any]) -> Any:
    return embedded(body, "catObjBeforeJson", hms.Catalog)


def catalog_after(body: Mapping[str, Any]) -> Any:
    return embedded(body, "catObjAfterJson", hms.Catalog)


def commit_table_objs(body: Mapping[str, Any]) -> list[Any]:
    """The tables of a COMMIT_TXN's write events ([] when it carries none)."""
    return embedded_list(body, "tableObjs", hms.Table)


def commit_writes(body: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """COMMIT_TXN's writes as (database, table, writeId): our :data:`TXN_WRITES`, or Hive's
    parallel lists in events written before it (and in events Hive wrote)."""
    ours = body.get(TXN_WRITES)
    if ours is not None:
        return [(str(d), str(t), int(w)) for d, t, w in ours]
    ids = body.get("writeIds") or []
    dbs = body.get("databases") or []
    tables = body.get("tables") or []
    return [(str(d), str(t), int(w)) for w, d, t in zip(ids, dbs, tables, strict=False)]


def valid_write_ids(body: Mapping[str, Any]) -> str | None:
    """Our extra field; None in messages without it (and in every message Hive wrote)."""
    return body.get(VALID_WRITE_ID_LIST)


def write_id(body: Mapping[str, Any]) -> int | None:
    """The write id of a write in a transaction, None otherwise (absent, null, 0 or -1)."""
    value = body.get(WRITE_ID)
    return value if isinstance(value, int) and value > 0 else None


def written_by_us(body: Mapping[str, Any]) -> bool:
    """Whether hms-cache-proxy's store wrote the message (its objects are exact reads)."""
    return body.get(WRITER) == WRITER_NAME


def repl_left_out(body: Mapping[str, Any]) -> bool:
    """ALTER_DATABASE's ``replPropertiesLeftOut`` (false when absent)."""
    return body.get(REPL_LEFT_OUT) is True


def write_ids_forced(body: Mapping[str, Any]) -> bool:
    """ALLOC_WRITE_ID_EVENT's ``writeIdsForced`` (false when absent)."""
    return body.get(WRITE_IDS_FORCED) is True


def tables_altered(body: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """COMMIT_TXN's ``tablesAltered``: (cat, db, table) in lower case (none when absent)."""
    return [
        (str(c or "hive").lower(), str(d).lower(), str(t).lower())
        for c, d, t in body.get(TABLES_ALTERED) or ()
    ]


def partitions_changed(body: Mapping[str, Any]) -> bool:
    """ALTER_TABLE's ``partitionsChanged`` (false when absent)."""
    return body.get(PARTITIONS_CHANGED) is True


def partition_obj(body: Mapping[str, Any]) -> Any:
    """UPDATE_PART_COL_STAT_EVENT's ``partitionObjJson`` (None when absent)."""
    return embedded(body, PARTITION_OBJ_JSON, hms.Partition)
