"""Which databases an event names: the column, the message's own fields and its embedded
objects; an unreadable message is reported as unknown (None), so it can be hidden."""

from __future__ import annotations

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import message_base, messages
from hms_cache_proxy.store.events.databases import event_databases


def _event(
    body: dict, db: str | None = None, fmt: str = messages.GZIP_FORMAT
) -> hms.NotificationEvent:
    return hms.NotificationEvent(
        eventId=1, eventTime=0, eventType="X", dbName=db, message=messages.encode(body, fmt),
        messageFormat=fmt,
    )  # fmt: skip


def _table(db: str, name: str = "t") -> hms.Table:
    return hms.Table(tableName=name, dbName=db, sd=hms.StorageDescriptor(), parameters={})


def test_transaction_messages_name_their_databases() -> None:
    assert event_databases(_event(messages.abort_txn(7, ["Secret"]))) == {"secret"}
    assert event_databases(_event(messages.open_txn(1, 3))) == set()
    commit = messages.commit_txn(9)
    commit.update(databases=["pub", "secret"], tables=["t", "other.u"])
    assert event_databases(_event(commit, fmt=messages.JSON_FORMAT)) == {"pub", "secret", "other"}
    alloc = messages.alloc_write_id([(1, 1)], "secret", "t", "secret.t:1:9223372036854775807::")
    assert event_databases(_event(alloc, db="secret")) == {"secret"}
    listed = {"validTxnWriteIdList": "5$pub.t:1::$hidden.u:2::"}
    assert event_databases(_event(listed)) == {"pub", "hidden"}


def test_commit_txn_own_fields_name_their_databases() -> None:
    """Hive's lists stay null in our COMMIT_TXN: its writes and altered tables name them."""
    commit = messages.commit_txn(9)
    commit.update({message_base.TXN_WRITES: [["Secret", "t", 1]]})
    commit.update({message_base.TABLES_ALTERED: [["hive", "other", "u"]]})
    assert event_databases(_event(commit)) == {"secret", "other"}
    commit.update({message_base.TXN_WRITES: [["secret"], 7]})
    assert event_databases(_event(commit)) is None


def test_embedded_objects_count_a_rename_into_another_database() -> None:
    renamed = messages.alter_table(_table("pub"), _table("secret"))
    assert event_databases(_event(renamed, db="pub")) == {"pub", "secret"}
    assert event_databases(_event(messages.create_database(hms.Database(name="Sales")))) == {
        "sales"
    }


def test_an_unreadable_message_is_unknown() -> None:
    bad = hms.NotificationEvent(
        eventId=1, eventTime=0, eventType="X", dbName="pub", message="not base64 gzip",
        messageFormat=messages.GZIP_FORMAT,
    )  # fmt: skip
    assert event_databases(bad) is None
    broken_object = _event({"db": "pub", "tableObjJson": "{not tjson"})
    assert event_databases(broken_object) is None
    assert event_databases(hms.NotificationEvent(eventId=1, dbName="Pub")) == {"pub"}


def test_a_foreign_key_names_the_database_of_the_table_holding_it() -> None:
    fk = hms.SQLForeignKey(
        pktable_db="pub", pktable_name="p", pkcolumn_name="a", fktable_db="Secret",
        fktable_name="c", fkcolumn_name="a", key_seq=1, fk_name="f",
    )  # fmt: skip
    body = messages.MessageBuilder().add_constraints("foreignKeyListJson", [fk])
    assert event_databases(_event(body, db="pub")) == {"pub", "secret"}
    dropped = messages.MessageBuilder().drop_constraint("hive", "secret", "c", "f")
    assert event_databases(_event(dropped)) == {"secret"}
