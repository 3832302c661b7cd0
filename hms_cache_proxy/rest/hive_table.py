"""The HMS table row of an Iceberg table, shaped as Iceberg's HiveCatalog writes it: EXTERNAL,
``table_type=ICEBERG``, ``metadata_location`` (and the previous one), the Iceberg properties
mirrored into the parameters, the columns of the current schema in Hive types."""

from __future__ import annotations

import time

from pyiceberg.table.metadata import TableMetadata

from hms_cache_proxy.idl import hms
from hms_cache_proxy.rest.hive_types import hive_type

METADATA_LOCATION = "metadata_location"
PREVIOUS_METADATA_LOCATION = "previous_metadata_location"
TABLE_TYPE = "table_type"
ICEBERG = "ICEBERG"
_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


def is_iceberg(table: hms.Table) -> bool:
    params = table.parameters or {}
    return (params.get(TABLE_TYPE) or "").upper() == ICEBERG and bool(params.get(METADATA_LOCATION))


def columns(metadata: TableMetadata) -> list[hms.FieldSchema]:
    return [
        hms.FieldSchema(name=f.name, type=hive_type(f.field_type), comment=f.doc)
        for f in metadata.schema().fields
    ]


def new_table(db: str, name: str, owner: str, metadata: TableMetadata, location: str) -> hms.Table:
    """The row a new Iceberg table gets."""
    now = int(time.time())
    params = {k: str(v) for k, v in metadata.properties.items()}
    params.update({"EXTERNAL": "TRUE", TABLE_TYPE: ICEBERG, METADATA_LOCATION: location})
    return hms.Table(
        tableName=name,
        dbName=db,
        owner=owner,
        createTime=now,
        lastAccessTime=now,
        retention=0,
        sd=_storage(metadata),
        partitionKeys=[],
        parameters=params,
        tableType="EXTERNAL_TABLE",
    )


def committed(
    current: hms.Table, base: TableMetadata, metadata: TableMetadata, location: str
) -> hms.Table:
    """``current`` moved on to ``metadata`` at ``location``: parameters other writers set are
    kept, Iceberg properties removed by the commit are removed."""
    params = dict(current.parameters or {})
    for key in set(base.properties) - set(metadata.properties):
        params.pop(key, None)
    params.update({k: str(v) for k, v in metadata.properties.items()})
    params[PREVIOUS_METADATA_LOCATION] = params.get(METADATA_LOCATION, "")
    params[METADATA_LOCATION] = location
    params[TABLE_TYPE] = ICEBERG
    new = hms.Table(**current.__dict__)
    new.parameters = params
    new.sd = _storage(metadata, current.sd)
    return new


def _storage(
    metadata: TableMetadata, old: hms.StorageDescriptor | None = None
) -> hms.StorageDescriptor:
    sd = (
        hms.StorageDescriptor(**old.__dict__)
        if old is not None
        else hms.StorageDescriptor(
            inputFormat="org.apache.hadoop.mapred.FileInputFormat",
            outputFormat="org.apache.hadoop.mapred.FileOutputFormat",
            serdeInfo=hms.SerDeInfo(serializationLib=_SERDE, parameters={}),
            compressed=False,
            numBuckets=-1,
            bucketCols=[],
            sortCols=[],
            parameters={},
        )
    )
    sd.cols = columns(metadata)
    sd.location = metadata.location
    return sd
