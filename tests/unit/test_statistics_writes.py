"""The column-statistics writes the upstream-mode cache drops tables for, and the tables read
from their requests (server/statistics_writes.py)."""

from __future__ import annotations

from typing import Any

from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.utils import serialize

from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.server.statistics_writes import STATISTICS_WRITES, tables_written

NOT_TABLE_PARAMETERS = {"update_transaction_statistics", "add_runtime_stats"}


def _body(api: str, **args: Any) -> bytes:
    return serialize(getattr(service, api + "_args")(**args), TBinaryProtocolFactory())


def _stats(db: str, tbl: str, part: str | None = None, cat: str | None = None) -> Any:
    data = hms.ColumnStatisticsData(
        stringStats=hms.StringColumnStatsData(
            maxColLen=5, avgColLen=2.5, numNulls=0, numDVs=7, bitVectors=b"\x01" * 50_000
        )
    )
    return hms.ColumnStatistics(
        statsDesc=hms.ColumnStatisticsDesc(
            isTblLevel=part is None, dbName=db, tableName=tbl, partName=part, catName=cat
        ),
        statsObj=[hms.ColumnStatisticsObj(colName="a", colType="string", statsData=data)] * 3,
        engine="hive",
    )


def test_every_statistics_write_of_the_idl_is_listed() -> None:
    writes = {
        m
        for m in service.thrift_services
        if ("statistics" in m.lower() or "stats" in m.lower())
        and not m.startswith(("get_", "find_"))
    }
    assert set(STATISTICS_WRITES) == writes - NOT_TABLE_PARAMETERS
    assert NOT_TABLE_PARAMETERS <= writes


def test_the_tables_each_statistics_write_names() -> None:
    request = hms.SetPartitionsStatsRequest
    bodies = {
        "update_table_column_statistics": _body(
            "update_table_column_statistics", stats_obj=_stats("Sales", "Orders")
        ),
        "update_partition_column_statistics": _body(
            "update_partition_column_statistics", stats_obj=_stats("sales", "orders", "d=1")
        ),
        "update_table_column_statistics_req": _body(
            "update_table_column_statistics_req",
            req=request(colStats=[_stats("@spark#sales", "orders")], engine="hive"),
        ),
        "update_partition_column_statistics_req": _body(
            "update_partition_column_statistics_req",
            req=request(colStats=[_stats("sales", "orders", "d=1", cat="Spark")], engine="hive"),
        ),
        "set_aggr_stats_for": _body(
            "set_aggr_stats_for",
            request=request(
                colStats=[_stats("sales", "orders", "d=1"), _stats("sales", "items", "d=2")],
                engine="hive",
            ),
        ),
        "delete_table_column_statistics": _body(
            "delete_table_column_statistics", db_name="SALES", tbl_name="orders", col_name="a"
        ),
        "delete_partition_column_statistics": _body(
            "delete_partition_column_statistics",
            db_name="sales",
            tbl_name="ORDERS",
            part_name="d=1",
            col_name="a",
        ),
    }
    assert set(bodies) == set(STATISTICS_WRITES)
    orders = ("hive", "sales", "orders")
    assert {api: tables_written(api, body) for api, body in bodies.items()} == {
        **dict.fromkeys(bodies, {orders}),
        "update_table_column_statistics_req": {("spark", "sales", "orders")},
        "update_partition_column_statistics_req": {("spark", "sales", "orders")},
        "set_aggr_stats_for": {orders, ("hive", "sales", "items")},
    }


def test_other_calls_and_requests_naming_no_table_drop_nothing() -> None:
    assert tables_written("alter_table", b"\x00") == set()
    empty = hms.SetPartitionsStatsRequest(colStats=[], engine="hive")
    assert tables_written("set_aggr_stats_for", _body("set_aggr_stats_for", request=empty)) == set()
    no_names = _body("delete_table_column_statistics", col_name="a")
    assert tables_written("delete_table_column_statistics", no_names) == set()


def test_a_request_that_cannot_be_read_names_no_known_tables() -> None:
    body = _body("update_table_column_statistics", stats_obj=_stats("sales", "orders"))
    assert tables_written("update_table_column_statistics", body[:-20]) is None
    assert tables_written("update_table_column_statistics", b"\x0c\x00\x01\x0b") is None
