"""Which calls the upstream-mode cache answers, and the table each request is about.

Only reads whose answer changes with nothing but the named table's metadata (every change of
which Hive logs as an event naming that table) are cached: the database, the table and its
partitions. Requests asking for column statistics or file metadata pass through (Hive before
4.0 logs no statistics events). ``get_valid_write_ids`` and every other call pass through.
"""

from __future__ import annotations

from typing import Any

from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.utils import deserialize

from hms_cache_proxy.server.reply_cache import TableKey

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
CACHED = TABLE_CALLS | DATABASE_CALLS

_DB_FIELDS = ("dbname", "db_name", "dbName")
_TABLE_FIELDS = ("tbl_name", "tblName")
_CAT_FIELDS = ("catName", "catalogName")
_UNCACHED_FLAGS = ("getColumnStats", "get_col_stats", "getFileMetadata")
_BINARY = TBinaryProtocolFactory()


def subject(service: Any, api: str, body: bytes) -> TableKey | None:
    """The (catalog, database, table) a cached call's request is about (table "" for a
    database call); None when this request is not to be cached or cannot be read."""
    try:
        args = deserialize(getattr(service, api + "_args")(), body, _BINARY)
    except Exception:
        return None  # the upstream will say what is wrong with it
    first = args.thrift_spec[min(args.thrift_spec)][1]
    request = getattr(args, first, None)
    source = request if hasattr(request, "thrift_spec") else args
    if any(getattr(source, flag, None) for flag in _UNCACHED_FLAGS):
        return None
    cat = _first(source, _CAT_FIELDS)
    if api in DATABASE_CALLS:
        db = getattr(source, "name", None)
        table: str | None = ""
    else:
        db = _first(source, _DB_FIELDS)
        table = _first(source, _TABLE_FIELDS)
    if not isinstance(db, str) or not db or table is None:
        return None
    cat, db = split_catalog(cat, db)
    return cat, db, table.lower()


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
