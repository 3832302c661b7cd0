"""What every part of the SQL store shares: its collaborators, and lookups of owner rows."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, and_, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events.log import EventLog, NewEvent
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.sql import schema as s
from hms_cache_proxy.store.sql.engine import Database
from hms_cache_proxy.store.sql.ids import IdAllocator

DEFAULT_CATALOG = "hive"

PRINCIPAL_TYPES = {"USER": 1, "ROLE": 2, "GROUP": 3}
PRINCIPAL_NAMES = {v: k for k, v in PRINCIPAL_TYPES.items()}


def now() -> int:
    """Seconds since the epoch, as Hive stores createTime and friends."""
    return int(time.time())


def principal_type(name: str | None) -> int | None:
    return PRINCIPAL_TYPES.get(name.upper()) if name else None


def principal_name(value: int | None) -> str | None:
    return PRINCIPAL_NAMES.get(value) if value is not None else None


class SqlStoreBase:
    """State shared by the SQL store's parts (each part is a mixin of SqlStore)."""

    def __init__(
        self,
        db: Database,
        *,
        warehouse_uri: str,
        message_format: str = "gzip(json-2.0)",
        id_block_size: int = 100,
        notification_max_events: int = 10_000,
        server_uri: str = "",
    ) -> None:
        self.db = db
        self.ids = IdAllocator(db, id_block_size)
        self.events = EventLog(
            self.ids, message_format, max_event_response=notification_max_events
        )
        self.messages = MessageBuilder(server=server_uri)
        self.warehouse_uri = warehouse_uri.rstrip("/")

    # -- lookups inside a transaction ------------------------------------------------------------

    def _db_row(self, conn: Connection, cat: str, name: str, *, lock: bool = False) -> Any:
        """The DBS row of a database, or NoSuchObjectException."""
        stmt = select(s.DBS).where(and_(s.DBS.c.CTLG_NAME == cat, s.DBS.c.NAME == name))
        if lock:
            stmt = stmt.with_for_update()
        row = conn.execute(stmt).first()
        if row is None:
            # Hive 4's ObjectStore.getDatabase wording.
            raise hms.NoSuchObjectException(message=f"database {cat}.{name}")
        return row

    def _table_row(self, conn: Connection, cat: str, db: str, name: str, *, lock: bool = False) -> Any:
        """The TBLS row (with DB_ID) of a table, or NoSuchObjectException."""
        t, d = s.TBLS, s.DBS
        stmt = (
            select(t)
            .select_from(t.join(d, t.c.DB_ID == d.c.DB_ID))
            .where(and_(d.c.CTLG_NAME == cat, d.c.NAME == db, t.c.TBL_NAME == name))
        )
        if lock:
            stmt = stmt.with_for_update(of=t)
        row = conn.execute(stmt).first()
        if row is None:
            raise hms.NoSuchObjectException(message=f"{table_ref(cat, db, name)} table not found")
        return row

    def _emit(self, conn: Connection, events: Sequence[NewEvent]) -> list[int]:
        """Append this call's notification events: the last step of every write transaction."""
        return self.events.append(conn, events)


def java_list(items: Sequence[Any] | None) -> str:
    """Java's List.toString(), as Hive's messages print value lists: ``[a, b]``."""
    return "null" if items is None else "[" + ", ".join(str(x) for x in items) + "]"


def table_ref(cat: str, db: str, name: str) -> str:
    """How Hive names a table in messages: ``hive.db.tbl``."""
    return f"{cat}.{db}.{name}"
