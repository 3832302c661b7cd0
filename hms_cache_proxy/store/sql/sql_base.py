"""What every part of the SQL store shares: its collaborators, and lookups of owner rows."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events.log import EventLog, NewEvent
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.txn.txn_base import COMMITTED as TXN_COMMITTED
from hms_cache_proxy.store.txn.txn_base import OPEN as TXN_OPEN
from hms_cache_proxy.store.txn.write_id_calls import WriteIdCalls

DEFAULT_CATALOG = "hive"

PRINCIPAL_TYPES = {"USER": 1, "ROLE": 2, "GROUP": 3}
PRINCIPAL_NAMES = {v: k for k, v in PRINCIPAL_TYPES.items()}


def is_transactional(params: Mapping[str, str] | None) -> bool:
    """TxnUtils.isTransactionalTable: ``transactional`` is "true" in any case."""
    return str((params or {}).get("transactional", "")).lower() == "true"


@dataclass(frozen=True)
class TxnWrite:
    """What a write call is, as far as transactions go (see ``SqlPart._txn_write``).

    ``write_id`` is set only for a write of an open transaction on a transactional table (the
    write id checked, its TXNS row share-locked until the write commits); ``valid_write_ids`` is
    what the write's events carry: the caller's list, else for such a write the writing
    transaction's own snapshot."""

    write_id: int | None = None
    txn_id: int | None = None
    valid_write_ids: str | None = None
    replicated_write_id: int | None = None
    """A committed write id of a replication source, carried by REPL LOAD's bootstrap objects
    into a replication target: stored as given, never pending (no txn of the target has it)."""

    @property
    def row_write_id(self) -> int | None:
        """The write id the changed rows store: this write's, else a replicated one."""
        return self.write_id if self.write_id is not None else self.replicated_write_id

    @property
    def event_write_id(self) -> int:
        """Hive's ``writeId`` message field: the write id, -1 for none."""
        return self.write_id if self.write_id is not None else -1


_REPL_TARGET_KEYS = ("repl.target.for", "hive.repl.ckpt.key")


def replication_target(conn: Connection, db: str) -> bool:
    """Whether REPL LOAD loads into ``db`` (LoadDatabase sets these parameters)."""
    d, p = schema.DBS, schema.DATABASE_PARAMS
    found = conn.execute(
        select(p.c.PARAM_KEY)
        .select_from(p.join(d, d.c.DB_ID == p.c.DB_ID))
        .where(d.c.NAME == db, p.c.PARAM_KEY.in_(_REPL_TARGET_KEYS))
        .limit(1)
    ).first()
    return found is not None


def now() -> int:
    """Seconds since the epoch, as Hive stores createTime and friends."""
    return int(time.time())


def principal_type(name: str | None) -> int | None:
    return PRINCIPAL_TYPES.get(name.upper()) if name else None


def principal_name(value: int | None) -> str | None:
    return PRINCIPAL_NAMES.get(value) if value is not None else None


class SqlShared:
    """The collaborators every family of the SQL store works with, made once per store.

    ``txn`` is the transaction service over the same database and event log, made beside the
    store (app.py): the families ask it only the write-id calls of ``WriteIdCalls``.
    """

    def __init__(
        self,
        db: Database,
        txn: WriteIdCalls,
        *,
        events: EventLog,
        messages: MessageBuilder,
        warehouse_uri: str,
    ) -> None:
        self.db = db
        self.ids = events.ids
        self.events = events
        self.messages = messages
        self.warehouse_uri = warehouse_uri.rstrip("/")
        self.txn = txn


class SqlPart:
    """One family of the SQL store (databases, tables, partitions, ...): the shared
    collaborators, and the lookups of owner rows every family needs. A family that uses
    another is given it in its constructor."""

    def __init__(self, shared: SqlShared) -> None:
        self.db = shared.db
        self.ids = shared.ids
        self.events = shared.events
        self.messages = shared.messages
        self.warehouse_uri = shared.warehouse_uri
        self.txn = shared.txn

    # -- lookups inside a transaction ------------------------------------------------------------

    def _db_row(self, conn: Connection, cat: str, name: str, *, lock: bool = False) -> Any:
        """The DBS row of a database, or NoSuchObjectException."""
        stmt = select(schema.DBS).where(
            and_(schema.DBS.c.CTLG_NAME == cat, schema.DBS.c.NAME == name)
        )
        if lock:
            stmt = stmt.with_for_update()
        row = conn.execute(stmt).first()
        if row is None:
            # Hive 4's ObjectStore.getDatabase wording.
            raise hms.NoSuchObjectException(message=f"database {cat}.{name}")
        return row

    def _table_row(
        self, conn: Connection, cat: str, db: str, name: str, *, lock: bool = False
    ) -> Any:
        """The TBLS row (with DB_ID) of a table, or NoSuchObjectException."""
        t, d = schema.TBLS, schema.DBS
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

    def _txn_write(
        self,
        conn: Connection,
        db: str,
        tbl: str,
        params: Mapping[str, str] | None,
        write_id: int | None,
        valid_write_id_list: str | None,
        *,
        stored_write_id: int | None = None,
    ) -> TxnWrite:
        """Decide, inside the write transaction, whether a write belongs to a transaction.

        Only transactional tables take write ids (Hive's ObjectStore ignores one on other
        tables). A positive ``write_id`` must be a write id of ``db.tbl`` allocated to a txn
        that is still open: the txn's TXNS row is share-locked until this write commits, so
        its COMMIT_TXN always follows this write's events. Otherwise MetaException (``invalid
        write id 5 for table db.t``, or naming the txn's state), which every write call
        declares; Hive does not check this at all, a cache gating on commits has to.

        ``stored_write_id`` marks a write id taken from the client's object rather than from
        the request: clients send back the Table or Partition they read, whose writeId is
        the stored one. Such an echo of the stored value is a write id only while its txn is
        still open; once that txn ended it means "no write id".
        """
        if write_id is None or write_id <= 0 or not is_transactional(params):
            return TxnWrite(valid_write_ids=valid_write_id_list)
        txn_service = self.txn
        if stored_write_id is not None and write_id == stored_write_id:
            owner = txn_service.write_id_owner(conn, db, tbl, write_id)
            if owner is None or owner[1] != TXN_OPEN:
                return TxnWrite(valid_write_ids=valid_write_id_list)
        try:
            txn = txn_service.require_open_write_id(conn, db, tbl, write_id)
        except hms.MetaException:
            owner = txn_service.write_id_owner(conn, db, tbl, write_id)
            if (owner is not None and owner[1] != TXN_COMMITTED) or not replication_target(
                conn, db
            ):
                raise
            # REPL LOAD's bootstrap: the source committed it (the target may map it to the
            # committed helper txn repl_tbl_writeid_state wrote, or not at all).
            return TxnWrite(valid_write_ids=valid_write_id_list, replicated_write_id=write_id)
        if valid_write_id_list is None:
            valid_write_id_list = txn_service.txn_write_id_list(conn, db, tbl, txn)
        return TxnWrite(write_id=write_id, txn_id=txn, valid_write_ids=valid_write_id_list)

    def _emit(
        self, conn: Connection, events: Sequence[NewEvent], *, last: bool = False
    ) -> list[int]:
        """Append this call's notification events: the last step of every write transaction.
        ``last``: nothing follows on ``conn`` (the transaction's own function ends here), so
        on psycopg2 its COMMIT travels with the events (``EventLog.append``)."""
        return self.events.append(conn, events, last=last)


def java_list(items: Sequence[Any] | None) -> str:
    """Java's List.toString(), as Hive's messages print value lists: ``[a, b]``."""
    return "null" if items is None else "[" + ", ".join(str(x) for x in items) + "]"


def table_ref(cat: str, db: str, name: str) -> str:
    """How Hive names a table in messages: ``hive.db.tbl``."""
    return f"{cat}.{db}.{name}"
