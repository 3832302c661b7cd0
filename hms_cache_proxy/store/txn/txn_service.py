"""The transaction service: Hive's TxnHandler over the metastore database.

All SQL on TXNS, TXN_COMPONENTS, COMPLETED_TXN_COMPONENTS, TXN_TO_WRITE_ID, NEXT_WRITE_ID,
HIVE_LOCKS, NEXT_LOCK_ID, TXN_LOCK_TBL, MIN_HISTORY_LEVEL and WRITE_SET lives in this package:

- ``txns``       open, list, heartbeat, dynamic partitions
- ``commit``     commit_txn (Hive's CommitTxnFunction) and the commit steps REPL LOAD shares
- ``abort``      abort_txn(s) and the abort steps the other parts share
- ``writeids``   write-id allocation and snapshots (and what the table write calls check)
- ``locks``      lock, check_lock, unlock, show_locks
- ``housekeeping`` timeouts and cleaning, run by a background thread
- ``compaction``   the compaction queue (COMPACTION_QUEUE, COMPLETED_COMPACTIONS);
  ``compaction_worker`` the calls of Hive's Worker and Cleaner
- ``materializations`` MV_TABLES_USED counters and materialized-view invalidation
- ``repl``         replayed (REPL_CREATED) txns and write ids: what REPL LOAD asks of a target

Its surface is store/api.py's ``Transactions`` and the few write-id calls the SQL families and
the cache loader make inside their own database transaction (``write_id_calls.WriteIdCalls``);
what one part asks of another goes to that part (``service.aborts.abort_in``). app.py makes it
beside the SQL store, over the same database and event log, and hands it in.

The service is shared by every connection's thread; the only state it keeps between calls is
the settled floor of old TXNS rows (``txn_base.SettledTxns``), a fact about the database that other
writers cannot make false, so several instances (and stock Java metastores) can serve one
database.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.forwarding import Forwarded
from hms_cache_proxy.store.txn.abort import Abort
from hms_cache_proxy.store.txn.commit import Commit
from hms_cache_proxy.store.txn.compaction import Compaction
from hms_cache_proxy.store.txn.compaction_worker import CompactionWorker
from hms_cache_proxy.store.txn.locks import Locks
from hms_cache_proxy.store.txn.materializations import Materializations
from hms_cache_proxy.store.txn.repl import ReplTxns
from hms_cache_proxy.store.txn.txn_base import TxnConfig, TxnPart, TxnShared
from hms_cache_proxy.store.txn.txns import Txns
from hms_cache_proxy.store.txn.writeids import WriteIds


class TxnService:
    """Transactions, write ids, locks and the compaction queue, with their notification
    events: one object per part, each call forwarded to the part that answers it."""

    def __init__(
        self,
        db: Database,
        events: EventLog,
        messages: MessageBuilder,
        config: TxnConfig | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        shared = TxnShared(db, events, messages, config, clock)
        self.db = shared.db
        self.events = shared.events
        self.messages = shared.messages
        self.config = shared.config
        self.aborts = Abort(shared)
        self.txns = Txns(shared, self.aborts)
        self.commits = Commit(shared, self.aborts)
        self.write_ids = WriteIds(shared, self.txns)
        self.locks = Locks(shared, self.txns)
        self.compaction = Compaction(shared)
        self.compaction_worker = CompactionWorker(shared, self.compaction)
        self.materializations = Materializations(shared, self.write_ids)
        self.repl = ReplTxns(shared, self.txns, self.commits, self.aborts, self.compaction)
        self._methods = _bind(self.parts(), _forwarded_names(type(self)))

    def parts(self) -> list[TxnPart]:
        """The parts, in the order they are made (a part is made after those it uses)."""
        return [value for value in vars(self).values() if isinstance(value, TxnPart)]

    def _forward(self, name: str) -> Callable[..., Any]:
        return self._methods[name]

    # -- self.txns: transactions
    get_open_txns = Forwarded(Txns.get_open_txns)
    get_open_txns_info = Forwarded(Txns.get_open_txns_info)
    open_txns = Forwarded(Txns.open_txns)
    heartbeat_txn_range = Forwarded(Txns.heartbeat_txn_range)
    add_dynamic_partitions = Forwarded(Txns.add_dynamic_partitions)
    databases_touched = Forwarded(Txns.databases_touched)
    latest_txn_in_conflict = Forwarded(Txns.latest_txn_in_conflict)

    # -- self.commits: committing
    commit_txn = Forwarded(Commit.commit_txn)

    # -- self.aborts: aborting
    abort_txn = Forwarded(Abort.abort_txn)
    abort_txns = Forwarded(Abort.abort_txns)

    # -- self.write_ids: write ids
    allocate_table_write_ids = Forwarded(WriteIds.allocate_table_write_ids)
    max_allocated_write_id = Forwarded(WriteIds.max_allocated_write_id)
    seed_write_id = Forwarded(WriteIds.seed_write_id)
    get_valid_write_ids = Forwarded(WriteIds.get_valid_write_ids)
    txn_snapshot = Forwarded(WriteIds.txn_snapshot)
    table_write_ids = Forwarded(WriteIds.table_write_ids)
    write_id_owner = Forwarded(WriteIds.write_id_owner)
    require_open_write_id = Forwarded(WriteIds.require_open_write_id)
    table_write_id = Forwarded(WriteIds.table_write_id)
    txn_write_id_list = Forwarded(WriteIds.txn_write_id_list)

    # -- self.locks: locks
    lock = Forwarded(Locks.lock)
    check_lock = Forwarded(Locks.check_lock)
    unlock = Forwarded(Locks.unlock)
    heartbeat = Forwarded(Locks.heartbeat)
    show_locks = Forwarded(Locks.show_locks)

    # -- self.compaction: the compaction queue
    compact = Forwarded(Compaction.compact)
    show_compact = Forwarded(Compaction.show_compact)
    latest_committed_compactions = Forwarded(Compaction.latest_committed_compactions)
    abort_compactions = Forwarded(Compaction.abort_compactions)

    # -- self.compaction_worker: Hive's compaction Worker and Cleaner
    find_next_compact = Forwarded(CompactionWorker.find_next_compact)
    update_compactor_state = Forwarded(CompactionWorker.update_compactor_state)
    set_hadoop_jobid = Forwarded(CompactionWorker.set_hadoop_jobid)
    mark_compacted = Forwarded(CompactionWorker.mark_compacted)
    mark_cleaned = Forwarded(CompactionWorker.mark_cleaned)
    mark_failed = Forwarded(CompactionWorker.mark_failed)
    find_columns_with_stats = Forwarded(CompactionWorker.find_columns_with_stats)

    # -- self.materializations: materialized views
    update_transaction_statistics = Forwarded(Materializations.update_transaction_statistics)
    materialization_invalidation_info = Forwarded(
        Materializations.materialization_invalidation_info
    )

    # -- self.repl: replayed transactions (REPL LOAD on a target)
    repl_open_txns = Forwarded(ReplTxns.repl_open_txns)
    repl_allocate_write_ids = Forwarded(ReplTxns.repl_allocate_write_ids)
    repl_table_write_id_state = Forwarded(ReplTxns.repl_table_write_id_state)
    repl_commit_in = Forwarded(ReplTxns.repl_commit_in)
    repl_abort_txn = Forwarded(ReplTxns.repl_abort_txn)
    load_open_txn = Forwarded(ReplTxns.load_open_txn)
    load_commit_txn = Forwarded(ReplTxns.load_commit_txn)
    load_abort_txn = Forwarded(ReplTxns.load_abort_txn)
    target_txns = staticmethod(ReplTxns.target_txns)

    # -- the write-id calls of the SQL families and the loader (write_id_calls.WriteIdCalls)
    open_write_ids = staticmethod(WriteIds.open_write_ids)


def _forwarded_names(cls: type) -> list[str]:
    return [name for name, value in vars(cls).items() if isinstance(value, Forwarded)]


def _bind(parts: list[TxnPart], names: list[str]) -> dict[str, Callable[..., Any]]:
    """Each forwarded name -> the bound method of the one part whose class defines it."""
    methods: dict[str, Callable[..., Any]] = {}
    for name in names:
        owners = [part for part in parts if name in vars(type(part))]
        if len(owners) != 1:
            found = [type(part).__name__ for part in owners]
            raise TypeError(f"TxnService.{name}: defined by {found or 'no part'}, expected one")
        methods[name] = getattr(owners[0], name)
    return methods


__all__ = ["TxnConfig", "TxnService"]
