"""Partition calls through Apache Thrift's client, on SQLite and PostgreSQL: what a stock Hive
4.0 metastore answers (docs/compatibility.md lists where we differ, and why)."""

from __future__ import annotations

import json
import time

import pytest
from thrift.Thrift import TApplicationException

from tests.support.metastore import (
    cols,
    event_body,
    event_types,
    events_since,
    last_event_id,
    partition,
    raises,
    table,
    uri,
    warehouse_dir,
    write_files,
)

KEYS = ["ds:string", "hr:int"]


def _table(client, T, name="pt", keys=KEYS, **kw):
    client.create_table(table(T, "default", name, keys=keys, **kw))


def _add(client, T, *value_lists, name="pt"):
    for values in value_lists:
        client.add_partition(partition(T, "default", name, list(values)))


def test_add_partition_round_trip_and_reply(service, client, T):
    _table(client, T)
    sent = partition(T, "DEFAULT", "PT", ["2024-01-01", "1"], ["A:int", "b:string"])
    sent.parameters = {"p": "1"}
    sent.lastAccessTime = 9
    before = last_event_id(client)
    started = int(time.time())
    reply = client.add_partition(sent)
    location = uri(warehouse_dir(service) / "pt" / "ds=2024-01-01" / "hr=1")
    # the reply is the request as the server filled it
    assert (reply.dbName, reply.tableName, reply.catName) == ("DEFAULT", "PT", "hive")
    assert reply.sd.location == location
    assert reply.sd.cols[0].name == "A"
    assert started <= reply.createTime <= int(time.time())
    assert reply.parameters["p"] == "1" and "transient_lastDdlTime" in reply.parameters
    got = client.get_partition("default", "pt", ["2024-01-01", "1"])
    assert got.values == ["2024-01-01", "1"]
    assert (got.dbName, got.tableName, got.catName) == ("default", "pt", "hive")
    assert got.createTime == reply.createTime and got.lastAccessTime == 9
    assert got.sd.location == location
    assert got.sd.cols == cols(T, "a:int", "b:string")
    assert got.sd.serdeInfo.serializationLib == sent.sd.serdeInfo.serializationLib
    assert got.parameters == reply.parameters  # no stats: the directory was just made
    assert (warehouse_dir(service) / "pt" / "ds=2024-01-01" / "hr=1").is_dir()
    assert client.get_partition_by_name("default", "pt", "hr=1/ds=2024-01-01").values == [
        "2024-01-01",
        "1",
    ]
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["ADD_PARTITION"]
    assert event_body(events[0])["partitions"] == [{"ds": "2024-01-01", "hr": "1"}]


def test_add_partition_errors(client, T):
    with raises(
        T.InvalidObjectException, "Unable to add partition because table or database do not exist"
    ):
        client.add_partition(partition(T, "default", "nope", ["a", "1"]))
    _table(client, T)
    with raises(
        T.MetaException, "Invalid partition key & values; keys [ds, hr, ], values [2024-01-01, ]"
    ):
        client.add_partition(partition(T, "default", "pt", ["2024-01-01"]))
    with raises(T.MetaException, "The partition values cannot be null or empty."):
        client.add_partition(partition(T, "default", "pt", []))
    _add(client, T, ["a", "1"])
    with raises(
        T.AlreadyExistsException,
        contains="Partition already exists: Partition(values:[a, 1], dbName:default, "
        "tableName:pt, createTime:0, lastAccessTime:0, sd:StorageDescriptor(cols:[",
    ):
        _add(client, T, ["a", "1"])
    view = table(T, "default", "v", keys=["ds:string"], table_type="VIRTUAL_VIEW")
    view.viewOriginalText = "select 1"
    client.create_table(view)
    with raises(T.MetaException, "Cannot specify location for a view partition"):
        client.add_partition(partition(T, "default", "v", ["x"], location="/tmp/x"))


def test_add_partitions_req_adds_only_new_partitions_atomically(service, client, T, tmp_path):
    _table(client, T)
    wh = warehouse_dir(service)
    assert (
        client.add_partitions_req(
            T.AddPartitionsRequest(dbName="default", tblName="pt", parts=[], ifNotExists=False)
        ).partitions
        is None
    )
    _add(client, T, ["a", "1"])
    before = last_event_id(client)
    parts = [partition(T, "default", "pt", v) for v in (["a", "1"], ["b", "1"], ["c", "2"])]
    res = client.add_partitions_req(
        T.AddPartitionsRequest(dbName="default", tblName="pt", parts=parts, ifNotExists=True)
    )
    assert [p.values for p in res.partitions] == [["b", "1"], ["c", "2"]]
    res = client.add_partitions_req(
        T.AddPartitionsRequest(
            dbName="default", tblName="pt", parts=parts, ifNotExists=True, needResult=False
        )
    )
    assert res.partitions is None
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["ADD_PARTITION", "ADD_PARTITION"]
    assert [len(event_body(e)["partitions"]) for e in events] == [2, 0]
    # not ifNotExists: one existing partition fails the whole call, new directories removed
    more = [partition(T, "default", "pt", ["d", "1"]), partition(T, "default", "pt", ["a", "1"])]
    with raises(
        T.AlreadyExistsException, contains="Partition already exists: Partition(values:[a, 1]"
    ):
        client.add_partitions_req(
            T.AddPartitionsRequest(dbName="default", tblName="pt", parts=more, ifNotExists=False)
        )
    assert client.get_partition_names("default", "pt", -1) == [
        "ds=a/hr=1",
        "ds=b/hr=1",
        "ds=c/hr=2",
    ]
    assert not (wh / "pt" / "ds=d").exists()
    dup = [partition(T, "default", "pt", ["e", "1"]), partition(T, "default", "pt", ["e", "1"])]
    with raises(
        T.MetaException, contains="Duplicate partitions in the list: Partition(values:[e, 1]"
    ):
        client.add_partitions_req(
            T.AddPartitionsRequest(dbName="default", tblName="pt", parts=dup, ifNotExists=True)
        )
    stray = [partition(T, "default", "other", ["f", "1"])]
    with raises(
        T.MetaException,
        contains="Partition does not belong to target table hive.default.pt. It belongs to the "
        "table default.other : Partition(values:[f, 1]",
    ):
        client.add_partitions_req(
            T.AddPartitionsRequest(dbName="default", tblName="pt", parts=stray, ifNotExists=True)
        )
    with raises(
        T.InvalidObjectException,
        "Unable to add partitions because hive.default.nope does not exist",
    ):
        client.add_partitions_req(
            T.AddPartitionsRequest(dbName="default", tblName="nope", parts=stray, ifNotExists=True)
        )
    assert client.add_partitions([]) == 0
    assert client.add_partitions([partition(T, "default", "pt", ["g", "3"])]) == 1


def test_add_partition_fills_quick_stats_for_existing_directories(service, client, T):
    _table(client, T)
    data = warehouse_dir(service) / "part"
    write_files(data, {"a": b"12345", "sub/b": b"1234567890", "_tmp": b"x"})
    client.add_partition(partition(T, "default", "pt", ["a", "1"], location=str(data)))
    params = client.get_partition("default", "pt", ["a", "1"]).parameters
    assert (params["numFiles"], params["totalSize"]) == ("2", "15")
    assert "COLUMN_STATS_ACCURATE" not in params
    client.add_partition_with_environment_context(
        partition(T, "default", "pt", ["b", "1"], location=str(data)),
        T.EnvironmentContext(properties={"STATS_GENERATED": "TASK"}),
    )
    params = client.get_partition("default", "pt", ["b", "1"]).parameters
    assert json.loads(params["COLUMN_STATS_ACCURATE"]) == {"BASIC_STATS": "true"}


def test_append_partition_copies_the_table_descriptor(service, client, T):
    _table(client, T)
    before = last_event_id(client)
    got = client.append_partition("default", "PT", ["x", "1"])
    tbl = client.get_table("default", "pt")
    assert got.sd.location == uri(warehouse_dir(service) / "pt" / "ds=x" / "hr=1")
    assert got.sd.cols == tbl.sd.cols and got.sd.serdeInfo == tbl.sd.serdeInfo
    assert got.sd.inputFormat == tbl.sd.inputFormat
    assert got.sd.bucketCols == [] and got.sd.compressed is False
    assert list(got.parameters) == ["transient_lastDdlTime"]
    assert client.get_partition("default", "pt", ["x", "1"]).sd.location == got.sd.location
    assert (warehouse_dir(service) / "pt" / "ds=x" / "hr=1").is_dir()
    got = client.append_partition_by_name("default", "pt", "hr=2/ds=y")
    assert got.values == ["y", "2"]
    assert event_types(client, T, before) == ["ADD_PARTITION", "ADD_PARTITION"]
    with raises(
        T.AlreadyExistsException, contains="Partition already exists:Partition(values:[x, 1]"
    ):
        client.append_partition("default", "pt", ["x", "1"])
    with raises(T.InvalidObjectException, "incomplete partition name - missing hr"):
        client.append_partition_by_name("default", "pt", "ds=z")
    with raises(T.InvalidObjectException, "hive.default.nope table not found"):
        client.append_partition_by_name("default", "nope", "ds=z/hr=1")
    with raises(
        T.InvalidObjectException, "Unable to add partition because table or database do not exist"
    ):
        client.append_partition("default", "nope", ["z", "1"])
    view = table(T, "default", "v", keys=["ds:string"], table_type="VIRTUAL_VIEW")
    view.viewOriginalText = "select 1"
    client.create_table(view)
    with raises(T.MetaException, "Cannot append a partition to a view"):
        client.append_partition("default", "v", ["x"])


def test_get_partition_reports_missing_partitions_and_tables(client, T):
    _table(client, T)
    _add(client, T, ["2024-01-01", "1"])
    with raises(T.NoSuchObjectException, "partition values=[2024-01-01, 99]"):
        client.get_partition("default", "pt", ["2024-01-01", "99"])
    with raises(T.MetaException, "Invalid partition key & values; keys [ds, hr, ], values [x, ]"):
        client.get_partition("default", "pt", ["x"])
    with raises(T.NoSuchObjectException, "partition values=[2024-01-01, 99]"):
        client.get_partition_by_name("default", "pt", "ds=2024-01-01/hr=99")
    with raises(T.NoSuchObjectException, "incomplete partition name - missing ds"):
        client.get_partition_by_name("default", "pt", "DS=2024-01-01/HR=1")
    missing = "hive.default.nope table not found"
    for call in (
        lambda: client.get_partition("default", "nope", ["a", "1"]),
        lambda: client.get_partitions("default", "nope", -1),
        lambda: client.get_partition_names("default", "nope", -1),
        lambda: client.get_partitions_ps("default", "nope", ["a"], -1),
        lambda: client.get_partitions_by_filter("default", "nope", "", -1),
        lambda: client.get_partitions_by_names("default", "nope", ["ds=a/hr=1"]),
    ):
        with raises(T.NoSuchObjectException, missing):
            call()


def test_max_parts_limits_listings_in_name_order(client, T):
    _table(client, T)
    _add(client, T, ["b", "2"], ["a", "1"], ["c", "3"])
    names = ["ds=a/hr=1", "ds=b/hr=2", "ds=c/hr=3"]
    assert [p.values for p in client.get_partitions("default", "pt", -1)] == [
        ["a", "1"],
        ["b", "2"],
        ["c", "3"],
    ]
    assert client.get_partitions("default", "pt", 0) == []
    assert [p.values for p in client.get_partitions("default", "pt", 2)] == [["a", "1"], ["b", "2"]]
    assert len(client.get_partitions_with_auth("default", "pt", 0, "u", [])) == 3
    assert client.get_partition_names("default", "pt", -1) == names
    assert client.get_partition_names("default", "pt", 1) == names[:1]
    assert client.get_partition_names("default", "pt", 0) == []


def test_partial_specifications(client, T):
    _table(client, T)
    _add(client, T, ["a", "1"], ["a", "2"], ["b", "1"])
    assert [p.values for p in client.get_partitions_ps("default", "pt", ["a"], -1)] == [
        ["a", "1"],
        ["a", "2"],
    ]
    assert client.get_partition_names_ps("default", "pt", ["", "1"], -1) == [
        "ds=a/hr=1",
        "ds=b/hr=1",
    ]
    assert client.get_partition_names_ps("default", "pt", ["a"], 1) == ["ds=a/hr=1"]
    assert client.get_partition_names_ps("default", "pt", ["a"], 0) == []
    assert client.get_partitions_ps_with_auth("default", "pt", ["b", "1"], -1, "u", []) != []
    with raises(
        T.MetaException, "Incorrect number of partition values. numPartKeys=2, part_val=[a, 1, x]"
    ):
        client.get_partitions_ps("default", "pt", ["a", "1", "x"], -1)
    with raises(T.MetaException, "Invalid partition key & values; keys [], values []"):
        client.get_partitions_ps("default", "pt", [], -1)


def test_filters_on_string_and_integer_keys(client, T):
    _table(client, T)
    _add(client, T, ["2024-01-01", "1"], ["2024-01-02", "2"], ["2024-01-02", "10"])

    def values(f, n=-1):
        return [p.values for p in client.get_partitions_by_filter("default", "pt", f, n)]

    assert values('ds = "2024-01-02"') == [["2024-01-02", "10"], ["2024-01-02", "2"]]
    assert values("hr > 1") == [["2024-01-02", "10"], ["2024-01-02", "2"]]
    assert values("ds = '2024-01-01' or hr = 10") == [["2024-01-01", "1"], ["2024-01-02", "10"]]
    assert values("ds >= '2024-01-02' and hr < 5") == [["2024-01-02", "2"]]
    assert len(values("")) == 3
    assert values("hr > 0", 0) == []
    assert values("hr > 0", 1) == [["2024-01-01", "1"]]
    assert client.get_num_partitions_by_filter("default", "pt", "hr >= 2") == 2
    assert client.get_num_partitions_by_filter("default", "pt", "") == 3
    with raises(T.MetaException, contains="is not a partitioning key for the table"):
        values("nocol = 'x'")
    with raises(T.MetaException, contains="Error parsing partition filter"):
        values("ds = ")


def test_get_partitions_by_names_skips_missing_and_orders_by_name(client, T):
    _table(client, T)
    _add(client, T, ["2024-01-02", "2"], ["2024-01-01", "1"])
    got = client.get_partitions_by_names(
        "default",
        "pt",
        ["ds=2024-01-02/hr=2", "ds=nope/hr=1", "ds=2024-01-01/hr=1", "ds=2024-01-02/hr=2"],
    )
    assert [p.values for p in got] == [["2024-01-01", "1"], ["2024-01-02", "2"]]
    assert client.get_partitions_by_names("default", "pt", ["DS=2024-01-01/HR=1"]) == []
    assert client.get_partitions_by_names("default", "pt", []) == []


def test_expression_calls_answer_invalid_method_name(client, T):
    _table(client, T)
    _add(client, T, ["a", "1"])
    expr = T.PartitionsByExprRequest(dbName="default", tblName="pt", expr=b"\x00")
    calls = {
        "get_partitions_by_expr": lambda: client.get_partitions_by_expr(expr),
        "get_partitions_spec_by_expr": lambda: client.get_partitions_spec_by_expr(expr),
        "get_partition_names_req": lambda: client.get_partition_names_req(expr),
        "drop_partitions_req": lambda: client.drop_partitions_req(
            T.DropPartitionsRequest(
                dbName="default",
                tblName="pt",
                parts=T.RequestPartsSpec(exprs=[T.DropPartitionsExpr(expr=b"\x00")]),
            )
        ),
    }
    for name, call in calls.items():
        with pytest.raises(TApplicationException) as exc:
            call()
        assert exc.value.type == TApplicationException.UNKNOWN_METHOD
        assert exc.value.message == f"Invalid method name: '{name}'"
    assert client.get_partition_names("default", "pt", -1) == ["ds=a/hr=1"]


def test_alter_partition_stores_the_clients_fields(service, client, T):
    wh = warehouse_dir(service)
    _table(client, T)
    _add(client, T, ["a", "1"])
    before = last_event_id(client)
    new = client.get_partition("default", "pt", ["a", "1"])
    new.createTime = 0
    new.lastAccessTime = 42
    new.parameters = {"x": "y", "transient_lastDdlTime": "0"}
    new.sd.location = f"file://{wh}/p/"
    client.alter_partition("default", "PT", new)
    got = client.get_partition("default", "pt", ["a", "1"])
    assert (got.createTime, got.lastAccessTime) == (0, 42)
    assert got.sd.location == uri(wh / "p")
    assert int(got.parameters["transient_lastDdlTime"]) > 0
    # no fast stats in the new parameters: recomputed from the (missing, so empty) directory
    assert (got.parameters["x"], got.parameters["numFiles"], got.parameters["totalSize"]) == (
        "y",
        "0",
        "0",
    )
    write_files(wh / "p", {"f": b"1234"})
    # unchanged fast stats are kept; STATS_GENERATED=TASK only marks them accurate
    client.alter_partition_with_environment_context(
        "default", "pt", got, T.EnvironmentContext(properties={"STATS_GENERATED": "TASK"})
    )
    got = client.get_partition("default", "pt", ["a", "1"])
    assert (got.parameters["numFiles"], got.parameters["totalSize"]) == ("0", "0")
    assert json.loads(got.parameters["COLUMN_STATS_ACCURATE"]) == {"BASIC_STATS": "true"}
    # fast stats left out are recomputed, and the accurate flag goes without TASK
    del got.parameters["numFiles"], got.parameters["totalSize"]
    client.alter_partition("default", "pt", got)
    got = client.get_partition("default", "pt", ["a", "1"])
    assert (got.parameters["numFiles"], got.parameters["totalSize"]) == ("1", "4")
    assert "COLUMN_STATS_ACCURATE" not in got.parameters
    assert event_types(client, T, before) == ["ALTER_PARTITION"] * 3


def test_alter_partition_errors_are_invalid_operation(client, T):
    _table(client, T)
    _add(client, T, ["a", "1"], ["b", "2"])
    with raises(T.InvalidOperationException, "alter is not possible: partition values=[a, 77]"):
        client.alter_partition("default", "pt", partition(T, "default", "pt", ["a", "77"]))
    with raises(
        T.InvalidOperationException,
        "alter is not possible: Unable to alter partition because table or database does not "
        "exist.",
    ):
        client.alter_partition("default", "nope", partition(T, "default", "nope", ["a", "1"]))
    with raises(
        T.InvalidOperationException,
        "Alter partition operation failed: InvalidObjectException(message:Unable to alter "
        "partitions because table or database does not exist.)",
    ):
        client.alter_partitions("default", "nope", [partition(T, "default", "nope", ["a", "1"])])
    before = last_event_id(client)
    good = client.get_partition("default", "pt", ["a", "1"])
    good.parameters["changed"] = "1"
    with raises(
        T.InvalidOperationException,
        "Alter partition operation failed: NoSuchObjectException(message:partition values=[b, 77])",
    ):
        client.alter_partitions("default", "pt", [good, partition(T, "default", "pt", ["b", "77"])])
    assert "changed" not in client.get_partition("default", "pt", ["a", "1"]).parameters
    assert event_types(client, T, before) == []
    second = client.get_partition("default", "pt", ["b", "2"])
    client.alter_partitions("default", "pt", [good, second])
    assert client.get_partition("default", "pt", ["a", "1"]).parameters["changed"] == "1"
    assert event_types(client, T, before) == ["ALTER_PARTITION", "ALTER_PARTITION"]


def test_rename_partition_moves_managed_directories(service, client, T):
    wh = warehouse_dir(service)
    _table(client, T)
    _add(client, T, ["a", "1"], ["b", "1"])
    write_files(wh / "pt" / "ds=a" / "hr=1", {"f": b"123"})
    new = client.get_partition("default", "pt", ["a", "1"])
    new.values = ["c", "3"]
    before = last_event_id(client)
    client.rename_partition("default", "pt", ["a", "1"], new)
    got = client.get_partition("default", "pt", ["c", "3"])
    assert got.sd.location == uri(wh / "pt" / "ds=c" / "hr=3")
    assert (wh / "pt" / "ds=c" / "hr=3" / "f").read_bytes() == b"123"
    assert not (wh / "pt" / "ds=a" / "hr=1").exists()
    assert client.get_partition_names("default", "pt", -1) == ["ds=b/hr=1", "ds=c/hr=3"]
    assert event_types(client, T, before) == ["ALTER_PARTITION"]
    with raises(
        T.InvalidOperationException,
        "Unable to rename partition because old partition does not exist",
    ):
        client.rename_partition("default", "pt", ["a", "1"], new)
    new.values = ["b", "1"]
    with raises(T.InvalidOperationException, "Partition already exists:Default.PT.[b, 1]"):
        client.rename_partition("Default", "PT", ["c", "3"], new)


def test_rename_partition_of_external_table_keeps_location(client, T, tmp_path):
    _table(client, T, "ext", params={"EXTERNAL": "TRUE"}, table_type="EXTERNAL_TABLE")
    client.add_partition(partition(T, "default", "ext", ["a", "1"], location=str(tmp_path / "p")))
    new = client.get_partition("default", "ext", ["a", "1"])
    new.values = ["b", "2"]
    client.rename_partition("default", "ext", ["a", "1"], new)
    assert client.get_partition("default", "ext", ["b", "2"]).sd.location == uri(tmp_path / "p")
    # outside the warehouse (the only root here): metadata only, never created or moved
    assert not (tmp_path / "p").exists()


def test_drop_partition_deletes_data_and_empty_parents(service, client, T, tmp_path):
    wh = warehouse_dir(service)
    _table(client, T)
    _add(client, T, ["a", "1"], ["a", "2"], ["b", "1"])
    write_files(wh / "pt" / "ds=a" / "hr=1", {"f": b"1"})
    before = last_event_id(client)
    assert client.drop_partition("default", "pt", ["a", "1"], True) is True
    assert not (wh / "pt" / "ds=a" / "hr=1").exists()
    assert (wh / "pt" / "ds=a" / "hr=2").is_dir()
    assert client.drop_partition_by_name("default", "pt", "ds=a/hr=2", True) is True
    assert not (wh / "pt" / "ds=a").exists()  # left empty: removed
    assert (wh / "pt").is_dir()
    client.drop_partition("default", "pt", ["b", "1"], False)
    assert (wh / "pt" / "ds=b" / "hr=1").is_dir()
    assert event_types(client, T, before) == ["DROP_PARTITION"] * 3
    with raises(T.NoSuchObjectException, "partition values=[a, 1]"):
        client.drop_partition("default", "pt", ["a", "1"], True)
    with raises(T.NoSuchObjectException, "incomplete partition name - missing hr"):
        client.drop_partition_by_name("default", "pt", "ds=a", True)
    _table(client, T, "ext", params={"EXTERNAL": "TRUE"}, table_type="EXTERNAL_TABLE")
    write_files(tmp_path / "e", {"f": b"1"})
    client.add_partition(partition(T, "default", "ext", ["a", "1"], location=str(tmp_path / "e")))
    client.drop_partition("default", "ext", ["a", "1"], True)
    assert (tmp_path / "e" / "f").is_file()


def test_drop_partitions_req_defaults(service, client, T):
    wh = warehouse_dir(service)
    _table(client, T)
    _add(client, T, ["a", "1"], ["b", "1"], ["c", "1"])
    before = last_event_id(client)
    res = client.drop_partitions_req(
        T.DropPartitionsRequest(
            dbName="default",
            tblName="pt",
            parts=T.RequestPartsSpec(names=["ds=a/hr=1", "ds=b/hr=1", "ds=x/hr=1"]),
        )
    )
    assert sorted(p.values[0] for p in res.partitions) == ["a", "b"]
    assert (wh / "pt" / "ds=a" / "hr=1").is_dir()  # deleteData defaults to false
    assert event_types(client, T, before) == ["DROP_PARTITION", "DROP_PARTITION"]
    with raises(T.NoSuchObjectException, "Some partitions to drop are missing"):
        client.drop_partitions_req(
            T.DropPartitionsRequest(
                dbName="default",
                tblName="pt",
                parts=T.RequestPartsSpec(names=["ds=c/hr=1", "ds=x/hr=1"]),
                ifExists=False,
            )
        )
    res = client.drop_partitions_req(
        T.DropPartitionsRequest(
            dbName="default",
            tblName="pt",
            parts=T.RequestPartsSpec(names=["ds=c/hr=1"]),
            deleteData=True,
            needResult=False,
        )
    )
    assert res.partitions is None
    assert not (wh / "pt" / "ds=c").exists()
    with raises(T.NoSuchObjectException, "hive.default.nope table not found"):
        client.drop_partitions_req(
            T.DropPartitionsRequest(
                dbName="default", tblName="nope", parts=T.RequestPartsSpec(names=["ds=a/hr=1"])
            )
        )
