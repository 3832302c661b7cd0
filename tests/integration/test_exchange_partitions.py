"""exchange_partition(s) (``ALTER TABLE dst EXCHANGE PARTITION (..) WITH TABLE src``) over
Apache Thrift's client, on two caching instances sharing one PostgreSQL database and one
warehouse: the partitions leave the source and join the destination in one transaction, their
directories move with them, the writing instance reads its own write from its cache and the
other follows through the ADD_PARTITION/DROP_PARTITION events; refused exchanges change nothing.

Spark SQL is not exercised: Spark's parser refuses ``ALTER TABLE .. EXCHANGE PARTITION``
before any metastore call (Spark 3: "Operation not allowed"; the Spark 4.0 of the test extra:
``INVALID_STATEMENT_OR_CLAUSE``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cache import TXN, Counted, clients, entry, instances, settle
from tests.support.metastore import (
    event_body,
    events_since,
    last_event_id,
    partition,
    raises,
    table,
    uri,
    write_files,
)

pytestmark = [pytest.mark.postgres]

KEYS = ["ds:string", "hr:string"]
SRC = "the table src"


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path) as svcs, clients(*svcs) as cls:
        yield svcs, cls, tmp_path / "warehouse"
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _table(c: Any, T: Any, name: str, db: str = "default", **kw: Any) -> None:
    c.create_table(table(T, db, name, keys=kw.pop("keys", KEYS), **kw))


def _add(c: Any, T: Any, name: str, *values: list[str], db: str = "default") -> None:
    for v in values:
        c.add_partition(partition(T, db, name, v))


def _names(c: Any, name: str, db: str = "default") -> list[str]:
    return [
        "/".join(f"{k}={v}" for k, v in zip(("ds", "hr"), p.values, strict=True))
        for p in c.get_partitions(db, name, -1)
    ]


def _warm(svcs: Any, cls: Any, *tables: tuple[str, str]) -> None:
    """Both instances hold cache entries of the tables (so the events must change them)."""
    for c in cls:
        for db, name in tables:
            c.get_partitions(db, name, -1)
    settle(*svcs)
    for svc in svcs:
        for db, name in tables:
            assert entry(svc, db, name) is not None


def test_exchange_partition_moves_one_partition_and_its_files(T, pair) -> None:
    (a, b), (ca, cb), wh = pair
    _table(ca, T, "src")
    _table(ca, T, "dst")
    _add(ca, T, "src", ["x", "1"], ["x", "2"])
    write_files(wh / "src" / "ds=x" / "hr=1", {"000000_0": b"one"})
    _warm((a, b), (ca, cb), ("default", "src"), ("default", "dst"))
    before = last_event_id(ca)

    got = ca.exchange_partition({"ds": "x", "hr": "1"}, "default", "src", "default", "dst")

    assert got == T.Partition()  # Hive 4.0 answers an empty Partition
    # the writing instance, at once and from its cache (read-your-writes)
    with Counted() as counted:
        assert _names(ca, "src") == ["ds=x/hr=2"]
        assert _names(ca, "dst") == ["ds=x/hr=1"]
    assert counted.hits("get_partitions") == 2 and counted.misses("get_partitions") == 0
    moved = ca.get_partition("default", "dst", ["x", "1"])
    assert (moved.dbName, moved.tableName) == ("default", "dst")
    assert moved.sd.location == uri(wh / "dst" / "ds=x" / "hr=1")
    assert (wh / "dst" / "ds=x" / "hr=1" / "000000_0").read_bytes() == b"one"
    assert not (wh / "src" / "ds=x" / "hr=1").exists()
    assert (wh / "src" / "ds=x" / "hr=2").is_dir()
    events = events_since(ca, T, before)
    assert [(e.eventType, e.tableName) for e in events] == [
        ("ADD_PARTITION", "dst"),
        ("DROP_PARTITION", "src"),
    ]
    assert event_body(events[1])["partitions"] == [{"ds": "x", "hr": "1"}]
    # the other instance: its entries follow the events, it answers from its cache
    settle(a, b)
    with Counted() as counted:
        assert _names(cb, "src") == ["ds=x/hr=2"]
        assert _names(cb, "dst") == ["ds=x/hr=1"]
    assert counted.hits("get_partitions") == 2 and counted.misses("get_partitions") == 0


def test_exchange_partitions_with_a_prefix_moves_every_matching_partition(T, pair) -> None:
    (a, b), (ca, cb), wh = pair
    ca.create_database(T.Database(name="other", description="", parameters={}))
    _table(ca, T, "src")
    _table(ca, T, "dst", db="other")
    _add(ca, T, "src", ["x", "1"], ["x", "2"], ["y", "1"])
    _add(ca, T, "dst", ["x", "3"], db="other")  # same prefix, other partition: allowed
    for hr in ("1", "2"):
        write_files(wh / "src" / "ds=x" / f"hr={hr}", {"f": hr.encode()})
    write_files(wh / "other.db" / "dst" / "ds=x" / "hr=3", {"f": b"3"})
    _warm((a, b), (ca, cb), ("default", "src"), ("other", "dst"))

    got = ca.exchange_partitions({"ds": "x"}, "default", "src", "other", "dst")

    dst_dir = wh / "other.db" / "dst"
    assert sorted((p.dbName, p.tableName, tuple(p.values), p.sd.location) for p in got) == [
        ("other", "dst", ("x", "1"), uri(dst_dir / "ds=x" / "hr=1")),
        ("other", "dst", ("x", "2"), uri(dst_dir / "ds=x" / "hr=2")),
    ]
    for hr in ("1", "2", "3"):
        assert (dst_dir / "ds=x" / f"hr={hr}" / "f").read_bytes() == hr.encode()
    assert not (wh / "src" / "ds=x").exists()  # left empty: gone, as Hive's rename leaves it
    settle(a, b)
    for c in (ca, cb):
        assert _names(c, "src") == ["ds=y/hr=1"]
        assert _names(c, "dst", db="other") == ["ds=x/hr=1", "ds=x/hr=2", "ds=x/hr=3"]
        assert c.get_partition("other", "dst", ["x", "2"]).sd.location == uri(
            dst_dir / "ds=x" / "hr=2"
        )


@pytest.fixture
def refused(T, pair, tmp_path) -> Any:
    """Tables an exchange is refused between; yields a check that nothing changed."""
    (a, b), (ca, cb), wh = pair
    _table(ca, T, "src")
    _table(ca, T, "dst")
    _table(ca, T, "wide", columns=("a:int", "b:string", "c:double"))
    _table(ca, T, "rekeyed", keys=["ds:string", "hour:string"])
    _table(ca, T, "acid", columns=("a:int",), params=TXN)
    _table(ca, T, "acid_src", columns=("a:int",), params=TXN)
    external = {"EXTERNAL": "TRUE"}
    outside = uri(tmp_path / "outside")  # metadata only: not below any root
    _table(ca, T, "ext", location=outside, params=external, table_type="EXTERNAL_TABLE")
    _add(ca, T, "src", ["x", "1"], ["y", "1"])
    _add(ca, T, "dst", ["y", "1"])
    ca.add_partition(partition(T, "default", "acid_src", ["x", "1"], ("a:int",)))
    write_files(wh / "src" / "ds=x" / "hr=1", {"f": b"1"})
    _warm((a, b), (ca, cb), ("default", "src"), ("default", "dst"))
    before = last_event_id(ca)

    def unchanged() -> None:
        assert last_event_id(ca) == before
        settle(a, b)
        for c in (ca, cb):
            assert _names(c, "src") == ["ds=x/hr=1", "ds=y/hr=1"]
            assert _names(c, "dst") == ["ds=y/hr=1"]
        assert (wh / "src" / "ds=x" / "hr=1" / "f").read_bytes() == b"1"
        assert not (wh / "dst" / "ds=x").exists()

    yield ca, unchanged, wh


DIFFERENT = "The tables have different schemas. Their partitions cannot be exchanged."
TRANSACTIONAL = "Exchange partition is not allowed with transactional tables."
NOT_CONTINUOUS = "Partition values specified are not continuous."


@pytest.mark.parametrize(
    ("spec", "source", "dest", "message"),
    [
        pytest.param({"ds": "x"}, "src", "wide", DIFFERENT, id="different-columns"),
        pytest.param({"ds": "x"}, "src", "rekeyed", DIFFERENT, id="different-keys"),
        pytest.param(
            {"ds": "z"},
            "src",
            "dst",
            f"No partition is found with the values {{ds=z}} for {SRC}",
            id="missing-partition",
        ),
        pytest.param(
            {"ds": "y"},
            "src",
            "dst",
            "The partition ds=y/hr=1 already exists in the table dst",
            id="already-in-destination",
        ),
        pytest.param(
            {"ds": "x"},
            "src",
            "nope",
            "The destination table hive.default.nope not found",
            id="missing-destination",
        ),
        pytest.param(
            {"ds": "x"},
            "nope",
            "dst",
            "The source table hive.default.nope not found",
            id="missing-source",
        ),
        pytest.param({"hr": "1"}, "src", "dst", NOT_CONTINUOUS, id="not-a-prefix"),
        pytest.param({"ds": "x"}, "acid_src", "acid", TRANSACTIONAL, id="transactional"),
        pytest.param({"ds": "x"}, "src", "acid", TRANSACTIONAL, id="transactional-destination"),
    ],
)
def test_a_refused_exchange_raises_meta_exception_and_changes_nothing(
    T, refused, spec, source, dest, message
) -> None:
    """Hive's messages exactly; ours (the checks Hive's DDL makes) by their first sentence."""
    ca, unchanged, _ = refused
    with raises(T.MetaException) as info:
        ca.exchange_partitions(spec, "default", source, "default", dest)
    if message in (TRANSACTIONAL, NOT_CONTINUOUS):
        assert info.value.message.startswith(message), info.value.message
    else:
        assert info.value.message == message
    unchanged()


def test_an_exchange_whose_destination_directory_exists_changes_nothing(T, refused) -> None:
    ca, unchanged, wh = refused
    write_files(wh / "dst" / "ds=x" / "hr=1", {"stale": b""})
    with raises(T.MetaException, contains="already exists"):
        ca.exchange_partition({"ds": "x", "hr": "1"}, "default", "src", "default", "dst")
    assert (wh / "dst" / "ds=x" / "hr=1" / "stale").exists()
    (wh / "dst" / "ds=x" / "hr=1" / "stale").unlink()
    (wh / "dst" / "ds=x" / "hr=1").rmdir()
    (wh / "dst" / "ds=x").rmdir()
    unchanged()


def test_an_exchange_into_a_table_outside_the_roots_is_refused(T, refused, tmp_path) -> None:
    ca, unchanged, _ = refused
    with raises(T.MetaException, contains="outside the directories this metastore may change"):
        ca.exchange_partitions({"ds": "x"}, "default", "src", "default", "ext")
    assert not (tmp_path / "outside").exists()
    assert ca.get_partitions("default", "ext", -1) == []
    unchanged()


def test_a_failed_move_puts_the_moved_directories_back_and_commits_nothing(T, pair) -> None:
    (a, b), (ca, cb), wh = pair
    keys = ["ds:string", "hr:string", "mn:string"]
    _table(ca, T, "src", keys=keys)
    _table(ca, T, "dst", keys=keys)
    _add(ca, T, "src", ["x", "1", "0"], ["x", "2", "0"])
    for hr in ("1", "2"):
        write_files(wh / "src" / "ds=x" / f"hr={hr}" / "mn=0", {"f": hr.encode()})
    # the second partition's destination parent is a plain file: its rename fails after the
    # first partition's directory has moved
    write_files(wh / "dst" / "ds=x", {"hr=2": b"in the way"})
    _warm((a, b), (ca, cb), ("default", "src"), ("default", "dst"))
    before = last_event_id(ca)

    with raises(T.MetaException, contains="Unable to move partition data from"):
        ca.exchange_partitions({"ds": "x"}, "default", "src", "default", "dst")

    assert last_event_id(ca) == before
    for hr in ("1", "2"):
        assert (wh / "src" / "ds=x" / f"hr={hr}" / "mn=0" / "f").read_bytes() == hr.encode()
    assert not (wh / "dst" / "ds=x" / "hr=1").exists()
    settle(a, b)
    for c in (ca, cb):
        assert [p.values for p in c.get_partitions("default", "src", -1)] == [
            ["x", "1", "0"],
            ["x", "2", "0"],
        ]
        assert c.get_partitions("default", "dst", -1) == []


def test_an_exchange_across_catalogs_is_refused(T, refused) -> None:
    ca, unchanged, _ = refused
    with raises(T.MetaException, "You cannot move a partition across catalogs"):
        ca.exchange_partitions({"ds": "x"}, "@hive#default", "src", "@other#default", "dst")
    unchanged()


def test_a_partition_stored_outside_its_table_directory_keeps_its_location(T, pair) -> None:
    (a, b), (ca, cb), wh = pair
    _table(ca, T, "src")
    _table(ca, T, "dst")
    own = wh / "elsewhere" / "x1"
    ca.add_partition(partition(T, "default", "src", ["x", "1"], location=uri(own)))
    write_files(own, {"f": b"kept"})

    ca.exchange_partition({"ds": "x", "hr": "1"}, "default", "src", "default", "dst")

    settle(a, b)
    for c in (ca, cb):
        assert c.get_partitions("default", "src", -1) == []
        assert c.get_partition("default", "dst", ["x", "1"]).sd.location == uri(own)
    assert (own / "f").read_bytes() == b"kept"
    assert not (wh / "dst" / "ds=x").exists()


def test_column_statistics_of_exchanged_partitions_go_with_the_source_rows(T, pair) -> None:
    """As Hive's ObjectStore: the partitions are dropped from the source with their column
    statistics and added to the destination without any (their parameters are kept)."""
    (a, b), (ca, cb), _ = pair
    _table(ca, T, "src")
    _table(ca, T, "dst")
    _add(ca, T, "src", ["x", "1"])
    desc = T.ColumnStatisticsDesc(
        isTblLevel=False, dbName="default", tableName="src", partName="ds=x/hr=1"
    )
    long_stats = T.LongColumnStatsData(lowValue=1, highValue=9, numNulls=0, numDVs=4)
    obj = T.ColumnStatisticsObj(
        colName="a", colType="int", statsData=T.ColumnStatisticsData(longStats=long_stats)
    )
    ca.update_partition_column_statistics(
        T.ColumnStatistics(statsDesc=desc, statsObj=[obj], engine="hive")
    )
    params = ca.get_partition("default", "src", ["x", "1"]).parameters

    ca.exchange_partition({"ds": "x", "hr": "1"}, "default", "src", "default", "dst")

    settle(a, b)
    for c in (ca, cb):
        assert c.get_partition("default", "dst", ["x", "1"]).parameters == params
        for tbl in ("src", "dst"):
            rqst = T.PartitionsStatsRequest(
                dbName="default", tblName=tbl, colNames=["a"], partNames=["ds=x/hr=1"]
            )
            assert c.get_partitions_statistics_req(rqst).partStats == {}
