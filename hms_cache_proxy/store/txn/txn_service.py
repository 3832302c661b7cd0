"""The transaction service: Hive's TxnHandler over the metastore database.

All SQL on TXNS, TXN_COMPONENTS, COMPLETED_TXN_COMPONENTS, TXN_TO_WRITE_ID, NEXT_WRITE_ID,
HIVE_LOCKS, NEXT_LOCK_ID, TXN_LOCK_TBL, MIN_HISTORY_LEVEL and WRITE_SET lives in this package:

- ``txns``       open, commit, abort, list, heartbeat, dynamic partitions
- ``writeids``   write-id allocation and snapshots (and what the table write calls check)
- ``locks``      lock, check_lock, unlock, show_locks
- ``housekeeping`` timeouts and cleaning, run by a background thread
- ``compaction``   the compaction queue (COMPACTION_QUEUE, COMPLETED_COMPACTIONS);
  ``compaction_worker`` the calls of Hive's Worker and Cleaner
- ``materializations`` MV_TABLES_USED counters and materialized-view invalidation

The service is shared by every connection's thread; the only state it keeps between calls is
the settled floor of old TXNS rows (``txn_base.SettledTxns``), a fact about the database that other
writers cannot make false, so several instances (and stock Java metastores) can serve one
database.
"""

from __future__ import annotations

from hms_cache_proxy.store.txn.compaction_worker import CompactionWorkerMixin
from hms_cache_proxy.store.txn.locks import LocksMixin
from hms_cache_proxy.store.txn.materializations import MaterializationsMixin
from hms_cache_proxy.store.txn.txn_base import TxnConfig


class TxnService(MaterializationsMixin, LocksMixin, CompactionWorkerMixin):
    """Transactions, write ids, locks and the compaction queue, with their notification
    events."""


__all__ = ["TxnConfig", "TxnService"]
