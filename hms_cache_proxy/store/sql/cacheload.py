"""Reads for the cache: a whole table in one read snapshot, with the event position and the
write-id state that snapshot reflects, and its partitions encoded straight from the rows.

A load must describe one instant: the table, every partition, ``at`` (NEXT_EVENT_ID - 1) and,
for a transactional table, its committed write ids are all read in one ``Database.read()``
snapshot (REPEATABLE READ on PostgreSQL), so the cache can tell which later events are already
in it. Partitions skip the Thrift objects the database path builds: the same rows (the same
queries as ``PartitionReads.load_partitions``) become the binary-protocol bytes the cache
keeps, as ``head + cols + tail`` (hms_cache_proxy/thrift_bytes.py), byte for byte what encoding the
database path's objects gives. Repeated parts (formats, serde, column lists) are encoded once
per load.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter
from typing import Any, Protocol

from sqlalchemy import func, select, tuple_

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.sql.constraints import Constraints
from hms_cache_proxy.store.sql.databases import _database, _db_params
from hms_cache_proxy.store.sql.details import Details, load_details
from hms_cache_proxy.store.sql.partition_reads import _partitions_of_table
from hms_cache_proxy.store.sql.storage import SD_COLUMNS, _skew_values
from hms_cache_proxy.store.sql.tables import TABLE_BY_NAME, Tables, table_select
from hms_cache_proxy.store.txn.write_id_calls import WriteIdCalls

PartitionBytes = tuple[str, tuple[str, ...], bytes, bytes, bytes]
"""(name, values, head, cols, tail) of one partition."""


class LoadSource(Protocol):
    """What the loader reads through: the SQL store's database, event log and transaction
    service, and its tables and constraints (SqlStore is one)."""

    @property
    def db(self) -> Database: ...
    @property
    def events(self) -> EventLog: ...
    @property
    def txn(self) -> WriteIdCalls: ...
    @property
    def tables(self) -> Tables: ...
    @property
    def constraints(self) -> Constraints: ...


@dataclass
class LoadedTable:
    at: int
    table: hms.Table
    write_ids: hms.TableValidWriteIds | None
    partitions: list[PartitionBytes] | None


@dataclass
class LoadedStats:
    at: int
    table_rows: list[Any]
    part_rows: list[tuple[str, Any]]  # (partition name, row)


@dataclass
class LoadedConstraints:
    at: int
    constraints: hms.SQLAllTableConstraints


def current_event(store: LoadSource, conn: Any) -> int:
    return store.events.current_event_id(conn)


def list_tables(store: LoadSource) -> list[tuple[str, str, str]]:
    """(catalog, database, table) of every table, in that order."""
    t, d = schema.TBLS, schema.DBS
    stmt = (
        select(d.c.CTLG_NAME, d.c.NAME, t.c.TBL_NAME)
        .select_from(t.join(d, t.c.DB_ID == d.c.DB_ID))
        .order_by(d.c.CTLG_NAME, d.c.NAME, t.c.TBL_NAME)
    )
    with store.db.read() as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute(stmt)]


def load_databases(store: LoadSource) -> tuple[int, dict[tuple[str, str], hms.Database]]:
    """Every database, and the event position they reflect."""
    with store.db.read() as conn:
        at = current_event(store, conn)
        rows = conn.execute(select(schema.DBS)).all()
        params = _db_params(conn, [r.DB_ID for r in rows]) if rows else {}
        return at, {(r.CTLG_NAME, r.NAME): _database(r, params.get(r.DB_ID, {})) for r in rows}


def load_table(
    store: LoadSource, cat: str, db: str, name: str, *, with_partitions: bool = True
) -> LoadedTable | None:
    """The table (None if it does not exist) with its partitions, in one read snapshot."""
    with store.db.read() as conn:
        at = current_event(store, conn)
        tables = store.tables.load_tables(conn, TABLE_BY_NAME, {"cat": cat, "db": db, "tbl": name})
        if not tables:
            return None
        table = tables[0]
        write_ids = None
        if _transactional(table.parameters):
            snapshot = store.txn.txn_snapshot(conn, 0)
            write_ids = store.txn.table_write_ids(conn, f"{db}.{name}", snapshot)
        parts = None
        if with_partitions:
            parts = (
                _partition_bytes(conn, store.db.dialect, table.id, cat, db, name)
                if table.partitionKeys
                else []
            )
        return LoadedTable(at, table, write_ids, parts)


def table_sizes(store: LoadSource) -> list[tuple[str, str, str, int]]:
    """(catalog, database, table, partition count) of every table, in that order: prewarm puts
    small tables together into batches."""
    t, d, p = schema.TBLS, schema.DBS, schema.PARTITIONS
    counts = select(p.c.TBL_ID, func.count().label("n")).group_by(p.c.TBL_ID).subquery()
    stmt = (
        select(d.c.CTLG_NAME, d.c.NAME, t.c.TBL_NAME, func.coalesce(counts.c.n, 0))
        .select_from(
            t.join(d, t.c.DB_ID == d.c.DB_ID).outerjoin(counts, counts.c.TBL_ID == t.c.TBL_ID)
        )
        .order_by(d.c.CTLG_NAME, d.c.NAME, t.c.TBL_NAME)
    )
    with store.db.read() as conn:
        return [(r[0], r[1], r[2], int(r[3])) for r in conn.execute(stmt)]


def load_tables(
    store: LoadSource, keys: Sequence[tuple[str, str, str]]
) -> dict[tuple[str, str, str], LoadedTable]:
    """Several tables with their partitions, all in one read snapshot, by (catalog, database,
    table); tables that no longer exist are left out. A handful of queries for the whole batch
    (``load_table`` costs as many per table): prewarm of many small tables is bound by round
    trips, not by rows."""
    if not keys:
        return {}
    d, t = schema.DBS, schema.TBLS
    stmt = table_select(tuple_(d.c.CTLG_NAME, d.c.NAME, t.c.TBL_NAME).in_(list(keys)))
    out: dict[tuple[str, str, str], LoadedTable] = {}
    with store.db.read() as conn:
        at = current_event(store, conn)
        tables = store.tables.load_tables(conn, stmt)
        snapshot = None
        partitioned: list[TableRef] = []
        for table in tables:
            write_ids = None
            if _transactional(table.parameters):
                if snapshot is None:
                    snapshot = store.txn.txn_snapshot(conn, 0)
                full_name = f"{table.dbName}.{table.tableName}"
                write_ids = store.txn.table_write_ids(conn, full_name, snapshot)
            key = (table.catName, table.dbName, table.tableName)
            out[key] = LoadedTable(at, table, write_ids, [])
            if table.partitionKeys:
                partitioned.append((table.id, *key))
        if store.db.dialect == "postgresql":
            parts = _partition_bytes_pg_many(conn, partitioned)
        else:
            parts = {ref[0]: _partition_bytes(conn, store.db.dialect, *ref) for ref in partitioned}
        for ref in partitioned:
            out[ref[1:]].partitions = parts.get(ref[0], [])
    return out


def load_stats(store: LoadSource, cat: str, db: str, name: str) -> LoadedStats | None:
    """Every column-statistics row of the table and its partitions (None: no such table)."""
    tcs, pcs, p, t, d = (
        schema.TAB_COL_STATS,
        schema.PART_COL_STATS,
        schema.PARTITIONS,
        schema.TBLS,
        schema.DBS,
    )
    with store.db.read() as conn:
        at = current_event(store, conn)
        tbl_id = conn.execute(
            select(t.c.TBL_ID)
            .select_from(t.join(d, t.c.DB_ID == d.c.DB_ID))
            .where(d.c.CTLG_NAME == cat, d.c.NAME == db, t.c.TBL_NAME == name)
        ).scalar()
        if tbl_id is None:
            return None
        table_rows = conn.execute(select(tcs).where(tcs.c.TBL_ID == tbl_id)).all()
        part_rows = conn.execute(
            select(p.c.PART_NAME, pcs)
            .select_from(pcs.join(p, p.c.PART_ID == pcs.c.PART_ID))
            .where(p.c.TBL_ID == tbl_id)
        ).all()
    return LoadedStats(at, list(table_rows), [(r[0], r) for r in part_rows])


def load_constraints(store: LoadSource, cat: str, db: str, name: str) -> LoadedConstraints:
    """A table's constraints and the event position they reflect, in one snapshot."""
    with store.db.read() as conn:
        at = current_event(store, conn)
        return LoadedConstraints(at, store.constraints.table_constraints_in(conn, cat, db, name))


def _transactional(params: dict[str, str] | None) -> bool:
    return str((params or {}).get("transactional", "")).strip().lower() == "true"


# -- partitions as bytes -------------------------------------------------------------------------

# Field ids below are Partition's (1-10) and StorageDescriptor's (location: 2).
_H_VALUES = thrift_bytes.field_header(15, 1) + b"\x0b"
_H_DB = thrift_bytes.field_header(11, 2)
_H_TBL = thrift_bytes.field_header(11, 3)
_H_CREATE = thrift_bytes.field_header(8, 4)
_H_ACCESS = thrift_bytes.field_header(8, 5)
_H_SD = thrift_bytes.field_header(12, 6)
_H_PARAMS = thrift_bytes.field_header(13, 7)
_H_CAT = thrift_bytes.field_header(11, 9)
_H_WRITE_ID = thrift_bytes.field_header(10, 10)
_H_LOCATION = thrift_bytes.field_header(11, 2)
_STOP = b"\x00"


def _partition_bytes(
    conn: Any, dialect: str, tbl_id: int, cat: str, db: str, name: str
) -> list[PartitionBytes]:
    if dialect == "postgresql":
        return _partition_bytes_pg(conn, tbl_id, cat, db, name)
    rows = conn.execute(_partitions_of_table(dialect, limited=False), {"tbl_id": tbl_id}).all()
    if not rows:
        return []
    details = load_details(
        conn,
        partitions=[r.PART_ID for r in rows],
        sds=[r.SD_ID for r in rows if r.SD_ID is not None],
        serdes=[r.SERDE_ID for r in rows if r.SERDE_ID is not None],
        cds=[r.CD_ID for r in rows if r.CD_ID is not None],
    )
    skewed = [r.SD_ID for r in rows if r.SD_ID in details.skewed_col_names]
    skew = _skew_values(conn, skewed) if skewed else ({}, {})
    enc = _Encoder(cat, db, name, details, skew)
    return [enc.partition(r) for r in rows]


class _Encoder:
    """Encodes partition rows of one table; remembers what repeats between partitions."""

    def __init__(
        self, cat: str, db: str, name: str, details: Details, skew: tuple[dict, dict]
    ) -> None:
        self.d = details
        self.skew = skew
        self.names = _H_DB + thrift_bytes.string(db) + _H_TBL + thrift_bytes.string(name)
        self.cat = _H_CAT + thrift_bytes.string(cat)
        self.keys: dict[str, bytes] = {}
        self.cols: dict[Any, bytes] = {}
        self.sd_rest: dict[Any, bytes] = {}
        self.strings: dict[str, bytes] = {}

    def partition(self, r: Any) -> PartitionBytes:
        d = self.d
        pid = r.PART_ID
        values = tuple(d.key_values.get(pid, ()))
        head = [_H_VALUES, thrift_bytes.pack_i32(len(values))]
        for v in values:
            head.append(thrift_bytes.string(v))
        head.append(self.names)
        head.append(_H_CREATE + thrift_bytes.pack_i32(r.CREATE_TIME))
        head.append(_H_ACCESS + thrift_bytes.pack_i32(r.LAST_ACCESS_TIME))
        tail: list[bytes] = []
        cols = b""
        if r.SD_ID is not None:
            head.append(_H_SD)
            cols = self._cols(r.CD_ID)
            if r.LOCATION is not None:
                tail.append(_H_LOCATION)
                tail.append(thrift_bytes.string(r.LOCATION))
            tail.append(self._sd_rest(r))
        tail.append(_H_PARAMS)
        tail.append(thrift_bytes.string_map(d.part_params.get(pid, {}), self.keys))
        tail.append(self.cat)
        tail.append(
            _H_WRITE_ID + thrift_bytes.pack_i64(r.WRITE_ID if r.WRITE_ID is not None else 0)
        )
        tail.append(_STOP)
        return r.PART_NAME, values, b"".join(head), cols, b"".join(tail)

    def _cols(self, cd_id: Any) -> bytes:
        found = self.cols.get(cd_id)
        if found is None:
            found = self.cols[cd_id] = thrift_bytes.encode_columns(self.d.columns.get(cd_id, []))
        return found

    def _sd_rest(self, r: Any) -> bytes:
        """Storage descriptor fields 3..12 and its STOP, shared by equal descriptors."""
        d, sd_id = self.d, r.SD_ID
        if sd_id in d.skewed_col_names:
            return self._encode_rest(r)  # rare: not worth a key
        key = (
            r.INPUT_FORMAT,
            r.OUTPUT_FORMAT,
            r.IS_COMPRESSED,
            r.NUM_BUCKETS,
            r.SERDE_ID is None,
            r.SERDE_NAME,
            r.SLIB,
            r.SERDE_DESCRIPTION,
            r.SERIALIZER_CLASS,
            r.DESERIALIZER_CLASS,
            r.SERDE_TYPE,
            tuple(d.serde_params.get(r.SERDE_ID, {}).items()),
            tuple(d.bucket_cols.get(sd_id, ())),
            tuple((o.col, o.order) for o in d.sort_cols.get(sd_id, ())),
            tuple(d.sd_params.get(sd_id, {}).items()),
            r.IS_STOREDASSUBDIRECTORIES,
        )
        found = self.sd_rest.get(key)
        if found is None:
            found = self.sd_rest[key] = self._encode_rest(r)
        return found

    def _encode_rest(self, r: Any) -> bytes:
        d, sd_id = self.d, r.SD_ID
        serde = None
        if r.SERDE_ID is not None:
            serde = hms.SerDeInfo(
                name=r.SERDE_NAME,
                serializationLib=r.SLIB,
                parameters=dict(d.serde_params.get(r.SERDE_ID, {})),
                description=r.SERDE_DESCRIPTION,
                serializerClass=r.SERIALIZER_CLASS,
                deserializerClass=r.DESERIALIZER_CLASS,
                serdeType=r.SERDE_TYPE,
            )
        values, locs = self.skew
        sd = hms.StorageDescriptor(
            inputFormat=r.INPUT_FORMAT,
            outputFormat=r.OUTPUT_FORMAT,
            compressed=bool(r.IS_COMPRESSED),
            numBuckets=int(r.NUM_BUCKETS),
            serdeInfo=serde,
            bucketCols=list(d.bucket_cols.get(sd_id, ())),
            sortCols=list(d.sort_cols.get(sd_id, ())),
            parameters=dict(d.sd_params.get(sd_id, {})),
            skewedInfo=hms.SkewedInfo(
                skewedColNames=list(d.skewed_col_names.get(sd_id, ())),
                skewedColValues=values.get(sd_id, []),
                skewedColValueLocationMaps=dict(locs.get(sd_id, {})),
            ),
            storedAsSubDirectories=bool(r.IS_STOREDASSUBDIRECTORIES),
        )
        return thrift_bytes.encode(sd)


# -- PostgreSQL: whole-table reads ---------------------------------------------------------------

_PG_PARTITIONS = """
SELECT p."PART_ID", p."PART_NAME", p."CREATE_TIME", p."LAST_ACCESS_TIME", p."WRITE_ID",
       p."SD_ID", s."CD_ID", s."LOCATION", s."SERDE_ID", s."INPUT_FORMAT", s."OUTPUT_FORMAT",
       s."IS_COMPRESSED", s."NUM_BUCKETS", s."IS_STOREDASSUBDIRECTORIES", se."NAME", se."SLIB",
       se."DESCRIPTION", se."SERIALIZER_CLASS", se."DESERIALIZER_CLASS", se."SERDE_TYPE",
       p."TBL_ID"
FROM "PARTITIONS" p
LEFT JOIN "SDS" s ON s."SD_ID" = p."SD_ID"
LEFT JOIN "SERDES" se ON se."SERDE_ID" = s."SERDE_ID"
WHERE p."TBL_ID" = ANY(%(tbls)s)
"""
"""The partition rows with their descriptor and serde, unordered: sorting 10,000 wide rows
costs the database more than sorting them here (by table, then name in code points, which is
PostgreSQL's COLLATE "C" order of UTF-8 text)."""

# The kinds of child rows in _PG_CHILDREN (small integers: no string per row to make or compare).
_PP, _KV, _EP, _DP, _BC, _SO, _SK = range(7)

_PG_CHILDREN = f"""
SELECT {_KV}, k."PART_ID", k."PART_KEY_VAL", NULL::text, k."INTEGER_IDX"
FROM "PARTITION_KEY_VALS" k JOIN "PARTITIONS" p ON p."PART_ID" = k."PART_ID"
WHERE p."TBL_ID" = ANY(%(tbls)s)
UNION ALL
SELECT {_PP}, x."PART_ID", x."PARAM_KEY", x."PARAM_VALUE", NULL::int
FROM "PARTITION_PARAMS" x JOIN "PARTITIONS" p ON p."PART_ID" = x."PART_ID"
WHERE p."TBL_ID" = ANY(%(tbls)s)
UNION ALL
SELECT {_EP}, x."SERDE_ID", x."PARAM_KEY", x."PARAM_VALUE", NULL::int
FROM "SERDE_PARAMS" x WHERE x."SERDE_ID" = ANY(%(serdes)s::bigint[])
UNION ALL
SELECT {_DP}, x."SD_ID", x."PARAM_KEY", x."PARAM_VALUE", NULL::int
FROM "SD_PARAMS" x JOIN "PARTITIONS" p ON p."SD_ID" = x."SD_ID"
WHERE p."TBL_ID" = ANY(%(tbls)s)
UNION ALL
SELECT {_BC}, x."SD_ID", x."BUCKET_COL_NAME", NULL::text, x."INTEGER_IDX"
FROM "BUCKETING_COLS" x JOIN "PARTITIONS" p ON p."SD_ID" = x."SD_ID"
WHERE p."TBL_ID" = ANY(%(tbls)s)
UNION ALL
SELECT {_SO}, x."SD_ID", x."COLUMN_NAME", x."ORDER"::text, x."INTEGER_IDX"
FROM "SORT_COLS" x JOIN "PARTITIONS" p ON p."SD_ID" = x."SD_ID"
WHERE p."TBL_ID" = ANY(%(tbls)s)
UNION ALL
SELECT {_SK}, x."SD_ID", x."SKEWED_COL_NAME", NULL::text, x."INTEGER_IDX"
FROM "SKEWED_COL_NAMES" x JOIN "PARTITIONS" p ON p."SD_ID" = x."SD_ID"
WHERE p."TBL_ID" = ANY(%(tbls)s)
"""
"""Every child row of the tables' partitions, descriptors and serdes, joined by TBL_ID (a few
scans of the child tables instead of one index probe per partition and child table), and the
serde parameters by the serde ids of the partition rows, given as one array literal (the
descriptors are not looked up a second time). The first column is the kind: partition
parameter, key value, serde parameter, descriptor parameter, bucket column, sort column,
skewed column name (_PP.._SK)."""


TableRef = tuple[int, str, str, str]
"""(TBL_ID, catalog, database, table) of a table whose partitions are read."""


def _partition_bytes_pg(
    conn: Any, tbl_id: int, cat: str, db: str, name: str
) -> list[PartitionBytes]:
    return _partition_bytes_pg_many(conn, [(tbl_id, cat, db, name)]).get(tbl_id, [])


def _partition_bytes_pg_many(
    conn: Any, tables: Sequence[TableRef]
) -> dict[int, list[PartitionBytes]]:
    """The partitions of several tables with two queries in all (a batch of prewarm pays the
    round trips once, not per table), encoded table by table in one pass over the rows."""
    if not tables:
        return {}
    ids = [t[0] for t in tables]
    rows = _fetch_all(conn, _PG_PARTITIONS, {"tbls": ids})
    if not rows:
        return {}
    rows.sort(key=_BY_TABLE_AND_NAME)
    serdes = {r[8] for r in rows if r[8] is not None}
    children = _fetch_all(
        conn, _PG_CHILDREN, {"tbls": ids, "serdes": "{" + ",".join(map(str, serdes)) + "}"}
    )
    enc = _RowEncoder(conn, children)
    enc.prefetch_columns({r[6] for r in rows if r[5] is not None and r[6] is not None})
    by_id = {t[0]: t for t in tables}
    out: dict[int, list[PartitionBytes]] = {}
    for tbl_id, table_rows in groupby(rows, key=_tbl_id):
        _, cat, db, name = by_id[tbl_id]
        out[tbl_id] = enc.encode(cat, db, name, table_rows)
    return out


def _fetch_all(conn: Any, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every row of a plain-SQL query on this connection (the same snapshot) as the driver's
    tuples: SQLAlchemy runs the statement (its errors, its handling of a lost connection) but
    makes no Row objects (10,000 rows and more is the common case here)."""
    result = conn.exec_driver_sql(sql, params)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


_BY_TABLE_AND_NAME = itemgetter(20, 1)


def _tbl_id(row: tuple[Any, ...]) -> int:
    return row[20]


class _RowEncoder:
    """Partition rows (``_PG_PARTITIONS``) to bytes, with their child rows indexed once; what
    repeats (columns, descriptor and serde fields, parameter entries) is encoded once per
    batch."""

    def __init__(self, conn: Any, children: Sequence[tuple[Any, ...]]) -> None:
        self.conn = conn
        i32 = thrift_bytes.pack_i32
        string = thrift_bytes.string
        values: dict[int, list[tuple[int, str]]] = {}
        # Partition parameters go straight to their encoded map entries (key, value); an
        # entry met again (numFiles=1, the same statistics flags) is the same bytes object.
        params: dict[int, list[bytes]] = {}
        entries: dict[str, dict[str | None, bytes]] = {}
        serde_params: dict[int, list[tuple[Any, ...]]] = {}
        skewed: set[int] = set()
        other: dict[tuple[int, int], list[tuple[Any, ...]]] = {}
        pp, kv_, ep_, sk_ = _PP, _KV, _EP, _SK
        for kind, owner, a, b, idx in children:
            if kind == pp:
                by_value = entries.get(a)
                if by_value is None:
                    by_value = entries[a] = {}
                piece = by_value.get(b)
                if piece is None:
                    vb = b.encode("utf-8") if b is not None else b""
                    piece = by_value[b] = string(a) + i32(len(vb)) + vb
                found_p = params.get(owner)
                if found_p is None:
                    params[owner] = [piece]
                else:
                    found_p.append(piece)
            elif kind == kv_:
                found = values.get(owner)
                if found is None:
                    values[owner] = [(idx, a if a is not None else "")]
                else:
                    found.append((idx, a if a is not None else ""))
            elif kind == ep_:
                serde_params.setdefault(owner, []).append((a, b, idx))
            elif kind == sk_:
                skewed.add(owner)
            else:
                other.setdefault((kind, owner), []).append((a, b, idx))
        self.values = values
        self.params = params
        self.serde_params = serde_params
        self.skewed = skewed
        self.other = other
        self.cols: dict[Any, bytes] = {}
        self.rests: dict[Any, bytes] = {}

    def prefetch_columns(self, cd_ids: Iterable[Any]) -> None:
        """The column lists of these descriptors in one query (each table's partitions
        usually have a column descriptor of their own: one query per table otherwise)."""
        wanted = [cd for cd in cd_ids if cd not in self.cols]
        if not wanted:
            return
        found = load_details(self.conn, cds=wanted).columns
        for cd in wanted:
            self.cols[cd] = thrift_bytes.encode_columns(found.get(cd, []))

    def encode(
        self, cat: str, db: str, name: str, rows: Iterable[tuple[Any, ...]]
    ) -> list[PartitionBytes]:
        conn, values, params, other = self.conn, self.values, self.params, self.other
        serde_params, skewed = self.serde_params, self.skewed
        cols, rests = self.cols, self.rests
        # Descriptor parameters, bucket and sort columns are rare: look them up only if any.
        sd_children = bool(other)
        i32 = thrift_bytes.pack_i32
        string = thrift_bytes.string
        names = _H_DB + string(db) + _H_TBL + string(name)
        ending = _H_CAT + string(cat) + _H_WRITE_ID
        times = _TIMES
        param_heads = _PARAM_HEADS
        no_values = _H_VALUES + i32(0)
        one_value = _H_VALUES + i32(1)
        no_other: list[tuple[Any, ...]] = []
        out: list[PartitionBytes] = []
        append = out.append
        join = b"".join
        for r in rows:
            part_id, part_name, ct, lat, wid, sd_id, cd_id, location, serde_id = r[:9]
            kv = values.get(part_id)
            if kv is None:
                vals: tuple[str, ...] = ()
                head_values = no_values
            elif len(kv) == 1:
                v = kv[0][1]
                vals = (v,)
                vb = v.encode("utf-8")
                head_values = one_value + i32(len(vb)) + vb
            else:
                kv.sort()
                vals = tuple(v for _, v in kv)
                head_values = join([_H_VALUES, i32(len(vals)), *map(string, vals)])
            entries = params.get(part_id)
            if entries is None:
                param_bytes = param_heads[0]
            else:
                n = len(entries)
                head = param_heads[n] if n < len(param_heads) else _H_PARAMS_MAP + i32(n)
                param_bytes = head + join(entries)
            end = ending + _I64(wid if wid is not None else 0) + _STOP
            if sd_id is None:
                append(
                    (
                        part_name,
                        vals,
                        join((head_values, names, times(8, 4, ct, 8, 5, lat))),
                        b"",
                        param_bytes + end,
                    )
                )
                continue
            c = cols.get(cd_id)
            if c is None:
                c = cols[cd_id] = _columns(conn, cd_id)
            if sd_id in skewed:
                rest = _sd_rest_of(conn, sd_id)  # skewed: rare, not shared
            else:
                ep = serde_params.get(serde_id)
                key: tuple[Any, ...] = (r[9:20], serde_id is None, tuple(sorted(ep)) if ep else ())
                if sd_children:
                    key += (
                        tuple(sorted(other.get((_DP, sd_id), no_other))),
                        tuple(sorted(other.get((_BC, sd_id), no_other), key=_idx)),
                        tuple(sorted(other.get((_SO, sd_id), no_other), key=_idx)),
                    )
                shared = rests.get(key)
                if shared is None:
                    shared = rests[key] = _sd_rest_of(conn, sd_id)
                rest = shared
            head = join((head_values, names, times(8, 4, ct, 8, 5, lat), _H_SD))
            if location is None:
                tail = join((rest, param_bytes, end))
            else:
                lb = location.encode("utf-8")
                tail = join((_H_LOCATION, i32(len(lb)), lb, rest, param_bytes, end))
            append((part_name, vals, head, c, tail))
        return out


_TIMES = struct.Struct(">bhibhi").pack
_I64 = thrift_bytes.pack_i64
_H_PARAMS_MAP = _H_PARAMS + b"\x0b\x0b"
_PARAM_HEADS = [_H_PARAMS_MAP + thrift_bytes.pack_i32(n) for n in range(32)]
"""The parameters field's header and map header for maps of up to 31 entries."""


def _idx(item: tuple[Any, ...]) -> Any:
    return item[2]


def _columns(conn: Any, cd_id: Any) -> bytes:
    if cd_id is None:
        return thrift_bytes.encode_columns([])
    return thrift_bytes.encode_columns(load_details(conn, cds=[cd_id]).columns.get(cd_id, []))


def _sd_rest_of(conn: Any, sd_id: int) -> bytes:
    """Fields 3..12 of one storage descriptor, read the database path's way."""
    row = conn.execute(
        select(*SD_COLUMNS)
        .select_from(
            schema.SDS.outerjoin(schema.SERDES, schema.SERDES.c.SERDE_ID == schema.SDS.c.SERDE_ID)
        )
        .where(schema.SDS.c.SD_ID == sd_id)
    ).one()
    details = load_details(
        conn,
        sds=[sd_id],
        serdes=[row.SERDE_ID] if row.SERDE_ID is not None else [],
    )
    skew = _skew_values(conn, [sd_id]) if sd_id in details.skewed_col_names else ({}, {})
    return _Encoder("", "", "", details, skew)._encode_rest(row)
