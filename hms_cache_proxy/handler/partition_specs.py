"""Partition specs: Hive 4's PartitionSpec answers built from plain partition lists.

Partitions whose storage descriptors agree (apart from the location) and that lie below the
table's directory share one PartitionSpecWithSharedSD whose SD carries the table's location, and
each keeps only its path relative to it; the others go into one PartitionListComposingSpec, as
Hive's MetaStoreServerUtils.getPartitionspecsGroupedByStorageDescriptor groups them. Projections
keep only the requested (dotted) fields of a partition, as Hive's PartitionProjectionEvaluator.
Pure functions: no store, no I/O.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from typing import Any

from thriftpy2.utils import deserialize, serialize

from hms_cache_proxy.idl import hms

GROUPING_PARAM = "hive.hcatalog.partition.spec.grouping.enabled"
"""Table parameter that turns grouping on for get_partitions_pspec/get_part_specs_by_filter."""

_UNSET = object()
"""Group of the partitions projected without a storage descriptor."""


def grouping_enabled(table: hms.Table) -> bool:
    """Hive groups the old-style pspec calls only when the table asks for it."""
    return str((table.parameters or {}).get(GROUPING_PARAM, "")).lower() == "true"


def composing_spec(table: hms.Table, parts: list[hms.Partition]) -> hms.PartitionSpec:
    """One spec listing the partitions as they are, rooted at the table's location."""
    return hms.PartitionSpec(
        dbName=table.dbName,
        tableName=table.tableName,
        rootPath=table.sd.location if table.sd is not None else None,
        catName=table.catName,
        partitionList=hms.PartitionListComposingSpec(partitions=parts),
    )


def _sd_without_location(sd: hms.StorageDescriptor) -> bytes:
    """The SD's fields but the location, as a hashable value (its Thrift encoding, parameter
    maps in key order so that equal maps read in another order still match)."""
    other = copy.copy(sd)
    other.location = None
    if other.parameters:
        other.parameters = dict(sorted(other.parameters.items()))
    if other.serdeInfo is not None and other.serdeInfo.parameters:
        other.serdeInfo = copy.copy(other.serdeInfo)
        other.serdeInfo.parameters = dict(sorted(other.serdeInfo.parameters.items()))
    return serialize(other)


def _has_skew(sd: hms.StorageDescriptor) -> bool:
    skew = sd.skewedInfo
    return skew is not None and bool(skew.skewedColNames)


def _group_key(
    part: hms.Partition, table_path: str | None, first_buckets: int | None
) -> tuple[Any, Any]:
    """(base location, SD without location); _UNSET when the projection left the SD out."""
    sd = part.sd
    if sd is None:
        return (_UNSET, None)
    own = (sd.location, _sd_without_location(sd))
    if _has_skew(sd) or (sd.numBuckets or 0) != (first_buckets or 0):
        return own
    if sd.location is not None and table_path is not None and sd.location.startswith(table_path):
        return (table_path, own[1])
    return own


def grouped_specs(table: hms.Table, parts: Sequence[hms.Partition]) -> list[hms.PartitionSpec]:
    """The partitions grouped by shared storage descriptor (see the module docstring)."""
    table_path = table.sd.location if table.sd is not None else None
    first_buckets = parts[0].sd.numBuckets if parts and parts[0].sd is not None else None
    groups: dict[tuple[Any, Any], list[hms.PartitionWithoutSD]] = {}
    outside: list[hms.Partition] = []
    for part in parts:
        key = _group_key(part, table_path, first_buckets)
        base = key[0]
        if base is not _UNSET and base is not None and base != table_path:
            outside.append(part)
            continue
        relative = None
        if base is not _UNSET and part.sd.location is not None and table_path is not None:
            relative = part.sd.location[len(table_path) :]
        item = hms.PartitionWithoutSD(
            values=part.values,
            createTime=part.createTime or 0,  # Java's getters read an unset int as 0
            lastAccessTime=part.lastAccessTime or 0,
            relativePath=relative,
            parameters=part.parameters,
        )
        groups.setdefault(key, []).append(item)
    specs = [_shared_spec(table, key, members) for key, members in groups.items()]
    if outside:
        specs.append(
            hms.PartitionSpec(
                dbName=table.dbName,
                tableName=table.tableName,
                catName=table.catName,
                partitionList=hms.PartitionListComposingSpec(partitions=outside),
            )
        )
    return specs


def _shared_spec(
    table: hms.Table, key: tuple[Any, Any], members: list[hms.PartitionWithoutSD]
) -> hms.PartitionSpec:
    if key[0] is _UNSET:
        sd = hms.StorageDescriptor()  # the SD was not requested: an empty one, as Hive sends
    else:
        sd = deserialize(hms.StorageDescriptor(), key[1])
        sd.location = table.sd.location if table.sd is not None else None
    return hms.PartitionSpec(
        dbName=table.dbName,
        tableName=table.tableName,
        rootPath=sd.location,
        catName=table.catName,
        sharedSDPartitionSpec=hms.PartitionSpecWithSharedSD(partitions=members, sd=sd),
    )


# -- projections ---------------------------------------------------------------------------------


def _like(pattern: str) -> re.Pattern[str]:
    """SQL LIKE (``%`` any run, ``_`` one character) as Hive applies it to parameter keys."""
    parts = ["." if c == "_" else ".*" if c == "%" else re.escape(c) for c in pattern]
    return re.compile("".join(parts), re.DOTALL)


def _check_path(path: str) -> None:
    """A dotted field path must name Thrift fields all the way down."""
    cls: Any = hms.Partition
    for name in path.split("."):
        spec = _field_spec(cls, name)
        if spec is None:
            raise hms.MetaException(message=f"Invalid field name {path}")
        cls = spec[2] if len(spec) > 2 and isinstance(spec[2], type) else None


def _field_spec(cls: Any, name: str) -> tuple[Any, ...] | None:
    if cls is None:
        return None
    for spec in cls.thrift_spec.values():
        if spec[1] == name:
            return spec
    return None


def _copy_path(source: Any, target: Any, names: list[str]) -> None:
    value = getattr(source, names[0], None)
    if len(names) == 1 or value is None:
        setattr(target, names[0], copy.deepcopy(value))
        return
    inner = getattr(target, names[0], None)
    if inner is None:
        inner = type(value)()
        setattr(target, names[0], inner)
    _copy_path(value, inner, names[1:])


def check_projection(spec: hms.GetProjectionsSpec | None) -> None:
    """Refuses unknown field names before anything is read."""
    for path in (spec.fieldList or []) if spec is not None else []:
        _check_path(path)


def project(parts: list[hms.Partition], spec: hms.GetProjectionsSpec | None) -> list[hms.Partition]:
    """The partitions with only the requested fields (all when none are named), their
    parameters narrowed by the include/exclude key patterns."""
    fields = list(spec.fieldList or []) if spec is not None else []
    include = _like(spec.includeParamKeyPattern) if spec and spec.includeParamKeyPattern else None
    exclude = _like(spec.excludeParamKeyPattern) if spec and spec.excludeParamKeyPattern else None
    out = []
    for part in parts:
        if fields:
            kept = hms.Partition()
            for path in fields:
                _copy_path(part, kept, path.split("."))
        else:
            kept = copy.copy(part)  # the parameters below are narrowed on a copy
        if kept.parameters is not None and (include or exclude):
            kept.parameters = {
                k: v
                for k, v in kept.parameters.items()
                if (include is None or include.fullmatch(k))
                and (exclude is None or not exclude.fullmatch(k))
            }
        out.append(kept)
    return out
