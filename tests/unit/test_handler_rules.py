"""The pure rules the handler applies before the store: Hive 4.0's name and type validation,
column type compatibility, location normalisation, name patterns, quick-statistics rules and
Java renderings in messages."""

from __future__ import annotations

import json

import pytest

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.java_text import java_list, java_struct, with_java_defaults
from hms_cache_proxy.handler.names import filter_names
from hms_cache_proxy.handler.validate import (
    are_col_types_compatible,
    check_columns,
    incompatible_columns,
    is_valid_column_type,
    is_valid_name,
    type_name,
    validate_name,
)
from hms_cache_proxy.idl import hms

# -- names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "strict", "special"),
    [
        ("t1", True, True),
        ("T_1", True, True),
        ("my-table.v1", False, True),
        ("a b(c)*+,;<=>?[]|{}$^!~#@`'\"%&:/", False, True),
        ("caf\u00e9", False, False),  # Java's \w is ASCII
        ("tab\tname", False, False),
        ("back\\slash", False, False),
        ("", False, False),
        (None, False, False),
    ],
)
def test_validate_name_strict_and_with_hive4_special_characters(name, strict, special):
    assert is_valid_name(name, special_characters=False) is strict
    assert is_valid_name(name, special_characters=True) is special


def test_validate_name_messages_per_kind():
    with pytest.raises(hms.InvalidObjectException) as exc:
        validate_name("a-b", "catalog")
    assert exc.value.message == "a-b is not a valid catalog name"
    with pytest.raises(hms.InvalidObjectException) as exc:
        validate_name("a-b", "function")
    assert exc.value.message == "a-b is not a valid object name"
    validate_name("a-b", "table")
    validate_name("a-b", "database")
    with pytest.raises(hms.InvalidOperationException) as exc:
        validate_name(None, "table", hms.InvalidOperationException)
    assert exc.value.message == "null is not a valid object name"


# -- column types ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_string", "valid"),
    [
        ("int", True),
        ("decimal(10,2)", True),
        ("array<foo>", True),  # only the first token is checked
        ("struct<a:int,b:string>", True),
        ("timestamp with local time zone", True),
        ("<derived from deserializer>", True),
        ("columns.types", True),
        ("INT", False),  # case-sensitive
        ("Strin", False),
        (" int", False),
        ("integer", False),
        ("", False),
        (None, False),
    ],
)
def test_column_type_first_token_rule(type_string, valid):
    assert is_valid_column_type(type_string) is valid


def _table(cols, keys=(), skewed=None, sd=True):
    fs = [hms.FieldSchema(name=n, type=t) for n, t in cols]
    info = hms.SkewedInfo(skewedColNames=skewed) if skewed is not None else None
    return hms.Table(
        tableName="t",
        sd=hms.StorageDescriptor(cols=fs, skewedInfo=info) if sd else None,
        partitionKeys=[hms.FieldSchema(name=n, type=t) for n, t in keys],
    )


def test_check_columns_messages():
    check_columns(_table([("a", "int")], [("ds", "string")], skewed=["a"]))
    cases = [
        (_table([("a", "INT")]), "Invalid column type: INT"),
        (_table([("a", "int")], [("ds", "Strin")]), "Invalid partition column type: Strin"),
        (_table([("a", "int")], skewed=["a", "x", "y"]), "Invalid skew column [x, y]"),
    ]
    for table, message in cases:
        with pytest.raises(hms.InvalidObjectException) as exc:
            check_columns(table)
        assert exc.value.message == message
    with pytest.raises(hms.InvalidOperationException):
        check_columns(_table([("a", "INT")]), hms.InvalidOperationException)
    with pytest.raises(hms.MetaException):
        check_columns(_table([], sd=False))


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("varchar(10)", "varchar"),
        ("DECIMAL(10,2)", "decimal"),
        ("integer", "int"),
        ("numeric(3)", "decimal"),
        ("array<int>", "array"),
        ("timestamp with time zone", "timestamp"),
    ],
)
def test_type_name(raw, name):
    assert type_name(raw) == name


@pytest.mark.parametrize(
    ("old", "new", "ok"),
    [
        ("int", "int", True),
        ("int", "bigint", True),
        ("bigint", "int", False),
        ("tinyint", "double", True),
        ("decimal", "float", True),
        ("float", "decimal", False),
        ("string", "varchar", True),
        ("char", "string", True),
        ("int", "string", True),
        ("string", "int", False),
        ("string", "double", False),
        ("date", "string", True),
        ("timestamp", "varchar", True),
        ("string", "date", False),
        ("void", "boolean", True),
        ("int", "boolean", False),
        ("array", "array", True),  # same kind: any complex change passes
        ("array", "map", False),
        ("int", "array", False),
    ],
)
def test_column_type_compatibility(old, new, ok):
    assert are_col_types_compatible(old, new) is ok


def test_incompatible_columns_compares_by_position():
    old = [hms.FieldSchema(name=n, type=t) for n, t in [("a", "int"), ("b", "string")]]
    new = [
        hms.FieldSchema(name=n, type=t)
        for n, t in [("x", "smallint"), ("y", "varchar(3)"), ("z", "int")]
    ]
    assert incompatible_columns(old, new) == ["x"]
    assert incompatible_columns(old, old[:1]) == []


# -- locations -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("file:///tmp/wh", "file:/tmp/wh"),
        ("file:/tmp/wh/", "file:/tmp/wh"),
        ("/tmp//a///b/", "file:/tmp/a/b"),
        ("/tmp/a/./b/../c", "file:/tmp/a/c"),
        ("hdfs://nn:8020/warehouse/t/", "hdfs://nn:8020/warehouse/t"),
        ("s3a://bucket/x//y", "s3a://bucket/x/y"),
        ("file:/", "file:/"),
        ("/tmp/with space/x", "file:/tmp/with space/x"),
    ],
)
def test_normalize_location_like_get_dns_path(given, expected):
    assert warehouse.normalize_location(given) == expected


def test_normalize_location_qualifies_bare_paths_with_the_default_filesystem():
    fs = warehouse.default_fs("hdfs://nn:8020/warehouse")
    assert warehouse.normalize_location("/data/t", fs) == "hdfs://nn:8020/data/t"
    with pytest.raises(warehouse.RelativePathError):
        warehouse.normalize_location("relative/path")


def test_encode_table_name():
    assert warehouse.encode_table_name("a/b") == "a-47-b"
    assert warehouse.encode_table_name("my table.v1") == "my-32-table-46-v1"
    assert warehouse.encode_table_name("plain_1") == "plain_1"


def test_relativize_and_renamed_paths():
    assert warehouse.relativize("file:/wh/db.db", "file:/wh/db.db/t1") == "t1"
    assert warehouse.relativize("file:/wh/db.db", "file:/elsewhere/t1") == "file:/elsewhere/t1"
    assert warehouse.relativize("hdfs://nn/wh", "file:/wh/t1") == "file:/wh/t1"
    assert warehouse.with_filesystem_of("file:/wh/db2.db", "hdfs://nn:8020/x") == (
        "hdfs://nn:8020/wh/db2.db"
    )
    assert warehouse.parent_of("file:/a/b/c") == "file:/a/b"
    assert warehouse.is_root("file:/") and not warehouse.is_root("file:/a")


# -- patterns --------------------------------------------------------------------------------


def test_hive_patterns():
    names = ["db1", "db2", "db_x", "default", "d%b"]
    assert filter_names(names, "db.|def*") == ["db1", "db2", "default"]
    assert filter_names(names, "DB*") == ["db1", "db2", "db_x"]
    assert filter_names(names, "db_") == []
    assert filter_names(names, "db_x") == ["db_x"]
    assert filter_names(names, "d%") == []
    assert filter_names(names, "") == []
    assert filter_names(names, " db1 ") == ["db1"]
    assert filter_names(["a+b", "aab"], "a+b") == ["a+b"]


# -- quick statistics ------------------------------------------------------------------------


def test_stats_accurate_json_like_jackson():
    params = {}
    basic_stats.set_basic_stats_state(params, True)
    assert params["COLUMN_STATS_ACCURATE"] == '{"BASIC_STATS":"true"}'
    params["COLUMN_STATS_ACCURATE"] = '{"COLUMN_STATS":{"b":"true","a":"true"}}'
    basic_stats.set_basic_stats_state(params, True)
    assert params["COLUMN_STATS_ACCURATE"] == (
        '{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true","b":"true"}}'
    )
    basic_stats.clear_column_stats_state(params)
    assert params["COLUMN_STATS_ACCURATE"] == '{"BASIC_STATS":"true"}'
    basic_stats.set_basic_stats_state(params, False)
    assert "COLUMN_STATS_ACCURATE" not in params
    assert basic_stats.parse_stats_accurate("TRUE") == (True, {})
    assert basic_stats.parse_stats_accurate("garbage") == (False, {})


def test_require_cal_stats():
    fast = {"numFiles": "1", "totalSize": "5"}
    assert basic_stats.require_cal_stats(None, None, is_view=False, env=None, table_level=True)
    assert not basic_stats.require_cal_stats(
        None, None, is_view=False, env={"DO_NOT_UPDATE_STATS": "true"}, table_level=True
    )
    assert not basic_stats.require_cal_stats(None, None, is_view=True, env=None, table_level=True)
    assert basic_stats.require_cal_stats(fast, {"numFiles": "1"}, is_view=False, env=None)
    assert not basic_stats.require_cal_stats(fast, dict(fast), is_view=False, env=None)
    assert basic_stats.require_cal_stats(
        fast, dict(fast), is_view=False, env={"STATS_GENERATED": "USER"}
    )
    assert basic_stats.require_cal_stats(fast, {**fast, "totalSize": "6"}, is_view=False, env=None)


def test_update_table_stats_rules():
    listed = lambda _loc: (3, 15)  # noqa: E731
    params = {"DO_NOT_UPDATE_STATS": "True", "x": "1"}
    basic_stats.update_table_stats(
        params, "l", None, listed, partitioned=False, new_dir=False, force=True
    )
    assert params == {"x": "1"}  # the transient flag goes, nothing else happens
    params = {}
    basic_stats.update_table_stats(
        params, "l", None, listed, partitioned=False, new_dir=True, force=True
    )
    assert params == {}
    basic_stats.update_table_stats(
        params, "l", None, listed, partitioned=True, new_dir=False, force=True
    )
    assert params == {}
    params = {"numFiles": "9", "totalSize": "9", "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}
    basic_stats.update_table_stats(
        params, "l", None, listed, partitioned=False, new_dir=False, force=False
    )
    assert params["numFiles"] == "9"  # already has the fast stats
    basic_stats.update_table_stats(
        params, "l", None, listed, partitioned=False, new_dir=False, force=True
    )
    assert params == {"numFiles": "3", "totalSize": "15"}
    basic_stats.update_table_stats(
        params,
        "l",
        {"STATS_GENERATED": "TASK"},
        listed,
        partitioned=False,
        new_dir=False,
        force=True,
    )
    assert json.loads(params["COLUMN_STATS_ACCURATE"]) == {"BASIC_STATS": "true"}
    params = {}
    basic_stats.update_table_stats(
        params, "s3a://b/t", None, lambda _l: None, partitioned=False, new_dir=False, force=True
    )
    assert params == {}  # not listable here: left alone


def test_update_partition_stats_rules():
    listed = lambda _loc: (2, 7)  # noqa: E731
    params = {}
    kw = {"force": False, "is_create": True, "transactional": False}
    basic_stats.update_partition_stats(params, "l", None, listed, made_dir=True, **kw)
    assert params == {}
    basic_stats.update_partition_stats(params, "l", None, listed, made_dir=False, **kw)
    assert params == {"numFiles": "2", "totalSize": "7"}
    params = {}
    basic_stats.update_partition_stats(
        params, "l", None, listed, made_dir=False, force=True, is_create=False, transactional=True
    )
    assert params == {}
    assert basic_stats.can_update_stats({"DO_NOT_UPDATE_STATS": "TRUE"}, is_view=False) is False
    assert basic_stats.can_update_stats({}, is_view=True) is False


def test_reset_for_truncate():
    params = {
        "numFiles": "3",
        "rawDataSize": "10",
        "other": "x",
        "COLUMN_STATS_ACCURATE": '{"COLUMN_STATS":{"a":"true"}}',
    }
    basic_stats.reset_for_truncate(params)
    assert params == {
        "numFiles": "0",
        "rawDataSize": "0",
        "other": "x",
        "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}',
    }


# -- Java renderings -------------------------------------------------------------------------


def test_java_struct_prints_like_thrift_generated_to_string():
    p = hms.Partition(
        values=["2024-01-01", "1"],
        dbName="db1",
        tableName="pt",
        createTime=0,
        sd=hms.StorageDescriptor(
            cols=[hms.FieldSchema(name="a", type="int")],
            serdeInfo=hms.SerDeInfo(serializationLib="x", parameters={"k": "v"}),
        ),
        catName="hive",
    )
    assert java_struct(p) == (
        "Partition(values:[2024-01-01, 1], dbName:db1, tableName:pt, createTime:0, "
        "lastAccessTime:0, sd:StorageDescriptor(cols:[FieldSchema(name:a, type:int, "
        "comment:null)], location:null, inputFormat:null, outputFormat:null, compressed:false, "
        "numBuckets:0, serdeInfo:SerDeInfo(name:null, serializationLib:x, parameters:{k=v}), "
        "bucketCols:null, sortCols:null, parameters:null), parameters:null, catName:hive)"
    )
    assert java_list(["a", "b"]) == "[a, b]"
    assert java_struct(hms.Table(ownerType=2)).endswith("ownerType:ROLE)")


def test_with_java_defaults_fills_unset_primitives():
    p = with_java_defaults(hms.Partition(values=["a"], sd=hms.StorageDescriptor()))
    assert (p.createTime, p.lastAccessTime) == (0, 0)
    assert (p.sd.compressed, p.sd.numBuckets) == (False, 0)
    assert p.sd.storedAsSubDirectories is None  # optional: stays unset
