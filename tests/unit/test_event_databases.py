"""Which databases an event names: the column, the message's own fields and its embedded
objects; an unreadable message is reported as unknown (None), so it can be hidden."""

from __future__ import annotations

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import messages as m
from hms_cache_proxy.store.events.databases import event_databases


def _event(body: dict, db: str | None = None, fmt: str = m.GZIP_FORMAT) -> hms.NotificationEvent:
    return hms.NotificationEvent(
        eventId=1, eventTime=0, eventType="X", dbName=db, message=m.encode(body, fmt),
        messageFormat=fmt,
    )  # fmt: skip


def _table(db: str, name: str = "t") -> hms.Table:
    return hms.Table(tableName=name, dbName=db, sd=hms.StorageDescriptor(), parameters={})


def test_transaction_messages_name_their_databases() -> None:
    assert event_databases(_event(m.abort_txn(7, ["Secret"]))) == {"secret"}
    assert event_databases(_event(m.open_txn(1, 3))) == set()
    commit = m.commit_txn(9)
    commit.update(databases=["pub", "secret"], tables=["t", "other.u"])
    assert event_databases(_event(commit, fmt=m.JSON_FORMAT)) == {"pub", "secret", "other"}
    alloc = m.alloc_write_id([(1, 1)], "secret", "t", "secret.t:1:9223372036854775807::")
    assert event_databases(_event(alloc, db="secret")) == {"secret"}
    listed = {"validTxnWriteIdList": "5$pub.t:1::$hidden.u:2::"}
    assert event_databases(_event(listed)) == {"pub", "hidden"}


def test_embedded_objects_count_a_rename_into_another_database() -> None:
    renamed = m.alter_table(_table("pub"), _table("secret"))
    assert event_databases(_event(renamed, db="pub")) == {"pub", "secret"}
    assert event_databases(_event(m.create_database(hms.Database(name="Sales")))) == {"sales"}


def test_an_unreadable_message_is_unknown() -> None:
    bad = hms.NotificationEvent(
        eventId=1, eventTime=0, eventType="X", dbName="pub", message="not base64 gzip",
        messageFormat=m.GZIP_FORMAT,
    )  # fmt: skip
    assert event_databases(bad) is None
    broken_object = _event({"db": "pub", "tableObjJson": "{not tjson"})
    assert event_databases(broken_object) is None
    assert event_databases(hms.NotificationEvent(eventId=1, dbName="Pub")) == {"pub"}
