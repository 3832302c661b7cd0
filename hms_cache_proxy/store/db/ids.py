"""Object ids from SEQUENCE_TABLE, reserved the way DataNucleus reserves them.

A stock Java metastore sharing the database takes ids from the same rows: it locks the row of
the model class (``SELECT ... FOR UPDATE``), hands out ``NEXT_VAL .. NEXT_VAL+n-1`` and stores
``NEXT_VAL+n``. Doing exactly that keeps both programs' ids disjoint. A row that does not exist
yet is created from the largest id already in the table, as DataNucleus does the first time it
meets a class, so a database with rows but no sequence row (Hive 4's seed creates the `default`
database without one) never hands out a taken id.

On PostgreSQL ids are reserved in blocks per process. A block is reserved inside the write
transaction that first needs it, on that transaction's connection (no second connection per
write): the sequence row then stays locked until that transaction ends, once per block, and
what is left of the block is kept for later calls only once the transaction has committed
(rolled back, the reservation is undone and so are the rows that used its ids). Outside a
``Database.transaction`` a block is reserved in a short transaction of its own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from sqlalchemy import BigInteger, Connection, Update, bindparam, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database

_PENDING = "id_blocks"
"""TransactionState.values key: the blocks the transaction reserved (sequence name -> (next
id, end exclusive)), not for other calls until it commits."""

_MODEL = "org.apache.hadoop.hive.metastore.model."


@dataclass(frozen=True)
class IdSequence:
    """One DataNucleus value-generation row and the table/column whose ids it hands out."""

    name: str
    table: str
    column: str


CATALOG = IdSequence(_MODEL + "MCatalog", "CTLGS", "CTLG_ID")
DATABASE = IdSequence(_MODEL + "MDatabase", "DBS", "DB_ID")
TABLE = IdSequence(_MODEL + "MTable", "TBLS", "TBL_ID")
STORAGE_DESCRIPTOR = IdSequence(_MODEL + "MStorageDescriptor", "SDS", "SD_ID")
SERDE = IdSequence(_MODEL + "MSerDeInfo", "SERDES", "SERDE_ID")
COLUMN_DESCRIPTOR = IdSequence(_MODEL + "MColumnDescriptor", "CDS", "CD_ID")
PARTITION = IdSequence(_MODEL + "MPartition", "PARTITIONS", "PART_ID")
STRING_LIST = IdSequence(_MODEL + "MStringList", "SKEWED_STRING_LIST", "STRING_LIST_ID")
TABLE_COLUMN_STATS = IdSequence(_MODEL + "MTableColumnStatistics", "TAB_COL_STATS", "CS_ID")
PARTITION_COLUMN_STATS = IdSequence(
    _MODEL + "MPartitionColumnStatistics", "PART_COL_STATS", "CS_ID"
)
FUNCTION = IdSequence(_MODEL + "MFunction", "FUNCS", "FUNC_ID")
ROLE = IdSequence(_MODEL + "MRole", "ROLES", "ROLE_ID")
ROLE_MAP = IdSequence(_MODEL + "MRoleMap", "ROLE_MAP", "ROLE_GRANT_ID")
GLOBAL_PRIVILEGE = IdSequence(_MODEL + "MGlobalPrivilege", "GLOBAL_PRIVS", "USER_GRANT_ID")
DB_PRIVILEGE = IdSequence(_MODEL + "MDBPrivilege", "DB_PRIVS", "DB_GRANT_ID")
TABLE_PRIVILEGE = IdSequence(_MODEL + "MTablePrivilege", "TBL_PRIVS", "TBL_GRANT_ID")
PARTITION_PRIVILEGE = IdSequence(_MODEL + "MPartitionPrivilege", "PART_PRIVS", "PART_GRANT_ID")
TABLE_COLUMN_PRIVILEGE = IdSequence(
    _MODEL + "MTableColumnPrivilege", "TBL_COL_PRIVS", "TBL_COLUMN_GRANT_ID"
)
PARTITION_COLUMN_PRIVILEGE = IdSequence(
    _MODEL + "MPartitionColumnPrivilege", "PART_COL_PRIVS", "PART_COLUMN_GRANT_ID"
)
NOTIFICATION_LOG = IdSequence(_MODEL + "MNotificationLog", "NOTIFICATION_LOG", "NL_ID")
PARTITION_EVENT = IdSequence(_MODEL + "MPartitionEvent", "PARTITION_EVENTS", "PART_NAME_ID")
TXN_WRITE_NOTIFICATION_LOG = IdSequence(
    _MODEL + "MTxnWriteNotificationLog", "TXN_WRITE_NOTIFICATION_LOG", "WNL_ID"
)
SCHEDULED_QUERY = IdSequence(_MODEL + "MScheduledQuery", "SCHEDULED_QUERIES", "SCHEDULED_QUERY_ID")
RUNTIME_STAT = IdSequence(_MODEL + "MRuntimeStat", "RUNTIME_STATS", "RS_ID")
SCHEDULED_EXECUTION = IdSequence(
    _MODEL + "MScheduledExecution", "SCHEDULED_EXECUTIONS", "SCHEDULED_EXECUTION_ID"
)


class IdAllocator:
    """Hands out ids for one process; on PostgreSQL, ``block_size`` at a time per sequence."""

    def __init__(self, db: Database, block_size: int = 100) -> None:
        self._db = db
        self._block_size = max(1, block_size)
        self._blocks: dict[str, tuple[int, int]] = {}  # name -> (next id, end exclusive)
        self._lock = threading.Lock()

    def allocate(self, conn: Connection, seq: IdSequence, n: int = 1) -> list[int]:
        """``n`` fresh ids for ``seq``; ``conn`` is the caller's write transaction."""
        if n <= 0:
            return []
        if self._db.dialect == "sqlite":
            # Same transaction as the caller's (SQLite has one writer): a block cached here
            # would outlive a rollback of that transaction, so reserve exactly what is asked.
            start = reserve(conn, seq, n)
            return list(range(start, start + n))
        want = max(n, self._block_size)
        state = self._db.transaction_state(conn)
        if state is None:  # no transaction of ours to tie a block to: one of its own
            return self.allocate_alone(seq, n)
        pending: dict[str, tuple[int, int]] | None = state.values.get(_PENDING)
        if pending is not None:
            taken = self._take(pending, seq.name, n)
            if taken is not None:
                return taken
        with self._lock:
            taken = self._take(self._blocks, seq.name, n)
        if taken is not None:
            return taken
        if pending is None:
            pending = state.values[_PENDING] = {}
            state.on_commit.append(lambda: self._keep(pending))
        # Whatever is left of an old block is dropped: ids need only be unique.
        start = reserve(conn, seq, want)
        pending[seq.name] = (start + n, start + want)
        return list(range(start, start + n))

    def allocate_alone(self, seq: IdSequence, n: int = 1) -> list[int]:
        """``n`` fresh ids for ``seq`` for a caller outside any transaction (PostgreSQL): off
        this process's block, a new block reserved in a short transaction of its own."""
        want = max(n, self._block_size)
        with self._lock:
            taken = self._take(self._blocks, seq.name, n)
            if taken is None:
                with self._db.side_connection(None) as side:
                    start = reserve(side, seq, want)
                self._blocks[seq.name] = (start + n, start + want)
                taken = list(range(start, start + n))
        return taken

    @staticmethod
    def _take(blocks: dict[str, tuple[int, int]], name: str, n: int) -> list[int] | None:
        """``n`` ids off the front of ``blocks[name]``, or None when it holds fewer."""
        nxt, end = blocks.get(name, (0, 0))
        if end - nxt < n:
            return None
        blocks[name] = (nxt + n, end)
        return list(range(nxt, nxt + n))

    def _keep(self, committed: dict[str, tuple[int, int]]) -> None:
        """After a commit: what is left of the blocks it reserved serves later calls (where it
        holds more than the block in use)."""
        with self._lock:
            for name, (nxt, end) in committed.items():
                old_nxt, old_end = self._blocks.get(name, (0, 0))
                if end - nxt > old_end - old_nxt:
                    self._blocks[name] = (nxt, end)


_BUMPS: dict[str, Update] = {}
"""Each sequence's reserving UPDATE, built once: building it per block (SQLAlchemy's
expressions and their cache key) cost more Python than running it."""


def _bump(seq: IdSequence) -> Update:
    """The UPDATE ... RETURNING that advances ``seq``'s row by the bound ``hms_n``."""
    stmt = _BUMPS.get(seq.name)
    if stmt is None:
        st = schema.SEQUENCE_TABLE
        stmt = _BUMPS[seq.name] = (
            update(st)
            .where(st.c.SEQUENCE_NAME == seq.name)
            .values(NEXT_VAL=st.c.NEXT_VAL + bindparam("hms_n", type_=BigInteger))
            .returning(st.c.NEXT_VAL)
        )
    return stmt


def reserve(conn: Connection, seq: IdSequence, n: int) -> int:
    """Reserve ``n`` consecutive ids under the sequence row's lock; returns the first. One
    statement (the UPDATE takes the row lock DataNucleus's SELECT ... FOR UPDATE takes, and
    waits for it the same way) unless the row must be created first."""
    st = schema.SEQUENCE_TABLE
    after = conn.execute(_bump(seq), {"hms_n": n}).scalar()
    if after is not None:
        return int(after) - n
    current = _create_row(conn, seq)
    conn.execute(update(st).where(st.c.SEQUENCE_NAME == seq.name).values(NEXT_VAL=current + n))
    return current


def _create_row(conn: Connection, seq: IdSequence) -> int:
    st = schema.SEQUENCE_TABLE
    table = schema.metadata.tables[seq.table]
    highest = conn.execute(select(func.max(table.c[seq.column]))).scalar()
    start = int(highest or 0) + 1
    try:
        with conn.begin_nested():
            conn.execute(insert(st).values(SEQUENCE_NAME=seq.name, NEXT_VAL=start))
    except IntegrityError:
        pass  # another writer created it first; take its value under the lock
    row_sel = select(st.c.NEXT_VAL).where(st.c.SEQUENCE_NAME == seq.name).with_for_update()
    return int(conn.execute(row_sel).scalar_one())
