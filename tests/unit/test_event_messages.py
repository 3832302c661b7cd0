"""Hive's notification message bodies and the MESSAGE column formats.

Field names and their order are those of Hive 4.0's message classes in
standalone-metastore/metastore-server/src/main/java/org/apache/hadoop/hive/metastore/messaging/json/
(apache/hive): Jackson writes the ``@JsonProperty`` fields in declaration order (the mapper in
JSONMessageDeserializer turns off getter and field auto-detection) and writes null fields as
``null``. Each expected key list below names the class it comes from.
"""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import message_base, messages, tjson

NOW = 1700000123
SERVER = "thrift://hms-1:9083"
VWIL = "sales.events:5:9223372036854775807::"


@pytest.fixture
def mb() -> messages.MessageBuilder:
    return messages.MessageBuilder(server=SERVER, service_principal="", clock=lambda: NOW + 0.9)


def table() -> object:
    return hms.Table(
        tableName="events",
        dbName="sales",
        owner="hive",
        createTime=1700000000,
        sd=hms.StorageDescriptor(
            cols=[hms.FieldSchema(name="id", type="bigint")],
            location="file:/w/sales.db/events",
            serdeInfo=hms.SerDeInfo(serializationLib="x.Serde", parameters={}),
        ),
        partitionKeys=[
            hms.FieldSchema(name="ds", type="string"),
            hms.FieldSchema(name="hr", type="int"),
        ],
        parameters={"transactional": "true", "secret.key": "hidden", "numRows": "3"},
        tableType="MANAGED_TABLE",
        catName="hive",
        writeId=5,
    )


def partition(ds: str, hr: str) -> object:
    return hms.Partition(
        values=[ds, hr],
        dbName="sales",
        tableName="events",
        createTime=1700000000,
        parameters={"numFiles": "1", "secret.key": "hidden"},
        catName="hive",
        writeId=5,
    )


def stats(part_name: str | None = None) -> object:
    return hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(
            isTblLevel=part_name is None, dbName="sales", tableName="events", partName=part_name
        ),
        statsObj=[
            hms.ColumnStatisticsObj(
                colName="id",
                colType="bigint",
                statsData=hms.ColumnStatisticsData(
                    longStats=hms.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=9)
                ),
            )
        ],
        engine="hive",
    )


DATABASE = hms.Database(
    name="sales", description="d", locationUri="file:/w/sales.db", parameters={}
)
FUNCTION = hms.Function(
    functionName="f",
    dbName="sales",
    className="C",
    ownerName="o",
    ownerType=1,
    createTime=1,
    functionType=1,
    resourceUris=[],
)
CATALOG = hms.Catalog(name="spark", description="c", locationUri="file:/w/spark")


# -- layouts ------------------------------------------------------------------------------------

LAYOUTS = {
    # JSONCreateDatabaseMessage: String server, servicePrincipal, db, dbJson; Long timestamp
    messages.CREATE_DATABASE: ["server", "servicePrincipal", "db", "dbJson", "timestamp"],
    # JSONAlterDatabaseMessage: server, servicePrincipal, db, dbObjBeforeJson, dbObjAfterJson
    messages.ALTER_DATABASE: [
        "server",
        "servicePrincipal",
        "db",
        "dbObjBeforeJson",
        "dbObjAfterJson",
        "timestamp",
    ],
    # JSONDropDatabaseMessage
    messages.DROP_DATABASE: ["server", "servicePrincipal", "db", "dbJson", "timestamp"],
    # JSONCreateTableMessage: server, servicePrincipal, db, table, tableType, tableObjJson;
    # timestamp; List<String> files
    messages.CREATE_TABLE: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjJson",
        "timestamp",
        "files",
    ],
    # JSONAlterTableMessage: ..., tableObjBeforeJson, tableObjAfterJson; String isTruncateOp;
    # Long timestamp, writeId (the Hive 3.1 message below has exactly this order)
    messages.ALTER_TABLE: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjBeforeJson",
        "tableObjAfterJson",
        "isTruncateOp",
        "timestamp",
        "writeId",
    ],
    # JSONDropTableMessage
    messages.DROP_TABLE: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjJson",
        "timestamp",
    ],
    # JSONAddPartitionMessage: ...; timestamp; partitions; partitionListJson; partitionFiles
    messages.ADD_PARTITION: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjJson",
        "timestamp",
        "partitions",
        "partitionListJson",
        "partitionFiles",
    ],
    # JSONAlterPartitionMessage: ..., tableObjJson; isTruncateOp; timestamp, writeId;
    # Map keyValues; partitionObjBeforeJson, partitionObjAfterJson
    messages.ALTER_PARTITION: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjJson",
        "isTruncateOp",
        "timestamp",
        "writeId",
        "keyValues",
        "partitionObjBeforeJson",
        "partitionObjAfterJson",
    ],
    # JSONAlterPartitionsMessage (HIVE-27746): ...; partitions; partitionListJson
    messages.ALTER_PARTITIONS: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjJson",
        "isTruncateOp",
        "timestamp",
        "writeId",
        "partitions",
        "partitionListJson",
    ],
    # JSONDropPartitionMessage: ..., tableObjJson; timestamp; partitions
    messages.DROP_PARTITION: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjJson",
        "timestamp",
        "partitions",
    ],
    # JSONCreateFunctionMessage: server, servicePrincipal, db, functionObjJson; timestamp
    messages.CREATE_FUNCTION: ["server", "servicePrincipal", "db", "functionObjJson", "timestamp"],
    # JSONDropFunctionMessage: server, servicePrincipal, db, functionName; timestamp
    messages.DROP_FUNCTION: ["server", "servicePrincipal", "db", "functionName", "timestamp"],
    # JSONInsertMessage: ..., tableObjJson, ptnObjJson; timestamp; String replace; files
    messages.INSERT: [
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableType",
        "tableObjJson",
        "ptnObjJson",
        "timestamp",
        "replace",
        "files",
    ],
    # JSONUpdateTableColumnStatMessage: Long writeId, timestamp; String server,
    # servicePrincipal, database; colStatsJson; Map parameters; tableObjJson
    messages.UPDATE_TBL_COL_STAT_EVENT: [
        "writeId",
        "timestamp",
        "server",
        "servicePrincipal",
        "database",
        "colStatsJson",
        "parameters",
        "tableObjJson",
    ],
    # JSONDeleteTableColumnStatMessage: Long timestamp; server, servicePrincipal, database,
    # colName
    messages.DELETE_TBL_COL_STAT_EVENT: [
        "timestamp",
        "server",
        "servicePrincipal",
        "database",
        "colName",
    ],
    # JSONUpdatePartitionColumnStatMessage: ..., colStatsJson; parameters; List partVals;
    # tableObjJson
    messages.UPDATE_PART_COL_STAT_EVENT: [
        "writeId",
        "timestamp",
        "server",
        "servicePrincipal",
        "database",
        "colStatsJson",
        "parameters",
        "partVals",
        "tableObjJson",
    ],
    # JSONDeletePartitionColumnStatMessage: timestamp; server, servicePrincipal, database,
    # colName, partName; List partValues
    messages.DELETE_PART_COL_STAT_EVENT: [
        "timestamp",
        "server",
        "servicePrincipal",
        "database",
        "colName",
        "partName",
        "partValues",
    ],
    # JSONCreateCatalogMessage: server, servicePrincipal, catalog; timestamp
    messages.CREATE_CATALOG: ["server", "servicePrincipal", "catalog", "timestamp"],
    # JSONAlterCatalogMessage: server, servicePrincipal, catObjBeforeJson, catObjAfterJson
    messages.ALTER_CATALOG: [
        "server",
        "servicePrincipal",
        "catObjBeforeJson",
        "catObjAfterJson",
        "timestamp",
    ],
    # JSONDropCatalogMessage
    messages.DROP_CATALOG: ["server", "servicePrincipal", "catalog", "timestamp"],
    # JSONOpenTxnMessage: List txnIds; Long timestamp, fromTxnId, toTxnId; server;
    # servicePrincipal
    messages.OPEN_TXN: [
        "txnIds",
        "timestamp",
        "fromTxnId",
        "toTxnId",
        "server",
        "servicePrincipal",
    ],
    # JSONCommitTxnMessage: txnid; timestamp; server; servicePrincipal; List writeIds;
    # List databases, tables, partitions, tableObjs, partitionObjs, files
    messages.COMMIT_TXN: [
        "txnid",
        "timestamp",
        "server",
        "servicePrincipal",
        "writeIds",
        "databases",
        "tables",
        "partitions",
        "tableObjs",
        "partitionObjs",
        "files",
    ],
    # JSONAbortTxnMessage: txnid; timestamp; server; servicePrincipal; List dbsUpdated
    messages.ABORT_TXN: ["txnid", "timestamp", "server", "servicePrincipal", "dbsUpdated"],
    # JSONAllocWriteIdMessage: server, servicePrincipal, dbName, tableName; List txnIdList,
    # writeIdList; timestamp (txnToWriteIdList has no @JsonProperty)
    messages.ALLOC_WRITE_ID_EVENT: [
        "server",
        "servicePrincipal",
        "dbName",
        "tableName",
        "txnIdList",
        "writeIdList",
        "timestamp",
    ],
    # JSONReloadMessage: Long timestamp; server, servicePrincipal, db, table, tableObjJson,
    # ptnObjJson, refreshEvent; List partitionListJson
    messages.RELOAD: [
        "timestamp",
        "server",
        "servicePrincipal",
        "db",
        "table",
        "tableObjJson",
        "ptnObjJson",
        "refreshEvent",
        "partitionListJson",
    ],
}


def build_all(mb: messages.MessageBuilder, vwil: str | None = None) -> dict[str, dict]:
    t, p1, p2 = table(), partition("2024-01-01", "1"), partition("2024-01-02", "2")
    t2 = table()
    t2.parameters = {"transactional": "true", "numRows": "4"}
    kw = {} if vwil is None else {"valid_write_ids": vwil}
    return {
        messages.CREATE_DATABASE: mb.create_database(DATABASE),
        messages.ALTER_DATABASE: mb.alter_database(DATABASE, DATABASE),
        messages.DROP_DATABASE: mb.drop_database(DATABASE),
        messages.CREATE_TABLE: mb.create_table(t, **kw),
        messages.ALTER_TABLE: mb.alter_table(t, t2, write_id=6, **kw),
        messages.DROP_TABLE: mb.drop_table(t, **kw),
        messages.ADD_PARTITION: mb.add_partition(
            t, [p1, p2], [("ds=2024-01-01/hr=1", ["f1"])], **kw
        ),
        messages.ALTER_PARTITION: mb.alter_partition(t, p1, p1, write_id=6, **kw),
        messages.ALTER_PARTITIONS: mb.alter_partitions(t, [p1, p2], write_id=6, **kw),
        messages.DROP_PARTITION: mb.drop_partition(t, [p1, p2], **kw),
        messages.CREATE_FUNCTION: mb.create_function(FUNCTION),
        messages.DROP_FUNCTION: mb.drop_function(FUNCTION),
        messages.INSERT: mb.insert(t, p1, replace=True, files=["f1", "f2"], **kw),
        messages.UPDATE_TBL_COL_STAT_EVENT: mb.update_table_column_stats(
            stats(), t, {"COLUMN_STATS_ACCURATE": "{}"}, write_id=6, **kw
        ),
        messages.DELETE_TBL_COL_STAT_EVENT: mb.delete_table_column_stats("sales", "id", **kw),
        messages.UPDATE_PART_COL_STAT_EVENT: mb.update_partition_column_stats(
            stats("ds=2024-01-01/hr=1"), ["2024-01-01", "1"], {}, t, write_id=6, **kw
        ),
        messages.DELETE_PART_COL_STAT_EVENT: mb.delete_partition_column_stats(
            "sales", "id", "ds=2024-01-01/hr=1", ["2024-01-01", "1"], **kw
        ),
        messages.CREATE_CATALOG: mb.create_catalog(CATALOG),
        messages.ALTER_CATALOG: mb.alter_catalog(CATALOG, CATALOG),
        messages.DROP_CATALOG: mb.drop_catalog(CATALOG),
        messages.OPEN_TXN: mb.open_txn(10, 12),
        messages.COMMIT_TXN: mb.commit_txn(10),
        messages.ABORT_TXN: mb.abort_txn(11, ["sales"]),
        messages.ALLOC_WRITE_ID_EVENT: mb.alloc_write_id(
            [hms.TxnToWriteId(txnId=10, writeId=6)], "sales", "events", **kw
        ),
        messages.RELOAD: mb.reload(t, p1, **kw),
    }


@pytest.mark.parametrize("event_type", sorted(LAYOUTS))
def test_field_names_and_order_are_hives(mb: messages.MessageBuilder, event_type: str) -> None:
    body = build_all(mb)[event_type]
    assert list(body) == LAYOUTS[event_type]
    assert body["server"] == SERVER and body["servicePrincipal"] == ""
    assert body["timestamp"] == NOW  # seconds, truncated
    assert event_type in messages.ALL_EVENT_TYPES


TABLE_EVENTS = [
    messages.CREATE_TABLE,
    messages.ALTER_TABLE,
    messages.DROP_TABLE,
    messages.ADD_PARTITION,
    messages.ALTER_PARTITION,
    messages.ALTER_PARTITIONS,
    messages.DROP_PARTITION,
    messages.INSERT,
    messages.UPDATE_TBL_COL_STAT_EVENT,
    messages.DELETE_TBL_COL_STAT_EVENT,
    messages.UPDATE_PART_COL_STAT_EVENT,
    messages.DELETE_PART_COL_STAT_EVENT,
    messages.ALLOC_WRITE_ID_EVENT,
    messages.RELOAD,
]


@pytest.mark.parametrize("event_type", TABLE_EVENTS)
def test_table_messages_end_with_our_valid_write_id_list(
    mb: messages.MessageBuilder, event_type: str
) -> None:
    body = build_all(mb, VWIL)[event_type]
    assert list(body) == [*LAYOUTS[event_type], "validWriteIdList"]
    assert messages.valid_write_ids(body) == VWIL
    assert messages.valid_write_ids(build_all(mb)[event_type]) is None


def test_event_type_strings() -> None:
    # MessageBuilder.*_EVENT; the write-id, acid-write, column-stat and compaction ones end
    # in _EVENT. EVENT_TYPE is VARCHAR(32).
    assert messages.ALLOC_WRITE_ID_EVENT == "ALLOC_WRITE_ID_EVENT"
    assert messages.UPDATE_PART_COL_STAT_EVENT_BATCH == "UPDATE_PART_COL_STAT_EVENT_BATCH"
    assert (
        messages.CREATE_TABLE == "CREATE_TABLE" and messages.ALTER_PARTITIONS == "ALTER_PARTITIONS"
    )
    assert len(messages.ALL_EVENT_TYPES) == 45
    assert max(map(len, messages.ALL_EVENT_TYPES)) == 32


def test_values_and_embedded_objects(mb: messages.MessageBuilder) -> None:
    b = build_all(mb)
    t = table()
    at = b[messages.ALTER_TABLE]
    assert (at["db"], at["table"], at["tableType"]) == ("sales", "events", "MANAGED_TABLE")
    assert at["isTruncateOp"] == "false" and at["writeId"] == 6
    assert messages.table_before(at) == t and messages.table_after(at).parameters["numRows"] == "4"

    ap = b[messages.ADD_PARTITION]
    assert ap["partitions"] == [{"ds": "2024-01-01", "hr": "1"}, {"ds": "2024-01-02", "hr": "2"}]
    assert list(ap["partitions"][0]) == ["ds", "hr"]  # partition-key order
    assert messages.partitions(ap) == [partition("2024-01-01", "1"), partition("2024-01-02", "2")]
    assert ap["partitionFiles"] == [{"partitionName": "ds=2024-01-01/hr=1", "files": ["f1"]}]
    assert messages.table(ap) == t

    alp = b[messages.ALTER_PARTITION]
    assert alp["keyValues"] == {"ds": "2024-01-01", "hr": "1"}
    assert (
        messages.partition_before(alp)
        == messages.partition_after(alp)
        == partition("2024-01-01", "1")
    )
    assert messages.partitions(b[messages.ALTER_PARTITIONS])[1].values == ["2024-01-02", "2"]
    assert b[messages.DROP_PARTITION]["partitions"][1] == {"ds": "2024-01-02", "hr": "2"}

    ins = b[messages.INSERT]
    assert ins["replace"] == "true" and ins["files"] == ["f1", "f2"]
    assert messages.partition(ins) == partition("2024-01-01", "1")
    assert mb.insert(t)["ptnObjJson"] is None

    assert messages.database(b[messages.CREATE_DATABASE]) == DATABASE
    assert messages.database_after(b[messages.ALTER_DATABASE]) == DATABASE
    assert messages.function(b[messages.CREATE_FUNCTION]) == FUNCTION
    assert b[messages.DROP_FUNCTION]["functionName"] == "f"
    assert messages.catalog_after(b[messages.ALTER_CATALOG]) == CATALOG
    assert b[messages.CREATE_CATALOG]["catalog"] == "spark"

    us = b[messages.UPDATE_PART_COL_STAT_EVENT]
    assert messages.column_statistics(us) == stats("ds=2024-01-01/hr=1")
    assert us["partVals"] == ["2024-01-01", "1"] and us["database"] == "sales"

    assert b[messages.OPEN_TXN]["txnIds"] is None and b[messages.OPEN_TXN]["toTxnId"] == 12
    assert b[messages.COMMIT_TXN]["writeIds"] is None and b[messages.COMMIT_TXN]["txnid"] == 10
    assert b[messages.ABORT_TXN]["dbsUpdated"] == ["sales"]
    aw = b[messages.ALLOC_WRITE_ID_EVENT]
    assert (aw["txnIdList"], aw["writeIdList"]) == ([10], [6])
    assert (
        b[messages.RELOAD]["refreshEvent"] == "true"
        and b[messages.RELOAD]["partitionListJson"] is None
    )


def test_commit_txn_leaves_hives_lists_null_for_repl_dump(mb: messages.MessageBuilder) -> None:
    info = hms.WriteEventInfo(writeId=6, database="sales", table="events", files=None)
    body = mb.commit_txn(10, [info])
    hive_lists = ["writeIds", "databases", "tables", "partitions", "tableObjs", "partitionObjs"]
    assert all(body[k] is None for k in [*hive_lists, "files"])
    assert body[message_base.TXN_WRITES] == [["sales", "events", 6]]
    assert messages.commit_writes(body) == [("sales", "events", 6)]


def test_commit_writes_reads_events_written_before_txn_writes() -> None:
    old = {"txnid": 10, "writeIds": [6, 2], "databases": ["s", "s"], "tables": ["a", "b"]}
    assert messages.commit_writes(old) == [("s", "a", 6), ("s", "b", 2)]
    assert messages.commit_writes({"txnid": 10, "writeIds": None}) == []


def test_excluded_parameters_leave_caller_objects_alone() -> None:
    mb = messages.MessageBuilder(exclude_parameters=[r"^secret\."])
    t, p = table(), partition("2024-01-01", "1")
    body = mb.add_partition(t, [p])
    assert messages.table(body).parameters == {"transactional": "true", "numRows": "3"}
    assert messages.partitions(body)[0].parameters == {"numFiles": "1"}
    assert t.parameters["secret.key"] == "hidden" and p.parameters["secret.key"] == "hidden"


# -- MESSAGE column -----------------------------------------------------------------------------


def test_json_is_compact_like_jackson(mb: messages.MessageBuilder) -> None:
    body = {"a": "x/y é 😀", "b": None, "c": [1, {"d": "\x01\x1f\t"}], "e": 'quote " \\'}
    text = messages.encode(body, "json-0.2")
    # Jackson: no spaces, '/' and non-ASCII raw, control characters as \b \t \n \f \r or
    # \u00XX with UPPER-case hex (Python's json writes lower case; TJSON inside is lower).
    assert (
        text == '{"a":"x/y é 😀","b":null,"c":[1,{"d":"\\u0001\\u001F\\t"}],"e":"quote \\" \\\\"}'
    )
    assert messages.decode(text, "json-0.2") == body
    # An escaped backslash before "u001f" is text, not an escape, and is left alone.
    tricky = {"t": tjson.dumps(hms.FieldSchema(name="\x1f"))}
    assert messages.decode(messages.encode(tricky, "json-0.2"), "json-0.2") == tricky
    assert "\\\\u001f" in messages.encode(tricky, "json-0.2")


def test_gzip_round_trip_and_plain_python_reads_it(mb: messages.MessageBuilder) -> None:
    body = build_all(mb, VWIL)[messages.ADD_PARTITION]
    msg = messages.encode(body, "gzip(json-2.0)")
    assert "\n" not in msg and set(msg) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
    )
    assert json.loads(gzip.decompress(base64.b64decode(msg))) == body
    assert gzip.decompress(base64.b64decode(msg)).decode("utf-8") == messages.to_json(body)
    for fmt in ("gzip(json-2.0)", "GZIP(JSON-2.0)", "gzip", "Gzip"):
        assert messages.decode(msg, fmt) == body
    assert messages.decode(messages.encode(body, "JSON-0.2"), "json-0.2") == body
    assert messages.decode(messages.to_json(body), None) == body


def test_unknown_formats_are_named() -> None:
    with pytest.raises(ValueError, match="avro-1.0"):
        messages.encode({}, "avro-1.0")
    with pytest.raises(ValueError, match="json-9"):
        messages.decode("{}", "json-9")
    with pytest.raises(ValueError, match="gzip"):
        messages.decode("not base64!", "gzip")


# -- a message Hive wrote -----------------------------------------------------------------------

# A DROP_PARTITION row's MESSAGE (json-0.2) written by a Hive 3.1 metastore (HDP 3), quoted in the
# blog post "HIVE元数据库DDL语句notification_log测试" (2021-03-18). The same post shows
# ADD_PARTITION with keys server, servicePrincipal, db, table, tableType, tableObjJson,
# timestamp, partitions, partitionListJson, partitionFiles and ALTER_TABLE with ...,
# tableObjBeforeJson, tableObjAfterJson, isTruncateOp, timestamp, writeId: the layouts above.
HIVE_DROP_PARTITION = (
    r'{"server":"thrift://hdcom01.prd.com:9083,thrift://hdcom02.prd.com:9083,'
    r'thrift://hdcom03.prd.com:9083","servicePrincipal":"hive/_HOST@xxxxx.CN","db":"tmp_db",'
    r'"table":"notification_test","tableType":"MANAGED_TABLE","tableObjJson":"'
    # -- the TJSON table, escaped as a JSON string
    r"{\"1\":{\"str\":\"notification_test\"},\"2\":{\"str\":\"tmp_db\"},\"3\":{\"str\":\"h"
    r"ive\"},\"4\":{\"i32\":1616068620},\"5\":{\"i32\":0},\"6\":{\"i32\":0},\"7\":{\"rec\""
    r":{\"1\":{\"lst\":[\"rec\",5,{\"1\":{\"str\":\"db\"},\"2\":{\"str\":\"string\"},\"3\""
    r":{\"str\":\"hive db name\"}},{\"1\":{\"str\":\"tbl\"},\"2\":{\"str\":\"string\"},\"3"
    r"\":{\"str\":\"hive table name\"}},{\"1\":{\"str\":\"first_partition\"},\"2\":{\"str"
    r"\":\"string\"},\"3\":{\"str\":\"name of the first partition\"}},{\"1\":{\"str\":\"c_"
    r"time\"},\"2\":{\"str\":\"string\"},\"3\":{\"str\":\"created time\"}},{\"1\":{\"str\""
    r":\"u_time\"},\"2\":{\"str\":\"string\"}}]},\"2\":{\"str\":\"hdfs://hdcluster/warehou"
    r"se/tablespace/managed/hive/tmp_db.db/notification_test\"},\"3\":{\"str\":\"org.apach"
    r"e.hadoop.hive.ql.io.orc.OrcInputFormat\"},\"4\":{\"str\":\"org.apache.hadoop.hive.ql"
    r".io.orc.OrcOutputFormat\"},\"5\":{\"tf\":0},\"6\":{\"i32\":-1},\"7\":{\"rec\":{\"2\""
    r":{\"str\":\"org.apache.hadoop.hive.ql.io.orc.OrcSerde\"},\"3\":{\"map\":[\"str\",\"s"
    r"tr\",1,{\"serialization.format\":\"1\"}]}}},\"8\":{\"lst\":[\"str\",0]},\"9\":{\"lst"
    r"\":[\"rec\",0]},\"10\":{\"map\":[\"str\",\"str\",0,{}]},\"11\":{\"rec\":{\"1\":{\"ls"
    r"t\":[\"str\",0]},\"2\":{\"lst\":[\"lst\",0]},\"3\":{\"map\":[\"lst\",\"str\",0,{}]}}"
    r"},\"12\":{\"tf\":0}}},\"8\":{\"lst\":[\"rec\",1,{\"1\":{\"str\":\"day\"},\"2\":{\"st"
    r"r\":\"string\"}}]},\"9\":{\"map\":[\"str\",\"str\",4,{\"last_modified_time\":\"16160"
    r"70641\",\"transient_lastDdlTime\":\"1616070641\",\"bucketing_version\":\"2\",\"last_"
    r"modified_by\":\"hive\"}]},\"12\":{\"str\":\"MANAGED_TABLE\"},\"15\":{\"tf\":0},\"17"
    r"\":{\"str\":\"hive\"},\"18\":{\"i32\":1},\"19\":{\"i64\":0}}"
    # --
    r'","timestamp":1616071104,"partitions":[{"day":"2021-03-17"}]}'
)


def test_decodes_a_message_hive_wrote() -> None:
    body = messages.decode(HIVE_DROP_PARTITION, "json-0.2")
    assert list(body) == LAYOUTS[messages.DROP_PARTITION]
    assert body["partitions"] == [{"day": "2021-03-17"}]
    t = messages.table(body)
    assert (t.dbName, t.tableName, t.writeId, t.rewriteEnabled) == (
        "tmp_db",
        "notification_test",
        0,
        False,
    )
    assert [c.name for c in t.sd.cols][-1] == "u_time"
    assert t.parameters["last_modified_by"] == "hive"
    # Our writers give back the very same text: Jackson's JSON and Java's TJSON.
    assert tjson.dumps(t) == body["tableObjJson"]
    assert messages.encode(body, "json-0.2") == HIVE_DROP_PARTITION
    # ... and the same bytes from our builder, given the same inputs.
    mb = messages.MessageBuilder(
        server=body["server"], service_principal=body["servicePrincipal"], clock=lambda: 1616071104
    )
    gone = hms.Partition(values=["2021-03-17"], dbName="tmp_db", tableName="notification_test")
    assert messages.encode(mb.drop_partition(t, [gone]), "json-0.2") == HIVE_DROP_PARTITION


def test_module_level_shortcuts_build_with_hives_unset_defaults() -> None:
    body = messages.drop_function(FUNCTION)
    assert list(body) == LAYOUTS[messages.DROP_FUNCTION]
    assert (body["server"], body["servicePrincipal"]) == ("", "")
    assert messages.alter_table(table(), table(), False, 3, VWIL)["validWriteIdList"] == VWIL


# -- our store's builder: extra fields and the writer mark --------------------------------------


@pytest.mark.parametrize("event_type", sorted(LAYOUTS))
def test_our_store_marks_every_message_last_with_its_writer(event_type: str) -> None:
    ours = messages.MessageBuilder(
        server=SERVER, clock=lambda: NOW, writer=message_base.WRITER_NAME
    )
    body = build_all(ours, VWIL)[event_type]
    extra = ["validWriteIdList"] if event_type in TABLE_EVENTS else []
    assert list(body) == [*LAYOUTS[event_type], *extra, message_base.WRITER]
    assert messages.written_by_us(body) and not messages.written_by_us(
        build_all(messages.MessageBuilder())[event_type]
    )


def test_extra_fields_of_writes_in_transactions() -> None:
    ours = messages.MessageBuilder(writer=message_base.WRITER_NAME)
    t, p = table(), partition("2024-01-01", "1")
    created = ours.create_table(t, valid_write_ids=VWIL, write_id=5)
    assert list(created)[-3:] == ["validWriteIdList", "writeId", "writer"]
    assert messages.write_id(created) == 5 and messages.write_id(ours.create_table(t)) is None
    added = ours.add_partition(t, [p], write_id=5)
    assert messages.write_id(added) == 5 and "writeId" not in ours.add_partition(
        t, [p], write_id=-1
    )
    altered = ours.alter_table(t, t, write_id=-1, partitions_changed=True)
    assert messages.partitions_changed(altered) and messages.write_id(altered) is None
    assert not messages.partitions_changed(messages.alter_table(t, t))  # absent: false
    stats_body = ours.update_partition_column_stats(
        stats("ds=2024-01-01/hr=1"), p.values, p.parameters, t, write_id=5, partition=p
    )
    assert messages.partition_obj(stats_body) == p
    assert list(stats_body)[-2:] == ["partitionObjJson", "writer"]
    # Filtered parameters are not what the database reads back: no writer mark then.
    filtered = messages.MessageBuilder(
        writer=message_base.WRITER_NAME, exclude_parameters=["secret"]
    )
    assert not messages.written_by_us(filtered.create_table(t))


def test_a_commit_of_ours_that_lists_nothing_is_told_from_its_text() -> None:
    """The cache applies such a COMMIT_TXN without decoding it (apply.EventApplier)."""
    ours = messages.MessageBuilder(server=SERVER, clock=lambda: NOW, writer="hms-cache-proxy")
    quiet = messages.to_json(ours.commit_txn(42))
    assert messages.quiet_commit_txn_id(quiet, messages.JSON_FORMAT) == 42
    assert messages.quiet_commit_txn_id(quiet, None) == 42
    write = hms.WriteEventInfo(writeId=3, database="d", table="t", files=None)
    for listing in (
        ours.commit_txn(42, [write]),
        ours.commit_txn(42, None, [("hive", "d", "t")]),
        {**ours.commit_txn(42), "writeIds": [3], "databases": ["d"], "tables": ["t"]},
    ):
        assert messages.quiet_commit_txn_id(messages.to_json(listing), None) is None
    hive = messages.MessageBuilder(server=SERVER, clock=lambda: NOW)  # no writer field
    assert messages.quiet_commit_txn_id(messages.to_json(hive.commit_txn(42)), None) is None
    gzipped = messages.encode(ours.commit_txn(42), messages.GZIP_FORMAT)
    assert messages.quiet_commit_txn_id(gzipped, messages.GZIP_FORMAT) is None
    # Our writer's key text inside a string value is escaped, so it is not taken for the key.
    posing = messages.MessageBuilder(server='"writer":"hms-cache-proxy"', clock=lambda: NOW)
    assert messages.quiet_commit_txn_id(messages.to_json(posing.commit_txn(42)), None) is None
