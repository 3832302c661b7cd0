"""The column-statistics writes of the IDL and the tables each request names, for the
upstream-mode cache (docs/cache.md, "Column statistics").

Hive before 4.0 logs no event for these writes, yet each one changes the
``COLUMN_STATS_ACCURATE`` parameter of the table or partitions it writes, which cached
get_table / partition / table-objects replies hold. So when one passes through the sidecar, the
sidecar drops the entries of the tables it names itself (``SidecarCache.wrote``) instead of
waiting for an event that may never come.

Only the names are decoded: each request is read with structs narrowed to the fields that name
a table (``_narrowed``, made from the IDL's own specs); the statistics themselves are skipped by
the decoder, never built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from thriftpy2.thrift import TPayload, TPayloadMeta, TType

from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.server.cached_calls import split_catalog
from hms_cache_proxy.server.wire_decode import decode
from hms_cache_proxy.server.wire_limits import Limits

TableName = tuple[str, str, str]
"""(catalog, database, table), in lower case."""

_HUGE = 2**31 - 1  # the request's sizes were checked when it was read off the socket
_LIMITS = Limits(
    max_message_bytes=_HUGE,
    max_string_bytes=_HUGE,
    max_container_elements=_HUGE,
    max_decoded_structures=_HUGE,
)


def _narrowed(cls: Any, fields: dict[str, Any]) -> Any:
    """A struct class that reads only ``fields`` of ``cls`` (the others are skipped when
    decoding). A field's value in ``fields`` is the narrowed class of a struct field (or of a
    list's struct elements), None to read the field as the IDL declares it."""
    spec: dict[int, tuple[Any, ...]] = {}
    for fid, field in cls.thrift_spec.items():
        ttype, name = field[0], field[1]
        if name not in fields:
            continue
        inner = fields[name]
        if inner is None:
            spec[fid] = (*field[:-1], False)
        elif ttype == TType.STRUCT:
            spec[fid] = (ttype, name, inner, False)
        elif ttype == TType.LIST:
            spec[fid] = (ttype, name, (TType.STRUCT, inner), False)
        else:
            raise TypeError(f"{cls.__name__}.{name} holds no struct")
    missing = set(fields) - {field[1] for field in spec.values()}
    if missing:
        raise KeyError(f"{cls.__name__} has no field {sorted(missing)}")
    defaults = [(field[1], None) for field in spec.values()]
    attrs = {"thrift_spec": spec, "default_spec": defaults, "__module__": __name__}
    return TPayloadMeta(cls.__name__, (TPayload,), attrs)


_DESC = _narrowed(hms.ColumnStatisticsDesc, {"catName": None, "dbName": None, "tableName": None})
_STATS = _narrowed(hms.ColumnStatistics, {"statsDesc": _DESC})
_SET_REQUEST = _narrowed(hms.SetPartitionsStatsRequest, {"colStats": _STATS})


def _args(api: str, **fields: Any) -> Any:
    return _narrowed(getattr(service, api + "_args"), fields)


def _of_stats(stats: Any) -> Iterator[tuple[Any, Any, Any]]:
    desc = getattr(stats, "statsDesc", None)
    if desc is not None:
        yield desc.catName, desc.dbName, desc.tableName


def _of_request(request: Any) -> Iterator[tuple[Any, Any, Any]]:
    for stats in getattr(request, "colStats", None) or ():
        yield from _of_stats(stats)


Reader = tuple[Any, Callable[[Any], Iterable[tuple[Any, Any, Any]]]]

STATISTICS_WRITES: dict[str, Reader] = {
    # Every call of idl/hive_metastore.thrift that writes column statistics (grep "statistics\|
    # stats"), with the narrowed arguments it is read with and where they name the table(s).
    # Hive 3.1's HMSHandler logs no event for any of them (4.0 logs UPDATE_/DELETE_*_COLUMN_STAT).
    # The updates set the columns' flags in COLUMN_STATS_ACCURATE of the table or partitions; the
    # deletes leave the flags in Hive 3.1 (4.0 clears them), dropped all the same: a drop costs a
    # reload, a kept stale reply costs a wrong answer.
    "update_table_column_statistics": (
        _args("update_table_column_statistics", stats_obj=_STATS),
        lambda args: _of_stats(args.stats_obj),
    ),
    "update_partition_column_statistics": (
        _args("update_partition_column_statistics", stats_obj=_STATS),
        lambda args: _of_stats(args.stats_obj),
    ),
    "update_table_column_statistics_req": (
        _args("update_table_column_statistics_req", req=_SET_REQUEST),
        lambda args: _of_request(args.req),
    ),
    "update_partition_column_statistics_req": (
        _args("update_partition_column_statistics_req", req=_SET_REQUEST),
        lambda args: _of_request(args.req),
    ),
    "set_aggr_stats_for": (  # table- or partition-level statistics, of one or more tables
        _args("set_aggr_stats_for", request=_SET_REQUEST),
        lambda args: _of_request(args.request),
    ),
    "delete_table_column_statistics": (
        _args("delete_table_column_statistics", db_name=None, tbl_name=None),
        lambda args: [(None, args.db_name, args.tbl_name)],
    ),
    "delete_partition_column_statistics": (
        _args("delete_partition_column_statistics", db_name=None, tbl_name=None),
        lambda args: [(None, args.db_name, args.tbl_name)],
    ),
}
"""Left out, as they write no table's or partition's parameters: update_transaction_statistics
(a materialized view's counts of changed rows in MV_TABLES_USED, by table id) and
add_runtime_stats (a query's runtime statistics, no table)."""


def tables_written(api: str, body: bytes) -> set[TableName] | None:
    """The tables whose statistics ``api``'s request (binary-protocol arguments ``body``)
    writes: empty for other calls, and for a request that names no table (the upstream refuses
    it); None when the request cannot be read, so what it writes is not known."""
    reader = STATISTICS_WRITES.get(api)
    if reader is None:
        return set()
    cls, names = reader
    try:
        args = decode(body, cls(), _LIMITS)
        tables = set()
        for cat, db, table in names(args):
            if isinstance(db, str) and db and isinstance(table, str) and table:
                cat, db = split_catalog(cat, db)
                tables.add((cat, db, table.lower()))
    except Exception:
        return None
    return tables
