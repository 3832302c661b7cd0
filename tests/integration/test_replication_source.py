"""This service as a REPL DUMP source, through Apache Thrift's client on SQLite and PostgreSQL:
COMMIT_TXN messages the dump can extend with the txn's write-event info, file URIs in Hive's
four-part form, and replication properties of a database changed without an event (as Hive's
AlterDatabaseEvent skips them) except where a cache must learn of them."""

from __future__ import annotations

from typing import Any

import pytest

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import messages
from tests.integration.test_txn_calls import (
    allocate,
    commit,
    events,
    last_event_id,
    open_txns,
    transactional_table,
)
from tests.support.cache import Counted, clients, instances, settle
from tests.support.repl_dump import add_write_event_info, decode_file_uri, first_table


def _write(client: Any, T: Any, txn: int, write_id: int, table: str) -> None:
    info = T.InsertEventRequestData(
        filesAdded=[f"file:/w/{table}/delta_{write_id}_{write_id}_0000/bucket_0"],
        filesAddedChecksum=["c0"],
        subDirectoryList=[f"delta_{write_id}_{write_id}_0000"],
    )
    client.add_write_notification_log(
        T.WriteNotificationLogRequest(
            txnId=txn, writeId=write_id, db="default", table=table, fileInfo=info
        )
    )


def test_repl_dump_extends_commit_txn_with_the_tables_it_wrote(client, T) -> None:
    transactional_table(client, T, "acid")
    transactional_table(client, T, "other")
    [txn] = open_txns(client, T)
    write_id = allocate(client, T, "acid", [txn])[txn]
    allocate(client, T, "other", [txn])
    _write(client, T, txn, write_id, "acid")
    start = last_event_id(client)
    commit(client, T, txn)
    [(_, body, _)] = [e for e in events(client, T, start) if e[0] == messages.COMMIT_TXN]
    infos = client.get_all_write_event_info(
        T.GetAllWriteEventInfoRequest(txnId=txn, dbName="default")
    )
    dumped = add_write_event_info(body, infos)
    assert dumped["writeIds"] == [write_id] and dumped["tables"] == ["acid"]
    table = first_table(dumped, hms.Table)
    assert table is not None and table.tableName == "acid"  # not the null a filled list led to
    # the txn's writes stay readable to this service's own caches
    assert messages.commit_writes(body) == [("default", "acid", 1), ("default", "other", 1)]


def test_write_notification_files_decode_as_hive_reads_them(client, T) -> None:
    transactional_table(client, T, "acid")
    [txn] = open_txns(client, T)
    write_id = allocate(client, T, "acid", [txn])[txn]
    _write(client, T, txn, write_id, "acid")
    [info] = client.get_all_write_event_info(T.GetAllWriteEventInfoRequest(txnId=txn))
    file, checksum, cmroot, subdir = decode_file_uri(info.files)
    assert file == "file:/w/acid/delta_1_1_0000/bucket_0"
    assert subdir == "delta_1_1_0000"  # the fourth part: the target rebuilds the path with it
    assert (checksum, cmroot) == (None, None)  # no change-management root: Hive writes neither
    commit(client, T, txn)


def _alter_params(client: Any, name: str, change: dict[str, str | None]) -> None:
    db = client.get_database(name)
    params = dict(db.parameters or {})
    for key, value in change.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    db.parameters = params
    client.alter_database(name, db)


def test_replication_property_alters_write_no_alter_database_event(client, T) -> None:
    client.create_database(T.Database(name="src", parameters={"repl.source.for": "p1"}))
    start = last_event_id(client)
    _alter_params(client, "src", {"bootstrap.dump.state.9f3c": "ACTIVE"})
    _alter_params(client, "src", {"bootstrap.dump.state.9f3c": None, "repl.last.id": "12"})
    assert events(client, T, start) == []
    assert client.get_database("src").parameters["repl.last.id"] == "12"

    _alter_params(client, "src", {"owner.team": "etl", "repl.last.id": "13"})
    [(kind, body, _)] = events(client, T, start)
    assert kind == messages.ALTER_DATABASE and messages.repl_left_out(body)
    after = messages.database_after(body)
    assert after.parameters == {"owner.team": "etl"}  # repl state never reaches a replica


def test_a_new_repl_last_id_records_the_targets_event_id(client, T) -> None:
    client.create_database(T.Database(name="tgt", parameters={"repl.target.for": "true"}))
    _alter_params(client, "tgt", {"repl.last.id": "40"})
    params = client.get_database("tgt").parameters
    assert params["repl.target.last.id"] == str(last_event_id(client))
    _alter_params(client, "tgt", {"repl.resume.started": "true", "repl.last.id": "41"})
    assert (
        client.get_database("tgt").parameters["repl.target.last.id"]
        == params["repl.target.last.id"]
    )  # a resume after failover keeps it


def test_the_first_replication_property_is_an_event_so_caches_learn_it(client, T) -> None:
    client.create_database(T.Database(name="plain", parameters={"k": "v"}))
    start = last_event_id(client)
    _alter_params(client, "plain", {"repl.source.for": "p1"})
    [(kind, body, _)] = events(client, T, start)
    assert kind == messages.ALTER_DATABASE and messages.repl_left_out(body)
    assert messages.database_after(body).parameters == {"k": "v"}


@pytest.mark.postgres
def test_a_caching_instance_never_serves_stale_replication_state(T, pg_server, tmp_path) -> None:
    url = pg_server.new_database()
    try:
        with instances(url, tmp_path) as (a, b), clients(a, b) as (ca, cb):
            ca.create_database(T.Database(name="plain", parameters={"k": "v"}))
            settle(a, b)
            with Counted() as first:
                cb.get_database("plain")
                cb.get_database("plain")
            assert first.hits("get_database") >= 1  # an ordinary database is cached
            _alter_params(ca, "plain", {"repl.target.for": "true", "repl.last.id": "5"})
            settle(a, b)
            _alter_params(ca, "plain", {"repl.last.id": "6"})  # no event at all
            settle(a, b)
            with Counted() as later:
                assert cb.get_database("plain").parameters["repl.last.id"] == "6"
            assert later.hits("get_database") == 0
            assert later.misses("get_database", "replication") == 1
    finally:
        pg_server.drop_database(url.rsplit("/", 1)[1])
