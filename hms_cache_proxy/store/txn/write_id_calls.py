"""What the SQL store's families and the cache loader ask of the transaction service.

They run inside their own database transaction (``conn``): a write checks its write id and
share-locks the writing txn, a read takes a snapshot and a table's write ids, a replayed commit
finds its target txn and commits it with its writes. These few calls, with store/api.py's
``Transactions``, are the transaction service's whole surface (``txn_service.TxnService``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import Connection

from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.txn.repl import ReplWrite
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList


class WriteIdCalls(Protocol):
    """The write-id calls made inside a caller's database transaction."""

    def txn_snapshot(
        self, conn: Connection, txn_id: int, fresh_snapshot: bool = ...
    ) -> ValidReadTxnList:
        """The ValidTxnList ``txn_id`` reads with (0: a reader outside any txn)."""
        ...

    def table_write_ids(self, conn: Connection, full_name: str, snapshot: ValidReadTxnList) -> Any:
        """The TableValidWriteIds of ``db.table`` under ``snapshot``."""
        ...

    def write_id_owner(
        self, conn: Connection, db: str, table: str, write_id: int
    ) -> tuple[int, str] | None:
        """The txn that allocated ``write_id`` on the table and its TXN_STATE, or None."""
        ...

    def require_open_write_id(self, conn: Connection, db: str, table: str, write_id: int) -> int:
        """The open txn owning ``write_id``, its TXNS row share-locked until the caller
        commits; MetaException naming the write id, or the txn and its state."""
        ...

    def table_write_id(self, conn: Connection, db: str, table: str, txn_id: int) -> int | None:
        """The write id ``txn_id`` holds on the table, or None."""
        ...

    def txn_write_id_list(self, conn: Connection, db: str, table: str, txn_id: int) -> str:
        """The ValidWriteIdList string ``txn_id``'s own snapshot of the table gives."""
        ...

    def open_write_ids(
        self, conn: Connection, db: str, table: str, write_ids: Sequence[int] | set[int]
    ) -> set[int]:
        """Those of ``write_ids`` whose txn is still open."""
        ...

    def target_txns(self, conn: Connection, policy: str, src_ids: Sequence[int]) -> dict[int, int]:
        """Source txn -> target txn, for the replayed txns REPL_TXN_MAP holds."""
        ...

    def repl_commit_in(
        self, conn: Connection, target: int, writes: Sequence[ReplWrite]
    ) -> list[NewEvent]:
        """Commit a replayed txn with its writes; the COMMIT_TXN event, for the caller to
        write last."""
        ...
