"""Which calls the upstream-mode cache answers, and what each request is about (its
``Subject``: the events that change the answer drop the entry, see ``upstream_events.py``).

Only reads whose every change Hive logs as an event are cached: the database, the table and its
partitions (events naming the table), a database's table names (tables created, dropped,
renamed) and table objects (events naming a table of the database), and the constraints (the
constraint events, tables dropped or renamed or their columns changed). Requests asking for
column statistics or file metadata pass through (Hive before 4.0 logs no statistics events).
``get_valid_write_ids`` and every other call pass through.
"""

from __future__ import annotations

from typing import Any

from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.utils import deserialize

from hms_cache_proxy.server.reply_cache import (
    CONSTRAINTS,
    DATABASE,
    TABLE,
    TABLE_NAMES,
    TABLE_OBJECTS,
    Subject,
)

DEFAULT_CATALOG = "hive"

TABLE_CALLS = frozenset(
    {
        "get_table",
        "get_table_req",
        "get_partitions",
        "get_partitions_req",
        "get_partition_names",
        "get_partition_names_req",
        "get_partition_names_ps",
        "get_partition_names_ps_req",
        "get_partitions_by_names",
        "get_partitions_by_names_req",
        "get_partition",
        "get_partition_req",
        "get_partition_by_name",
        "get_partitions_by_filter",
        "get_partitions_ps",
        "get_partitions_ps_with_auth",
        "get_partitions_ps_with_auth_req",
        "get_partitions_with_auth",
        "get_partitions_by_expr",
    }
)
DATABASE_CALLS = frozenset({"get_database", "get_database_req"})
TABLE_NAME_CALLS = frozenset({"get_tables", "get_all_tables"})
TABLE_OBJECT_CALLS = frozenset({"get_table_objects_by_name", "get_table_objects_by_name_req"})
CONSTRAINT_CALLS = frozenset(
    {
        "get_primary_keys",
        "get_foreign_keys",
        "get_unique_constraints",
        "get_not_null_constraints",
        "get_check_constraints",
        "get_default_constraints",
        "get_all_table_constraints",
    }
)
CACHED = TABLE_CALLS | DATABASE_CALLS | TABLE_NAME_CALLS | TABLE_OBJECT_CALLS | CONSTRAINT_CALLS
_DATABASE_KINDS = {
    **dict.fromkeys(DATABASE_CALLS, DATABASE),
    **dict.fromkeys(TABLE_NAME_CALLS, TABLE_NAMES),
    **dict.fromkeys(TABLE_OBJECT_CALLS, TABLE_OBJECTS),
}

_DB_FIELDS = ("dbname", "db_name", "dbName")
_TABLE_FIELDS = ("tbl_name", "tblName")
_CAT_FIELDS = ("catName", "catalogName")
_UNCACHED_FLAGS = ("getColumnStats", "get_col_stats", "getFileMetadata")
_BINARY = TBinaryProtocolFactory()


def subject(service: Any, api: str, body: bytes) -> Subject | None:
    """What a cached call's request is about; None when this request is not to be cached or
    cannot be read."""
    try:
        args = deserialize(getattr(service, api + "_args")(), body, _BINARY)
    except Exception:
        return None  # the upstream will say what is wrong with it
    if api in CONSTRAINT_CALLS:
        return Subject(CONSTRAINTS)
    first = args.thrift_spec[min(args.thrift_spec)][1]
    request = getattr(args, first, None)
    source = request if hasattr(request, "thrift_spec") else args
    if any(getattr(source, flag, None) for flag in _UNCACHED_FLAGS):
        return None
    cat = _first(source, _CAT_FIELDS)
    kind = _DATABASE_KINDS.get(api, TABLE)
    if api in DATABASE_CALLS:
        db = getattr(source, "name", None)
        table: str | None = ""
    else:
        db = _first(source, _DB_FIELDS)
        table = _first(source, _TABLE_FIELDS) if kind == TABLE else ""
    if not isinstance(db, str) or not db or table is None:
        return None
    cat, db = split_catalog(cat, db)
    return Subject(kind, cat, db, table.lower())


def split_catalog(cat: str | None, db: str) -> tuple[str, str]:
    """Catalog and database in lower case; Hive's ``@cat#db`` form of a database name is read."""
    if db.startswith("@") and "#" in db:
        prefixed, _, db = db[1:].partition("#")
        cat = cat or prefixed
    return (cat or DEFAULT_CATALOG).lower(), db.lower()


def _first(obj: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return None
