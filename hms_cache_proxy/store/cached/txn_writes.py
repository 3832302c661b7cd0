"""The transaction service as the caching store offers it: the calls after which its cache
catches up (or absorbs their events) wrap the service's; the rest go to it unchanged."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import api
from hms_cache_proxy.store.forwarding import Forwarded

log = logging.getLogger(__name__)


class TxnWrites:
    """The transaction service as the caching store offers it: the calls after which the cache
    catches up are methods of their own (each says what the cache does after it); every other
    call goes to the service unchanged.

    Open, allocate, abort and a commit without ``key_value`` change only which write ids are
    valid: the rules compare every transactional read's snapshot with the entry's, so an entry
    that has not seen their events yet is not used for a snapshot that has. Abort's and
    commit's events are left to the poller, which their NOTIFY wakes and which applies them
    from memory (this process recorded them), after the call has answered: applying them in
    the call's thread made every commit wait for it and the poller, woken for the same events,
    found them applied (issue 23). Open's and allocate's wait for the thread's next write or
    granted lock (which applies them in its batch) or for the poller. A commit that alters
    tables and a lock granted bring the cache up to date (``after``) before they return."""

    def __init__(
        self, txn: api.Transactions, after: Callable[[], None], absorb: Callable[[], Any]
    ) -> None:
        self._txn = txn
        self._after = after
        self._absorb = absorb

    def _forward(self, name: str) -> Callable[..., Any]:
        return getattr(self._txn, name)

    def _absorb_own(self, call: str) -> None:
        try:
            self._absorb()
        except Exception:  # noqa: BLE001 - the poller reads the events instead
            log.debug("could not apply %s's own events", call, exc_info=True)

    # -- the calls the cache follows --------------------------------------------------------

    def open_txns(
        self,
        num_txns: int,
        user: str,
        host: str,
        agent_info: str | None = None,
        txn_type: int = hms.TxnType.DEFAULT,
    ) -> list[int]:
        """OPEN_TXN events: nothing now. The cache ignores them (they only move its
        position), so they wait for the thread's next call that applies its own events (the
        txn's allocation is not one either: its write or lock), applied from memory in that
        call's batch, or for the poller (with the commit's). One batch fewer per transaction."""
        return self._txn.open_txns(num_txns, user, host, agent_info, txn_type)

    def allocate_table_write_ids(
        self, db: str, table: str, txn_ids: Sequence[int]
    ) -> list[tuple[int, int]]:
        """ALLOC_WRITE_ID_EVENT: nothing now, as for ``open_txns``. The cache keeps its write
        ids only to map a later ABORT_TXN or COMMIT_TXN of the txn, which comes after it in
        the log and so is applied after it (from memory, in the batch of the thread's write
        or lock, or by the poller); no read rule looks at it."""
        return self._txn.allocate_table_write_ids(db, table, txn_ids)

    def commit_txn(
        self, txn_id: int, key_value: Any | None = None, excl_write_enabled: bool = True
    ) -> None:
        """A commit that alters a table (``key_value``): the cache catches up before the call
        returns, so the writer reads the altered table from it. Any other commit: its
        COMMIT_TXN is applied by the poller (from memory), the call does not wait for it."""
        if key_value is None:
            self._txn.commit_txn(txn_id, None, excl_write_enabled)
            return
        try:
            self._txn.commit_txn(txn_id, key_value, excl_write_enabled)
        finally:
            self._after()

    def abort_txn(self, txn_id: int, error_code: int | None = None) -> None:
        """ABORT_TXN: applied by the poller (from memory), the call does not wait for it."""
        self._txn.abort_txn(txn_id, error_code)

    def abort_txns(self, txn_ids: Sequence[int], error_code: int | None = None) -> int:
        """ABORT_TXN of each: applied by the poller (from memory), as ``abort_txn``'s."""
        return self._txn.abort_txns(txn_ids, error_code)

    def repl_open_txns(
        self, policy: str, src_ids: Sequence[int], user: str, host: str, agent_info: str | None
    ) -> list[int]:
        """OPEN_TXN events of replayed transactions: applied from memory if they come next,
        else by the poller."""
        ids = self._txn.repl_open_txns(policy, src_ids, user, host, agent_info)
        self._absorb_own("repl_open_txns")
        return ids

    def repl_allocate_write_ids(
        self, db: str, table: str, policy: str, src_pairs: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """ALLOC_WRITE_ID_EVENT of the source's write ids: applied from memory if it comes
        next (a forced allocation that jumps the ids drops the cached table), else by the
        poller."""
        pairs = self._txn.repl_allocate_write_ids(db, table, policy, src_pairs)
        self._absorb_own("repl_allocate_write_ids")
        return pairs

    def repl_table_write_id_state(
        self, valid_write_ids: str, db: str, table: str, part_names: Sequence[str] = ()
    ) -> None:
        """The helper transactions' events: applied from memory if they come next, else by
        the poller."""
        self._txn.repl_table_write_id_state(valid_write_ids, db, table, part_names)
        self._absorb_own("repl_table_write_id_state")

    def repl_abort_txn(self, policy: str, src_txn: int) -> None:
        """ABORT_TXN naming the target transaction: applied from memory if it comes next,
        else by the poller."""
        self._txn.repl_abort_txn(policy, src_txn)
        self._absorb_own("repl_abort_txn")

    def lock(self, rqst: Any) -> Any:
        """A lock granted first brings the cache up to date: its holder then reads every write
        committed before the grant (Iceberg's lock, get_table, alter_table, unlock may go to
        any instance). A lock left waiting changes nothing."""
        return self._caught_up_if_granted(self._txn.lock(rqst))

    def check_lock(self, ext_id: int) -> Any:
        """A lock found granted (held already, or granted now): the cache catches up, as after
        ``lock``, reading the log only when it has not applied the event id the answer's
        statement saw (``Locks.check_lock``)."""
        return self._caught_up_if_granted(self._txn.check_lock(ext_id))

    def _caught_up_if_granted(self, response: Any) -> Any:
        if getattr(response, "state", None) == hms.LockState.ACQUIRED:
            self._after()
        return response

    # -- the rest, unchanged ----------------------------------------------------------------

    get_open_txns = Forwarded(api.Transactions.get_open_txns)
    get_open_txns_info = Forwarded(api.Transactions.get_open_txns_info)
    heartbeat = Forwarded(api.Transactions.heartbeat)
    heartbeat_txn_range = Forwarded(api.Transactions.heartbeat_txn_range)
    latest_txn_in_conflict = Forwarded(api.Transactions.latest_txn_in_conflict)
    databases_touched = Forwarded(api.Transactions.databases_touched)
    add_dynamic_partitions = Forwarded(api.Transactions.add_dynamic_partitions)
    get_valid_write_ids = Forwarded(api.Transactions.get_valid_write_ids)
    max_allocated_write_id = Forwarded(api.Transactions.max_allocated_write_id)
    seed_write_id = Forwarded(api.Transactions.seed_write_id)
    load_open_txn = Forwarded(api.Transactions.load_open_txn)
    load_commit_txn = Forwarded(api.Transactions.load_commit_txn)
    load_abort_txn = Forwarded(api.Transactions.load_abort_txn)
    unlock = Forwarded(api.Transactions.unlock)
    show_locks = Forwarded(api.Transactions.show_locks)
    compact = Forwarded(api.Transactions.compact)
    show_compact = Forwarded(api.Transactions.show_compact)
    abort_compactions = Forwarded(api.Transactions.abort_compactions)
    latest_committed_compactions = Forwarded(api.Transactions.latest_committed_compactions)
    find_next_compact = Forwarded(api.Transactions.find_next_compact)
    find_columns_with_stats = Forwarded(api.Transactions.find_columns_with_stats)
    update_compactor_state = Forwarded(api.Transactions.update_compactor_state)
    set_hadoop_jobid = Forwarded(api.Transactions.set_hadoop_jobid)
    mark_compacted = Forwarded(api.Transactions.mark_compacted)
    mark_cleaned = Forwarded(api.Transactions.mark_cleaned)
    mark_failed = Forwarded(api.Transactions.mark_failed)
    materialization_invalidation_info = Forwarded(
        api.Transactions.materialization_invalidation_info
    )
    update_transaction_statistics = Forwarded(api.Transactions.update_transaction_statistics)
