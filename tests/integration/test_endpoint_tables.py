"""Table calls through Apache Thrift's client, on SQLite and PostgreSQL: what a stock Hive 4.0
metastore answers (docs/compatibility.md lists where we differ, and why)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from thrift.Thrift import TApplicationException

from tests.support.metastore import (
    LAZY_SIMPLE,
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

TASK_ENV = {"STATS_GENERATED": "TASK"}


def _env(T, **props):
    return T.EnvironmentContext(properties=props)


def test_create_table_round_trip_returns_what_was_sent_plus_server_fields(service, client, T):
    client.create_database(T.Database(name="db1"))
    sent = table(T, "DB1", "Orders", ["Id:bigint", "Amount:decimal(10,2)"], ["DS:string"])
    sent.createTime = 12345
    sent.lastAccessTime = 7
    sent.retention = 3
    sent.parameters = {"comment": "orders", "custom": "x"}
    sent.sd.cols[0].comment = "the id"
    sent.sd.bucketCols = ["Id"]
    sent.sd.numBuckets = 4
    sent.sd.sortCols = [T.Order(col="Id", order=1)]
    sent.sd.parameters = {"sdp": "1"}
    sent.sd.skewedInfo = T.SkewedInfo(
        skewedColNames=["Id"], skewedColValues=[["1"]], skewedColValueLocationMaps={}
    )
    before = last_event_id(client)
    started = int(time.time())
    client.create_table(sent)
    got = client.get_table("Db1", "ORDERS")
    assert (got.dbName, got.tableName, got.catName) == ("db1", "orders", "hive")
    assert got.owner == "alice" and got.ownerType == T.PrincipalType.USER
    assert started <= got.createTime <= int(time.time())  # the client's value is replaced
    assert (got.lastAccessTime, got.retention) == (7, 3)
    assert got.tableType == "MANAGED_TABLE"
    assert got.partitionKeys == [T.FieldSchema(name="ds", type="string", comment=None)]
    assert got.sd.cols == [
        T.FieldSchema(name="id", type="bigint", comment="the id"),
        T.FieldSchema(name="amount", type="decimal(10,2)", comment=None),
    ]
    assert got.sd.location == uri(warehouse_dir(service) / "db1.db" / "orders")
    assert (got.sd.inputFormat, got.sd.outputFormat) == (sent.sd.inputFormat, sent.sd.outputFormat)
    assert got.sd.serdeInfo.serializationLib == LAZY_SIMPLE
    assert got.sd.serdeInfo.parameters == {"serialization.format": "1"}
    assert (got.sd.numBuckets, got.sd.bucketCols) == (4, ["Id"])
    assert got.sd.sortCols == [T.Order(col="id", order=1)]
    assert got.sd.parameters == {"sdp": "1"}
    assert got.sd.skewedInfo.skewedColNames == ["Id"]
    assert got.sd.skewedInfo.skewedColValues == [["1"]]
    assert got.sd.compressed is False and got.sd.storedAsSubDirectories is False
    ddl = got.parameters.pop("transient_lastDdlTime")
    assert started <= int(ddl) <= int(time.time())
    assert got.parameters == {"comment": "orders", "custom": "x"}  # no stats: partitioned
    assert got.temporary is False and got.rewriteEnabled is False
    assert (warehouse_dir(service) / "db1.db" / "orders").is_dir()
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["CREATE_TABLE"]
    assert (events[0].dbName, events[0].tableName) == ("db1", "orders")


def test_create_table_locations_default_encoded_or_normalised(service, client, T):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "a-b.c"))
    assert client.get_table("default", "a-b.c").sd.location == uri(wh / "a-45-b-46-c")
    assert (wh / "a-45-b-46-c").is_dir()
    client.create_table(table(T, "default", "t2", location=f"file://{wh}/x//t2/"))
    assert client.get_table("default", "t2").sd.location == uri(wh / "x" / "t2")
    client.create_table(table(T, "default", "t3", location=f"{wh}/t3"))
    assert client.get_table("default", "t3").sd.location == uri(wh / "t3")
    assert (wh / "t3").is_dir()
    with raises(T.InvalidObjectException, "t4 location must not be root path"):
        client.create_table(table(T, "default", "t4", location="file:///"))


def test_create_table_validates_name_types_and_definition(client, T):
    with raises(T.InvalidObjectException, "t\\1 is not a valid object name"):
        client.create_table(table(T, "default", "t\\1"))
    with raises(T.InvalidObjectException, "database hive.nodb"):
        client.create_table(table(T, "nodb", "t1"))
    with raises(T.InvalidObjectException, "Invalid column type: INT"):
        client.create_table(table(T, "default", "t1", ["a:INT"]))
    with raises(T.InvalidObjectException, "Invalid column type: "):
        client.create_table(table(T, "default", "t1", ["a:"]))
    with raises(T.InvalidObjectException, "Invalid partition column type: Strin"):
        client.create_table(table(T, "default", "t1", keys=["ds:Strin"]))
    bad_skew = table(T, "default", "t1")
    bad_skew.sd.skewedInfo = T.SkewedInfo(
        skewedColNames=["a", "x"], skewedColValues=[], skewedColValueLocationMaps={}
    )
    with raises(T.InvalidObjectException, "Invalid skew column [x]"):
        client.create_table(bad_skew)
    no_sd = table(T, "default", "t1")
    no_sd.sd = None
    with raises(T.MetaException):
        client.create_table(no_sd)
    no_serde = table(T, "default", "t1")
    no_serde.sd.serdeInfo = None
    with raises(T.MetaException, "Invalid SerDeInfo object"):
        client.create_table(no_serde)
    assert client.get_all_tables("default") == []
    # only the first token of a type is checked; special characters are allowed in names
    client.create_table(table(T, "default", "my table.v1", ["a:array<foo>", "b:struct<x:int>"]))
    with raises(T.AlreadyExistsException, "Table hive.DEFAULT.My Table.v1 already exists"):
        client.create_table(table(T, "DEFAULT", "My Table.v1"))


def test_table_type_follows_the_external_parameter(service, client, T):
    wh = warehouse_dir(service)
    cases = {
        "m_ext": ("MANAGED_TABLE", {"EXTERNAL": "true"}, "EXTERNAL_TABLE"),
        "e_no": ("EXTERNAL_TABLE", {}, "MANAGED_TABLE"),
        "e_yes": ("EXTERNAL_TABLE", {"EXTERNAL": "TRUE"}, "EXTERNAL_TABLE"),
        "none": (None, {}, "MANAGED_TABLE"),
    }
    for name, (sent, params, _) in cases.items():
        client.create_table(
            table(T, "default", name, params=params, table_type=sent, location=str(wh / name))
        )
    assert {n: client.get_table("default", n).tableType for n in cases} == {
        n: want for n, (_, _, want) in cases.items()
    }
    view = table(T, "default", "v1", table_type="VIRTUAL_VIEW")
    view.viewOriginalText = view.viewExpandedText = "select 1"
    client.create_table(view)
    got = client.get_table("default", "v1")
    assert got.tableType == "VIRTUAL_VIEW" and got.sd.location is None
    assert not (warehouse_dir(service) / "v1").exists()
    assert client.get_tables_by_type("default", "*", "EXTERNAL_TABLE") == ["e_yes", "m_ext"]


def test_create_table_fills_quick_stats_from_an_existing_directory(service, client, T):
    data = warehouse_dir(service) / "data"
    write_files(
        data, {"a": b"12345", "sub/b": b"123", "c": b"1234567", "_SUCCESS": b"", ".a.crc": b"xx"}
    )
    client.create_table(table(T, "default", "t1", location=str(data)))
    params = client.get_table("default", "t1").parameters
    assert (params["numFiles"], params["totalSize"]) == ("3", "15")
    assert "COLUMN_STATS_ACCURATE" not in params
    client.create_table_with_environment_context(
        table(T, "default", "t2", location=str(data)), _env(T, **TASK_ENV)
    )
    params = client.get_table("default", "t2").parameters
    assert params["numFiles"] == "3"
    assert json.loads(params["COLUMN_STATS_ACCURATE"]) == {"BASIC_STATS": "true"}
    client.create_table(
        table(T, "default", "t3", location=str(data), params={"DO_NOT_UPDATE_STATS": "TRUE"})
    )
    params = client.get_table("default", "t3").parameters
    assert "numFiles" not in params and "DO_NOT_UPDATE_STATS" not in params
    client.create_table_with_environment_context(
        table(T, "default", "t4", location=str(data)), _env(T, DO_NOT_UPDATE_STATS="true")
    )
    assert "numFiles" not in client.get_table("default", "t4").parameters
    client.create_table(table(T, "default", "fresh"))  # a directory this call made: no stats
    assert "numFiles" not in client.get_table("default", "fresh").parameters


def test_get_table_is_case_insensitive_and_reports_missing(client, T):
    client.create_table(table(T, "default", "t1"))
    assert client.get_table("DEFAULT", "T1").tableName == "t1"
    assert (
        client.get_table_req(T.GetTableRequest(dbName="Default", tblName="T1")).table.tableName
        == "t1"
    )
    with raises(T.NoSuchObjectException, "hive.default.nope table not found"):
        client.get_table("default", "nope")
    with raises(T.NoSuchObjectException, "hive.nodb.t1 table not found"):
        client.get_table("nodb", "t1")


def test_get_table_objects_by_name_skips_missing_and_reports_bad_requests(client, T):
    for name in ("t1", "t2"):
        client.create_table(table(T, "default", name))
    got = client.get_table_objects_by_name("default", ["T1", "nothere", "t1", "t2"])
    assert [t.tableName for t in got] == ["t1", "t2"]
    res = client.get_table_objects_by_name_req(
        T.GetTablesRequest(dbName="default", tblNames=["t2", "x"])
    )
    assert [t.tableName for t in res.tables] == ["t2"]
    with raises(T.UnknownDBException, "DB name is null or empty"):
        client.get_table_objects_by_name_req(T.GetTablesRequest(dbName="", tblNames=["t1"]))
    with raises(T.InvalidOperationException, "default cannot find null tables"):
        client.get_table_objects_by_name_req(T.GetTablesRequest(dbName="default"))
    with raises(T.UnknownDBException, "Could not find database hive.nodb"):
        client.get_table_objects_by_name_req(T.GetTablesRequest(dbName="nodb", tblNames=["t1"]))
    # the old call declares no exception: the answer is an application error
    with pytest.raises(TApplicationException) as exc:
        client.get_table_objects_by_name("nodb", ["t1"])
    assert exc.value.type == TApplicationException.INTERNAL_ERROR
    assert client.get_table("default", "t1").tableName == "t1"  # connection still usable


def test_table_name_listings_follow_hive_patterns(client, T):
    for name in ("sales_2024", "sales_2025", "salesx", "other"):
        client.create_table(table(T, "default", name))
    assert client.get_all_tables("default") == ["other", "sales_2024", "sales_2025", "salesx"]
    assert client.get_tables("default", "SALES*") == ["sales_2024", "sales_2025", "salesx"]
    assert client.get_tables("default", "sales_202.|oth*") == ["other", "sales_2024", "sales_2025"]
    assert client.get_tables("default", "sales_") == []
    assert client.get_tables("default", ".*") == ["other", "sales_2024", "sales_2025", "salesx"]
    assert client.get_tables("nodb", "*") == []
    assert client.get_all_tables("nodb") == []
    assert client.get_tables_by_type("default", "sales*", "MANAGED_TABLE") == [
        "sales_2024",
        "sales_2025",
        "salesx",
    ]
    with raises(
        T.MetaException,
        "java.lang.IllegalArgumentException: No enum constant "
        "org.apache.hadoop.hive.metastore.TableType.FOO",
    ):
        client.get_tables_by_type("default", "*", "FOO")
    metas = client.get_table_meta("def*", "sales_2024|other", ["MANAGED_TABLE"])
    assert sorted((m.dbName, m.tableName, m.tableType) for m in metas) == [
        ("default", "other", "MANAGED_TABLE"),
        ("default", "sales_2024", "MANAGED_TABLE"),
    ]


def test_get_fields_and_schema_read_stored_columns_or_refuse_other_serdes(client, T):
    client.create_table(table(T, "default", "t1", ["a:int", "b:string"], ["ds:string"]))
    assert client.get_fields("default", "T1") == cols(T, "a:int", "b:string")
    assert client.get_fields("default", "t1.b") == cols(T, "a:int", "b:string")
    assert client.get_schema("default", "t1") == cols(T, "a:int", "b:string", "ds:string")
    assert client.get_fields_req(T.GetFieldsRequest(dbName="default", tblName="t1")).fields == cols(
        T, "a:int", "b:string"
    )
    with raises(T.UnknownTableException, "hive.default.zz table not found"):
        client.get_fields("default", "zz")
    with raises(T.UnknownTableException, "hive.nodb.zz table not found"):
        client.get_schema("nodb", "zz")
    avro = table(T, "default", "avro")
    avro.sd.serdeInfo.serializationLib = "org.apache.hadoop.hive.serde2.avro.AvroSerDe"
    client.create_table(avro)
    with raises(
        T.MetaException,
        "java.lang.UnsupportedOperationException: Storage schema reading not supported",
    ):
        client.get_fields("default", "avro")


def test_alter_table_replaces_the_definition_but_keeps_create_time(service, client, T):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "t1", params={"a": "1", "transient_lastDdlTime": "5"}))
    created = client.get_table("default", "t1")
    new = client.get_table("default", "t1")
    new.parameters = {"b": "2"}
    new.createTime = 1
    new.owner = "carol"
    new.sd.cols = cols(T, "A:int", "b:string", "C:double")
    new.sd.location = f"file://{wh}/moved/"
    before = last_event_id(client)
    client.alter_table("DEFAULT", "T1", new)
    got = client.get_table("default", "t1")
    assert got.createTime == created.createTime
    assert got.owner == "carol"
    assert [c.name for c in got.sd.cols] == ["a", "b", "c"]
    assert got.sd.location == uri(wh / "moved")
    assert int(got.parameters.pop("transient_lastDdlTime")) >= created.createTime
    # the client's parameters replace the old ones (the quick stats are recomputed)
    assert got.parameters == {"b": "2", "numFiles": "0", "totalSize": "0"}
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["ALTER_TABLE"]
    body = event_body(events[0])
    assert (body["db"], body["table"]) == ("default", "t1")


def test_alter_table_refuses_incompatible_column_types_unless_the_session_allows(connect, T):
    a, b = connect(), connect()
    a.create_table(table(T, "default", "t1", ["i:int", "s:string", "big:bigint", "d:date"]))

    def altered(*types):
        new = a.get_table("default", "t1")
        new.sd.cols = cols(T, *types)
        return new

    a.alter_table("default", "t1", altered("i:bigint", "s:varchar(10)", "big:double", "d:string"))
    with raises(
        T.InvalidOperationException,
        "The following columns have types incompatible with the existing columns in their "
        "respective positions :\ni,d",
    ):
        a.alter_table("default", "t1", altered("i:int", "s:string", "big:double", "d:date"))
    a.setMetaConf("hive.metastore.disallow.incompatible.col.type.changes", "false")
    a.alter_table("default", "t1", altered("i:int", "s:string", "big:double", "d:date"))
    assert [c.type for c in a.get_table("default", "t1").sd.cols] == [
        "int",
        "string",
        "double",
        "date",
    ]
    with raises(T.InvalidOperationException, contains="incompatible"):
        b.alter_table("default", "t1", altered("i:boolean", "s:string", "big:double", "d:date"))


def test_alter_table_partition_keys_keep_their_names(client, T):
    client.create_table(table(T, "default", "t1", keys=["ds:string", "hr:int"]))
    for keys in (["DS:string", "hr:int"], ["ds:string"], ["ds:string", "hr:int", "x:int"]):
        new = client.get_table("default", "t1")
        new.partitionKeys = cols(T, *keys)
        with raises(T.InvalidOperationException, "partition keys can not be changed."):
            client.alter_table("default", "t1", new)
    new = client.get_table("default", "t1")
    new.partitionKeys = [
        T.FieldSchema(name="ds", type="date", comment="day"),
        T.FieldSchema(name="hr", type="bigint", comment=None),
    ]
    client.alter_table("default", "t1", new)
    assert client.get_table("default", "t1").partitionKeys == new.partitionKeys


def test_alter_table_errors_are_invalid_operation(client, T):
    client.create_table(table(T, "default", "t1"))
    client.create_table(table(T, "default", "t2"))
    with raises(T.InvalidOperationException, "hive.default.nope table not found"):
        client.alter_table("default", "nope", table(T, "default", "nope"))
    with raises(T.InvalidOperationException, "hive.nodb.t1 table not found"):
        client.alter_table("nodb", "t1", table(T, "nodb", "t1"))
    with raises(T.InvalidOperationException, "t\\x is not a valid object name"):
        client.alter_table("default", "t1", table(T, "default", "t\\x"))
    with raises(T.InvalidOperationException, "Invalid column type: Int"):
        client.alter_table("default", "t1", table(T, "default", "t1", ["a:Int"]))
    with raises(T.InvalidOperationException, "new table default.t2 already exists"):
        client.alter_table("default", "t1", table(T, "default", "T2"))
    with raises(
        T.InvalidOperationException,
        "Unable to change partition or table. Object database hive.nodb does not exist. "
        "Check metastore logs for detailed stack.",
    ):
        client.alter_table("default", "t1", table(T, "nodb", "t1"))
    req = T.AlterTableRequest(
        dbName="default",
        tableName="t1",
        table=table(T, "default", "t1", params={"v": "2"}),
        expectedParameterKey="v",
        expectedParameterValue="1",
    )
    with raises(T.MetaException, contains="The table has been modified"):
        client.alter_table_req(req)


# Iceberg's HiveCatalog without its lock (engine.hive.lock-enabled=false) commits with this
# EnvironmentContext: Hive 4 checks the stored value under the alter's transaction.
ICEBERG_KEY = "metadata_location"


def _expecting(T, value, **more):
    return _env(T, expected_parameter_key=ICEBERG_KEY, expected_parameter_value=value, **more)


def _modified(current, expected):
    return (
        f"The table has been modified. The parameter value for key '{ICEBERG_KEY}' is "
        f"'{current}'. The expected was value was '{expected}'"
    )


def test_alter_with_a_stale_expected_parameter_is_refused_and_changes_nothing(client, T):
    client.create_table(table(T, "default", "ice", params={ICEBERG_KEY: "v1"}))
    stored = client.get_table("default", "ice")  # cached from here on
    before = last_event_id(client)
    stale = table(T, "default", "ice", params={ICEBERG_KEY: "v2"})
    with raises(T.MetaException, _modified("v1", "v0")):
        client.alter_table_with_environment_context("default", "ice", stale, _expecting(T, "v0"))
    req = T.AlterTableRequest(
        dbName="default", tableName="ice", table=stale, environmentContext=_expecting(T, "v0")
    )
    with raises(T.MetaException, _modified("v1", "v0")):
        client.alter_table_req(req)
    assert client.get_table("default", "ice") == stored
    assert events_since(client, T, before) == []


def test_alter_with_the_current_expected_parameter_succeeds(client, T):
    client.create_table(table(T, "default", "ice", params={ICEBERG_KEY: "v1"}))
    client.get_table("default", "ice")
    new = table(T, "default", "ice", params={ICEBERG_KEY: "v2"})
    client.alter_table_with_environment_context("default", "ice", new, _expecting(T, "v1"))
    assert client.get_table("default", "ice").parameters[ICEBERG_KEY] == "v2"
    new = table(T, "default", "ice", params={ICEBERG_KEY: "v3"})
    req = T.AlterTableRequest(
        dbName="default", tableName="ice", table=new, environmentContext=_expecting(T, "v2")
    )
    client.alter_table_req(req)
    assert client.get_table("default", "ice").parameters[ICEBERG_KEY] == "v3"


def test_alter_expecting_a_parameter_the_table_lacks_or_leaves_unset_is_refused(client, T):
    client.create_table(table(T, "default", "plain"))
    new = table(T, "default", "plain", params={ICEBERG_KEY: "v1"})
    with raises(T.MetaException, _modified("null", "v0")):
        client.alter_table_with_environment_context("default", "plain", new, _expecting(T, "v0"))
    unset = table(T, "default", "plain")
    with raises(T.MetaException, f"New value for expected key {ICEBERG_KEY} is not set"):
        client.alter_table_with_environment_context("default", "plain", unset, _expecting(T, "v0"))
    assert ICEBERG_KEY not in client.get_table("default", "plain").parameters


def _race_commits(writers, T, base, r):
    """Each writer alters ``ice`` from ``base`` at once (a barrier); index -> None or the
    MetaException it got."""
    barrier = threading.Barrier(len(writers))
    outcome = {}

    def commit(i):
        new = table(T, "default", "ice", params={ICEBERG_KEY: f"v{r}-{i}"})
        barrier.wait()
        try:
            writers[i].alter_table_with_environment_context(
                "default", "ice", new, _expecting(T, base)
            )
            outcome[i] = None
        except T.MetaException as exc:
            outcome[i] = exc

    threads = [threading.Thread(target=commit, args=(i,)) for i in range(len(writers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return outcome


def test_two_writers_expecting_the_same_value_exactly_one_wins(connect, T):
    writers = [connect(), connect()]
    writers[0].create_table(table(T, "default", "ice", params={ICEBERG_KEY: "v0"}))
    different = f"The table has been modified. The parameter value for key '{ICEBERG_KEY}' is "
    base = "v0"
    for r in range(1, 5):
        outcome = _race_commits(writers, T, base, r)
        winners = [i for i, exc in outcome.items() if exc is None]
        assert len(outcome) == 2 and len(winners) == 1, f"round {r}: {outcome}"
        [loser] = [exc for exc in outcome.values() if exc is not None]
        won = f"v{r}-{winners[0]}"
        assert loser.message in (_modified(won, base), different + "different")
        for c in writers:
            assert c.get_table("default", "ice").parameters[ICEBERG_KEY] == won
        base = won


def test_alter_table_req_fields_override_the_environment_context(client, T):
    client.create_table(table(T, "default", "ice", params={ICEBERG_KEY: "v1"}))
    req = T.AlterTableRequest(
        dbName="default",
        tableName="ice",
        table=table(T, "default", "ice", params={ICEBERG_KEY: "v2"}),
        environmentContext=_expecting(T, "v0"),
        expectedParameterKey=ICEBERG_KEY,
        expectedParameterValue="v1",
    )
    client.alter_table_req(req)  # Hive 4 puts the request's fields into the context
    assert client.get_table("default", "ice").parameters[ICEBERG_KEY] == "v2"


def test_rename_managed_table_moves_data_and_partition_locations(service, client, T):
    wh = warehouse_dir(service)
    client.create_database(T.Database(name="db2"))
    client.create_table(table(T, "default", "t1", keys=["ds:string"]))
    client.add_partition(partition(T, "default", "t1", ["a"]))
    outside = wh / "elsewhere"  # not below the table's directory: never moved
    client.add_partition(partition(T, "default", "t1", ["b"], location=str(outside)))
    write_files(wh / "t1" / "ds=a", {"f": b"x"})
    before = last_event_id(client)
    new = client.get_table("default", "t1")
    new.tableName = "T1_New"
    client.alter_table("default", "t1", new)
    got = client.get_table("default", "t1_new")
    assert got.sd.location == uri(wh / "t1_new")
    assert (wh / "t1_new" / "ds=a" / "f").read_bytes() == b"x"
    assert not (wh / "t1").exists()
    locations = {p.values[0]: p.sd.location for p in client.get_partitions("default", "t1_new", -1)}
    assert locations == {"a": uri(wh / "t1_new" / "ds=a"), "b": uri(outside)}
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["ALTER_TABLE"]  # no partition events
    assert (events[0].dbName, events[0].tableName) == ("default", "t1_new")
    with raises(T.NoSuchObjectException):
        client.get_table("default", "t1")
    # to another database: below that database's directory
    new = client.get_table("default", "t1_new")
    new.dbName = "db2"
    client.alter_table("default", "t1_new", new)
    assert client.get_table("db2", "t1_new").sd.location == uri(wh / "db2.db" / "t1_new")
    assert (wh / "db2.db" / "t1_new" / "ds=a" / "f").exists()


def test_rename_keeps_the_location_of_external_and_custom_located_tables(service, client, T):
    wh = warehouse_dir(service)
    client.create_table(
        table(T, "default", "ext", params={"EXTERNAL": "TRUE"}, table_type="EXTERNAL_TABLE")
    )
    client.create_table(table(T, "default", "custom", location=str(wh / "mine")))
    for old in ("ext", "custom"):
        before = client.get_table("default", old)
        new = client.get_table("default", old)
        new.tableName = old + "2"
        client.alter_table("default", old, new)
        assert client.get_table("default", old + "2").sd.location == before.sd.location
    assert (wh / "ext").is_dir()
    assert (wh / "mine").is_dir()


def test_alter_table_recomputes_quick_stats_unless_told_not_to(service, client, T):
    client.create_table(table(T, "default", "t1"))
    write_files(warehouse_dir(service) / "t1", {"a": b"1234", "b": b"12"})
    new = client.get_table("default", "t1")
    new.parameters["COLUMN_STATS_ACCURATE"] = '{"BASIC_STATS":"true"}'
    new.parameters["totalSize"] = "999"
    client.alter_table("default", "t1", new)
    params = client.get_table("default", "t1").parameters
    assert (params["numFiles"], params["totalSize"]) == ("2", "6")
    assert "COLUMN_STATS_ACCURATE" not in params
    client.alter_table_with_environment_context("default", "t1", new, _env(T, **TASK_ENV))
    params = client.get_table("default", "t1").parameters
    assert json.loads(params["COLUMN_STATS_ACCURATE"]) == {"BASIC_STATS": "true"}
    new.parameters["totalSize"] = "999"
    client.alter_table_with_environment_context(
        "default", "t1", new, _env(T, DO_NOT_UPDATE_STATS="true")
    )
    assert client.get_table("default", "t1").parameters["totalSize"] == "999"


def test_alter_table_cascade_changes_partition_columns(client, T):
    client.create_table(table(T, "default", "t1", ["a:int"], ["ds:string"]))
    for v in ("x", "y"):
        client.add_partition(partition(T, "default", "t1", [v], ["a:int"]))
    new = client.get_table("default", "t1")
    new.sd.cols = cols(T, "a:int", "b:string")
    client.alter_table("default", "t1", new)
    assert [p.sd.cols for p in client.get_partitions("default", "t1", -1)] == [cols(T, "a:int")] * 2
    new.sd.cols = cols(T, "a:int", "b:string", "c:int")
    client.alter_table_with_cascade("default", "t1", new, True)
    assert [p.sd.cols for p in client.get_partitions("default", "t1", -1)] == [
        cols(T, "a:int", "b:string", "c:int")
    ] * 2


def test_drop_table_deletes_managed_data_and_keeps_external_data(service, client, T):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "m", keys=["ds:string"]))
    client.add_partition(partition(T, "default", "m", ["a"]))
    # a partition outside its table's directory: its data is kept (docs/security.md)
    client.add_partition(partition(T, "default", "m", ["b"], location=str(wh / "pb")))
    ext = table(T, "default", "e", params={"EXTERNAL": "TRUE"}, table_type="EXTERNAL_TABLE")
    client.create_table(ext)
    purge = table(
        T,
        "default",
        "p",
        params={"EXTERNAL": "TRUE", "external.table.purge": "true"},
        table_type="EXTERNAL_TABLE",
    )
    client.create_table(purge)
    client.create_table(table(T, "default", "kept"))
    before = last_event_id(client)
    client.drop_table("default", "m", True)
    client.drop_table_with_environment_context("default", "e", True, None)
    client.drop_table("default", "p", True)
    client.drop_table("default", "kept", False)
    assert event_types(client, T, before) == ["DROP_TABLE"] * 4  # no partition events
    assert not (wh / "m").exists() and (wh / "pb").is_dir()
    assert (wh / "e").is_dir()
    assert not (wh / "p").exists()
    assert (wh / "kept").is_dir()
    assert client.get_all_tables("default") == []
    with raises(T.NoSuchObjectException, "hive.default.m table not found"):
        client.drop_table("default", "m", True)


def test_truncate_table_empties_directories_and_resets_stats(service, client, T):
    wh = warehouse_dir(service)
    client.create_table(table(T, "default", "t1"))
    write_files(wh / "t1", {"a": b"123", "sub/b": b"1"})
    client.alter_table("default", "t1", client.get_table("default", "t1"))  # stats: 2 files
    client.create_table(table(T, "default", "pt", keys=["ds:string"]))
    for v in ("x", "y"):
        client.add_partition(partition(T, "default", "pt", [v], params={"numRows": "10"}))
        write_files(wh / "pt" / f"ds={v}", {"f": b"12"})
    before = last_event_id(client)
    client.truncate_table("default", "t1", None)
    client.truncate_table("default", "pt", ["ds=x"])
    assert list((wh / "t1").iterdir()) == []
    params = client.get_table("default", "t1").parameters
    assert (params["numFiles"], params["totalSize"]) == ("0", "0")
    assert json.loads(params["COLUMN_STATS_ACCURATE"]) == {"BASIC_STATS": "true"}
    assert list((wh / "pt" / "ds=x").iterdir()) == []
    assert (wh / "pt" / "ds=y" / "f").exists()
    parts = {p.values[0]: p.parameters for p in client.get_partitions("default", "pt", -1)}
    assert parts["x"]["numRows"] == "0" and parts["y"]["numRows"] == "10"
    events = events_since(client, T, before)
    assert [e.eventType for e in events] == ["ALTER_TABLE", "ALTER_PARTITION"]
    assert [event_body(e)["isTruncateOp"] for e in events] == ["true", "true"]
    with raises(T.MetaException, "hive.default.nope table not found"):
        client.truncate_table("default", "nope", None)
