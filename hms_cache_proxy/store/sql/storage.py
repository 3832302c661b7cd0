"""Storage descriptors (SDS, SERDES, CDS and their child tables), read and written in batches.

Tables and partitions both own storage descriptors; a partition whose columns equal its
table's shares the table's column descriptor (CD), as Hive's ObjectStore does, so a table with
10,000 partitions keeps one copy of its columns. Reading N descriptors takes a fixed handful of
queries (one per table family, UNION ALL where the shapes agree), never one per descriptor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    and_,
    delete,
    exists,
    insert,
    select,
    text,
)

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import IdSource, chunks, fetch_in
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.db.prepared import Prepared
from hms_cache_proxy.store.sql.details import Details

SD_COLUMNS = (
    schema.SDS.c.SD_ID,
    schema.SDS.c.CD_ID,
    schema.SDS.c.SERDE_ID,
    schema.SDS.c.INPUT_FORMAT,
    schema.SDS.c.OUTPUT_FORMAT,
    schema.SDS.c.IS_COMPRESSED,
    schema.SDS.c.IS_STOREDASSUBDIRECTORIES,
    schema.SDS.c.LOCATION,
    schema.SDS.c.NUM_BUCKETS,
    schema.SERDES.c.NAME.label("SERDE_NAME"),
    schema.SERDES.c.SLIB,
    schema.SERDES.c.DESCRIPTION.label("SERDE_DESCRIPTION"),
    schema.SERDES.c.SERIALIZER_CLASS,
    schema.SERDES.c.DESERIALIZER_CLASS,
    schema.SERDES.c.SERDE_TYPE,
)
"""Columns to select (with an outer join of SDS and SERDES) to build descriptors from rows."""


def sd_join(from_clause: Any, sd_id_col: Any) -> Any:
    """``from_clause`` outer-joined to its SDS row and that row's SERDES row."""
    return from_clause.outerjoin(schema.SDS, schema.SDS.c.SD_ID == sd_id_col).outerjoin(
        schema.SERDES, schema.SERDES.c.SERDE_ID == schema.SDS.c.SERDE_ID
    )


# -- reading -------------------------------------------------------------------------------------


def _skew_values(
    conn: Connection, sd_ids: Sequence[int]
) -> tuple[dict[int, list[list[str]]], dict[int, dict[tuple[str, ...], str]]]:
    """Skewed values and their locations for the (rare) descriptors that have skewed columns."""
    v, sv, m = (
        schema.SKEWED_VALUES.c,
        schema.SKEWED_STRING_LIST_VALUES.c,
        schema.SKEWED_COL_VALUE_LOC_MAP.c,
    )
    value_rows = fetch_in(
        conn,
        v.SD_ID_OID,
        list(sd_ids),
        lambda cond: (
            select(v.SD_ID_OID, v.INTEGER_IDX, sv.STRING_LIST_VALUE)
            .select_from(
                schema.SKEWED_VALUES.outerjoin(
                    schema.SKEWED_STRING_LIST_VALUES, sv.STRING_LIST_ID == v.STRING_LIST_ID_EID
                )
            )
            .where(cond)
            .order_by(v.SD_ID_OID, v.INTEGER_IDX, sv.INTEGER_IDX)
        ),
    )
    values: dict[int, list[list[str]]] = {}
    last: tuple[int, int] | None = None
    for sd_id, idx, value in value_rows:
        lists = values.setdefault(sd_id, [])
        if last != (sd_id, idx):
            lists.append([])
            last = (sd_id, idx)
        if value is not None:
            lists[-1].append(value)
    loc_rows = fetch_in(
        conn,
        m.SD_ID,
        list(sd_ids),
        lambda cond: (
            select(m.SD_ID, m.STRING_LIST_ID_KID, m.LOCATION, sv.STRING_LIST_VALUE)
            .select_from(
                schema.SKEWED_COL_VALUE_LOC_MAP.outerjoin(
                    schema.SKEWED_STRING_LIST_VALUES, sv.STRING_LIST_ID == m.STRING_LIST_ID_KID
                )
            )
            .where(cond)
            .order_by(m.SD_ID, m.STRING_LIST_ID_KID, sv.INTEGER_IDX)
        ),
    )
    locs: dict[int, dict[tuple[str, ...], str]] = {}
    keys: dict[tuple[int, int], tuple[list[str], str]] = {}
    for sd_id, list_id, location, value in loc_rows:
        entry = keys.setdefault((sd_id, list_id), ([], location))
        if value is not None:
            entry[0].append(value)
    for (sd_id, _), (key, location) in keys.items():
        locs.setdefault(sd_id, {})[tuple(key)] = location
    return values, locs


def build_storage_descriptors(
    conn: Connection, rows: Sequence[Any], details: Details
) -> dict[int, hms.StorageDescriptor]:
    """Descriptors for rows selected with SD_COLUMNS, keyed by SD_ID, from their child rows
    (``details`` must hold the sds, serdes and cds of ``rows``). Skewed values, rare, cost
    two more queries only for the descriptors that have skewed columns."""
    rows = [r for r in rows if r.SD_ID is not None]
    if not rows:
        return {}
    skewed = [r.SD_ID for r in rows if r.SD_ID in details.skewed_col_names]
    skew_values, skew_locs = _skew_values(conn, skewed) if skewed else ({}, {})
    no_params: dict[str, str] = {}
    no_cols: list[hms.FieldSchema] = []
    out: dict[int, hms.StorageDescriptor] = {}
    for r in rows:
        sd_id = r.SD_ID
        serde = None
        if r.SERDE_ID is not None:
            serde = hms.SerDeInfo(
                name=r.SERDE_NAME,
                serializationLib=r.SLIB,
                parameters=dict(details.serde_params.get(r.SERDE_ID, no_params)),
                description=r.SERDE_DESCRIPTION,
                serializerClass=r.SERIALIZER_CLASS,
                deserializerClass=r.DESERIALIZER_CLASS,
                serdeType=r.SERDE_TYPE,
            )
        out[sd_id] = hms.StorageDescriptor(
            cols=list(details.columns.get(r.CD_ID, no_cols)),
            location=r.LOCATION,
            inputFormat=r.INPUT_FORMAT,
            outputFormat=r.OUTPUT_FORMAT,
            compressed=bool(r.IS_COMPRESSED),
            numBuckets=int(r.NUM_BUCKETS),
            serdeInfo=serde,
            bucketCols=list(details.bucket_cols.get(sd_id, ())),
            sortCols=list(details.sort_cols.get(sd_id, ())),
            parameters=dict(details.sd_params.get(sd_id, no_params)),
            skewedInfo=hms.SkewedInfo(
                skewedColNames=list(details.skewed_col_names.get(sd_id, ())),
                skewedColValues=skew_values.get(sd_id, []),
                skewedColValueLocationMaps=dict(skew_locs.get(sd_id, {})),
            ),
            storedAsSubDirectories=bool(r.IS_STOREDASSUBDIRECTORIES),
        )
    return out


# -- writing -------------------------------------------------------------------------------------


def same_columns(a: Sequence[hms.FieldSchema] | None, b: Sequence[hms.FieldSchema] | None) -> bool:
    """Whether two column lists are equal field for field (names, types, comments)."""
    a, b = a or [], b or []
    return len(a) == len(b) and all(
        (x.name, x.type, x.comment) == (y.name, y.type, y.comment)
        for x, y in zip(a, b, strict=True)
    )


def insert_column_descriptors(
    conn: Connection, alloc: IdAllocator, col_lists: Sequence[Sequence[hms.FieldSchema]]
) -> list[int]:
    """One new CD per column list; returns their ids."""
    cd_ids = alloc.allocate(conn, idseq.COLUMN_DESCRIPTOR, len(col_lists))
    if not cd_ids:
        return []
    conn.execute(insert(schema.CDS), [{"CD_ID": i} for i in cd_ids])
    rows = [
        {
            "CD_ID": cd,
            "COLUMN_NAME": col.name,
            "TYPE_NAME": col.type,
            "COMMENT": col.comment,
            "INTEGER_IDX": idx,
        }
        for cd, cols in zip(cd_ids, col_lists, strict=True)
        for idx, col in enumerate(cols or [])
    ]
    if rows:
        conn.execute(insert(schema.COLUMNS_V2), rows)
    return cd_ids


def insert_storage_descriptors(
    conn: Connection,
    alloc: IdAllocator,
    sds: Sequence[hms.StorageDescriptor],
    cd_ids: Sequence[int | None],
) -> list[int]:
    """Insert descriptors (with serdes, parameters and lists) pointing at ``cd_ids``."""
    n = len(sds)
    if n == 0:
        return []
    sd_ids = alloc.allocate(conn, idseq.STORAGE_DESCRIPTOR, n)
    serde_ids = alloc.allocate(conn, idseq.SERDE, n)
    serde_rows, serde_params, sd_rows, sd_params = [], [], [], []
    buckets: list[dict[str, Any]] = []
    sorts: list[dict[str, Any]] = []
    skew_names: list[dict[str, Any]] = []
    skewed: list[tuple[int, hms.SkewedInfo]] = []
    for sd, sd_id, serde_id, cd_id in zip(sds, sd_ids, serde_ids, cd_ids, strict=True):
        serde = sd.serdeInfo or hms.SerDeInfo()
        serde_rows.append(
            {
                "SERDE_ID": serde_id,
                "NAME": serde.name,
                "SLIB": serde.serializationLib,
                "DESCRIPTION": serde.description,
                "SERIALIZER_CLASS": serde.serializerClass,
                "DESERIALIZER_CLASS": serde.deserializerClass,
                "SERDE_TYPE": serde.serdeType,
            }
        )
        serde_params.extend(param_rows("SERDE_ID", serde_id, serde.parameters))
        sd_rows.append(
            {
                "SD_ID": sd_id,
                "INPUT_FORMAT": sd.inputFormat,
                "IS_COMPRESSED": bool(sd.compressed),
                "LOCATION": sd.location,
                "NUM_BUCKETS": sd.numBuckets if sd.numBuckets is not None else -1,
                "OUTPUT_FORMAT": sd.outputFormat,
                "SERDE_ID": serde_id,
                "CD_ID": cd_id,
                "IS_STOREDASSUBDIRECTORIES": bool(sd.storedAsSubDirectories),
            }
        )
        sd_params.extend(param_rows("SD_ID", sd_id, sd.parameters))
        buckets.extend(
            {"SD_ID": sd_id, "BUCKET_COL_NAME": c, "INTEGER_IDX": i}
            for i, c in enumerate(sd.bucketCols or [])
        )
        sorts.extend(
            {"SD_ID": sd_id, "COLUMN_NAME": o.col, "ORDER": o.order, "INTEGER_IDX": i}
            for i, o in enumerate(sd.sortCols or [])
        )
        info = sd.skewedInfo
        if info is not None and (info.skewedColNames or info.skewedColValues):
            skew_names.extend(
                {"SD_ID": sd_id, "SKEWED_COL_NAME": c, "INTEGER_IDX": i}
                for i, c in enumerate(info.skewedColNames or [])
            )
            skewed.append((sd_id, info))
    insert_rows_together(
        conn,
        [
            (schema.SERDES, serde_rows),
            (schema.SERDE_PARAMS, serde_params),
            (schema.SDS, sd_rows),
            (schema.SD_PARAMS, sd_params),
            (schema.BUCKETING_COLS, buckets),
            (schema.SORT_COLS, sorts),
            (schema.SKEWED_COL_NAMES, skew_names),
        ],
    )
    if skewed:
        _insert_skew_values(conn, alloc, skewed)
    return sd_ids


def _insert_skew_values(
    conn: Connection, alloc: IdAllocator, skewed: list[tuple[int, hms.SkewedInfo]]
) -> None:
    lists: list[Sequence[str]] = []
    owners: list[tuple[str, int, int | str]] = []  # (kind, sd_id, index or location)
    for sd_id, info in skewed:
        for idx, values in enumerate(info.skewedColValues or []):
            lists.append(values)
            owners.append(("v", sd_id, idx))
        for key, location in (info.skewedColValueLocationMaps or {}).items():
            lists.append(list(key))
            owners.append(("m", sd_id, location))
    list_ids = alloc.allocate(conn, idseq.STRING_LIST, len(lists))
    insert_rows(conn, schema.SKEWED_STRING_LIST, [{"STRING_LIST_ID": i} for i in list_ids])
    insert_rows(
        conn,
        schema.SKEWED_STRING_LIST_VALUES,
        [
            {"STRING_LIST_ID": list_id, "STRING_LIST_VALUE": v, "INTEGER_IDX": i}
            for list_id, values in zip(list_ids, lists, strict=True)
            for i, v in enumerate(values)
        ],
    )
    insert_rows(
        conn,
        schema.SKEWED_VALUES,
        [
            {"SD_ID_OID": sd_id, "STRING_LIST_ID_EID": list_id, "INTEGER_IDX": idx}
            for list_id, (kind, sd_id, idx) in zip(list_ids, owners, strict=True)
            if kind == "v"
        ],
    )
    insert_rows(
        conn,
        schema.SKEWED_COL_VALUE_LOC_MAP,
        [
            {"SD_ID": sd_id, "STRING_LIST_ID_KID": list_id, "LOCATION": loc}
            for list_id, (kind, sd_id, loc) in zip(list_ids, owners, strict=True)
            if kind == "m"
        ],
    )


def delete_storage_descriptors(conn: Connection, sd_ids: IdSource) -> None:
    """Delete descriptors, their serdes and child rows, then column descriptors left unused.

    Rows that reference the descriptors (TBLS, PARTITIONS) must already be gone.
    """
    if not hasattr(sd_ids, "scalar_subquery"):
        sd_ids = sorted(set(sd_ids))
        if not sd_ids:
            return
        if conn.dialect.name == "postgresql":
            freed_cds = [r[0] for r in conn.execute(_PG_DELETE_SDS, {"ids": sd_ids})]
            drop_freed_column_descriptors(conn, freed_cds)
            return
    rows = fetch_in(
        conn,
        schema.SDS.c.SD_ID,
        sd_ids,
        lambda cond: select(schema.SDS.c.SD_ID, schema.SDS.c.SERDE_ID, schema.SDS.c.CD_ID).where(
            cond
        ),
    )
    ids = [r.SD_ID for r in rows]
    serdes = [r.SERDE_ID for r in rows if r.SERDE_ID is not None]
    cds = {r.CD_ID for r in rows if r.CD_ID is not None}
    if not ids:
        return
    # Skewed string lists belong to exactly one descriptor.
    v, m = schema.SKEWED_VALUES.c, schema.SKEWED_COL_VALUE_LOC_MAP.c
    string_lists = [
        r[0]
        for r in fetch_in(
            conn, v.SD_ID_OID, ids, lambda cond: select(v.STRING_LIST_ID_EID).where(cond)
        )
    ] + [
        r[0]
        for r in fetch_in(conn, m.SD_ID, ids, lambda cond: select(m.STRING_LIST_ID_KID).where(cond))
    ]
    for part in chunks(ids):
        for table, col in (
            (schema.SD_PARAMS, "SD_ID"),
            (schema.BUCKETING_COLS, "SD_ID"),
            (schema.SORT_COLS, "SD_ID"),
            (schema.SKEWED_COL_NAMES, "SD_ID"),
            (schema.SKEWED_VALUES, "SD_ID_OID"),
            (schema.SKEWED_COL_VALUE_LOC_MAP, "SD_ID"),
        ):
            conn.execute(delete(table).where(table.c[col].in_(part)))
    for part in chunks(sorted(set(string_lists))):
        conn.execute(
            delete(schema.SKEWED_STRING_LIST_VALUES).where(
                schema.SKEWED_STRING_LIST_VALUES.c.STRING_LIST_ID.in_(part)
            )
        )
        conn.execute(
            delete(schema.SKEWED_STRING_LIST).where(
                schema.SKEWED_STRING_LIST.c.STRING_LIST_ID.in_(part)
            )
        )
    for part in chunks(ids):
        conn.execute(delete(schema.SDS).where(schema.SDS.c.SD_ID.in_(part)))
    for part in chunks(sorted(set(serdes))):
        conn.execute(delete(schema.SERDE_PARAMS).where(schema.SERDE_PARAMS.c.SERDE_ID.in_(part)))
        conn.execute(delete(schema.SERDES).where(schema.SERDES.c.SERDE_ID.in_(part)))
    drop_unused_column_descriptors(conn, cds)


_PG_DELETE_SDS = text(
    """
WITH sd AS (DELETE FROM "SDS" WHERE "SD_ID" = ANY(:ids) RETURNING "SERDE_ID", "CD_ID"),
p AS (DELETE FROM "SD_PARAMS" WHERE "SD_ID" = ANY(:ids)),
b AS (DELETE FROM "BUCKETING_COLS" WHERE "SD_ID" = ANY(:ids)),
o AS (DELETE FROM "SORT_COLS" WHERE "SD_ID" = ANY(:ids)),
n AS (DELETE FROM "SKEWED_COL_NAMES" WHERE "SD_ID" = ANY(:ids)),
v AS (DELETE FROM "SKEWED_VALUES" WHERE "SD_ID_OID" = ANY(:ids) RETURNING "STRING_LIST_ID_EID"),
m AS (DELETE FROM "SKEWED_COL_VALUE_LOC_MAP" WHERE "SD_ID" = ANY(:ids)
      RETURNING "STRING_LIST_ID_KID"),
l AS (SELECT "STRING_LIST_ID_EID" AS id FROM v UNION SELECT "STRING_LIST_ID_KID" FROM m),
lv AS (DELETE FROM "SKEWED_STRING_LIST_VALUES" WHERE "STRING_LIST_ID" IN (SELECT id FROM l)),
ll AS (DELETE FROM "SKEWED_STRING_LIST" WHERE "STRING_LIST_ID" IN (SELECT id FROM l)),
ep AS (DELETE FROM "SERDE_PARAMS" WHERE "SERDE_ID" IN (SELECT "SERDE_ID" FROM sd)),
e AS (DELETE FROM "SERDES" WHERE "SERDE_ID" IN (SELECT "SERDE_ID" FROM sd))
SELECT DISTINCT "CD_ID" FROM sd WHERE "CD_ID" IS NOT NULL
"""
)
"""delete_storage_descriptors on PostgreSQL: descriptors, child rows, skewed string lists and
serdes in one statement (its foreign keys are checked when it ends); the column descriptors
they used come back for _PG_DROP_UNUSED_CDS, which sees the descriptors gone."""

PG_DELETE_SDS_DBAPI = Prepared(
    "hms_delete_sds",
    _PG_DELETE_SDS.text.replace(":ids", "%(sds_freed)s").strip(),
    {"sds_freed": "bigint[]"},
    at_connect=True,
)
"""_PG_DELETE_SDS in psycopg2's parameter style (parameter ``sds_freed``: the SD_IDs), to end
a message of the caller's statements (one round trip); its rows are the freed CD_IDs, for
``drop_freed_column_descriptors``. Prepared: it runs on every alter of partitions."""


def drop_freed_column_descriptors(conn: Connection, freed_cds: Sequence[int]) -> None:
    """After PG_DELETE_SDS_DBAPI: the column descriptors it freed that nothing uses now."""
    if freed_cds:
        conn.execute(_PG_DROP_UNUSED_CDS, {"ids": list(freed_cds)})


_PG_DROP_UNUSED_CDS = text(
    """
WITH u AS (SELECT c FROM unnest(CAST(:ids AS BIGINT[])) AS c
           WHERE NOT EXISTS (SELECT 1 FROM "SDS" WHERE "CD_ID" = c)),
cv AS (DELETE FROM "COLUMNS_V2" WHERE "CD_ID" IN (SELECT c FROM u))
DELETE FROM "CDS" WHERE "CD_ID" IN (SELECT c FROM u)
"""
)


def drop_unused_column_descriptors(conn: Connection, cd_ids: set[int] | Sequence[int]) -> None:
    """Delete column descriptors that no storage descriptor references any more."""
    if not cd_ids:
        return
    cds = sorted(set(cd_ids))
    for part in chunks(cds):
        used = {
            r[0]
            for r in conn.execute(
                select(schema.SDS.c.CD_ID).where(schema.SDS.c.CD_ID.in_(part)).distinct()
            )
        }
        unused = [c for c in part if c not in used]
        if unused:
            conn.execute(delete(schema.COLUMNS_V2).where(schema.COLUMNS_V2.c.CD_ID.in_(unused)))
            conn.execute(delete(schema.CDS).where(schema.CDS.c.CD_ID.in_(unused)))


def cd_in_use_elsewhere(conn: Connection, cd_id: int, except_sd: int) -> bool:
    return bool(
        conn.execute(
            select(
                exists().where(and_(schema.SDS.c.CD_ID == cd_id, schema.SDS.c.SD_ID != except_sd))
            )
        ).scalar()
    )


def param_rows(owner_col: str, owner: int, params: dict[str, str] | None) -> list[dict[str, Any]]:
    """Rows for a *_PARAMS table."""
    return [{owner_col: owner, "PARAM_KEY": k, "PARAM_VALUE": v} for k, v in (params or {}).items()]


def insert_rows(conn: Connection, table: Any, rows: list[dict[str, Any]]) -> None:
    """executemany insert, skipped when there are no rows."""
    if rows:
        conn.execute(insert(table), rows)


_ROWS_PER_INSERT = 1000


def insert_rows_together(
    conn: Connection, parts: Sequence[tuple[Any, list[dict[str, Any]]]]
) -> None:
    """``insert_rows`` of each (table, rows) in turn; on PostgreSQL through psycopg2 (which
    binds parameters on the client, so one message may hold several statements) all of them
    in one round trip, as multi-row INSERTs in the same order. Each table's rows share their
    keys (the columns written)."""
    if conn.dialect.name != "postgresql" or conn.dialect.driver != "psycopg2":
        for table, rows in parts:
            insert_rows(conn, table, rows)
        return
    statements: list[str] = []
    values: list[Any] = []
    for table, rows in parts:
        if not rows:
            continue
        columns = list(rows[0])
        head = f'INSERT INTO "{table.name}" (' + ", ".join(f'"{c}"' for c in columns) + ") VALUES "
        row_sql = "(" + ", ".join(["%s"] * len(columns)) + ")"
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            batch = rows[start : start + _ROWS_PER_INSERT]
            statements.append(head + ", ".join([row_sql] * len(batch)))
            values.extend(r[c] for r in batch for c in columns)
    if statements:
        conn.exec_driver_sql("; ".join(statements), tuple(values))
