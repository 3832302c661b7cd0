"""Column statistics in the SQL store (SQLite and PostgreSQL), and their pure helpers.

The store tests write statistics through SqlStore, read them back, and look at the rows, the
COLUMN_STATS_ACCURATE flags and the notification events Hive's own metastore would have
produced. The unit tests at the end pin the encodings and Hive's aggregation arithmetic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, func, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.colstats import accuracy, aggregation, stats_rows
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.sql.sql_store import SqlStore
from tests.support import stores

WAREHOUSE = "file:/tmp/hms-warehouse"
CAT, DB = "hive", "sdb"

COLUMNS = [
    ("b", "boolean"),
    ("l", "bigint"),
    ("i", "int"),
    ("d", "double"),
    ("dec", "decimal(10,2)"),
    ("s", "string"),
    ("vc", "varchar(10)"),
    ("bin", "binary"),
    ("dt", "date"),
    ("ts", "timestamp"),
]


# -- fixtures and builders -------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest) -> Iterator[SqlStore]:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    db = Database(url)
    init_db(db, WAREHOUSE)
    sql_store = stores.sql_store(db, WAREHOUSE)
    sql_store.create_database(hms.Database(name=DB, parameters={}, catalogName=CAT))
    yield sql_store
    db.dispose()


def fs(name: str, type_: str) -> hms.FieldSchema:
    return hms.FieldSchema(name=name, type=type_, comment=None)


def make_table(
    store: SqlStore,
    name: str,
    cols: list[tuple[str, str]] = COLUMNS,
    keys: list[tuple[str, str]] | None = None,
    params: dict[str, str] | None = None,
) -> hms.Table:
    """A table as the handler would hand it to the store (defaults filled by hand)."""
    table = hms.Table(
        tableName=name,
        dbName=DB,
        catName=CAT,
        owner="tester",
        ownerType=hms.PrincipalType.USER,
        createTime=1_700_000_000,
        lastAccessTime=0,
        retention=0,
        tableType="MANAGED_TABLE",
        parameters=dict(params or {}),
        partitionKeys=[fs(k, t) for k, t in keys or []],
        sd=hms.StorageDescriptor(
            cols=[fs(c, t) for c, t in cols],
            location=f"{WAREHOUSE}/{DB}.db/{name}",
            inputFormat="org.apache.hadoop.mapred.TextInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            compressed=False,
            numBuckets=-1,
            serdeInfo=hms.SerDeInfo(
                name=None,
                serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
                parameters={},
            ),
            bucketCols=[],
            sortCols=[],
            parameters={},
        ),
    )
    return store.create_table(table)


def make_partitioned(store: SqlStore, name: str, n: int, **kw: Any) -> hms.Table:
    table = make_table(
        store,
        name,
        [("l", "bigint"), ("s", "string"), ("b", "boolean")],
        keys=[("p", "string")],
        **kw,
    )
    store.add_partitions(CAT, DB, name, [hms.Partition(values=[str(i)]) for i in range(n)])
    return table


def data(**member: Any) -> hms.ColumnStatisticsData:
    return hms.ColumnStatisticsData(**member)


def obj(col: str, type_: str, d: hms.ColumnStatisticsData) -> hms.ColumnStatisticsObj:
    return hms.ColumnStatisticsObj(colName=col, colType=type_, statsData=d)


def long_obj(
    col: str,
    low: int | None,
    high: int | None,
    nulls: int,
    ndv: int,
    type_: str = "bigint",
    **kw: Any,
) -> hms.ColumnStatisticsObj:
    return obj(
        col,
        type_,
        data(
            longStats=hms.LongColumnStatsData(
                lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv, **kw
            )
        ),
    )


def string_obj(col: str, max_len: int, avg: float, nulls: int, ndv: int) -> hms.ColumnStatisticsObj:
    return obj(
        col,
        "string",
        data(
            stringStats=hms.StringColumnStatsData(
                maxColLen=max_len, avgColLen=avg, numNulls=nulls, numDVs=ndv
            )
        ),
    )


def bool_obj(col: str, t: int, f: int, nulls: int) -> hms.ColumnStatisticsObj:
    return obj(
        col,
        "boolean",
        data(booleanStats=hms.BooleanColumnStatsData(numTrues=t, numFalses=f, numNulls=nulls)),
    )


def dec(text: str) -> hms.Decimal:
    return stats_rows.decimal_from_text(text)


def table_stats(
    tbl: str,
    objs: list[hms.ColumnStatisticsObj],
    engine: str = "hive",
    analyzed: int = 1_700_000_100,
) -> hms.ColumnStatistics:
    desc = hms.ColumnStatisticsDesc(
        isTblLevel=True, dbName=DB, tableName=tbl, lastAnalyzed=analyzed, catName=CAT
    )
    return hms.ColumnStatistics(statsDesc=desc, statsObj=objs, engine=engine)


def part_stats(
    tbl: str, part: str, objs: list[hms.ColumnStatisticsObj], analyzed: int = 1_700_000_200
) -> hms.ColumnStatistics:
    desc = hms.ColumnStatisticsDesc(
        isTblLevel=False,
        dbName=DB,
        tableName=tbl,
        partName=part,
        lastAnalyzed=analyzed,
        catName=CAT,
    )
    return hms.ColumnStatistics(statsDesc=desc, statsObj=objs, engine="hive")


def all_types_stats() -> list[hms.ColumnStatisticsObj]:
    """One object per member, every field set that Hive stores for it."""
    bv, hist = b"HL\x0e\x01\x02\x03", b"KLL\x00\x01"
    return [
        bool_obj("b", 10, 20, 3),
        long_obj("l", -(2**62), 2**62, 4, 1000, bitVectors=bv, histogram=hist),
        long_obj("i", -5, 7, 0, 13, type_="int", bitVectors=bv),
        obj(
            "d",
            "double",
            data(
                doubleStats=hms.DoubleColumnStatsData(
                    lowValue=-1.5,
                    highValue=2.25e300,
                    numNulls=1,
                    numDVs=99,
                    bitVectors=bv,
                    histogram=hist,
                )
            ),
        ),
        obj(
            "dec",
            "decimal(10,2)",
            data(
                decimalStats=hms.DecimalColumnStatsData(
                    lowValue=dec("-12345678.90"),
                    highValue=dec("1E+3"),
                    numNulls=2,
                    numDVs=7,
                    bitVectors=bv,
                    histogram=hist,
                )
            ),
        ),
        obj(
            "s",
            "string",
            data(
                stringStats=hms.StringColumnStatsData(
                    maxColLen=40, avgColLen=12.75, numNulls=5, numDVs=321, bitVectors=bv
                )
            ),
        ),
        obj(
            "vc",
            "varchar(10)",
            data(
                stringStats=hms.StringColumnStatsData(
                    maxColLen=10, avgColLen=3.5, numNulls=0, numDVs=4
                )
            ),
        ),
        obj(
            "bin",
            "binary",
            data(
                binaryStats=hms.BinaryColumnStatsData(maxColLen=1024, avgColLen=100.5, numNulls=6)
            ),
        ),
        obj(
            "dt",
            "date",
            data(
                dateStats=hms.DateColumnStatsData(
                    lowValue=hms.Date(daysSinceEpoch=-719162),
                    highValue=hms.Date(daysSinceEpoch=19000),
                    numNulls=0,
                    numDVs=365,
                    bitVectors=bv,
                    histogram=hist,
                )
            ),
        ),
        obj(
            "ts",
            "timestamp",
            data(
                timestampStats=hms.TimestampColumnStatsData(
                    lowValue=hms.Timestamp(secondsSinceEpoch=0),
                    highValue=hms.Timestamp(secondsSinceEpoch=1_700_000_000),
                    numNulls=8,
                    numDVs=1_000_000,
                    bitVectors=bv,
                    histogram=hist,
                )
            ),
        ),
    ]


def table_params(store: SqlStore, tbl: str) -> dict[str, str]:
    return dict(store.get_table(CAT, DB, tbl).parameters or {})


def part_params(store: SqlStore, tbl: str, name: str) -> dict[str, str]:
    return dict(store.get_partition_by_name(CAT, DB, tbl, name).parameters or {})


def events_after(store: SqlStore, last: int) -> list[hms.NotificationEvent]:
    return store.next_notifications(last, None)


def open_write_id(store: SqlStore, tbl: str, write_id: int) -> int:
    """Make ``write_id`` of sdb.<tbl> a write id of an open txn (opening txns and allocating
    the ids up to it); returns that txn's id."""
    have = store.txn.max_allocated_write_id(DB, tbl)
    txns = store.txn.open_txns(write_id - have, "tester", "test-host")
    return {w: t for t, w in store.txn.allocate_table_write_ids(DB, tbl, txns)}[write_id]


def count_rows(store: SqlStore, table: Any) -> int:
    with store.db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


# -- table statistics ------------------------------------------------------------------------------


def test_every_type_round_trips_with_sketches(store: SqlStore) -> None:
    make_table(store, "t")
    written = all_types_stats()
    store.update_table_column_statistics(CAT, DB, "t", table_stats("t", written))

    got = store.get_table_column_statistics(
        CAT, DB, "t", [c for c, _ in COLUMNS], bit_vectors=True, histograms=True
    )
    assert got is not None
    assert got.statsObj == written
    assert got.statsDesc == hms.ColumnStatisticsDesc(
        isTblLevel=True, dbName=DB, tableName="t", lastAnalyzed=1_700_000_100, catName=CAT
    )
    assert got.engine == "hive"
    assert got.isStatsCompliant is None


def test_reads_leave_sketches_out_by_default_as_hive_does(store: SqlStore) -> None:
    make_table(store, "t")
    store.update_table_column_statistics(CAT, DB, "t", table_stats("t", all_types_stats()))
    got = store.get_table_column_statistics(CAT, DB, "t", ["l", "d", "s"])
    assert got is not None
    for o in got.statsObj:
        member = getattr(o.statsData, stats_rows.data_member(o.statsData))
        assert member.bitVectors is None
        assert getattr(member, "histogram", None) is None


def test_rows_hold_hives_encodings(store: SqlStore) -> None:
    make_table(store, "t")
    store.update_table_column_statistics(CAT, DB, "t", table_stats("t", all_types_stats()))
    with store.db.read() as conn:
        rows = {r.COLUMN_NAME: r for r in conn.execute(select(schema.TAB_COL_STATS))}
    assert rows["dec"].BIG_DECIMAL_LOW_VALUE == "-12345678.90"
    assert rows["dec"].BIG_DECIMAL_HIGH_VALUE == "1E+3"
    assert (rows["dt"].LONG_LOW_VALUE, rows["dt"].LONG_HIGH_VALUE) == (-719162, 19000)
    assert rows["ts"].LONG_HIGH_VALUE == 1_700_000_000
    assert (rows["b"].NUM_TRUES, rows["b"].NUM_FALSES, rows["b"].NUM_NULLS) == (10, 20, 3)
    assert rows["bin"].BIT_VECTOR is None and rows["bin"].NUM_DISTINCTS is None
    r = rows["l"]
    assert (r.CAT_NAME, r.DB_NAME, r.TABLE_NAME, r.COLUMN_TYPE, r.ENGINE) == (
        CAT,
        DB,
        "t",
        "bigint",
        "hive",
    )
    assert r.LAST_ANALYZED == 1_700_000_100
    assert bytes(r.HISTOGRAM) == b"KLL\x00\x01"


def test_upsert_keeps_what_the_new_statistics_leave_unset(store: SqlStore) -> None:
    make_table(store, "t")
    store.update_table_column_statistics(
        CAT, DB, "t", table_stats("t", [long_obj("l", 1, 9, 0, 5, bitVectors=b"HLx")])
    )
    store.update_table_column_statistics(
        CAT, DB, "t", table_stats("t", [long_obj("l", None, 20, 3, 6)], analyzed=1_800_000_000)
    )
    got = store.get_table_column_statistics(CAT, DB, "t", ["l"], bit_vectors=True)
    assert got is not None and got.statsDesc.lastAnalyzed == 1_800_000_000
    assert got.statsObj[0].statsData.longStats == hms.LongColumnStatsData(
        lowValue=1, highValue=20, numNulls=3, numDVs=6, bitVectors=b"HLx"
    )
    assert count_rows(store, schema.TAB_COL_STATS) == 1


def test_engines_are_kept_apart(store: SqlStore) -> None:
    make_table(store, "t")
    store.update_table_column_statistics(
        CAT, DB, "t", table_stats("t", [long_obj("l", 1, 2, 0, 2)])
    )
    store.update_table_column_statistics(
        CAT, DB, "t", table_stats("t", [long_obj("l", 5, 6, 0, 2)], engine="impala")
    )
    hive = store.get_table_column_statistics(CAT, DB, "t", ["l"])
    impala = store.get_table_column_statistics(CAT, DB, "t", ["l"], "impala")
    assert hive.statsObj[0].statsData.longStats.lowValue == 1
    assert impala.statsObj[0].statsData.longStats.lowValue == 5
    assert impala.engine == "impala"
    assert store.get_table_column_statistics(CAT, DB, "t", ["l"], "spark") is None


def test_reads_answer_in_requested_order_and_skip_columns_without_stats(store: SqlStore) -> None:
    make_table(store, "t")
    store.update_table_column_statistics(CAT, DB, "t", table_stats("t", all_types_stats()))
    got = store.get_table_column_statistics(CAT, DB, "t", ["ts", "nope", "b", "l"])
    assert [o.colName for o in got.statsObj] == ["ts", "b", "l"]
    assert store.get_table_column_statistics(CAT, DB, "t", []) is None
    make_table(store, "empty")
    assert store.get_table_column_statistics(CAT, DB, "empty", ["l"]) is None


def test_column_stats_accurate_follows_setcolumnstatsstate(store: SqlStore) -> None:
    make_table(store, "t", params={"COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'})
    store.update_table_column_statistics(
        CAT, DB, "t", table_stats("t", [long_obj("l", 1, 2, 0, 2), bool_obj("b", 1, 1, 0)])
    )
    assert table_params(store, "t")["COLUMN_STATS_ACCURATE"] == (
        '{"BASIC_STATS":"true","COLUMN_STATS":{"b":"true","l":"true"}}'
    )
    make_table(store, "u")
    store.update_table_column_statistics(
        CAT, DB, "u", table_stats("u", [string_obj("s", 1, 1.0, 0, 1)])
    )
    assert table_params(store, "u")["COLUMN_STATS_ACCURATE"] == '{"COLUMN_STATS":{"s":"true"}}'


def test_table_update_appends_its_event_in_the_same_transaction(store: SqlStore) -> None:
    table = make_table(store, "t")
    before = store.current_notification_event_id()
    stats = table_stats("t", [long_obj("l", 1, 2, 0, 2)])
    store.update_table_column_statistics(CAT, DB, "t", stats)
    assert store.current_notification_event_id() == before + 1
    (ev,) = events_after(store, before)
    assert ev.eventType == messages.UPDATE_TBL_COL_STAT_EVENT
    assert (ev.catName, ev.dbName, ev.tableName) == (CAT, DB, "t")
    body = messages.decode(ev.message, ev.messageFormat)
    assert messages.column_statistics(body).statsObj == stats.statsObj
    assert body["parameters"]["COLUMN_STATS_ACCURATE"] == '{"COLUMN_STATS":{"l":"true"}}'
    assert messages.table(body).tableName == table.tableName
    assert body["writeId"] == -1


def test_table_update_errors_are_hives(store: SqlStore) -> None:
    make_table(store, "t")
    with pytest.raises(
        hms.MetaException, match="Column nope doesn't exist in table t in database sdb"
    ):
        store.update_table_column_statistics(
            CAT, DB, "t", table_stats("t", [long_obj("nope", 1, 2, 0, 2)])
        )
    with pytest.raises(hms.NoSuchObjectException, match="does not exist : hive.sdb.missing"):
        store.update_table_column_statistics(
            CAT, DB, "missing", table_stats("missing", [long_obj("l", 1, 2, 0, 2)])
        )
    with pytest.raises(hms.InvalidObjectException):
        store.update_table_column_statistics(
            CAT, DB, "t", table_stats("t", [obj("l", "bigint", hms.ColumnStatisticsData())])
        )
    with pytest.raises(hms.NoSuchObjectException, match="does not exist : hive.sdb.missing"):
        store.get_table_column_statistics(CAT, DB, "missing", ["l"])
    assert count_rows(store, schema.TAB_COL_STATS) == 0


def test_transactional_table_needs_a_write_id_and_is_stamped_with_it(store: SqlStore) -> None:
    make_table(
        store,
        "acid",
        params={"transactional": "true", "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'},
    )
    stats = table_stats("acid", [long_obj("l", 1, 2, 0, 2)])
    with pytest.raises(hms.MetaException, match="Cannot change stats state for a transactional"):
        store.update_table_column_statistics(CAT, DB, "acid", stats)
    snapshot = "sdb.acid:5:9223372036854775807::"
    open_write_id(store, "acid", 5)
    store.update_table_column_statistics(
        CAT, DB, "acid", stats, write_id=5, valid_write_id_list=snapshot
    )
    table = store.get_table(CAT, DB, "acid")
    assert table.writeId == 5
    assert table.parameters["COLUMN_STATS_ACCURATE"] == (
        '{"BASIC_STATS":"true","COLUMN_STATS":{"l":"true"}}'
    )
    # A reader whose snapshot includes write 5 may use them; one that does not, may not.
    ok = store.get_table_column_statistics(CAT, DB, "acid", ["l"], valid_write_id_list=snapshot)
    assert ok.isStatsCompliant is True
    old = store.get_table_column_statistics(
        CAT, DB, "acid", ["l"], valid_write_id_list="sdb.acid:4:9223372036854775807::"
    )
    assert old.isStatsCompliant is False


def test_merge_combines_accurate_columns_and_drops_the_others(store: SqlStore) -> None:
    make_table(store, "t")
    store.update_table_column_statistics(
        CAT,
        DB,
        "t",
        table_stats("t", [long_obj("l", 5, 10, 1, 4, bitVectors=b"HLold"), bool_obj("b", 1, 2, 3)]),
    )
    # 'i' has no accurate stats yet: a merge may not create them.
    store.update_table_column_statistics(
        CAT,
        DB,
        "t",
        table_stats(
            "t",
            [
                long_obj("l", 1, 8, 2, 3, bitVectors=b"HLnew"),
                bool_obj("b", 4, 5, 6),
                long_obj("i", 0, 1, 0, 1, type_="int"),
            ],
        ),
        merge=True,
    )
    got = store.get_table_column_statistics(CAT, DB, "t", ["l", "b", "i"], bit_vectors=True)
    by = {o.colName: o for o in got.statsObj}
    assert set(by) == {"l", "b"}
    assert by["l"].statsData.longStats == hms.LongColumnStatsData(
        lowValue=1, highValue=10, numNulls=3, numDVs=4, bitVectors=None
    )
    assert by["b"].statsData.booleanStats == hms.BooleanColumnStatsData(
        numTrues=5, numFalses=7, numNulls=9
    )


def test_merge_into_statistics_the_writer_cannot_see_marks_them_stale(store: SqlStore) -> None:
    accurate = '{"BASIC_STATS":"true"}'
    make_table(store, "acid", params={"transactional": "true", "COLUMN_STATS_ACCURATE": accurate})
    seen5 = "sdb.acid:5:9223372036854775807::"
    open_write_id(store, "acid", 5)
    store.update_table_column_statistics(
        CAT,
        DB,
        "acid",
        table_stats("acid", [long_obj("l", 1, 2, 0, 2)]),
        write_id=5,
        valid_write_id_list=seen5,
    )
    open_write_id(store, "acid", 7)
    before = store.current_notification_event_id()
    # A writer whose snapshot does not include write 5 cannot merge into its statistics.
    store.update_table_column_statistics(
        CAT,
        DB,
        "acid",
        table_stats("acid", [long_obj("l", 0, 9, 1, 3)]),
        write_id=7,
        valid_write_id_list="sdb.acid:4:9223372036854775807::",
        merge=True,
    )
    table = store.get_table(CAT, DB, "acid")
    assert table.writeId == 7
    assert "COLUMN_STATS_ACCURATE" not in table.parameters
    (ev,) = events_after(store, before)
    assert ev.eventType == messages.ALTER_TABLE
    body = messages.decode(ev.message, ev.messageFormat)
    assert (
        messages.table_after(body) == table and messages.write_id(body) == 7
    )  # as the database reads it
    kept = store.get_table_column_statistics(CAT, DB, "acid", ["l"])
    assert kept.statsObj[0].statsData.longStats.highValue == 2  # not merged


def test_partition_merge_the_writer_cannot_see_marks_the_partition_stale(store: SqlStore) -> None:
    make_partitioned(store, "acidp", 1, params={"transactional": "true"})
    open_write_id(store, "acidp", 5)
    store.update_partition_column_statistics(
        CAT,
        DB,
        "acidp",
        [part_stats("acidp", "p=0", [long_obj("l", 1, 2, 0, 2)])],
        write_id=5,
        valid_write_id_list="sdb.acidp:5:9223372036854775807::",
    )
    assert store.get_partition_by_name(CAT, DB, "acidp", "p=0").writeId == 5
    open_write_id(store, "acidp", 8)
    before = store.current_notification_event_id()
    store.update_partition_column_statistics(
        CAT,
        DB,
        "acidp",
        [part_stats("acidp", "p=0", [long_obj("l", 0, 9, 1, 3)])],
        write_id=8,
        valid_write_id_list="sdb.acidp:4:9223372036854775807::",
        merge=True,
    )
    part = store.get_partition_by_name(CAT, DB, "acidp", "p=0")
    assert part.writeId == 8
    assert "COLUMN_STATS_ACCURATE" not in part.parameters
    (ev,) = events_after(store, before)
    assert ev.eventType == messages.ALTER_PARTITION
    body = messages.decode(ev.message, ev.messageFormat)
    assert messages.partition_after(body) == part and messages.write_id(body) == 8


def test_stats_follow_a_table_rename_and_go_with_a_drop(store: SqlStore) -> None:
    table = make_table(store, "t")
    store.update_table_column_statistics(
        CAT, DB, "t", table_stats("t", [long_obj("l", 1, 2, 0, 2)])
    )
    renamed = hms.Table(**table.__dict__)
    renamed.tableName = "t2"
    store.alter_table(CAT, DB, "t", renamed)
    got = store.get_table_column_statistics(CAT, DB, "t2", ["l"])
    assert got is not None and got.statsDesc.tableName == "t2"
    with store.db.read() as conn:
        assert conn.execute(select(schema.TAB_COL_STATS.c.TABLE_NAME)).scalar_one() == "t2"
    store.drop_table(CAT, DB, "t2")
    assert count_rows(store, schema.TAB_COL_STATS) == 0


def test_delete_table_statistics(store: SqlStore) -> None:
    make_table(store, "t")
    store.update_table_column_statistics(CAT, DB, "t", table_stats("t", all_types_stats()))
    before = store.current_notification_event_id()
    store.delete_table_column_statistics(CAT, DB, "t", "l", "hive")
    got = store.get_table_column_statistics(CAT, DB, "t", ["l", "b"])
    assert [o.colName for o in got.statsObj] == ["b"]
    with pytest.raises(
        hms.NoSuchObjectException, match="Column stats doesn't exist for db=sdb table=t col=l"
    ):
        store.delete_table_column_statistics(CAT, DB, "t", "l", "hive")
    store.delete_table_column_statistics(CAT, DB, "t", None, None)
    assert count_rows(store, schema.TAB_COL_STATS) == 0
    store.delete_table_column_statistics(CAT, DB, "t", None, None)  # nothing left: no error
    types = [e.eventType for e in events_after(store, before)]
    assert types == [messages.DELETE_TBL_COL_STAT_EVENT] * 3
    body = messages.decode(events_after(store, before)[0].message, messages.GZIP_FORMAT)
    assert (body["database"], body["colName"]) == (DB, "l")
    with pytest.raises(hms.NoSuchObjectException, match="for which stats deletion is requested"):
        store.delete_table_column_statistics(CAT, DB, "missing", None, None)
    make_table(store, "acid", params={"transactional": "true"})
    with pytest.raises(hms.MetaException, match="transactional table"):
        store.delete_table_column_statistics(CAT, DB, "acid", None, None)


# -- partition statistics --------------------------------------------------------------------------


def test_partition_statistics_round_trip_in_one_batch(store: SqlStore) -> None:
    make_partitioned(store, "pt", 4)
    before = store.current_notification_event_id()
    written = {
        f"p={i}": [long_obj("l", i, 10 * i, i, i + 1), string_obj("s", 5 + i, 2.5, 0, 3)]
        for i in range(3)
    }
    store.update_partition_column_statistics(
        CAT, DB, "pt", [part_stats("pt", name, objs) for name, objs in written.items()]
    )
    got = store.get_partition_column_statistics(
        CAT, DB, "pt", list(written) + ["p=3", "p=9"], ["s", "l"]
    )
    assert got == {name: [objs[1], objs[0]] for name, objs in written.items()}
    full = store.partition_column_statistics(CAT, DB, "pt", ["p=1"], ["l"])
    assert full[0].statsDesc == hms.ColumnStatisticsDesc(
        isTblLevel=False,
        dbName=DB,
        tableName="pt",
        partName="p=1",
        lastAnalyzed=1_700_000_200,
        catName=CAT,
    )
    evs = events_after(store, before)
    assert [e.eventType for e in evs] == [messages.UPDATE_PART_COL_STAT_EVENT] * 3
    body = messages.decode(evs[0].message, evs[0].messageFormat)
    assert body["partVals"] == ["0"]
    assert messages.column_statistics(body).statsDesc.partName == "p=0"
    assert body["parameters"]["COLUMN_STATS_ACCURATE"] == (
        '{"BASIC_STATS":"true","COLUMN_STATS":{"l":"true","s":"true"}}'
    )
    # Hive's batch path gives a partition without the flag BASIC_STATS as well.
    assert part_params(store, "pt", "p=0")["COLUMN_STATS_ACCURATE"] == (
        '{"BASIC_STATS":"true","COLUMN_STATS":{"l":"true","s":"true"}}'
    )
    assert "COLUMN_STATS_ACCURATE" not in part_params(store, "pt", "p=3")
    with store.db.read() as conn:
        names = sorted(r[0] for r in conn.execute(select(schema.PART_COL_STATS.c.PARTITION_NAME)))
    assert names == ["p=0", "p=0", "p=1", "p=1", "p=2", "p=2"]


def test_partition_update_errors_are_hives(store: SqlStore) -> None:
    make_partitioned(store, "pt", 1)
    with pytest.raises(hms.NoSuchObjectException, match="p=7 for which stats is gathered"):
        store.update_partition_column_statistics(
            CAT, DB, "pt", [part_stats("pt", "p=7", [long_obj("l", 1, 2, 0, 1)])]
        )
    with pytest.raises(hms.InvalidObjectException, match="hive.sdb.nope table not found"):
        store.update_partition_column_statistics(
            CAT, DB, "nope", [part_stats("nope", "p=0", [long_obj("l", 1, 2, 0, 1)])]
        )
    assert count_rows(store, schema.PART_COL_STATS) == 0


def _count_statements(store: SqlStore, fn: Any) -> int:
    seen = []

    def on_exec(*_args: Any) -> None:
        seen.append(1)

    engine = store.db.write_engine
    event.listen(engine, "before_cursor_execute", on_exec)
    try:
        fn()
    finally:
        event.remove(engine, "before_cursor_execute", on_exec)
    return len(seen)


def test_partition_writes_take_a_few_statements_whatever_the_number(store: SqlStore) -> None:
    make_partitioned(store, "warm", 1)
    make_partitioned(store, "small", 3)
    make_partitioned(store, "big", 60)

    def write(tbl: str, n: int) -> None:
        store.update_partition_column_statistics(
            CAT,
            DB,
            tbl,
            [
                part_stats(tbl, f"p={i}", [long_obj("l", 0, i, 0, 1), bool_obj("b", 1, 1, 0)])
                for i in range(n)
            ],
        )

    write("warm", 1)  # the first write also creates SEQUENCE_TABLE rows
    first_small = _count_statements(store, lambda: write("small", 3))
    first_big = _count_statements(store, lambda: write("big", 60))
    # Equal but for id-block reservations (PostgreSQL reserves 100 ids at a time).
    assert first_small <= first_big <= first_small + 4
    # Second time round every row exists: updates, still batched.
    assert _count_statements(store, lambda: write("big", 60)) <= first_big + 2


def test_dropping_a_partition_drops_its_statistics(store: SqlStore) -> None:
    make_partitioned(store, "pt", 2)
    store.update_partition_column_statistics(
        CAT, DB, "pt", [part_stats("pt", f"p={i}", [long_obj("l", 0, 1, 0, 1)]) for i in range(2)]
    )
    store.drop_partitions(CAT, DB, "pt", ["p=0"])
    assert list(store.get_partition_column_statistics(CAT, DB, "pt", ["p=0", "p=1"], ["l"])) == [
        "p=1"
    ]


def test_delete_partition_statistics(store: SqlStore) -> None:
    make_partitioned(store, "pt", 2)
    store.update_partition_column_statistics(
        CAT,
        DB,
        "pt",
        [part_stats("pt", "p=0", [long_obj("l", 0, 1, 0, 1), bool_obj("b", 1, 0, 0)])],
    )
    before = store.current_notification_event_id()
    store.delete_partition_column_statistics(CAT, DB, "pt", "p=0", "l", "hive")
    assert store.get_partition_column_statistics(CAT, DB, "pt", ["p=0"], ["l", "b"]) == {
        "p=0": [bool_obj("b", 1, 0, 0)]
    }
    with pytest.raises(hms.NoSuchObjectException, match="partition=p=0 col=l"):
        store.delete_partition_column_statistics(CAT, DB, "pt", "p=0", "l", "hive")
    with pytest.raises(hms.NoSuchObjectException, match="Partition p=5 for which stats deletion"):
        store.delete_partition_column_statistics(CAT, DB, "pt", "p=5", None, None)
    with pytest.raises(hms.InvalidObjectException, match="sdb.nope table not found"):
        store.delete_partition_column_statistics(CAT, DB, "nope", "p=0", None, None)
    store.delete_partition_column_statistics(CAT, DB, "pt", "p=0", None, None)
    assert count_rows(store, schema.PART_COL_STATS) == 0
    evs = events_after(store, before)
    assert [e.eventType for e in evs] == [messages.DELETE_PART_COL_STAT_EVENT] * 2
    body = messages.decode(evs[0].message, evs[0].messageFormat)
    assert (body["partName"], body["partValues"], body["colName"]) == ("p=0", ["0"], "l")


def test_partition_merge_with_stored_statistics(store: SqlStore) -> None:
    make_partitioned(store, "pt", 2)
    store.update_partition_column_statistics(
        CAT, DB, "pt", [part_stats("pt", "p=0", [long_obj("l", 5, 10, 1, 4)])]
    )
    store.update_partition_column_statistics(
        CAT,
        DB,
        "pt",
        [
            part_stats("pt", "p=0", [long_obj("l", 1, 8, 2, 7)]),
            part_stats("pt", "p=1", [long_obj("l", 1, 8, 2, 7)]),
        ],  # p=1 has no accurate stats
        merge=True,
    )
    got = store.get_partition_column_statistics(CAT, DB, "pt", ["p=0", "p=1"], ["l"])
    assert got == {"p=0": [long_obj("l", 1, 10, 3, 7)]}


# -- aggregation -----------------------------------------------------------------------------------


def test_aggregate_over_partitions_with_missing_statistics(store: SqlStore) -> None:
    make_partitioned(store, "pt", 4)
    lows, highs, ndvs = [-100, -50, 0], [300, 350, 380], [5, 8, 50]
    store.update_partition_column_statistics(
        CAT,
        DB,
        "pt",
        [
            part_stats(
                "pt",
                f"p={i}",
                [long_obj("l", lows[i], highs[i], 1, ndvs[i]), bool_obj("b", 1, [2, 2, 3][i], 0)],
            )
            for i in range(3)
        ]
        + [part_stats("pt", "p=3", [bool_obj("b", 4, 4, 4)])],
    )
    parts = [f"p={i}" for i in range(4)]
    aggr = store.get_aggr_stats_for(CAT, DB, "pt", parts, ["l", "b"])
    assert aggr.partsFound == 3  # p=3 lacks 'l'
    by = {o.colName: o.statsData for o in aggr.colStats}
    assert [o.colName for o in aggr.colStats] == ["l", "b"]
    # 'l' is extrapolated to the fourth partition (high: 300 + 80 * 3 / 2), 'b' is in all four.
    assert by["l"].longStats == hms.LongColumnStatsData(
        lowValue=-100, highValue=420, numNulls=4, numDVs=72
    )
    assert by["b"].booleanStats == hms.BooleanColumnStatsData(numTrues=7, numFalses=11, numNulls=4)
    only_b = store.get_aggr_stats_for(CAT, DB, "pt", parts, ["b", "nothing"])
    assert only_b.partsFound == 0 and [o.colName for o in only_b.colStats] == ["b"]
    assert store.get_aggr_stats_for(CAT, DB, "pt", [], ["l"]) == hms.AggrStats(
        colStats=[], partsFound=0
    )
    every = store.get_aggr_stats_for(CAT, DB, "pt", parts[:3], ["l"])
    assert every.partsFound == 3
    assert every.colStats[0].statsData.longStats == hms.LongColumnStatsData(
        lowValue=-100, highValue=380, numNulls=3, numDVs=50
    )
    with pytest.raises(hms.NoSuchObjectException):
        store.get_aggr_stats_for(CAT, DB, "nope", parts, ["l"])


# -- unit tests of the pure parts ------------------------------------------------------------------


def test_partition_names_get_lower_case_keys_only() -> None:
    from hms_cache_proxy.handler.stats_calls import lower_case_part_name

    assert lower_case_part_name("Year=2024/MONTH=Jan") == "year=2024/month=Jan"
    assert lower_case_part_name("a=x%2Fy/junk/b=1") == "a=x%2Fy/b=1"
    assert lower_case_part_name(None) is None
    with pytest.raises(hms.MetaException):
        lower_case_part_name("")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, (False, {})),
        (
            '{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true","b":"false"}}',
            (True, {"a": True, "b": False}),
        ),
        ('{"COLUMN_STATS":{"a":true}}', (False, {"a": True})),
        ("TRUE", (True, {})),
        ("garbage", (False, {})),
        ('{"BASIC_STATS":"true","OTHER":1}', (False, {})),
    ],
)
def test_parse_stats_accurate(text: str | None, expected: tuple[bool, dict[str, bool]]) -> None:
    assert accuracy.parse_stats_accurate(text) == expected


def test_format_and_set_column_stats_state() -> None:
    assert accuracy.format_stats_accurate(False, {}) == "{}"
    params = {"COLUMN_STATS_ACCURATE": "true"}
    accuracy.set_column_stats_state(params, ["z", "a", "é"])
    assert params["COLUMN_STATS_ACCURATE"] == (
        '{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true","z":"true","é":"true"}}'
    )
    params = {"COLUMN_STATS_ACCURATE": '{"COLUMN_STATS":{"a":"false"}}'}
    accuracy.set_column_stats_state(params, ["a", "b"])  # an existing flag is kept as it is
    assert json.loads(params["COLUMN_STATS_ACCURATE"]) == {
        "COLUMN_STATS": {"a": "false", "b": "true"}
    }


@pytest.mark.parametrize(
    ("unscaled", "scale", "text"),
    [
        (1250, 2, "12.50"),
        (1, -3, "1E+3"),
        (1, 8, "1E-8"),
        (-5, 1, "-0.5"),
        (0, 0, "0"),
        (-128, 0, "-128"),
        (255, 0, "255"),
        (123456789012345678901234567890, 10, "12345678901234567890.1234567890"),
    ],
)
def test_decimal_text_is_javas_bigdecimal(unscaled: int, scale: int, text: str) -> None:
    java_bytes = unscaled.to_bytes(
        (unscaled.bit_length() if unscaled >= 0 else (~unscaled).bit_length()) // 8 + 1,
        "big",
        signed=True,
    )
    d = hms.Decimal(scale=scale, unscaled=java_bytes)
    assert stats_rows.decimal_to_text(d) == text
    assert stats_rows.decimal_from_text(text) == d
    assert stats_rows.decimal_from_text("-128").unscaled == b"\x80"
    assert stats_rows.decimal_from_text("255").unscaled == b"\x00\xff"


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1e10, "1.0E10"),
        (123.5, "123.5"),
        (1e-4, "1.0E-4"),
        (0.001, "0.001"),
        (1234567.0, "1234567.0"),
        (1e7, "1.0E7"),
        (-2.5e-7, "-2.5E-7"),
        (0.0, "0.0"),
        (100.0, "100.0"),
    ],
)
def test_java_double_string(x: float, text: str) -> None:
    assert stats_rows.java_double_string(x) == text


def test_member_follows_the_column_type() -> None:
    assert [
        stats_rows.member_for_type(t)
        for t in (
            "BOOLEAN",
            "varchar(3)",
            "char(1)",
            "tinyint",
            "float",
            "decimal(1,0)",
            "date",
            "timestamp",
            "binary",
            "array<int>",
        )
    ] == [
        "booleanStats",
        "stringStats",
        "stringStats",
        "longStats",
        "doubleStats",
        "decimalStats",
        "dateStats",
        "timestampStats",
        "binaryStats",
        None,
    ]


def _aggr(
    stats: dict[str, list[hms.ColumnStatisticsObj]], parts: list[str], cols: list[str], **kw: Any
) -> dict[str, Any]:
    out = aggregation.aggregate_partition_stats(parts, cols, stats, **kw)
    return {
        o.colName: getattr(o.statsData, stats_rows.data_member(o.statsData)) for o in out.colStats
    }


def test_aggregate_all_found() -> None:
    stats = {
        "p=0": [
            long_obj("l", 1, 10, 1, 5),
            string_obj("s", 7, 2.0, 1, 4),
            obj(
                "bin",
                "binary",
                data(binaryStats=hms.BinaryColumnStatsData(maxColLen=3, avgColLen=1.0, numNulls=1)),
            ),
        ],
        "p=1": [
            long_obj("l", -3, 4, 2, 6),
            string_obj("s", 5, 3.5, 0, 9),
            obj(
                "bin",
                "binary",
                data(binaryStats=hms.BinaryColumnStatsData(maxColLen=8, avgColLen=0.5, numNulls=0)),
            ),
        ],
    }
    got = _aggr(stats, ["p=0", "p=1"], ["l", "s", "bin"])
    assert got["l"] == hms.LongColumnStatsData(lowValue=-3, highValue=10, numNulls=3, numDVs=6)
    assert got["s"] == hms.StringColumnStatsData(maxColLen=7, avgColLen=3.5, numNulls=1, numDVs=9)
    assert got["bin"] == hms.BinaryColumnStatsData(maxColLen=8, avgColLen=1.0, numNulls=1)
    # ndv tuner 1.0: the sum; never more than the integers in [low, high].
    assert _aggr(stats, ["p=0", "p=1"], ["l"], ndv_tuner=1.0)["l"].numDVs == 11
    narrow = {"a": [long_obj("l", 1, 3, 0, 5)], "b": [long_obj("l", 2, 3, 0, 5)]}
    assert _aggr(narrow, ["a", "b"], ["l"], ndv_tuner=1.0)["l"].numDVs == 3


def test_aggregate_density_function() -> None:
    stats = {"a": [long_obj("l", 0, 100, 0, 10)], "b": [long_obj("l", 200, 300, 0, 10)]}
    # density avg (100/10 + 100/10) / 2 = 10; (300 - 0) / 10 = 30, clamped to [10, 20].
    assert _aggr(stats, ["a", "b"], ["l"], use_density_function=True)["l"].numDVs == 20
    assert _aggr(stats, ["a", "b"], ["l"])["l"].numDVs == 10


def test_aggregate_extrapolates_like_hives_sql_path() -> None:
    parts = ["p=0", "p=1", "p=2", "p=3"]
    stats = {
        "p=1": [
            long_obj("l", 10, 20, 3, 5),
            string_obj("s", 10, 2.0, 1, 3),
            bool_obj("b", 1, 3, 0),
            obj(
                "x",
                "decimal(5,1)",
                data(
                    decimalStats=hms.DecimalColumnStatsData(
                        lowValue=dec("1.5"), highValue=dec("3.0"), numNulls=0, numDVs=2
                    )
                ),
            ),
            obj(
                "dt",
                "date",
                data(
                    dateStats=hms.DateColumnStatsData(
                        lowValue=hms.Date(daysSinceEpoch=100),
                        highValue=hms.Date(daysSinceEpoch=110),
                        numNulls=0,
                        numDVs=4,
                    )
                ),
            ),
        ],
        "p=2": [
            long_obj("l", 12, 30, 4, 9),
            string_obj("s", 20, 4.0, 2, 7),
            bool_obj("b", 2, 4, 1),
            obj(
                "x",
                "decimal(5,1)",
                data(
                    decimalStats=hms.DecimalColumnStatsData(
                        lowValue=dec("2.5"), highValue=dec("5.5"), numNulls=1, numDVs=3
                    )
                ),
            ),
            obj(
                "dt",
                "date",
                data(
                    dateStats=hms.DateColumnStatsData(
                        lowValue=hms.Date(daysSinceEpoch=105),
                        highValue=hms.Date(daysSinceEpoch=120),
                        numNulls=0,
                        numDVs=6,
                    )
                ),
            ),
        ],
    }
    got = _aggr(stats, parts, ["l", "s", "b", "x", "dt"])
    # low: 10 at 1, 12 at 2 -> 12 - 2*2/1 = 8; high: 20 at 1, 30 at 2 -> 20 + 10*(3-1)/1 = 40;
    # ndv 5 at 1, 9 at 2 -> 13; nulls (3+4)/2*4 = 12 (Java long arithmetic, division first).
    assert got["l"] == hms.LongColumnStatsData(lowValue=8, highValue=40, numNulls=12, numDVs=13)
    # nulls (1+2)/2*4 = 4; trues (1+2)/2*4 = 4; falses (3+4)/2*4 = 12.
    assert got["s"] == hms.StringColumnStatsData(maxColLen=30, avgColLen=6.0, numNulls=4, numDVs=11)
    assert got["b"] == hms.BooleanColumnStatsData(numTrues=4, numFalses=12, numNulls=0)
    assert got["x"] == hms.DecimalColumnStatsData(
        lowValue=dec("0.5"), highValue=dec("8.0"), numNulls=0, numDVs=4
    )
    assert got["dt"] == hms.DateColumnStatsData(
        lowValue=hms.Date(daysSinceEpoch=95),
        highValue=hms.Date(daysSinceEpoch=130),
        numNulls=0,
        numDVs=8,
    )
    # One partition with stats: taken as it is, no extrapolation.
    one = _aggr({"p=2": stats["p=2"]}, parts, ["l"])
    assert one["l"] == hms.LongColumnStatsData(lowValue=12, highValue=30, numNulls=4, numDVs=9)


def test_aggregate_groups_by_column_and_type() -> None:
    stats = {"a": [long_obj("c", 1, 2, 0, 1)], "b": [string_obj("c", 3, 1.0, 0, 2)]}
    out = aggregation.aggregate_partition_stats(["a", "b"], ["c"], stats)
    assert [(o.colName, o.colType) for o in out.colStats] == [("c", "bigint"), ("c", "string")]
    assert out.partsFound == 2


def test_merge_follows_hives_mergers() -> None:
    new = long_obj("l", None, 9, 1, 3, bitVectors=b"x", histogram=b"y")
    old = long_obj("l", 2, 5, 4, 7)
    merged = aggregation.merge_stats_obj(new, old)
    assert merged.statsData.longStats == hms.LongColumnStatsData(
        lowValue=2, highValue=9, numNulls=5, numDVs=7
    )
    assert new.statsData.longStats.bitVectors == b"x"  # the input is not changed
    s_new, s_old = string_obj("s", 3, 1.5, 1, 2), string_obj("s", 9, 1.0, 2, 5)
    assert aggregation.merge_stats_obj(
        s_new, s_old
    ).statsData.stringStats == hms.StringColumnStatsData(
        maxColLen=9, avgColLen=1.5, numNulls=3, numDVs=5
    )
    d_new = obj(
        "x",
        "decimal(5,1)",
        data(
            decimalStats=hms.DecimalColumnStatsData(
                lowValue=dec("10.5"), highValue=dec("11"), numNulls=0, numDVs=1
            )
        ),
    )
    d_old = obj(
        "x",
        "decimal(5,1)",
        data(
            decimalStats=hms.DecimalColumnStatsData(
                lowValue=dec("9.25"), highValue=dec("100"), numNulls=0, numDVs=2
            )
        ),
    )
    got = aggregation.merge_stats_obj(d_new, d_old).statsData.decimalStats
    assert (got.lowValue, got.highValue) == (dec("9.25"), dec("100"))
    with pytest.raises(ValueError):
        aggregation.merge_stats_obj(s_new, old)


def test_stats_validity_for_a_snapshot() -> None:
    accurate = {"COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}
    assert accuracy.stats_valid_for_query({}, 0, "t:1:9223372036854775807::", False)
    assert accuracy.stats_valid_for_query(accurate, 3, "t:5:9223372036854775807::", False)
    assert not accuracy.stats_valid_for_query({}, 3, "t:5:9223372036854775807::", False)
    assert not accuracy.stats_valid_for_query(accurate, 6, "t:5:9223372036854775807::", False)
    assert accuracy.stats_valid_for_query({}, 3, "t:5:3:3:", False) is False
    # An aborted writer's statistics may be replaced by a complete writer.
    assert accuracy.stats_valid_for_query({}, 3, "t:5:9223372036854775807::3", True)


# -- over the wire (Apache Thrift's client against the running service) ----------------------------


def _wire_table(client: Any, T: Any) -> None:
    sd = T.StorageDescriptor(
        cols=[T.FieldSchema("l", "bigint", None), T.FieldSchema("s", "string", None)],
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        compressed=False,
        numBuckets=-1,
        serdeInfo=T.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )
    client.create_database(T.Database(name="wdb", description="", parameters={}))
    client.create_table(
        T.Table(
            tableName="wt",
            dbName="wdb",
            owner="tester",
            sd=sd,
            partitionKeys=[T.FieldSchema("p", "string", None)],
            parameters={},
            tableType="MANAGED_TABLE",
        )
    )
    client.add_partitions(
        [T.Partition(values=[v], dbName="wdb", tableName="wt", sd=sd, parameters={}) for v in "abc"]
    )


def _wire_stats(T: Any, part: str | None, low: int, high: int) -> Any:
    desc = T.ColumnStatisticsDesc(
        isTblLevel=part is None, dbName="WDB", tableName="Wt", partName=part
    )
    data = T.ColumnStatisticsData(
        longStats=T.LongColumnStatsData(lowValue=low, highValue=high, numNulls=1, numDVs=high - low)
    )
    return T.ColumnStatistics(statsDesc=desc, statsObj=[T.ColumnStatisticsObj("L", "BIGINT", data)])


def test_statistics_calls_over_the_wire(client: Any, T: Any) -> None:
    from thrift.Thrift import TApplicationException

    _wire_table(client, T)
    assert client.update_table_column_statistics(_wire_stats(T, None, 1, 9)) is True
    got = client.get_table_column_statistics("wdb", "wt", "L")
    got.validate()
    got.statsDesc.validate()
    assert (got.statsDesc.catName, got.statsDesc.tableName, got.engine) == ("hive", "wt", "hive")
    assert got.statsObj[0].colName == "l" and got.statsObj[0].colType == "bigint"
    assert got.statsObj[0].statsData.longStats.highValue == 9
    with pytest.raises(TApplicationException) as missing:
        client.get_table_column_statistics("wdb", "wt", "s")
    assert missing.value.type == TApplicationException.MISSING_RESULT
    result = client.get_table_statistics_req(
        T.TableStatsRequest(dbName="wdb", tblName="wt", colNames=["l", "s"], engine="hive")
    )
    result.validate()
    assert [o.colName for o in result.tableStats] == ["l"]
    with pytest.raises(T.MetaException, match="Column nope doesn't exist"):
        bad = _wire_stats(T, None, 1, 2)
        bad.statsObj[0].colName = "nope"
        client.update_table_column_statistics(bad)
    with pytest.raises(T.InvalidInputException, match="Only one stats object expected"):
        client.update_table_column_statistics_req(
            T.SetPartitionsStatsRequest(colStats=[], engine="hive")
        )

    # Partition statistics: key names arrive in any case, the server lower-cases them.
    req = T.SetPartitionsStatsRequest(
        colStats=[_wire_stats(T, "P=a", 0, 10), _wire_stats(T, "p=b", 5, 20)], engine="hive"
    )
    assert client.set_aggr_stats_for(req) is True
    one = client.update_partition_column_statistics_req(
        T.SetPartitionsStatsRequest(colStats=[_wire_stats(T, "p=c", 7, 8)], engine="hive")
    )
    assert one.result is True
    parts = client.get_partitions_statistics_req(
        T.PartitionsStatsRequest(
            dbName="wdb",
            tblName="wt",
            colNames=["l"],
            partNames=["p=a", "P=b", "p=zz"],
            engine="hive",
        )
    )
    parts.validate()
    assert sorted(parts.partStats) == ["p=a", "p=b"]
    single = client.get_partition_column_statistics("wdb", "wt", "P=a", "l")
    assert single.statsDesc.partName == "p=a" and single.statsDesc.isTblLevel is False
    aggr = client.get_aggr_stats_for(
        T.PartitionsStatsRequest(
            dbName="wdb",
            tblName="wt",
            colNames=["l"],
            partNames=["p=a", "p=b", "p=c"],
            engine="hive",
        )
    )
    aggr.validate()
    assert aggr.partsFound == 3
    longs = aggr.colStats[0].statsData.longStats
    assert (longs.lowValue, longs.highValue, longs.numNulls, longs.numDVs) == (0, 20, 3, 15)

    assert client.delete_partition_column_statistics("wdb", "wt", "p=a", "l", "hive") is True
    with pytest.raises(T.NoSuchObjectException, match="Column stats doesn't exist"):
        client.delete_partition_column_statistics("wdb", "wt", "p=a", "l", "hive")
    assert client.delete_table_column_statistics("wdb", "wt", None, None) is True
    assert (
        client.get_table_statistics_req(
            T.TableStatsRequest(dbName="wdb", tblName="wt", colNames=["l"], engine="hive")
        ).tableStats
        == []
    )
    with pytest.raises(T.NoSuchObjectException):
        client.get_aggr_stats_for(
            T.PartitionsStatsRequest(
                dbName="wdb", tblName="nope", colNames=["l"], partNames=["p=a"], engine="hive"
            )
        )
