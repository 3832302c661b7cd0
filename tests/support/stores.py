"""The SQL store and its transaction service over one database, composed as app.py composes
them (with the settings' defaults), for tests and scripts that use the store in-process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.message_base import WRITER_NAME
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.sql.sql_store import SqlStore
from hms_cache_proxy.store.txn.txn_service import TxnConfig, TxnService


def sql_store(db: Database, warehouse_uri: str, txn_config: TxnConfig | None = None) -> SqlStore:
    """A SqlStore handed its TxnService, both writing to one event log."""
    events = EventLog(IdAllocator(db), max_event_response=10_000)
    messages = MessageBuilder(writer=WRITER_NAME)
    txn = TxnService(db, events, messages, txn_config)
    return SqlStore(db, txn, events=events, messages=messages, warehouse_uri=warehouse_uri)


@contextmanager
def txn_service_on(url: str) -> Iterator[TxnService]:
    """The transaction service of a store over a freshly initialised database at ``url``."""
    db = Database(url)
    init_db(db, "file:/tmp/wh")
    try:
        yield sql_store(db, "file:/tmp/wh").txn
    finally:
        db.dispose()
