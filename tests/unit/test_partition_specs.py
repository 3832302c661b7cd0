"""Grouping partitions into specs (handler/partition_specs.py), without a server."""

from __future__ import annotations

from hms_cache_proxy.handler.partition_specs import grouped_specs, project
from hms_cache_proxy.idl import hms


def _sd(location: str | None, params: dict[str, str], buckets: int = -1) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[hms.FieldSchema(name="a", type="int")],
        location=location,
        numBuckets=buckets,
        serdeInfo=hms.SerDeInfo(serializationLib="x", parameters=dict(params)),
        parameters=dict(params),
    )


TABLE = hms.Table(dbName="d", tableName="t", catName="hive", sd=_sd("/w/t", {}))


def _part(values: list[str], sd: hms.StorageDescriptor) -> hms.Partition:
    return hms.Partition(values=values, createTime=1, lastAccessTime=2, sd=sd, parameters={})


def test_equal_maps_in_another_order_share_one_sd() -> None:
    parts = [
        _part(["1"], _sd("/w/t/p=1", {"a": "1", "b": "2"})),
        _part(["2"], _sd("/w/t/p=2", {"b": "2", "a": "1"})),
    ]
    (spec,) = grouped_specs(TABLE, parts)
    shared = spec.sharedSDPartitionSpec
    assert [p.relativePath for p in shared.partitions] == ["/p=1", "/p=2"]
    assert shared.sd.location == "/w/t" and spec.rootPath == "/w/t"


def test_other_descriptors_and_bucket_counts_split_groups() -> None:
    parts = [
        _part(["1"], _sd("/w/t/p=1", {})),
        _part(["2"], _sd("/w/t/p=2", {"x": "y"})),
        _part(["3"], _sd("/w/t/p=3", {}, buckets=4)),  # differs from the first's bucket count
        _part(["4"], _sd("/elsewhere/p=4", {})),
    ]
    specs = grouped_specs(TABLE, parts)
    shared = [[p.values for p in s.sharedSDPartitionSpec.partitions] for s in specs[:-1]]
    assert shared == [[["1"]], [["2"]]]
    assert [p.values for p in specs[-1].partitionList.partitions] == [["3"], ["4"]]


def test_projection_copies_only_named_fields_and_leaves_the_input_alone() -> None:
    part = _part(["1"], _sd("/w/t/p=1", {}))
    part.parameters = {"keep": "1", "drop": "2"}
    (kept,) = project([part], hms.GetProjectionsSpec(fieldList=["values", "sd.location"]))
    assert kept.values == ["1"] and kept.sd.location == "/w/t/p=1" and kept.sd.cols is None
    assert kept.parameters is None
    spec = hms.GetProjectionsSpec(fieldList=[], excludeParamKeyPattern="dr%")
    (narrowed,) = project([part], spec)
    assert narrowed.parameters == {"keep": "1"}
    assert part.parameters == {"keep": "1", "drop": "2"}
