"""The cache: table entries in least-recently-used order, databases, memory accounting.

One lock guards everything. Readers (CachedStore) take it for the few microseconds it takes to
check an entry and pick up references to its bytes; the event applier takes it for one batch of
events at a time, so a reader sees a batch applied entirely or not at all. Methods whose names
end in ``_locked`` expect the caller to hold ``lock``; the others take it themselves.

Loads and events never overwrite newer state (docs/cache.md, "as_of_event"): a load made at
event position L replaces an entry only if the entry reflects no event after L, and a load
that was under way while an event touched its table is refused. No I/O here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from hms_cache_proxy.store.cache.entries import TableEntry, TableKey

EVICTED_MEMORY = 10_000
"""How many evicted table names are remembered (to tell "evicted" from "not cached")."""


class Cache:
    """Entries of whole tables, a byte budget, and the databases map."""

    def __init__(self, max_bytes: int, on_evict: Callable[[TableKey], None] | None = None):
        self.lock = threading.RLock()
        self.max_bytes = max_bytes
        self.entries: OrderedDict[TableKey, TableEntry] = OrderedDict()
        self.nbytes = 0
        self.partitions = 0
        # databases: (cat, name) -> (Database, its bytes); None until loaded whole.
        self.databases: dict[tuple[str, str], tuple[Any, bytes]] = {}
        self.databases_as_of: int | None = None
        self.catalogs: set[str] = {"hive"}
        self.position = 0  # the last event applied (the applier sets it under the lock)
        self._loading: dict[TableKey, int] = {}
        self._evicted: OrderedDict[TableKey, None] = OrderedDict()
        self._on_evict = on_evict

    # -- reading (caller holds the lock) -------------------------------------------------------

    def get_locked(self, key: TableKey) -> TableEntry | None:
        """The entry, marked most recently used."""
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def was_evicted_locked(self, key: TableKey) -> bool:
        return key in self._evicted

    def table_keys(self) -> list[TableKey]:
        with self.lock:
            return list(self.entries)

    def entries_of_db_locked(self, cat: str | None, db: str) -> Iterator[TableEntry]:
        for key, entry in list(self.entries.items()):
            if key.db == db and (cat is None or key.cat == cat):
                yield entry

    # -- loads ---------------------------------------------------------------------------------

    def begin_load(self, key: TableKey) -> None:
        """A load of ``key`` is starting: remember events that touch it from now on."""
        with self.lock:
            self._loading.setdefault(key, 0)

    def end_load(self, key: TableKey) -> None:
        with self.lock:
            self._loading.pop(key, None)

    def install(self, entry: TableEntry, loaded_at: int) -> bool:
        """Put a freshly loaded entry (state at event ``loaded_at``); False if it is older than
        what the cache has, or an event touched the table while it was being loaded."""
        with self.lock:
            key = entry.key
            touched = self._loading.pop(key, 0)
            if touched > loaded_at:
                return False
            old = self.entries.get(key)
            if old is not None and old.as_of > loaded_at:
                return False
            entry.as_of = max(entry.as_of, loaded_at)
            self.put_locked(entry)
            return True

    # -- changes (caller holds the lock) -------------------------------------------------------

    def touched_locked(self, key: TableKey, event_id: int) -> None:
        """An event about ``key`` was applied (or skipped, the table being absent)."""
        if key in self._loading and self._loading[key] < event_id:
            self._loading[key] = event_id

    def put_locked(self, entry: TableEntry) -> None:
        key = entry.key
        old = self.entries.pop(key, None)
        if old is not None:
            self._forget(old)
        self._evicted.pop(key, None)
        entry.nbytes = entry.size()
        self.catalogs.add(key.cat)
        self.entries[key] = entry
        self.nbytes += entry.nbytes
        self.partitions += len(entry.parts) if entry.parts is not None else 0
        self.evict_locked(keep=key)

    def resized_locked(self, entry: TableEntry, old_partitions: int) -> None:
        """Account an entry changed in place (``old_partitions``: its count before)."""
        if self.entries.get(entry.key) is not entry:
            return
        size = entry.size()
        self.nbytes += size - entry.nbytes
        entry.nbytes = size
        self.partitions += (len(entry.parts) if entry.parts is not None else 0) - old_partitions
        self.evict_locked(keep=entry.key)

    def drop_locked(self, key: TableKey) -> TableEntry | None:
        old = self.entries.pop(key, None)
        if old is not None:
            self._forget(old)
        return old

    def clear_locked(self) -> list[TableKey]:
        """Forget everything; loads made before the current position are refused."""
        keys = list(self.entries)
        self.entries.clear()
        self.nbytes = 0
        self.partitions = 0
        self.databases.clear()
        self.databases_as_of = self.position
        for key in self._loading:
            self._loading[key] = 1 << 62  # every load under way is now stale
        return keys

    def evict_locked(self, keep: TableKey | None = None) -> None:
        while self.nbytes > self.max_bytes and self.entries:
            key = next(iter(self.entries))
            if key == keep:
                if len(self.entries) == 1:
                    return
                self.entries.move_to_end(key)
                key = next(iter(self.entries))
            old = self.entries.pop(key)
            self._forget(old)
            self._evicted[key] = None
            while len(self._evicted) > EVICTED_MEMORY:
                self._evicted.popitem(last=False)
            if self._on_evict is not None:
                self._on_evict(key)

    def _forget(self, entry: TableEntry) -> None:
        self.nbytes -= entry.nbytes
        self.partitions -= len(entry.parts) if entry.parts is not None else 0

    # -- databases -----------------------------------------------------------------------------

    def install_databases(self, found: dict[tuple[str, str], tuple[Any, bytes]], at: int) -> bool:
        with self.lock:
            if self.databases_as_of is not None and self.databases_as_of > at:
                return False
            self.databases = dict(found)
            self.databases_as_of = at
            return True
