"""A client allowed only ``pub`` learns nothing about ``secret`` through the notification log
and cannot finish another client's transaction on it; flushCache needs an admin.

Over real SASL PLAIN connections (thrift_sasl + pure-sasl) to the service on 127.0.0.1, on
SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from thriftpy2.thrift import TApplicationException

from hms_cache_proxy.handler.access import READ_ONLY_MESSAGE
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import messages
from tests.support.metastore import table
from tests.support.security import sasl_client
from tests.support.server import running_service

USERS = {"owner": "owner-password", "reader": "reader-password"}


def _acid_table(c: Any, db: str, name: str) -> None:
    acid = {"transactional": "true", "transactional_properties": "default"}
    c.create_table(table(hms, db, name, params=acid))


def _open(c: Any) -> int:
    return c.open_txns(hms.OpenTxnRequest(num_txns=1, user="owner", hostname="h")).txn_ids[0]


def _allocate(c: Any, txn: int, db: str, tbl: str) -> None:
    c.allocate_table_write_ids(
        hms.AllocateTableWriteIdsRequest(dbName=db, tableName=tbl, txnIds=[txn])
    )


@pytest.fixture(params=[True, False], ids=["cache_on", "cache_off"])
def restricted(database_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """owner may use everything (and is the admin); reader only ``pub``. With the cache on
    (the default configuration: the caching store answers) and off (the direct store)."""
    with running_service(
        database_url,
        tmp_path / "wh",
        cache_enabled=request.param,
        sasl_enabled=True,
        sasl_users=USERS,
        allowed_databases_by_user={"owner": [".*"], "reader": ["pub"]},
        admin_users=["owner"],
    ) as svc:
        yield svc


def test_events_naming_a_hidden_database_are_not_shown(restricted: Any) -> None:
    owner = sasl_client(restricted.port, "owner", USERS["owner"])
    reader = sasl_client(restricted.port, "reader", USERS["reader"])
    for db in ("pub", "secret"):
        owner.create_database(hms.Database(name=db, parameters={}))
        _acid_table(owner, db, "t")
    committed, aborted, public = _open(owner), _open(owner), _open(owner)
    _allocate(owner, committed, "secret", "t")
    _allocate(owner, aborted, "secret", "t")
    _allocate(owner, public, "pub", "t")
    owner.commit_txn(hms.CommitTxnRequest(txnid=committed))
    owner.abort_txn(hms.AbortTxnRequest(txnid=aborted))
    owner.commit_txn(hms.CommitTxnRequest(txnid=public))

    every = owner.get_next_notification(hms.NotificationEventRequest(lastEvent=0)).events
    seen = reader.get_next_notification(hms.NotificationEventRequest(lastEvent=0)).events
    assert any("secret" in _text(e) for e in every)  # the owner sees them: the test can fail
    assert {e.eventType for e in every} >= {"ABORT_TXN", "COMMIT_TXN"}
    assert seen, "the reader sees the events of pub"
    for e in seen:
        assert "secret" not in _text(e), (e.eventType, _text(e))
        assert e.dbName in (None, "pub")
    assert {e.eventType for e in seen} >= {"OPEN_TXN", "COMMIT_TXN", "ALLOC_WRITE_ID_EVENT"}

    # the count agrees with what each may read, with and without a database name
    def count(c: Any, db: str) -> int:
        rqst = hms.NotificationEventsCountRequest(fromEventId=0, dbName=db)
        return c.get_notification_events_count(rqst).eventsCount

    assert count(reader, "") == len(seen)
    assert count(owner, "") == len(every)
    assert count(reader, "pub") == len([e for e in seen if e.dbName in (None, "pub")])
    with pytest.raises(TApplicationException, match="database hive.secret"):  # as if absent
        count(reader, "secret")
    owner.close()
    reader.close()


def _text(event: Any) -> str:
    body = messages.decode(event.message, event.messageFormat) if event.message else {}
    return f"{event.dbName} {event.tableName} {body}".lower()


def test_only_a_client_allowed_on_its_databases_may_finish_a_transaction(
    restricted: Any,
) -> None:
    owner = sasl_client(restricted.port, "owner", USERS["owner"])
    reader = sasl_client(restricted.port, "reader", USERS["reader"])
    for db in ("pub", "secret"):
        owner.create_database(hms.Database(name=db, parameters={}))
        _acid_table(owner, db, "t")
    theirs, mine = _open(owner), _open(reader)
    _allocate(owner, theirs, "secret", "t")
    _allocate(reader, mine, "pub", "t")

    with pytest.raises(hms.NoSuchTxnException, match="may not use .allowed_databases"):
        reader.commit_txn(hms.CommitTxnRequest(txnid=theirs))
    with pytest.raises(hms.NoSuchTxnException, match="allowed_databases"):
        reader.abort_txn(hms.AbortTxnRequest(txnid=theirs))
    with pytest.raises(hms.NoSuchTxnException, match="allowed_databases"):
        reader.abort_txns(hms.AbortTxnsRequest(txn_ids=[mine, theirs]))
    with pytest.raises(hms.MetaException, match="secret"):  # write ids in secret: refused
        _allocate(reader, mine, "secret", "t")
    lock = owner.lock(
        hms.LockRequest(
            component=[
                hms.LockComponent(
                    type=hms.LockType.EXCLUSIVE,
                    level=hms.LockLevel.TABLE,
                    dbname="secret",
                    tablename="t",
                    operationType=hms.DataOperationType.NO_TXN,
                )
            ],
            user="owner",
            hostname="h",
        )
    ).lockid
    with pytest.raises(hms.NoSuchLockException, match="allowed_databases"):
        reader.unlock(hms.UnlockRequest(lockid=lock))

    open_ids = set(owner.get_open_txns().open_txns)
    assert {theirs, mine} <= open_ids  # nothing was committed or aborted by the refusals
    reader.commit_txn(hms.CommitTxnRequest(txnid=mine))  # its own, on pub: fine
    owner.commit_txn(hms.CommitTxnRequest(txnid=theirs))
    owner.unlock(hms.UnlockRequest(lockid=lock))
    owner.close()
    reader.close()


@pytest.mark.parametrize("cache_enabled", [True, False], ids=["cache_on", "cache_off"])
def test_flush_cache_needs_an_admin_and_a_writable_instance(
    database_url: str, tmp_path: Path, cache_enabled: bool
) -> None:
    with running_service(
        database_url,
        tmp_path / "wh",
        cache_enabled=cache_enabled,
        sasl_enabled=True,
        sasl_users=USERS,
        admin_users=["owner"],
    ) as svc:
        owner = sasl_client(svc.port, "owner", USERS["owner"])
        reader = sasl_client(svc.port, "reader", USERS["reader"])
        owner.flushCache()
        with pytest.raises(TApplicationException, match="admin_users.*'reader' is not one"):
            reader.flushCache()
        assert reader.get_all_databases() == ["default"]  # the connection still serves
        owner.close()
        reader.close()
    with running_service(
        database_url, tmp_path / "wh", read_only=True, cache_enabled=cache_enabled
    ) as svc:
        from thriftpy2.rpc import make_client

        from hms_cache_proxy.idl import service

        c = make_client(service, "127.0.0.1", svc.port, timeout=30_000)
        with pytest.raises(TApplicationException) as refused:
            c.flushCache()
        assert refused.value.message == READ_ONLY_MESSAGE
        c.close()


def test_a_run_of_hidden_events_does_not_end_a_restricted_clients_page(restricted: Any) -> None:
    owner = sasl_client(restricted.port, "owner", USERS["owner"])
    reader = sasl_client(restricted.port, "reader", USERS["reader"])
    owner.create_database(hms.Database(name="secret", parameters={}))
    for i in range(8):  # eight hidden events in a row
        owner.create_table(table(hms, "secret", f"t{i}"))
    owner.create_database(hms.Database(name="pub", parameters={}))
    owner.create_table(table(hms, "pub", "visible"))

    page = reader.get_next_notification(hms.NotificationEventRequest(lastEvent=0, maxEvents=2))
    assert [(e.eventType, e.dbName) for e in page.events] == [
        ("CREATE_DATABASE", "pub"),
        ("CREATE_TABLE", "pub"),
    ]
    after = page.events[-1].eventId
    rest = reader.get_next_notification(hms.NotificationEventRequest(lastEvent=after))
    assert rest.events == []
    owner.close()
    reader.close()


def _lock(c: Any, db: str, txn: int | None = None) -> Any:
    """A table lock on ``db``.t: a shared write of ``txn``, or an exclusive lock outside any."""
    component = hms.LockComponent(
        type=hms.LockType.SHARED_WRITE if txn else hms.LockType.EXCLUSIVE,
        level=hms.LockLevel.TABLE,
        dbname=db,
        tablename="t",
        operationType=hms.DataOperationType.UPDATE if txn else hms.DataOperationType.NO_TXN,
        isTransactional=bool(txn),
    )
    return c.lock(hms.LockRequest(component=[component], txnid=txn, user="u", hostname="h"))


def test_transactions_and_locks_finish_on_a_secured_caching_instance(
    pg_url: str, tmp_path: Path
) -> None:
    """The default configuration (cache on) with both allow-lists set, on PostgreSQL: commit,
    abort and unlock by an allowed client answer as without allow-lists; a client not allowed
    on a database the transaction or lock touches is refused, and the refusal changes nothing."""
    with running_service(
        pg_url,
        tmp_path / "wh",
        sasl_enabled=True,
        sasl_users=USERS,
        allowed_databases=["pub"],  # reader has no list of its own: this one
        allowed_databases_by_user={"owner": [".*"]},
    ) as svc:
        assert svc.cache is not None  # the caching store answers
        owner = sasl_client(svc.port, "owner", USERS["owner"])
        reader = sasl_client(svc.port, "reader", USERS["reader"])
        for db in ("pub", "secret"):
            owner.create_database(hms.Database(name=db, parameters={}))
            _acid_table(owner, db, "t")

        committed = _open(reader)
        _allocate(reader, committed, "pub", "t")
        assert _lock(reader, "pub", committed).state == hms.LockState.ACQUIRED
        reader.commit_txn(hms.CommitTxnRequest(txnid=committed))
        aborted = _open(reader)
        _allocate(reader, aborted, "pub", "t")
        reader.abort_txn(hms.AbortTxnRequest(txnid=aborted))
        batch = [_open(reader), _open(reader)]
        for txn in batch:
            _allocate(reader, txn, "pub", "t")
        reader.abort_txns(hms.AbortTxnsRequest(txn_ids=batch))
        lock = _lock(reader, "pub")
        assert lock.state == hms.LockState.ACQUIRED
        reader.unlock(hms.UnlockRequest(lockid=lock.lockid))

        states = {t.id: t.state for t in reader.get_open_txns_info().open_txns}
        assert committed not in states
        assert [states[t] for t in (aborted, *batch)] == [hms.TxnState.ABORTED] * 3
        assert reader.show_locks(hms.ShowLocksRequest()).locks == []
        ids = reader.get_valid_write_ids(
            hms.GetValidWriteIdsRequest(fullTableNames=["pub.t"])
        ).tblValidWriteIds[0]
        assert ids.writeIdHighWaterMark == 4
        assert sorted(ids.invalidWriteIds) == [2, 3, 4]  # write id 1 committed, the rest aborted
        assert reader.get_table("pub", "t").tableName == "t"

        # another's transaction and lock on secret: refused, and left as they were
        theirs = _open(owner)
        _allocate(owner, theirs, "secret", "t")
        with pytest.raises(hms.NoSuchTxnException, match="may not use .allowed_databases"):
            reader.commit_txn(hms.CommitTxnRequest(txnid=theirs))
        with pytest.raises(hms.NoSuchTxnException, match="allowed_databases"):
            reader.abort_txn(hms.AbortTxnRequest(txnid=theirs))
        with pytest.raises(hms.NoSuchTxnException, match="allowed_databases"):
            reader.abort_txns(hms.AbortTxnsRequest(txn_ids=[theirs]))
        held = _lock(owner, "secret").lockid
        with pytest.raises(hms.NoSuchLockException, match="allowed_databases"):
            reader.unlock(hms.UnlockRequest(lockid=held))
        assert theirs in owner.get_open_txns().open_txns
        assert [x.lockid for x in owner.show_locks(hms.ShowLocksRequest()).locks] == [held]
        owner.commit_txn(hms.CommitTxnRequest(txnid=theirs))
        owner.unlock(hms.UnlockRequest(lockid=held))
        assert owner.show_locks(hms.ShowLocksRequest()).locks == []
        owner.close()
        reader.close()
