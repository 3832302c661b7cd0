"""The cache's moving parts put together: cache, loader (prewarm), event applier, poller,
strong-mode barrier and the CachedStore the handler uses; also the operator's refresh/flush
(the ``AdminTarget`` behind ``POST /admin/refresh`` and ``/admin/flush``)."""

from __future__ import annotations

import logging
from typing import Any

from hms_cache_proxy.observability import metrics
from hms_cache_proxy.observability.admin import AdminNotFound, scope
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cache.entries import TableName
from hms_cache_proxy.store.cached.apply import EventApplier
from hms_cache_proxy.store.cached.cached_store import CachedStore
from hms_cache_proxy.store.cached.prewarm import Loader
from hms_cache_proxy.store.cached.strong import PositionBarrier
from hms_cache_proxy.store.cached.table_selection import TablePatterns
from hms_cache_proxy.store.events.poller import Poller, SequenceReader
from hms_cache_proxy.store.events.recent import RecentEvents
from hms_cache_proxy.store.sql import cacheload

log = logging.getLogger(__name__)

DEFAULT_CATALOG = "hive"

HOUSEKEEPING_LEASE = 0x484D534C45415345  # "HMSLEASE": the session advisory lock of the lease


class CacheService:
    """Owns the cache of one instance. ``store`` is what the handler talks to."""

    def __init__(self, sql: Any, settings: Any, readiness: Any | None = None) -> None:
        self.sql = sql
        self.settings = settings
        self.patterns = TablePatterns(settings.cache_include, settings.cache_exclude)
        self.cache = Cache(settings.cache_max_bytes, on_evict=lambda _key: metrics.EVICTIONS.inc())
        self.loader = Loader(
            sql,
            self.cache,
            threads=settings.prewarm_threads,
            patterns=self.patterns,
            readiness=readiness,
            ready_after_prewarm=settings.prewarm_before_ready,
        )
        self.applier = EventApplier(
            self.cache, self.loader, self.patterns, body_of=sql.events.body_of
        )
        position = sql.current_notification_event_id()
        self.cache.position = position
        self.recent = RecentEvents(position, cap=settings.notification_max_events)
        self.poller = Poller(
            sql.db,
            sql.events,
            self.applier.apply,
            self.applier.invalidate_all,
            position=position,
            interval=settings.cache_poll_interval_seconds,
            listen=settings.cache_listen,
            safety_interval=settings.poller_safety_interval_seconds,
            lease_key=HOUSEKEEPING_LEASE if settings.txn_housekeeping == "lease" else None,
            recent=self.recent,
        )
        # This instance's writes reach its cache from memory (apply_own), not by reading the
        # log back, whenever nothing else was committed in between.
        sql.events.record_commits(sql.db)
        self._sequence: SequenceReader | None = None
        barrier = None
        if settings.consistency == "strong":
            self._sequence = SequenceReader(sql.db)
            barrier = PositionBarrier(
                self._sequence.current, self.poller, settings.consistency_wait_seconds
            )
        self.store = CachedStore(
            sql,
            self.cache,
            loader=self.loader,
            catch_up=self._catch_up_after_write,
            barrier=barrier,
            patterns=self.patterns,
            strict=settings.cache_strict,
            caught_up=self.poller.caught_up,
            absorb=self._absorb_own_events,
            recent=self.recent,
            newest_here=lambda: sql.events.newest_here,
            wait_for=self.poller.wait_for,
        )
        cache = self.cache
        metrics.CACHE_BYTES.set_function(lambda: float(cache.nbytes))
        metrics.CACHE_TABLES.set_function(lambda: float(len(cache.entries)))
        metrics.CACHE_PARTITIONS.set_function(lambda: float(cache.partitions))

    def _catch_up_after_write(self) -> int:
        events = self.sql.events
        own = events.with_committed_before(events.take_committed(), self.poller.position)
        return self.poller.apply_own(own, seen=events.take_current())

    def _absorb_own_events(self) -> int:
        return self.poller.apply_own(self.sql.events.take_committed(), read=False)

    def start(self) -> None:
        self.poller.start()
        self.loader.start(prewarm=self.settings.prewarm)

    def stop(self, timeout: float = 5.0) -> None:
        self.poller.stop(timeout)
        self.loader.stop(timeout)
        for gauge in (metrics.CACHE_BYTES, metrics.CACHE_TABLES, metrics.CACHE_PARTITIONS):
            gauge.set_function(lambda: 0.0)  # the registry outlives this cache (tests)
        if self._sequence is not None:
            self._sequence.close()

    # -- AdminTarget -----------------------------------------------------------------------------

    def flush(
        self, db: str, table: str | None = None, partition: str | None = None
    ) -> dict[str, Any]:
        """Drop the scope from this instance's cache; reads load it again when they need it."""
        out: dict[str, Any] = {"flushed": scope(db, table, partition)}
        with self.cache.lock:
            if table is None:
                keys = [e.key for e in self.cache.entries_of_db_locked(None, db)]
                for key in keys:
                    self.cache.drop_locked(key)
                for k in [k for k in self.cache.databases if k[1] == db]:
                    del self.cache.databases[k]
                self.cache.databases_complete = False  # the database still exists
                position = self.cache.position  # a databases load under way is now stale
                self.cache.databases_as_of = max(self.cache.databases_as_of or 0, position)
                out["tables"] = len(keys)
            else:
                key = TableName(DEFAULT_CATALOG, db, table)
                entry = self.cache.entries.get(key)
                if partition is None or entry is None:
                    out["tables"] = 1 if self.cache.drop_locked(key) is not None else 0
                else:
                    # The entry holds all partitions or none: drop them all (reloaded on use).
                    n = len(entry.parts) if entry.parts is not None else 0
                    entry.parts = None
                    entry.stats = None
                    entry.stats_changed = max(entry.stats_changed, self.cache.position)
                    self.cache.resized_locked(entry, n)
                    out["partitions"] = n
        if table is None:
            self.loader.request_databases()
        metrics.INVALIDATIONS.labels("admin_flush").inc()
        return out

    def refresh(
        self, db: str, table: str | None = None, partition: str | None = None
    ) -> dict[str, Any]:
        """Load the scope again from the database now (a table: before answering)."""
        out: dict[str, Any] = {"refreshed": scope(db, table, partition)}
        if table is None:
            tables = [t for t in cacheload.list_tables(self.sql) if t[1] == db]
            _, databases = cacheload.load_databases(self.sql)
            if not any(k[1] == db for k in databases):
                raise AdminNotFound(f"no database {db}")
            self.loader.request_databases()
            keys = [TableName(*t) for t in tables]
            for key in keys:
                self.loader.request(key, front=True)
            out["tables_queued"] = len(keys)
            return out
        key = TableName(DEFAULT_CATALOG, db, table)
        if not self.patterns.cached(key):
            try:
                self.sql.get_table(DEFAULT_CATALOG, db, table)
            except Exception as exc:  # noqa: BLE001 - NoSuchObjectException and the like
                raise AdminNotFound(f"no table {db}.{table}") from exc
            out["note"] = "excluded from the cache by cache_include/cache_exclude"
            return out
        with self.cache.lock:
            self.cache.drop_locked(key)
        for _ in range(5):
            loaded = self.loader.load(key)
            if loaded is not None:
                break
        else:
            raise AdminNotFound(f"{db}.{table} kept changing while being loaded; try again")
        with self.cache.lock:
            present = key in self.cache.entries
        if not present:
            raise AdminNotFound(f"no table {db}.{table}")
        out["partitions"] = loaded
        if partition is not None:
            out["note"] = "partitions are cached per table: the whole table was loaded again"
        return out

    def pause_poller(self, seconds: float) -> dict[str, Any]:
        """Stall this instance's poller for ``seconds`` (``POST /admin/poller/pause``): a fault
        for the consistency checker; reads stay correct, they only stop hitting."""
        held = self.poller.stall(seconds)
        log.warning("poller paused for %gs by an admin request (held: %s)", seconds, held)
        return {"paused_seconds": seconds, "held": held, "position": self.poller.position}

    def flush_all(self) -> int:
        return self.store.flush_all()
