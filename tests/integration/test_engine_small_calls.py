"""Small calls engines make, through Apache Thrift's client on SQLite and PostgreSQL:
get_table_names_by_filter (Hive's table-filter language), the partition_name_* helpers and
markPartitionForEvent / isPartitionMarkedForEvent (PARTITION_EVENTS)."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from thrift.Thrift import TApplicationException

from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from tests.support.cache import clients, entry, instances, settle
from tests.support.metastore import raises, table
from tests.support.server import running_service

OWNER = "hive_filter_field_owner__"
ACCESS = "hive_filter_field_last_access__"
PARAM = "hive_filter_field_params__"


def _tables(client, T) -> None:
    for name, owner, access, params in [
        ("t_alice", "alice", 0, {"team": "red", "tier": "1"}),
        ("t_bob", "bob", 100, {"team": "blue"}),
        ("t_carol", "carol", 200, {}),
    ]:
        t = table(T, "default", name, owner=owner, params=params)
        t.lastAccessTime = access
        client.create_table(t)


def test_get_table_names_by_filter_over_owner_access_and_parameters(client, T) -> None:
    _tables(client, T)

    def names(text: str, limit: int = -1) -> list[str]:
        return client.get_table_names_by_filter("default", text, limit)

    assert names(f'{OWNER} = "bob"') == ["t_bob"]
    assert names(f'{OWNER} like ".*o.*"') == ["t_bob", "t_carol"]
    assert names(f'{OWNER} <> "bob"') == ["t_alice", "t_carol"]
    assert names(f"{ACCESS} > 50") == ["t_bob", "t_carol"]
    assert names(f'{ACCESS} = 0 or {OWNER} = "carol"') == ["t_alice", "t_carol"]
    assert names(f'{PARAM}team = "red"') == ["t_alice"]
    # A table without the parameter matches neither = nor <>: NULL, as in Hive's query.
    assert names(f'{PARAM}team <> "red"') == ["t_bob"]
    assert names(f'{PARAM}team like ".*e.*" and {PARAM}tier = "1"') == ["t_alice"]
    assert names("") == ["t_alice", "t_bob", "t_carol"]
    assert names("", 2) == ["t_alice", "t_bob"]
    assert names(f'{OWNER} = "nobody"') == []
    assert client.get_table_names_by_filter("no_such_db", f'{OWNER} = "bob"', -1) == []


def test_get_table_names_by_filter_errors(client, T) -> None:
    with raises(T.UnknownDBException, "DB name is null or empty"):
        client.get_table_names_by_filter("", f'{OWNER} = "x"', -1)
    with raises(T.MetaException, contains="Invalid key name in filter: <owner>"):
        client.get_table_names_by_filter("default", 'owner = "x"', -1)
    with raises(T.MetaException, contains="Error parsing table filter"):
        client.get_table_names_by_filter("default", f"{OWNER} = ", -1)
    with raises(T.MetaException, contains="Cannot compare"):
        client.get_table_names_by_filter("default", f'{ACCESS} > "soon"', -1)


def test_partition_name_helpers(client) -> None:
    assert client.partition_name_to_vals("ds=2024%2F01/hr=1") == ["2024/01", "1"]
    assert client.partition_name_to_spec("ds=2024%2F01/hr=1") == {"ds": "2024/01", "hr": "1"}
    assert client.partition_name_to_vals("") == []
    assert client.partition_name_to_spec("") == {}
    # Components that are not key=value are skipped, as Hive's makeSpecFromName skips them.
    assert client.partition_name_to_vals("junk/ds=1") == ["1"]


def test_partition_name_has_valid_characters_follows_the_whitelist(client, T) -> None:
    assert client.partition_name_has_valid_characters(["a b", "ä"], True)  # no whitelist
    client.setMetaConf("hive.metastore.partition.name.whitelist.pattern", "[a-z0-9]*")
    assert client.partition_name_has_valid_characters(["abc", "123"], True)
    assert client.partition_name_has_valid_characters(["abc", "a b"], False) is False
    with raises(
        T.MetaException,
        "Partition value 'a b' contains a character not matched by whitelist pattern "
        "'[a-z0-9]*'.  (configure with metastore.partition.name.whitelist.pattern)",
    ):
        client.partition_name_has_valid_characters(["abc", "a b"], True)


def test_partition_marks_are_rows_of_partition_events(client, T, service) -> None:
    client.create_table(table(T, "default", "pt", keys=["ds:string", "hr:int"]))
    spec = {"ds": "2024-01-01", "hr": "5"}
    load_done = T.PartitionEventType.LOAD_DONE
    assert client.isPartitionMarkedForEvent("default", "pt", spec, load_done) is False
    client.markPartitionForEvent("default", "PT", spec, load_done)
    assert client.isPartitionMarkedForEvent("default", "pt", spec, load_done) is True
    other = {"ds": "2024-01-01", "hr": "6"}
    assert client.isPartitionMarkedForEvent("default", "pt", other, load_done) is False

    pe = schema.PARTITION_EVENTS
    with service.database.read() as conn:
        rows = conn.execute(
            select(
                pe.c.PART_NAME_ID,
                pe.c.DB_NAME,
                pe.c.TBL_NAME,
                pe.c.PARTITION_NAME,
                pe.c.EVENT_TYPE,
                pe.c.EVENT_TIME,
            )
        ).all()
        seq = conn.execute(
            select(schema.SEQUENCE_TABLE.c.NEXT_VAL).where(
                schema.SEQUENCE_TABLE.c.SEQUENCE_NAME == idseq.PARTITION_EVENT.name
            )
        ).scalar()
    ((event_id, db, tbl, part, kind, when),) = rows
    assert (db, tbl, part, kind) == ("default", "pt", "2024-01-01,5", 1)
    assert when > 10**12  # milliseconds
    assert seq is not None and seq > event_id  # the id was reserved in SEQUENCE_TABLE


def test_partition_mark_errors(client, T) -> None:
    client.create_table(table(T, "default", "pt", keys=["ds:string", "hr:int"]))
    load_done = T.PartitionEventType.LOAD_DONE
    with raises(T.UnknownTableException, "Table: missing is not found."):
        client.markPartitionForEvent("default", "missing", {"ds": "x"}, load_done)
    with raises(
        T.InvalidPartitionException,
        "Number of partition columns in table: 2 doesn't match with number of supplied "
        "partition values: 1",
    ):
        client.isPartitionMarkedForEvent("default", "pt", {"ds": "x"}, load_done)
    with raises(T.InvalidPartitionException, "No value found for partition column: hr"):
        client.markPartitionForEvent("default", "pt", {"ds": "x", "HR": "1"}, load_done)
    with raises(T.MetaException, contains="Unknown PartitionEventType 7"):
        client.markPartitionForEvent("default", "pt", {"ds": "x", "hr": "1"}, 7)


def test_partition_name_to_vals_without_a_name_is_an_error(client) -> None:
    with pytest.raises((TApplicationException, Exception), match="part_name must be set"):
        client.partition_name_to_vals(None)


@pytest.mark.postgres
def test_table_filter_on_a_second_instance_sees_a_parameter_change(pg_server, tmp_path, T) -> None:
    """get_table_names_by_filter reads tables through the cache: a change written through one
    instance is seen by the other once its cache has applied the event."""
    url = pg_server.new_database()
    try:
        with instances(url, tmp_path) as svcs, clients(*svcs) as (first, second):
            first.create_table(table(T, "default", "t1", params={"state": "raw"}))
            settle(*svcs)
            flt = f'{PARAM}state = "clean"'
            assert second.get_table_names_by_filter("default", flt, -1) == []  # now cached
            changed = first.get_table("default", "t1")
            changed.parameters["state"] = "clean"
            first.alter_table("default", "t1", changed)
            settle(*svcs)
            assert second.get_table_names_by_filter("default", flt, -1) == ["t1"]
    finally:
        pg_server.drop_database(url.rsplit("/", 1)[1])


@pytest.mark.postgres
def test_table_filter_like_is_a_jdoql_matches_pattern_from_cache_and_database(
    pg_server, tmp_path, T
) -> None:
    """LIKE in a table filter is Hive's JDOQL matches() pattern as DataNucleus runs it (``.*``
    any text, ``.`` one character, ``%`` itself, ``(?i)`` ignores case, other regex syntax
    literal), the same answer from a caching instance's entries and from the database."""
    url = pg_server.new_database()
    owners = {"t_diff": "diff", "t_diffuse": "diffuse", "t_upper": "Diff", "t_pct": "50%"}
    cases = {
        f'{OWNER} like "diff.*"': ["t_diff", "t_diffuse"],  # a stock metastore's answer
        f'{OWNER} like "d.ff"': ["t_diff"],
        f'{OWNER} like "diff%"': [],
        f'{OWNER} like "50%"': ["t_pct"],
        f'{OWNER} like "(?i)DIFF"': ["t_diff", "t_upper"],
        f'{OWNER} like "d[i]ff"': [],
        f'{OWNER} not like "diff.*"': ["t_pct", "t_upper"],
        f'{PARAM}tier like "gold.*"': ["t_diff"],
    }
    try:
        with (
            instances(url, tmp_path, n=1) as [cached],
            running_service(url, tmp_path / "warehouse", cache_enabled=False) as direct,
            clients(cached, direct) as (through_cache, through_database),
        ):
            for name, owner in owners.items():
                params = {"tier": "gold-1"} if name == "t_diff" else {}
                through_database.create_table(table(T, "default", name, owner=owner, params=params))
            through_cache.get_table_names_by_filter("default", "", -1)  # loads the entries
            settle(cached)
            assert all(entry(cached, "default", name) is not None for name in owners)
            for flt, expected in cases.items():
                assert through_cache.get_table_names_by_filter("default", flt, -1) == expected, flt
                assert through_database.get_table_names_by_filter("default", flt, -1) == expected
    finally:
        pg_server.drop_database(url.rsplit("/", 1)[1])
