"""Loading tables into the cache in background threads: prewarm at start-up, and every table
a read found missing (first in line), evicted, invalidated or whose partitions were dropped.

Each load reads the whole table in one database snapshot (store/sql/cacheload.py) and installs
it only if no event newer than that snapshot has touched the table meanwhile (Cache.install,
with the load's own ticket: loads of one table may run side by side); a refused load is
retried. Statistics rows are installed only at a position their entry has reached. Prewarm
progress is reported through ``Readiness``.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hms_cache_proxy import failpoints, thrift_bytes
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cache.entries import (
    Part,
    PartitionSet,
    StatsRows,
    TableEntry,
    TableName,
    row_size,
)
from hms_cache_proxy.store.cached.table_selection import TablePatterns
from hms_cache_proxy.store.sql import cacheload
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

log = logging.getLogger(__name__)

RETRIES = 5
DATABASES = "databases"
STATS = "stats"
CONSTRAINTS = "constraints"
TABLE = "table"
BATCH = "batch"

BATCH_TABLES = 200
BATCH_PARTITIONS = 20_000
"""Prewarm on PostgreSQL loads tables in batches of at most this many tables and partitions
(a larger table alone): one snapshot and a handful of queries per batch instead of per table,
since a query round trip costs as much as encoding a few hundred partitions."""

Item = tuple[str, Any]
"""(kind, TableName | tuple of ResolvedTable | None) of one queued load."""


class Loader:
    """A queue of loads served by ``threads`` daemon threads.

    ``request(key, front=True)`` moves a table to the front of the queue (a reader is waiting
    on the database meanwhile); prewarm puts every table at the back.
    """

    def __init__(
        self,
        sql: Any,
        cache: Cache,
        *,
        threads: int = 2,
        patterns: TablePatterns | None = None,
        readiness: Any | None = None,
        ready_after_prewarm: bool = False,
    ) -> None:
        self.sql = sql
        self.cache = cache
        self.threads = max(1, threads)
        self.patterns = patterns or TablePatterns()
        self.readiness = readiness
        self.ready_after_prewarm = ready_after_prewarm
        self._queue: deque[Item] = deque()
        self._queued: set[Item] = set()
        self._prewarm_left: set[TableName] = set()
        self._prewarm_running = False
        self._cond = threading.Condition()
        self._stop = False
        self._busy = 0
        self._workers: list[threading.Thread] = []
        self._prewarm_started = 0.0
        self._prewarm_partitions = 0

    # -- queue ---------------------------------------------------------------------------------

    def request(self, key: TableName, *, front: bool = False) -> None:
        if not self.patterns.cached(key):
            return
        self._put((TABLE, key), front)

    def request_stats(self, key: TableName) -> None:
        self._put((STATS, key), True)

    def request_constraints(self, key: TableName) -> None:
        self._put((CONSTRAINTS, key), True)

    def request_databases(self) -> None:
        self._put((DATABASES, None), True)

    def _put(self, item: Item, front: bool) -> None:
        with self._cond:
            if item in self._queued:
                if front:
                    try:
                        self._queue.remove(item)
                    except ValueError:
                        pass
                    self._queue.appendleft(item)
                return
            self._queued.add(item)
            if front:
                self._queue.appendleft(item)
            else:
                self._queue.append(item)
            self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + self._busy

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Block until nothing is queued or loading (tests, admin refresh)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, prewarm: bool = True) -> None:
        for i in range(self.threads):
            t = threading.Thread(target=self._work, name=f"hms-cache-load-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        self.request_databases()
        if prewarm:
            threading.Thread(target=self._prewarm, name="hms-prewarm", daemon=True).start()
        elif self.readiness is not None:
            self.readiness.mark_ready()

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stop = True
            self._queue.clear()
            self._queued.clear()
            self._cond.notify_all()
        for t in self._workers:
            t.join(timeout)

    def _prewarm(self) -> None:
        try:
            sized = cacheload.table_sizes(self.sql)
        except Exception:  # noqa: BLE001 - prewarm is best effort; reads still work
            log.exception("prewarm could not list the tables")
            if self.readiness is not None:
                self.readiness.prewarm_finished()
                self.readiness.mark_ready()
            return
        sizes = {
            k: n for k, n in ((TableName(*t[:3]), t[3]) for t in sized) if self.patterns.cached(k)
        }
        keys = list(sizes)
        self._prewarm_started = time.monotonic()
        with self._cond:
            self._prewarm_left = set(keys)
            self._prewarm_running = True
        if self.readiness is not None:
            self.readiness.prewarm_started(len(keys))
            if not self.ready_after_prewarm:
                self.readiness.mark_ready()
        log.info("prewarm: loading %d tables with %d threads", len(keys), self.threads)
        if self.sql.db.dialect == "postgresql":
            # Largest first: the loader threads then end together instead of one of them
            # loading the biggest batch alone at the end.
            cut = batches(keys, sizes)
            cut.sort(key=lambda b: -sum(sizes.get(k, 0) for k in b))
            for batch in cut:
                self._put((BATCH, batch), False)
        else:  # a query on SQLite is a call in this process: nothing to save by batching
            for key in keys:
                self._put((TABLE, key), False)
        self._prewarm_done_check()

    def _prewarm_loaded(self, key: TableName, partitions: int) -> None:
        with self._cond:
            if key not in self._prewarm_left:
                return
            self._prewarm_left.discard(key)
            self._prewarm_partitions += partitions
        if self.readiness is not None:
            self.readiness.table_loaded(partitions)
        self._prewarm_done_check()

    def _prewarm_done_check(self) -> None:
        with self._cond:
            if not self._prewarm_running or self._prewarm_left:
                return
            self._prewarm_running = False
        took = time.monotonic() - self._prewarm_started
        log.info(
            "prewarm finished: %d partitions in %.2fs (%.0f partitions/s)",
            self._prewarm_partitions,
            took,
            self._prewarm_partitions / took if took > 0 else 0.0,
        )
        # What prewarm loaded stays: keep the collector from scanning it again and again.
        gc.freeze()
        if self.readiness is not None:
            self.readiness.prewarm_finished()
            self.readiness.mark_ready()

    # -- work ----------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                item = self._queue.popleft()
                self._queued.discard(item)
                self._busy += 1
            try:
                self._run(item)
            except Exception:  # noqa: BLE001 - one failed load must not stop the loader
                log.warning("loading %s failed", item, exc_info=True)
                if isinstance(item[1], TableName):
                    self._prewarm_loaded(item[1], 0)
            finally:
                with self._cond:
                    self._busy -= 1
                    self._cond.notify_all()

    def _run(self, item: Item) -> None:
        kind, key = item
        if kind == BATCH:
            self.load_batch(key)
        elif kind == DATABASES:
            for _ in range(RETRIES):
                if self.load_databases():
                    return
        elif kind == STATS:
            assert key is not None
            self.load_stats(key)
        elif kind == CONSTRAINTS:
            assert key is not None
            self.load_constraints(key)
        else:
            assert key is not None
            for _ in range(RETRIES):
                outcome = self.load(key)
                if outcome is not None:
                    self._prewarm_loaded(key, outcome)
                    return
            log.info("gave up loading %s: the table kept changing", key.qualified())
            self._prewarm_loaded(key, 0)

    def load(self, key: TableName) -> int | None:
        """Load one table now; the number of partitions loaded (0 for a table that no longer
        exists), or None when an event overtook the load (try again)."""
        ticket = self.cache.begin_load(key)
        try:
            with _collection_paused():
                loaded = cacheload.load_table(self.sql, key.cat, key.db, key.table)
                entry = build_entry(key, loaded) if loaded is not None else None
            failpoints.hit("load.after_snapshot", key.qualified())
        except BaseException:
            self.cache.end_load(ticket)
            raise
        if loaded is None or entry is None:
            self.cache.end_load(ticket)
            return 0
        if not self.cache.install(entry, loaded.at, ticket):
            return None
        return len(loaded.partitions or ())

    def load_batch(self, keys: tuple[TableName, ...]) -> None:
        """Load several tables in one snapshot (prewarm). Each installs with its own ticket; a
        table an event overtook, or the whole batch if it fails, is queued again on its own."""
        tickets = [self.cache.begin_load(k) for k in keys]
        try:
            with _collection_paused():
                loaded = cacheload.load_tables(self.sql, [(k.cat, k.db, k.table) for k in keys])
                entries = {
                    k: build_entry(k, found)
                    for k in keys
                    if (found := loaded.get((k.cat, k.db, k.table))) is not None
                }
            for k in keys:
                failpoints.hit("load.after_snapshot", k.qualified())
        except Exception:  # noqa: BLE001 - the tables are loaded one by one instead
            log.warning(
                "loading %d tables at once failed; loading them one by one",
                len(keys),
                exc_info=True,
            )
            for ticket in tickets:
                self.cache.end_load(ticket)
            for k in keys:
                self._put((TABLE, k), False)
            return
        except BaseException:
            for ticket in tickets:
                self.cache.end_load(ticket)
            raise
        for key, ticket in zip(keys, tickets, strict=True):
            entry = entries.get(key)
            if entry is None:
                self.cache.end_load(ticket)
                self._prewarm_loaded(key, 0)
            elif self.cache.install(entry, entry.as_of, ticket):
                self._prewarm_loaded(key, len(entry.parts) if entry.parts is not None else 0)
            else:
                self._put((TABLE, key), False)

    def load_databases(self) -> bool:
        at, found = cacheload.load_databases(self.sql)
        return self.cache.install_databases(
            {k: (v, thrift_bytes.encode(v)) for k, v in found.items()}, at
        )

    def load_constraints(self, key: TableName) -> bool:
        """Constraints of a cached table, kept only if nothing may have changed them since
        (Cache.install_constraints_locked); else the next read asks again."""
        loaded = cacheload.load_constraints(self.sql, key.cat, key.db, key.table)
        refs = frozenset(
            TableName(fk.catName or key.cat, fk.pktable_db, fk.pktable_name)
            for fk in loaded.constraints.foreignKeys or ()
        )
        data = thrift_bytes.encode(loaded.constraints)
        failpoints.hit("load.constraints_after_snapshot", key.qualified())
        with self.cache.lock:
            return self.cache.install_constraints_locked(key, data, refs, loaded.at)

    def load_stats(self, key: TableName) -> bool:
        """Statistics rows of a cached table, kept only if nothing changed them since."""
        loaded = cacheload.load_stats(self.sql, key.cat, key.db, key.table)
        if loaded is None:
            return False
        rows = StatsRows(table={}, parts={})
        size = 0
        for r in loaded.table_rows:
            rows.table[(r.ENGINE, r.COLUMN_NAME)] = r
            size += row_size(r)
        for name, r in loaded.part_rows:
            rows.parts.setdefault(name, {})[(r.ENGINE, r.COLUMN_NAME)] = r
            size += row_size(r) + 16
        rows.nbytes = size
        failpoints.hit("load.stats_after_snapshot", key.qualified())
        with self.cache.lock:
            entry = self.cache.entries.get(key)
            # The rows are judged with the entry's table and partitions (their parameters say
            # whether statistics are accurate for a snapshot): install them only when the entry
            # reflects exactly the position they were read at. Rows read ahead of the poller,
            # or behind an entry loaded later, wait for the next statistics read.
            if entry is None or entry.stats_changed > loaded.at:
                return False
            if self.cache.position < loaded.at or entry.as_of > loaded.at:
                return False
            before = len(entry.parts) if entry.parts is not None else 0
            entry.stats = rows
            self.cache.resized_locked(entry, before)
        return True


_paused = 0
_paused_lock = threading.Lock()


@contextmanager
def _collection_paused() -> Iterator[None]:
    """No cyclic garbage collection while a table is loaded: a load allocates hundreds of
    thousands of small containers, none of them garbage, and collections triggered by them
    cost a quarter of the load's time. Nested and concurrent loads share one pause."""
    global _paused
    with _paused_lock:
        _paused += 1
        if _paused == 1:
            was_enabled = gc.isenabled()
            gc.disable()
            _collection_paused.was_enabled = was_enabled  # type: ignore[attr-defined]
    try:
        yield
    finally:
        with _paused_lock:
            _paused -= 1
            if _paused == 0 and getattr(_collection_paused, "was_enabled", True):
                gc.enable()


def batches(keys: list[TableName], sizes: dict[TableName, int]) -> list[tuple[TableName, ...]]:
    """``keys`` in order, cut into runs of at most BATCH_TABLES tables and BATCH_PARTITIONS
    partitions (a table larger than that makes a batch of its own)."""
    out: list[tuple[TableName, ...]] = []
    run: list[TableName] = []
    parts = 0
    for key in keys:
        n = sizes.get(key, 0)
        if run and (len(run) >= BATCH_TABLES or parts + n > BATCH_PARTITIONS):
            out.append(tuple(run))
            run, parts = [], 0
        run.append(key)
        parts += n
    if run:
        out.append(tuple(run))
    return out


def build_entry(key: TableName, loaded: cacheload.LoadedTable) -> TableEntry:
    table = loaded.table
    write_ids = None
    if loaded.write_ids is not None:
        write_ids = ValidReaderWriteIdList.from_table_valid_write_ids(loaded.write_ids)
    parts = None
    if loaded.partitions is not None:
        parts = PartitionSet()
        # Loads come in partition-name order (code points, as the database path orders them).
        intern = sys.intern
        parts.load(
            (
                (name, Part(tuple(map(intern, values)), head, cols, tail))
                for name, values, head, cols, tail in loaded.partitions
            ),
            ordered=True,
        )
    entry = TableEntry(
        key, table, thrift_bytes.encode(table), as_of=loaded.at, write_ids=write_ids, parts=parts
    )
    if entry.transactional and write_ids is None:
        entry.write_ids = empty_write_ids(key)
    return entry


def empty_write_ids(key: TableName) -> ValidReaderWriteIdList:
    """W of a table no transaction has written yet (Hive's design writes it ``[1:]``)."""
    return ValidReaderWriteIdList(key.qualified(), (), 0, 0)
