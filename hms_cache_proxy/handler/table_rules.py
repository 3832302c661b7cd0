"""Hive's table rules that the table and partition calls share: the parameter and type names,
which tables are external, views or have deletable data, and the copies and normalisations a
call makes of the client's table."""

from __future__ import annotations

from thriftpy2.thrift import TApplicationException

from hms_cache_proxy.handler.base import normalize
from hms_cache_proxy.idl import hms

DDL_TIME = "transient_lastDdlTime"
EXTERNAL = "EXTERNAL"
EXTERNAL_TABLE_PURGE = "external.table.purge"
CASCADE = "CASCADE"
VIRTUAL_VIEW = "VIRTUAL_VIEW"
MANAGED_TABLE = "MANAGED_TABLE"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
TABLE_TYPES = ("MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW", "MATERIALIZED_VIEW")
DISALLOW_INCOMPATIBLE = "hive.metastore.disallow.incompatible.col.type.changes"
DO_NOT_POPULATE_QUICK_STATS = "DO_NOT_POPULATE_QUICK_STATS"

# metastore.serdes.using.metastore.for.schema: serdes whose schema is the stored columns.
# Hive 4.0's list plus DynamicSerDe, which Hive 2.3 also lists.
METASTORE_SCHEMA_SERDES = frozenset(
    {
        "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
        "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        "org.apache.hadoop.hive.serde2.columnar.ColumnarSerDe",
        "org.apache.hadoop.hive.serde2.dynamic_type.DynamicSerDe",
        "org.apache.hadoop.hive.serde2.MetadataTypedColumnsetSerDe",
        "org.apache.hadoop.hive.serde2.columnar.LazyBinaryColumnarSerDe",
        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
        "org.apache.hadoop.hive.serde2.lazybinary.LazyBinarySerDe",
        "org.apache.hadoop.hive.serde2.OpenCSVSerde",
    }
)


def is_external(table: hms.Table) -> bool:
    """MetaStoreUtils.isExternalTable: the EXTERNAL parameter, "true" in any case."""
    return str((table.parameters or {}).get(EXTERNAL, "")).strip().lower() == "true"


def is_view(table: hms.Table) -> bool:
    return table.tableType == VIRTUAL_VIEW


def data_deletable(table: hms.Table) -> bool:
    """checkTableDataShouldBeDeleted: managed tables, and external ones with purge on."""
    purge = str((table.parameters or {}).get(EXTERNAL_TABLE_PURGE, "")).lower() == "true"
    return not is_external(table) or purge


def normalize_table_type(table: hms.Table) -> None:
    """ObjectStore.convertToMTable: MANAGED_TABLE with EXTERNAL=true becomes EXTERNAL_TABLE and
    EXTERNAL_TABLE without it MANAGED_TABLE; other types (and None) are kept."""
    if table.tableType == MANAGED_TABLE and is_external(table):
        table.tableType = EXTERNAL_TABLE
    elif table.tableType == EXTERNAL_TABLE and not is_external(table):
        table.tableType = MANAGED_TABLE


def expected_parameter(
    props: dict[str, str], key: str | None = None, value: str | None = None
) -> tuple[str, str] | None:
    """The (key, value) an alter must find stored before it changes anything, or None.

    Hive 4 reads it from the EnvironmentContext (expected_parameter_key/value, what Iceberg's
    lock-free commit sends); alter_table_req's own fields, when set, replace those entries one
    by one. Hive checks only when both are given.
    """
    key = key if key is not None else props.get(hms.EXPECTED_PARAMETER_KEY)
    value = value if value is not None else props.get(hms.EXPECTED_PARAMETER_VALUE)
    return (key, value) if key is not None and value is not None else None


def copy_table(t: hms.Table) -> hms.Table:
    new = hms.Table(**t.__dict__)
    new.parameters = dict(t.parameters or {})
    if t.sd is not None:
        new.sd = hms.StorageDescriptor(**t.sd.__dict__)
    return new


def lower_columns(table: hms.Table) -> None:
    """ObjectStore lower-cases column names, partition-key names and sort-column names (and
    stores an unset numBuckets as Java's 0)."""
    if table.sd is not None:
        if table.sd.numBuckets is None:
            table.sd.numBuckets = 0
        table.sd.cols = [_lower_field(c) for c in table.sd.cols or []]
        if table.sd.sortCols is not None:
            table.sd.sortCols = [
                hms.Order(col=normalize(o.col), order=o.order) for o in table.sd.sortCols
            ]
    if table.partitionKeys is not None:
        table.partitionKeys = [_lower_field(c) for c in table.partitionKeys]


def _lower_field(c: hms.FieldSchema) -> hms.FieldSchema:
    name = c.name.lower() if c.name else c.name
    return hms.FieldSchema(name=name, type=c.type, comment=c.comment)


def internal_error(method: str, exc: Exception) -> TApplicationException:
    """What Java's processor answers for an exception the IDL method does not declare."""
    detail = getattr(exc, "message", None) or str(exc)
    return TApplicationException(
        TApplicationException.INTERNAL_ERROR, f"Internal error processing {method}: {detail}"
    )
