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
from hms_cache_proxy.store import api, partnames
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cache.entries import PartitionedEntry, TableEntry, TableName, with_parts
from hms_cache_proxy.store.cached.direct import partitions_from_database
from hms_cache_proxy.store.cached.forward import ForwardingStore
from hms_cache_proxy.store.cached.stats_cache import StatsReads
from hms_cache_proxy.store.cached.table_selection import TablePatterns
from hms_cache_proxy.store.event_writes import is_event_write
from hms_cache_proxy.store.events.recent import RecentEvents, split_wait
from hms_cache_proxy.store.forwarding import Forwarded
from hms_cache_proxy.store.partition_filter.binder import compile_filter
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.pushdown import pushdown
from hms_cache_proxy.store.patterns import filter_names
from hms_cache_proxy.store.repl_props import has_repl
from hms_cache_proxy.store.sql.sql_base import java_list, table_ref
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


class CachedStore(StatsReads, ForwardingStore):
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
        self.txn = _TxnWrites(sql.txn, self._after_write, absorb)
        self._lock = threading.Lock()

    # -- the notification log --------------------------------------------------------------------

    def next_notifications(
        self, last_event: int, max_events: int | None, skip_types: Sequence[str] = ()
    ) -> list[Any]:
        """From the events the poller applied last when they reach back to ``last_event``
        and include every event this process committed (a client reads its own writes), so
        sidecars tailing this instance cost no database statement; else from the database.
        A sidecar's wait mark (``recent.WAIT_MARK``) holds the read until an event after
        ``last_event`` is applied or the time asked for passes."""
        wait, skip_types = split_wait(skip_types)
        if wait and self._wait_for is not None:
            self._wait_for(last_event + 1, wait)
        recent = self._recent
        if recent is not None and recent.end >= self._newest_here():
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

    # -- partitions ------------------------------------------------------------------------------

    def _partition_read(
        self,
        method: str,
        cat: str,
        db: str,
        tbl: str,
        snapshot: str | None,
        pick: Callable[[PartitionedEntry], Any],
        from_db: Callable[[], Any],
    ) -> Any:
        """A read answered from the entry's partitions (``_check_locked`` with ``partitions``
        refuses an entry without them, so ``with_parts`` only gives the entry its type)."""
        return self._read(
            method,
            TableName(cat, db, tbl),
            snapshot,
            lambda entry: pick(with_parts(entry)),
            from_db,
            partitions=True,
        )

    @staticmethod
    def _parts(entry: PartitionedEntry, names: Sequence[str], encoded: bool) -> Any:
        by_name = entry.parts.by_name
        pieces: list[bytes] = []
        for n in names:
            p = by_name[n]
            pieces.append(p.head)
            pieces.append(p.cols)
            pieces.append(p.tail)
        if encoded:
            return thrift_bytes.join_list(pieces, len(names))
        return _PartitionList(pieces, len(names))

    @staticmethod
    def _objects(result: Any) -> Any:
        if isinstance(result, _PartitionList):
            return result.decode()
        return result

    def get_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        values: Sequence[str],
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            try:
                name = partnames.make_part_name(entry.key_names, list(values or []))
            except partnames.PartitionNameError as exc:
                raise hms.MetaException(message=str(exc)) from None
            part = entry.parts.by_name.get(name)
            if part is None:
                raise hms.NoSuchObjectException(message=f"partition values={java_list(values)}")
            data = part.encoded()
            return Encoded(data) if encoded else thrift_bytes.decode(hms.Partition, data)

        return self._partition_read(
            "get_partition",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_partition(cat, db, tbl, values),
        )

    def get_partition_by_name(
        self, cat: str, db: str, tbl: str, name: str, *, valid_write_id_list: str | None = None
    ) -> hms.Partition:
        def pick(entry: PartitionedEntry) -> Any:
            part = entry.parts.by_name.get(name)
            if part is None:
                raise hms.NoSuchObjectException(
                    message=f"partition {name} not found in {table_ref(cat, db, tbl)}"
                )
            return thrift_bytes.decode(hms.Partition, part.encoded())

        return self._partition_read(
            "get_partition_by_name",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_partition_by_name(cat, db, tbl, name),
        )

    def get_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            names = entry.parts.names()
            if max_parts == 0:
                names = []
            elif max_parts >= 0:
                names = names[:max_parts]
            return self._parts(entry, names, encoded)

        return self._objects(
            self._partition_read(
                "get_partitions",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: partitions_from_database(self.sql, cat, db, tbl, max_parts, encoded),
            )
        )

    def get_partitions_by_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            by_name = entry.parts.by_name
            found = [n for n in sorted(set(names)) if n in by_name]
            return self._parts(entry, found, encoded)

        return self._objects(
            self._partition_read(
                "get_partitions_by_names",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: self.sql.get_partitions_by_names(cat, db, tbl, names),
            )
        )

    def _filtered(
        self, entry: PartitionedEntry, filter_text: str, max_parts: int | None
    ) -> list[str]:
        """Names of the partitions the filter accepts, in order (the database path's rules:
        the same evaluator, narrowed first by the exact values the filter pins)."""
        node = parse(filter_text or "")
        accept = compile_filter(node, entry.key_names, entry.key_types)
        conditions = pushdown(node, entry.key_names, entry.key_types)
        parts = entry.parts
        candidates = parts.candidates(
            [(c.key_index, c.values) for c in conditions], len(entry.key_names)
        )
        by_name = parts.by_name
        found = [n for n in candidates if accept(by_name[n].values)]
        if max_parts is not None and max_parts >= 0:
            found = found[:max_parts]
        return found

    def get_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            return self._parts(entry, self._filtered(entry, filter_text, max_parts), encoded)

        return self._objects(
            self._partition_read(
                "get_partitions_by_filter",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: self.sql.get_partitions_by_filter(cat, db, tbl, filter_text, max_parts),
            )
        )

    def count_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        *,
        valid_write_id_list: str | None = None,
    ) -> int:
        return self._partition_read(
            "get_num_partitions_by_filter",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: len(self._filtered(e, filter_text, None)),
            lambda: self.sql.count_partitions_by_filter(cat, db, tbl, filter_text),
        )

    def get_partition_names_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
    ) -> list[str]:
        return self._partition_read(
            "get_partition_names_by_filter",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: self._filtered(e, filter_text, max_parts),
            lambda: self.sql.get_partition_names_by_filter(cat, db, tbl, filter_text, max_parts),
        )

    @staticmethod
    def _ps_names(
        entry: PartitionedEntry, partial: Sequence[str] | None, max_parts: int | None
    ) -> list[str]:
        partial = list(partial or [])
        if len(partial) > len(entry.key_names):
            raise hms.MetaException(
                message=f"Incorrect number of partition values. numPartKeys="
                f"{len(entry.key_names)}, part_val={java_list(partial)}"
            )
        conditions = [(i, (v,)) for i, v in enumerate(partial) if v not in ("", None)]
        found = entry.parts.candidates(conditions, len(entry.key_names))
        if max_parts is not None and max_parts >= 0:
            found = found[:max_parts]
        return found

    def get_partitions_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
        encoded: bool = False,
    ) -> Any:
        def pick(entry: PartitionedEntry) -> Any:
            return self._parts(entry, self._ps_names(entry, partial, max_parts), encoded)

        return self._objects(
            self._partition_read(
                "get_partitions_ps",
                cat,
                db,
                tbl,
                valid_write_id_list,
                pick,
                lambda: self.sql.get_partitions_ps(cat, db, tbl, partial, max_parts),
            )
        )

    def get_partition_names_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
    ) -> list[str]:
        return self._partition_read(
            "get_partition_names_ps",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: list(self._ps_names(e, partial, max_parts)),
            lambda: self.sql.get_partition_names_ps(cat, db, tbl, partial, max_parts),
        )

    def get_partition_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = -1,
        *,
        valid_write_id_list: str | None = None,
    ) -> list[str]:
        def pick(entry: PartitionedEntry) -> list[str]:
            if max_parts == 0:
                return []
            names = entry.parts.names()
            return list(names[:max_parts] if max_parts >= 0 else names)

        return self._partition_read(
            "get_partition_names",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.get_partition_names(cat, db, tbl, max_parts),
        )

    def partition_values(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = None
    ) -> tuple[list[hms.FieldSchema], list[tuple[str, list[str]]]]:
        def pick(entry: PartitionedEntry) -> Any:
            keys = [
                hms.FieldSchema(name=k.name, type=k.type, comment=k.comment)
                for k in entry.table.partitionKeys or []
            ]
            by_name = entry.parts.by_name
            return keys, [(n, list(by_name[n].values)) for n in entry.parts.names()]

        return self._partition_read(
            "get_partition_values",
            cat,
            db,
            tbl,
            valid_write_id_list,
            pick,
            lambda: self.sql.partition_values(cat, db, tbl),
        )

    def partition_count(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = None
    ) -> int:
        return self._partition_read(
            "partition_count",
            cat,
            db,
            tbl,
            valid_write_id_list,
            lambda e: len(e.parts),
            lambda: self.sql.partition_count(cat, db, tbl),
        )

    # -- operations ----------------------------------------------------------------------------

    def flush_all(self) -> int:
        """Drop every entry (flushCache, or a failed catch-up); reads then load them again."""
        with self.cache.lock:
            keys = self.cache.clear_locked()
        self.loader.request_databases()
        return len(keys)


class _NoConstraints(Exception):
    """Internal: the entry is there, its constraints are not loaded yet."""


class _PartitionList:
    """Partitions picked from the cache as bytes, decoded only after the lock is released."""

    __slots__ = ("pieces", "count")

    def __init__(self, pieces: list[bytes], count: int) -> None:
        self.pieces = pieces
        self.count = count

    def decode(self) -> list[hms.Partition]:
        data = b"".join(self.pieces)
        out = []
        pos = 0
        # Each partition is head + cols + tail: three pieces per partition.
        for i in range(0, len(self.pieces), 3):
            n = len(self.pieces[i]) + len(self.pieces[i + 1]) + len(self.pieces[i + 2])
            out.append(thrift_bytes.decode(hms.Partition, data[pos : pos + n]))
            pos += n
        return out


class _TxnWrites:
    """The transaction service as the caching store offers it: the calls after which the cache
    catches up are methods of their own (each says what the cache does after it); every other
    call goes to the service unchanged.

    Open, allocate, abort and a commit without ``key_value`` change only which write ids are
    valid: the rules compare every transactional read's snapshot with the entry's, so an entry
    that has not seen their events yet is not used for a snapshot that has. Their events are
    applied from memory when they come next (``absorb``, saving the poller a read of the log),
    else left to the poller. A commit that alters tables and a lock granted bring the cache up
    to date (``after``) before they return."""

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
        """OPEN_TXN events: applied from memory if they come next, else by the poller."""
        ids = self._txn.open_txns(num_txns, user, host, agent_info, txn_type)
        self._absorb_own("open_txns")
        return ids

    def allocate_table_write_ids(
        self, db: str, table: str, txn_ids: Sequence[int]
    ) -> list[tuple[int, int]]:
        """ALLOC_WRITE_ID_EVENT: applied from memory if it comes next, else by the poller."""
        pairs = self._txn.allocate_table_write_ids(db, table, txn_ids)
        self._absorb_own("allocate_table_write_ids")
        return pairs

    def commit_txn(
        self, txn_id: int, key_value: Any | None = None, excl_write_enabled: bool = True
    ) -> None:
        """A commit that alters a table (``key_value``): the cache catches up before the call
        returns, so the writer reads the altered table from it. Any other commit: its
        COMMIT_TXN is applied from memory if it comes next, else by the poller."""
        if key_value is None:
            self._txn.commit_txn(txn_id, None, excl_write_enabled)
            self._absorb_own("commit_txn")
            return
        try:
            self._txn.commit_txn(txn_id, key_value, excl_write_enabled)
        finally:
            self._after()

    def abort_txn(self, txn_id: int, error_code: int | None = None) -> None:
        """ABORT_TXN: applied from memory if it comes next, else by the poller."""
        self._txn.abort_txn(txn_id, error_code)
        self._absorb_own("abort_txn")

    def abort_txns(self, txn_ids: Sequence[int], error_code: int | None = None) -> int:
        """ABORT_TXN of each: applied from memory if they come next, else by the poller."""
        count = self._txn.abort_txns(txn_ids, error_code)
        self._absorb_own("abort_txns")
        return count

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
        """A waiting lock found granted: the cache catches up, as after ``lock``."""
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


__all__ = ["CachedStore", "Miss", "TType"]
