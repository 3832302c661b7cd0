"""CachedStore: the database store with a transactionally consistent cache in front of its reads.

The consistency rules live here, and only here (docs/design.md, "The rules of the cache";
docs/cache.md says how the rest of the code keeps them):

====================================================  =========================================
state of the table's entry for this read              answer
====================================================  =========================================
transactional, snapshot S given, entry present,       from the cache
committed, W equivalent to S (TxnIdUtils)
transactional, S given, entry not equivalent, or      from the database (the table is loaded
uncommitted, or absent                                again in the background when absent or
                                                      its W can no longer be matched)
transactional, no S                                   from the database (``cache_strict``:
                                                      MetaException, as Hive's design proposes)
not transactional, ``consistency: eventual``          from the cache (behind other instances'
                                                      writes by at most the notification lag)
not transactional, ``consistency: strong``            from the cache once it has applied every
                                                      event the database had when the read
                                                      arrived (one shared single-row query);
                                                      from the database if it cannot catch up
                                                      within ``consistency_wait_seconds``
absent (never loaded, evicted, excluded by patterns)  from the database (absent, not excluded:
                                                      loaded in the background, first in line)
list calls (get_partitions*, by filter, by names,     as above, on the table's entry: a
names, values, counts) and statistics                 committed entry holds all partitions and
                                                      W covers them all, so every partition
                                                      returned is committed and equivalent
statistics of a transactional table, strong mode      as above, once the cache has applied
                                                      every event the database had (Hive keeps
                                                      one version: a newer one the entry has
                                                      not seen makes the database answer none)
====================================================  =========================================

W is the write-id state the entry reflects: computed in the snapshot that loaded it and moved
forward by every COMMIT_TXN the poller applies (so an entry stays usable across commits of
data-only transactions). An entry is uncommitted from the first event of an open transaction
that touches it until that transaction's COMMIT_TXN.

Writes go to the database (with their events, in one transaction) and then this instance's
cache catches up at once (read-your-writes on one instance): with the write's own committed
events from memory when they directly follow what the cache has applied, else by reading the
log; if that catch-up fails the cache is emptied rather than left behind.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from thriftpy2.thrift import TType

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.store import api
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cache.entries import TableEntry, TableName
from hms_cache_proxy.store.cached.forward import ForwardingStore
from hms_cache_proxy.store.cached.partition_reads import PartitionReads
from hms_cache_proxy.store.cached.stats_cache import StatsReads
from hms_cache_proxy.store.cached.table_selection import TablePatterns
from hms_cache_proxy.store.cached.txn_writes import TxnWrites
from hms_cache_proxy.store.event_writes import is_event_write
from hms_cache_proxy.store.events.recent import RecentEvents, split_wait
from hms_cache_proxy.store.patterns import filter_names
from hms_cache_proxy.store.repl_props import has_repl
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList
from hms_cache_proxy.store.write_id_equivalence import check_equivalent_write_ids
from hms_cache_proxy.thrift_bytes import Encoded

log = logging.getLogger(__name__)


class Miss(Exception):
    """Internal: the cache cannot answer; ``reason`` is one of metrics.MISS_*."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Counters:
    """Prometheus children bound once per (method[, reason]): labels() is slow on a hot path."""

    def __init__(self) -> None:
        self._hits: dict[str, Callable[[], None]] = {}
        self._misses: dict[tuple[str, str], Callable[[], None]] = {}

    def hit(self, method: str) -> None:
        inc = self._hits.get(method)
        if inc is None:
            inc = self._hits[method] = metrics.CACHE_HITS.labels(method).inc
        inc()

    def miss(self, method: str, reason: str) -> None:
        inc = self._misses.get((method, reason))
        if inc is None:
            inc = self._misses[(method, reason)] = metrics.CACHE_MISSES.labels(method, reason).inc
        inc()


class CachedStore(StatsReads, PartitionReads, ForwardingStore):
    """Decorates ``sql`` (a SqlStore): reads from ``cache`` where the rules allow, the rest and
    every write through ``sql``; the writes marked ``@writes_events`` are followed by a
    catch-up. ``loader`` loads tables in the background; ``catch_up`` applies the log up to now
    (the poller's); ``barrier`` confirms strong-mode freshness."""

    def __init__(
        self,
        sql: api.DatabaseStore,
        cache: Cache,
        *,
        loader: Any,
        catch_up: Callable[[], Any],
        barrier: Any | None = None,
        patterns: TablePatterns | None = None,
        strict: bool = False,
        caught_up: Callable[[], bool] = lambda: True,
        absorb: Callable[[], Any] = lambda: None,
        recent: RecentEvents | None = None,
        newest_here: Callable[[], int] = lambda: 0,
        wait_for: Callable[[int, float], bool] | None = None,
    ) -> None:
        super().__init__(sql)
        self._recent = recent
        self._newest_here = newest_here
        self._wait_for = wait_for
        self.cache = cache
        self.loader = loader
        self._catch_up = catch_up
        self._barrier = barrier
        self.patterns = patterns or TablePatterns()
        self.strict = strict
        self._caught_up = caught_up
        self.counters = _Counters()
        self._snapshots: dict[str, ValidReaderWriteIdList] = {}
        self._refreshed: dict[TableName, float] = {}
        self.txn = TxnWrites(sql.txn, self._after_write, absorb)
        self._lock = threading.Lock()

    # -- the notification log --------------------------------------------------------------------

    def next_notifications(
        self,
        last_event: int,
        max_events: int | None,
        skip_types: Sequence[str] = (),
        *,
        encoded: bool = False,
    ) -> Any:
        """From the events the poller applied last when they reach back to ``last_event``
        and include every event this process committed (a client reads its own writes), so
        sidecars tailing this instance cost no database statement; else from the database.
        A sidecar's wait mark (``recent.WAIT_MARK``) holds the read until an event after
        ``last_event`` is applied or the time asked for passes (not when this process
        committed one already). With ``encoded`` an answer
        from memory is the Encoded list, shared by every caller asking the same."""
        wait, skip_types = split_wait(skip_types)
        if wait and self._wait_for is not None and self._newest_here() <= last_event:
            # (An event of this process after last_event needs no wait: the poller may leave
            # it for later, OPEN_TXN and ALLOC_WRITE_ID_EVENT having no NOTIFY, and the
            # database has it.)
            self._wait_for(last_event + 1, wait)
        recent = self._recent
        if recent is not None and recent.end >= self._newest_here():
            if encoded:
                answer: Any = recent.after_encoded(last_event, max_events, skip_types)
            else:
                answer = recent.after(last_event, max_events, skip_types)
            if answer is not None:
                return answer
        return self.sql.next_notifications(last_event, max_events, skip_types)

    def notification_event_id(self) -> int:
        """The poller's position, or the newest event this process committed if that is later
        (a write whose events the poller has not applied yet), without a database statement:
        an id the log held at some moment, never below this process's writes, never going
        back (docs/cache.md, "The central instance's side"). Strong mode reads the database."""
        recent = self._recent
        if recent is None or self._barrier is not None:
            return self.sql.current_notification_event_id()
        return max(recent.end, self._newest_here())

    # -- delegation -----------------------------------------------------------------------------

    def _forward(self, name: str) -> Callable[..., Any]:
        target = getattr(self.sql, name)
        if is_event_write(target):

            def write(*args: Any, **kwargs: Any) -> Any:
                try:
                    return target(*args, **kwargs)
                finally:
                    self._after_write()

            return write
        return target

    def _after_write(self) -> None:
        """Apply the log up to now, so this instance reads its own writes from the cache."""
        try:
            self._catch_up()
        except Exception:  # noqa: BLE001 - the write itself succeeded
            log.warning(
                "could not catch up with the log after a write; emptying the cache", exc_info=True
            )
            self.flush_all()

    # -- the rules -----------------------------------------------------------------------------

    def _snapshot(self, text: str) -> ValidReaderWriteIdList | None:
        found = self._snapshots.get(text)
        if found is None:
            try:
                found = ValidReaderWriteIdList.parse(text)
            except ValueError:
                return None
            if len(self._snapshots) > 4096:
                self._snapshots.clear()
            self._snapshots[text] = found
        return found

    def _check_locked(
        self, key: TableName, snapshot: str | None, *, partitions: bool = False
    ) -> TableEntry:
        """The entry if the rules let the cache answer this read, else Miss (lock held)."""
        entry = self.cache.get_locked(key)
        if entry is None:
            if not self.patterns.cached(key):
                raise Miss(metrics.MISS_FILTERED_OUT)
            evicted = self.cache.was_evicted_locked(key)
            raise Miss(metrics.MISS_EVICTED if evicted else metrics.MISS_NOT_CACHED)
        if entry.transactional:
            if snapshot is None:
                if self.strict:
                    raise hms.MetaException(
                        message=f"{key.qualified()} is transactional: the request must carry "
                        "its validWriteIdList (cache_strict is on)"
                    )
                raise Miss(metrics.MISS_NO_SNAPSHOT)
            if entry.pending:
                raise Miss(metrics.MISS_UNCOMMITTED)
            s = self._snapshot(snapshot)
            w = entry.write_ids
            if s is None or w is None or not check_equivalent_write_ids(w, s):
                if s is not None and w is not None and s.high_watermark >= w.high_watermark:
                    self._maybe_refresh(key)
                raise Miss(metrics.MISS_NOT_EQUIVALENT)
        if partitions and entry.parts is None:
            raise Miss(metrics.MISS_NOT_CACHED)
        return entry

    def _maybe_refresh(self, key: TableName) -> None:
        """A reader newer than the entry's W while the poller is caught up: W no longer
        matches how the database lists write ids (cleaned txn rows); reload, at most 1/s."""
        if not self._caught_up():
            return
        now = time.monotonic()
        if now - self._refreshed.get(key, 0.0) < 1.0:
            return
        if len(self._refreshed) > 10_000:
            self._refreshed.clear()
        self._refreshed[key] = now
        self.loader.request(key, front=True)

    def _strong(self, method: str) -> bool:
        """Strong mode: has the cache applied every event the database has now?"""
        if self._barrier is None:
            return True
        return self._barrier.wait_current()

    def _read(
        self,
        method: str,
        key: TableName,
        snapshot: str | None,
        from_cache: Callable[[TableEntry], Any],
        from_db: Callable[[], Any],
        *,
        partitions: bool = False,
        newest: bool = False,
    ) -> Any:
        """Answer from the cache when the rules allow, else from the database.

        ``newest``: the answer depends on the newest rows, not only on the snapshot's committed
        writes (statistics: Hive keeps one version, judged against the snapshot), so in strong
        mode a transactional table's read also waits for the position, as other reads do."""
        try:
            with self.cache.lock:
                entry = self._check_locked(key, snapshot, partitions=partitions)
                result = from_cache(entry)
                barrier = None if entry.transactional and not newest else self._barrier
                if barrier is not None:
                    # What the answer reflects: every event up to here was applied before.
                    seen = barrier.applied
            if barrier is not None and seen < (target := barrier.database_position()):
                # The database was ahead of that answer: wait for the poller, read again.
                if not barrier.reach(target):
                    raise Miss(metrics.MISS_BEHIND)
                with self.cache.lock:
                    entry = self._check_locked(key, snapshot, partitions=partitions)
                    result = from_cache(entry)
        except Miss as miss:
            self.counters.miss(method, miss.reason)
            if miss.reason in (metrics.MISS_NOT_CACHED, metrics.MISS_EVICTED):
                self.loader.request(key, front=True)
            return from_db()
        self.counters.hit(method)
        return result

    # -- tables ----------------------------------------------------------------------------------

    def get_table(
        self,
        cat: str,
        db: str,
        name: str,
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        key = TableName(cat, db, name)

        def cached(entry: TableEntry) -> Any:
            data = entry.table_bytes
            return Encoded(data) if encoded else data

        def database() -> Any:
            return self.sql.get_table(cat, db, name)

        result = self._read("get_table", key, valid_write_id_list, cached, database)
        if isinstance(result, bytes) and not encoded:
            return thrift_bytes.decode(hms.Table, result)
        return result

    def get_table_constraints(
        self, cat: str, db: str, name: str, *, valid_write_id_list: str | None = None
    ) -> hms.SQLAllTableConstraints:
        """From the table's entry, under the table's rules; constraints are loaded on the first
        read (not with the table: few tables have any, fewer clients ask)."""
        key = TableName(cat, db, name)
        method = "get_table_constraints"

        def cached(entry: TableEntry) -> Any:
            if entry.constraints is None:
                self.loader.request_constraints(key)
                raise _NoConstraints()
            return entry.constraints

        def database() -> Any:
            return self.sql.get_table_constraints(cat, db, name)

        try:
            result = self._read(method, key, valid_write_id_list, cached, database)
        except _NoConstraints:
            self.counters.miss(method, metrics.MISS_NOT_CACHED)
            return database()
        if isinstance(result, bytes):
            return thrift_bytes.decode(hms.SQLAllTableConstraints, result)
        return result

    def get_tables_by_names(self, cat: str, db: str, names: Sequence[str]) -> list[hms.Table]:
        """Tables without a snapshot: non-transactional ones from the cache, the rest (and a
        check that the database exists, when nothing was cached) from the database."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, bytes] = {}
        if self._barrier is None or self._strong("get_table_objects_by_name"):
            with self.cache.lock:
                for n in wanted:
                    entry = self.cache.get_locked(TableName(cat, db, n))
                    if entry is not None and not entry.transactional:
                        found[n] = entry.table_bytes
                known_db = (cat, db) in self.cache.databases
        else:
            known_db = False
        rest = [n for n in wanted if n not in found]
        from_db: dict[str, hms.Table] = {}
        if rest or not (found or known_db):
            self.counters.miss("get_table_objects_by_name", metrics.MISS_NOT_CACHED)
            from_db = {t.tableName: t for t in self.sql.get_tables_by_names(cat, db, rest)}
        else:
            self.counters.hit("get_table_objects_by_name")
        out = []
        for n in wanted:
            if n in found:
                out.append(thrift_bytes.decode(hms.Table, found[n]))
            elif n in from_db:
                out.append(from_db[n])
        return out

    def get_database(self, cat: str, name: str) -> hms.Database:
        if self._barrier is not None and not self._strong("get_database"):
            self.counters.miss("get_database", metrics.MISS_BEHIND)
            return self.sql.get_database(cat, name)
        with self.cache.lock:
            found = self.cache.databases.get((cat, name))
        if found is None:
            self.counters.miss("get_database", metrics.MISS_NOT_CACHED)
            return self.sql.get_database(cat, name)
        if found[0] is None or has_repl(found[0].parameters):
            # Replication state changes with no event (Hive writes none): never from the cache.
            self.counters.miss("get_database", metrics.MISS_REPLICATION)
            return self.sql.get_database(cat, name)
        self.counters.hit("get_database")
        return thrift_bytes.decode(hms.Database, found[1])

    def get_databases(self, cat: str, pattern: str | None = None) -> list[str]:
        """From the databases map while it lists every database, else from the database."""
        if self._barrier is not None and not self._strong("get_databases"):
            self.counters.miss("get_databases", metrics.MISS_BEHIND)
            return self.sql.get_databases(cat, pattern)
        names = self.cache.database_names(cat)
        if names is None:
            self.counters.miss("get_databases", metrics.MISS_NOT_CACHED)
            return self.sql.get_databases(cat, pattern)
        self.counters.hit("get_databases")
        return filter_names(names, pattern)

    # -- operations ----------------------------------------------------------------------------

    def flush_all(self) -> int:
        """Drop every entry (flushCache, or a failed catch-up); reads then load them again."""
        with self.cache.lock:
            keys = self.cache.clear_locked()
        self.loader.request_databases()
        return len(keys)


class _NoConstraints(Exception):
    """Internal: the entry is there, its constraints are not loaded yet."""


__all__ = ["CachedStore", "Miss", "TType"]
