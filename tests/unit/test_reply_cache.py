"""The upstream-mode reply cache: entries by request, dropped by events, loads refused when an
event overtook them, bytes bounded, time-limited entries."""

from __future__ import annotations

from thriftpy2.protocol import TBinaryProtocolFactory
from thriftpy2.utils import serialize

from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.server.cached_calls import CACHED, split_catalog, subject
from hms_cache_proxy.server.reply_cache import (
    CONSTRAINTS,
    DATABASE,
    TABLE,
    TABLE_NAMES,
    TABLE_OBJECTS,
    ReplyCache,
    Subject,
)

ORDERS = Subject(TABLE, "hive", "sales", "orders")


def key(n: int = 0) -> tuple[tuple[bytes, ...], str, bytes]:
    return ((), "get_table", b"args%d" % n)


def loaded(cache: ReplyCache, k: tuple[tuple[bytes, ...], str, bytes], table=ORDERS) -> bool:
    return cache.install(cache.ticket(table), k, b"reply")


def test_a_reply_is_answered_again_for_the_same_request_only() -> None:
    cache = ReplyCache(1 << 20)
    assert loaded(cache, key(1))
    assert cache.get(key(1)) == b"reply"
    assert cache.get(key(2)) is None
    assert cache.get(((b"set_ugi bob",), "get_table", b"args1")) is None


def test_an_event_about_the_table_drops_its_entries_and_no_other() -> None:
    cache = ReplyCache(1 << 20)
    loaded(cache, key(1))
    loaded(cache, key(2), Subject(TABLE, "hive", "sales", "other"))
    cache.drop_table("HIVE", "Sales", "ORDERS")
    assert cache.get(key(1)) is None
    assert cache.get(key(2)) == b"reply"


def test_a_load_an_event_overtook_installs_nothing() -> None:
    cache = ReplyCache(1 << 20)
    ticket = cache.ticket(ORDERS)
    cache.drop_table(*ORDERS[1:])  # the event arrives while the upstream answers
    assert not cache.install(ticket, key(), b"old")
    assert cache.get(key()) is None
    assert loaded(cache, key())  # a load begun after it installs


def test_a_dropped_database_refuses_loads_of_its_tables_and_a_flush_refuses_every_load() -> None:
    cache = ReplyCache(1 << 20)
    ticket = cache.ticket(ORDERS)
    cache.drop_database("hive", "sales", tables=True)
    assert not cache.install(ticket, key(), b"old")
    ticket = cache.ticket(ORDERS)
    cache.drop_database("hive", "sales", tables=False)  # its own entry only
    assert cache.install(ticket, key(), b"new")
    ticket = cache.ticket(ORDERS)
    cache.flush()
    assert not cache.install(ticket, key(1), b"old")
    assert cache.size == (0, 0)


def test_least_recently_used_entries_go_when_the_bytes_are_spent() -> None:
    cache = ReplyCache(500)
    for n in range(3):
        loaded(cache, key(n))
    assert cache.get(key(0)) is None and cache.get(key(2)) == b"reply"
    assert cache.size[1] <= 500


def test_entries_kept_for_a_time_expire() -> None:
    now = [0.0]
    cache = ReplyCache(1 << 20, ttl_seconds=5, clock=lambda: now[0])
    loaded(cache, key())
    now[0] = 4.9
    assert cache.get(key()) == b"reply"
    now[0] = 5.0
    assert cache.get(key()) is None


def _args(api: str, **kw: object) -> bytes:
    return serialize(getattr(service, api + "_args")(**kw), TBinaryProtocolFactory())


def test_the_subject_of_each_kind_of_request() -> None:
    assert (
        subject(service, "get_table", _args("get_table", dbname="Sales", tbl_name="Orders"))
        == ORDERS
    )
    req = hms.GetTableRequest(dbName="sales", tblName="orders", catName="spark")
    assert subject(service, "get_table_req", _args("get_table_req", req=req)) == (
        TABLE,
        "spark",
        "sales",
        "orders",
    )
    assert subject(service, "get_database", _args("get_database", name="@c#D")) == (
        Subject(DATABASE, "c", "d")
    )
    names = _args("get_tables", db_name="Sales", pattern="o*")
    assert subject(service, "get_tables", names) == Subject(TABLE_NAMES, "hive", "sales")
    assert subject(service, "get_all_tables", _args("get_all_tables", db_name="s")) == (
        Subject(TABLE_NAMES, "hive", "s")
    )
    objects = hms.GetTablesRequest(dbName="Sales", tblNames=["orders"], catName="spark")
    assert subject(
        service,
        "get_table_objects_by_name_req",
        _args("get_table_objects_by_name_req", req=objects),
    ) == Subject(TABLE_OBJECTS, "spark", "sales")
    by_name = _args("get_table_objects_by_name", dbname="sales", tbl_names=["orders"])
    assert subject(service, "get_table_objects_by_name", by_name) == (
        Subject(TABLE_OBJECTS, "hive", "sales")
    )
    pk = hms.PrimaryKeysRequest(db_name="sales", tbl_name="orders")
    assert subject(service, "get_primary_keys", _args("get_primary_keys", request=pk)) == (
        Subject(CONSTRAINTS)
    )
    assert subject(service, "get_table", b"\xff garbage") is None
    assert split_catalog(None, "x") == ("hive", "x")


def test_no_request_that_answers_column_statistics_is_cached() -> None:
    """Hive before 4.0 logs no event when column statistics change, so no reply carrying them
    is kept, whatever the upstream (docs/cache.md, "In upstream mode")."""
    stats_calls = {
        m for m in service.thrift_services if m.startswith("get_") and "stat" in m.lower()
    }
    assert stats_calls >= {"get_table_column_statistics", "get_aggr_stats_for"}
    assert not stats_calls & CACHED
    table = hms.GetTableRequest(dbName="sales", tblName="orders", getColumnStats=True)
    assert subject(service, "get_table_req", _args("get_table_req", req=table)) is None
    parts = hms.GetPartitionsByNamesRequest(
        db_name="sales", tbl_name="orders", names=["d=1"], get_col_stats=True
    )
    by_names = _args("get_partitions_by_names_req", req=parts)
    assert subject(service, "get_partitions_by_names_req", by_names) is None
    parts.get_col_stats = False
    by_names = _args("get_partitions_by_names_req", req=parts)
    assert subject(service, "get_partitions_by_names_req", by_names) == ORDERS


def test_table_names_objects_and_constraints_go_by_their_own_events() -> None:
    cache = ReplyCache(1 << 20)
    names, objects = Subject(TABLE_NAMES, "hive", "sales"), Subject(TABLE_OBJECTS, "hive", "sales")
    for n, about in enumerate((ORDERS, names, objects, Subject(CONSTRAINTS))):
        loaded(cache, key(n), about)
    cache.drop_table("hive", "sales", "other")  # a table's event: the database's objects
    assert [cache.get(key(n)) is not None for n in range(4)] == [True, True, False, True]
    cache.drop_table_names("hive", "sales")
    assert cache.get(key(1)) is None and cache.get(key(0)) is not None
    cache.drop_constraints()
    assert cache.get(key(3)) is None and cache.get(key(0)) is not None
    ticket = cache.ticket(names)
    cache.drop_table_names("hive", "other")
    assert cache.install(ticket, key(1), b"reply")  # another database's names
    ticket = cache.ticket(names)
    cache.drop_database("hive", "sales", tables=True)
    assert not cache.install(ticket, key(1), b"old")
    ticket = cache.ticket(Subject(CONSTRAINTS))
    cache.drop_constraints()
    assert not cache.install(ticket, key(3), b"old")
