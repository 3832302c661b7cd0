"""Everything that hangs off tables, partitions and storage descriptors, read in one query.

A table or a batch of partitions is read in two round trips: its own rows (joined to storage
descriptors and serdes), then this one UNION ALL over the ten child tables (parameters of four
kinds, partition key values, columns, partition keys, bucket, sort and skewed column names).
Statements are built once per database dialect and shape and reused with bound id lists
(`= ANY(:ids)` on PostgreSQL, an expanding `IN` on SQLite), so a call pays neither statement
construction nor one query per child table.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    String,
    any_,
    bindparam,
    cast,
    literal,
    null,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.prepared import Prepared

# kind -> (table, owner column, a, b, c, idx, which id list selects it)
_PARTS: dict[str, tuple[Any, str, str | None, str | None, str | None, str | None, str]] = {
    "tp": (schema.TABLE_PARAMS, "TBL_ID", "PARAM_KEY", "PARAM_VALUE", None, None, "tables"),
    "pk": (
        schema.PARTITION_KEYS,
        "TBL_ID",
        "PKEY_NAME",
        "PKEY_TYPE",
        "PKEY_COMMENT",
        "INTEGER_IDX",
        "tables",
    ),
    "pp": (
        schema.PARTITION_PARAMS,
        "PART_ID",
        "PARAM_KEY",
        "PARAM_VALUE",
        None,
        None,
        "partitions",
    ),
    "kv": (
        schema.PARTITION_KEY_VALS,
        "PART_ID",
        "PART_KEY_VAL",
        None,
        None,
        "INTEGER_IDX",
        "partitions",
    ),
    "sp": (schema.SD_PARAMS, "SD_ID", "PARAM_KEY", "PARAM_VALUE", None, None, "sds"),
    "bc": (schema.BUCKETING_COLS, "SD_ID", "BUCKET_COL_NAME", None, None, "INTEGER_IDX", "sds"),
    "so": (schema.SORT_COLS, "SD_ID", "COLUMN_NAME", "ORDER", None, "INTEGER_IDX", "sds"),
    "sk": (schema.SKEWED_COL_NAMES, "SD_ID", "SKEWED_COL_NAME", None, None, "INTEGER_IDX", "sds"),
    "ep": (schema.SERDE_PARAMS, "SERDE_ID", "PARAM_KEY", "PARAM_VALUE", None, None, "serdes"),
    "co": (schema.COLUMNS_V2, "CD_ID", "COLUMN_NAME", "TYPE_NAME", "COMMENT", "INTEGER_IDX", "cds"),
}
_SOURCES = ("tables", "partitions", "sds", "serdes", "cds")

# SQLite refuses statements with more than 32,766 bound values.
_SQLITE_MAX_IDS = 30_000


@dataclass
class Details:
    """Child rows by owner id, each list in its INTEGER_IDX order."""

    table_params: dict[int, dict[str, str]] = field(default_factory=dict)
    part_params: dict[int, dict[str, str]] = field(default_factory=dict)
    sd_params: dict[int, dict[str, str]] = field(default_factory=dict)
    serde_params: dict[int, dict[str, str]] = field(default_factory=dict)
    key_values: dict[int, list[str]] = field(default_factory=dict)
    columns: dict[int, list[hms.FieldSchema]] = field(default_factory=dict)
    partition_keys: dict[int, list[hms.FieldSchema]] = field(default_factory=dict)
    bucket_cols: dict[int, list[str]] = field(default_factory=dict)
    sort_cols: dict[int, list[hms.Order]] = field(default_factory=dict)
    skewed_col_names: dict[int, list[str]] = field(default_factory=dict)


_statements: dict[tuple[str, tuple[str, ...]], Any] = {}
_lock = threading.Lock()


def _part_select(kind: str, dialect: str) -> Any:
    table, owner, a, b, c, idx, source = _PARTS[kind]

    def text(col: str | None) -> Any:
        return cast(table.c[col], String) if col else cast(null(), String)

    owner_col = table.c[owner]
    if dialect == "postgresql":
        cond = owner_col == any_(bindparam(source, type_=ARRAY(BigInteger)))
    else:
        cond = owner_col.in_(bindparam(source, expanding=True))
    return select(
        literal(kind, String).label("kind"),
        cast(owner_col, BigInteger).label("owner"),
        text(a).label("a"),
        text(b).label("b"),
        text(c).label("c"),
        (cast(table.c[idx], BigInteger) if idx else cast(null(), BigInteger)).label("idx"),
    ).where(cond)


def _statement(dialect: str, kinds: tuple[str, ...]) -> Any:
    key = (dialect, kinds)
    stmt = _statements.get(key)
    if stmt is None:
        with _lock:
            stmt = _statements.get(key)
            if stmt is None:
                parts = [_part_select(k, dialect) for k in kinds]
                stmt = parts[0] if len(parts) == 1 else parts[0].union_all(*parts[1:])
                _statements[key] = stmt
    return stmt


def _pg_part_sql(kind: str) -> str:
    """``_part_select`` of ``kind`` as psycopg2 text (the id list one array parameter)."""
    table, owner, a, b, c, idx, source = _PARTS[kind]

    def as_type(col: str | None, sql_type: str) -> str:
        return f'CAST("{col}" AS {sql_type})' if col else f"CAST(NULL AS {sql_type})"

    return (
        f"SELECT CAST('{kind}' AS VARCHAR) AS kind, {as_type(owner, 'BIGINT')} AS owner, "
        f"{as_type(a, 'VARCHAR')} AS a, {as_type(b, 'VARCHAR')} AS b, "
        f"{as_type(c, 'VARCHAR')} AS c, {as_type(idx, 'BIGINT')} AS idx "
        f'FROM "{table.name}" WHERE "{owner}" = ANY(%({source})s::bigint[])'
    )


_prepared: dict[tuple[str, ...], Prepared] = {}


def _pg_statement(kinds: tuple[str, ...]) -> Prepared:
    """The statement of ``kinds`` prepared on psycopg2's sessions (made on first use; one per
    combination of the five id lists given, so a few dozen at most). A write's transaction
    reads a table's or its partitions' details through it: prepared, it is not planned anew
    each time (store/db/prepared.py)."""
    stmt = _prepared.get(kinds)
    if stmt is None:
        with _lock:
            stmt = _prepared.get(kinds)
            if stmt is None:
                sources = {_PARTS[k][6] for k in kinds}
                stmt = Prepared(
                    "hms_details_" + "_".join(kinds),
                    " UNION ALL ".join(_pg_part_sql(k) for k in kinds),
                    {source: "bigint[]" for source in sources},
                    at_connect=True,
                )
                _prepared[kinds] = stmt
    return stmt


def load_details(
    conn: Connection,
    *,
    tables: Sequence[int] = (),
    partitions: Sequence[int] = (),
    sds: Sequence[int] = (),
    serdes: Sequence[int] = (),
    cds: Sequence[int] = (),
) -> Details:
    """The child rows of the given owners, in one query (a few on SQLite for huge batches)."""
    ids = {
        "tables": sorted(set(tables)),
        "partitions": sorted(set(partitions)),
        "sds": sorted(set(sds)),
        "serdes": sorted(set(serdes)),
        "cds": sorted(set(cds)),
    }
    kinds = tuple(k for k, spec in _PARTS.items() if ids[spec[6]])
    out = Details()
    if not kinds:
        return out
    dialect = conn.dialect.name
    used = {_PARTS[k][6] for k in kinds}
    if dialect == "postgresql" and conn.dialect.driver == "psycopg2":
        prepared = _pg_statement(kinds)
        _fill(out, conn.exec_driver_sql(prepared.text(conn), {u: ids[u] for u in used}).all())
        return out
    stmt = _statement(dialect, kinds)
    if dialect == "postgresql" or sum(len(ids[u]) for u in used) <= _SQLITE_MAX_IDS:
        rows = conn.execute(stmt, {u: ids[u] for u in used}).all()
    else:
        rows = []
        size = _SQLITE_MAX_IDS // len(used)
        rounds = max((len(ids[u]) + size - 1) // size for u in used)
        for i in range(rounds):
            chunk = {u: ids[u][i * size : (i + 1) * size] for u in used}
            live = tuple(k for k in kinds if chunk[_PARTS[k][6]])
            if live:
                rows.extend(
                    conn.execute(
                        _statement(dialect, live), {u: chunk[u] for u in used if chunk[u]}
                    ).all()
                )
    _fill(out, rows)
    return out


def _fill(out: Details, rows: Sequence[Any]) -> None:
    params = {
        "tp": out.table_params,
        "pp": out.part_params,
        "sp": out.sd_params,
        "ep": out.serde_params,
    }
    ordered: list[Any] = []
    for row in rows:
        kind = row[0]
        target = params.get(kind)
        if target is not None:
            target.setdefault(row[1], {})[row[2]] = row[3] if row[3] is not None else ""
        else:
            ordered.append(row)
    ordered.sort(key=lambda r: (r[0], r[1], r[5]))
    for kind, owner, a, b, c, _idx in ordered:
        if kind == "kv":
            out.key_values.setdefault(owner, []).append(a if a is not None else "")
        elif kind == "co":
            out.columns.setdefault(owner, []).append(hms.FieldSchema(name=a, type=b, comment=c))
        elif kind == "pk":
            out.partition_keys.setdefault(owner, []).append(
                hms.FieldSchema(name=a, type=b, comment=c)
            )
        elif kind == "bc":
            out.bucket_cols.setdefault(owner, []).append(a)
        elif kind == "so":
            out.sort_cols.setdefault(owner, []).append(hms.Order(col=a, order=int(b)))
        elif kind == "sk":
            out.skewed_col_names.setdefault(owner, []).append(a)
