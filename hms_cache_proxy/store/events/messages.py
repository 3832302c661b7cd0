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
import gzip
import json
import re
import zlib
from collections.abc import Mapping
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import tjson
from hms_cache_proxy.store.events.message_base import (
    PARTITION_OBJ_JSON,
    PARTITIONS_CHANGED,
    REPL_LEFT_OUT,
    TABLES_ALTERED,
    TXN_WRITES,
    VALID_WRITE_ID_LIST,
    WRITE_ID,
    WRITER,
    WRITER_NAME,
)
from hms_cache_proxy.store.events.metadata_messages import MetadataMessages
from hms_cache_proxy.store.events.stats_messages import StatsMessages
from hms_cache_proxy.store.events.txn_messages import TxnMessages

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

# -- our extra fields (the others, which the builders write, are in .message_base) -------

WRITE_IDS_FORCED = "writeIdsForced"
"""Our extra field of ALLOC_WRITE_ID_EVENT: a replayed allocation took the source's write ids
where the table's did not stand (NEXT_WRITE_ID jumped, TXN_TO_WRITE_ID rows wiped), so a
cache cannot move its write-id list on from what it held."""

# -- formats ------------------------------------------------------------------------------------

JSON_FORMAT = "json-0.2"
GZIP_FORMAT = "gzip(json-2.0)"
DEFAULT_FORMAT = GZIP_FORMAT
_GZIP_ALIASES = frozenset({"gzip(json-2.0)", "gzip"})
_JSON_ALIASES = frozenset({"json-0.2"})


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


_COMMIT_HEAD = '{"txnid":'
_OURS_TEXT = f'"{WRITER}":"{WRITER_NAME}"'
_COMMIT_LISTS = (f'"{TXN_WRITES}"', f'"{TABLES_ALTERED}"', '"writeIds":[')


def quiet_commit_txn_id(message: str, fmt: str | None) -> int | None:
    """The txn id of a COMMIT_TXN this project wrote in plain JSON listing no write and no
    altered table (a commit of a txn that wrote nothing: the cache has nothing to change for
    it), read without decoding the message; None for any other message (decode it then).

    Told from the text: a '"' inside a JSON string is always escaped, so the texts of keys
    looked for here can only be the body's own keys; our bodies are ``to_json``'s compact
    text and start with the txn id (``TxnMessages.commit_txn``)."""
    if fmt and fmt != JSON_FORMAT and _kind(fmt) != "json":
        return None
    if not message.startswith(_COMMIT_HEAD) or _OURS_TEXT not in message:
        return None
    if any(key in message for key in _COMMIT_LISTS):
        return None
    end = message.find(",", len(_COMMIT_HEAD))
    text = message[len(_COMMIT_HEAD) : end]
    return int(text) if end > 0 and text.isdigit() else None


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


class MessageBuilder(MetadataMessages, StatsMessages, TxnMessages):
    """Builds message bodies the way Hive's MessageBuilder does, from Thrift objects.

    ``server`` is what Hive puts there (its metastore.thrift.uris, "" when unset) and
    ``service_principal`` its Kerberos principal ("" without Kerberos). ``exclude_parameters``
    are regular expressions (metastore.notification.parameters.exclude.patterns): Table and
    Partition parameters whose key matches one are left out of the embedded objects (the
    caller's objects are not changed). ``writer`` (our store passes :data:`WRITER_NAME`) ends
    every body with ``"writer"``; None builds Hive's layouts exactly.
    """


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
    """The Thrift object stored as TJSON under ``key``; None when the field is null/absent.
    A ``message_base.Body`` our store built hands out the object it encoded there instead
    (shared: read it, never change it), saving the decode."""
    kept = getattr(body, "objects", None)
    if kept is not None and key in kept:
        return kept[key]
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
