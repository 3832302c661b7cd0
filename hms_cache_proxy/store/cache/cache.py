"""The cache: table entries in least-recently-used order, databases, memory accounting.

One lock guards everything. Readers (CachedStore) take it for the few microseconds it takes to
check an entry and pick up references to its bytes; the event applier takes it for one batch of
events at a time, so a reader sees a batch applied entirely or not at all. Methods whose names
end in ``_locked`` expect the caller to hold ``lock``; the others take it themselves.

Loads and events never overwrite newer state (docs/cache.md, "as_of_event"): a load made at
event position L replaces an entry only if the entry reflects no event after L, and a load
that was under way while an event touched its table is refused (each load has its own
``LoadTicket``). No I/O here.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from hms_cache_proxy.store.cache.entries import TableEntry, TableName

EVICTED_MEMORY = 10_000
"""How many evicted table names are remembered (to tell "evicted" from "not cached")."""

STALE = 1 << 62
"""A ticket's ``touched`` once the cache was emptied: no load under way may install."""


class LoadTicket:
    """One load under way: the newest event that touched its table since it began."""

    __slots__ = ("key", "touched")

    def __init__(self, key: TableName) -> None:
        self.key = key
        self.touched = 0


class Cache:
    """Entries of whole tables, a byte budget, and the databases map."""

    def __init__(self, max_bytes: int, on_evict: Callable[[TableName], None] | None = None):
        self.lock = threading.RLock()
        self.max_bytes = max_bytes
        self.entries: OrderedDict[TableName, TableEntry] = OrderedDict()
        self.nbytes = 0
        self.partitions = 0
        # databases: (cat, name) -> (Database, its bytes); None until loaded whole.
        self.databases: dict[tuple[str, str], tuple[Any, bytes]] = {}
        self.databases_as_of: int | None = None
        # True while the map lists every database (a whole load installed, and since then only
        # this instance's events changed it); a foreign event, a flush or a clear removes an
        # entry that may still exist, so the list is incomplete until the next load.
        self.databases_complete = False
        self.catalogs: set[str] = {"hive"}
        self.position = 0  # the last event applied (the applier sets it under the lock)
        # Constraints: the last event that changed some table's constraints, or dropped or
        # renamed a table (a load read before it may name it), and the entries holding
        # foreign keys (their answer depends on the referenced tables).
        self.constraints_epoch = 0
        self.fk_holders: set[TableName] = set()
        self._loading: dict[TableName, set[LoadTicket]] = {}
        self._evicted: OrderedDict[TableName, None] = OrderedDict()
        self._on_evict = on_evict

    # -- reading (caller holds the lock) -------------------------------------------------------

    def get_locked(self, key: TableName) -> TableEntry | None:
        """The entry, marked most recently used."""
        entry = self.entries.get(key)
        if entry is not None:
            self.entries.move_to_end(key)
        return entry

    def was_evicted_locked(self, key: TableName) -> bool:
        return key in self._evicted

    def table_keys(self) -> list[TableName]:
        with self.lock:
            return list(self.entries)

    def entries_of_db_locked(self, cat: str | None, db: str) -> Iterator[TableEntry]:
        for key, entry in list(self.entries.items()):
            if key.db == db and (cat is None or key.cat == cat):
                yield entry

    # -- loads ---------------------------------------------------------------------------------

    def begin_load(self, key: TableName) -> LoadTicket:
        """A load of ``key`` is starting: its ticket records every event that touches the table
        from now on. Each load has a ticket of its own, so loads of one table running side by
        side (a miss, a refresh, prewarm) never hide events from one another."""
        ticket = LoadTicket(key)
        with self.lock:
            self._loading.setdefault(key, set()).add(ticket)
        return ticket

    def end_load(self, ticket: LoadTicket) -> None:
        """The load ended without installing (no table, or it failed)."""
        with self.lock:
            self._end_locked(ticket)

    def _end_locked(self, ticket: LoadTicket) -> None:
        tickets = self._loading.get(ticket.key)
        if tickets is not None:
            tickets.discard(ticket)
            if not tickets:
                del self._loading[ticket.key]

    def loading_locked(self, key: TableName) -> int:
        """How many loads of ``key`` are under way (tests, and the loader's one-at-a-time rule)."""
        return len(self._loading.get(key, ()))

    def install(self, entry: TableEntry, loaded_at: int, ticket: LoadTicket) -> bool:
        """Put a freshly loaded entry (state at event ``loaded_at``); False if it is older than
        what the cache has, or an event touched the table after ``loaded_at`` while it was being
        loaded (a drop, a rename, an alter: what the load read is stale)."""
        with self.lock:
            self._end_locked(ticket)
            if ticket.touched > loaded_at:
                return False
            old = self.entries.get(entry.key)
            if old is not None and old.as_of > loaded_at:
                return False
            entry.as_of = max(entry.as_of, loaded_at)
            self.put_locked(entry)
            return True

    # -- changes (caller holds the lock) -------------------------------------------------------

    def touched_locked(self, key: TableName, event_id: int) -> None:
        """An event about ``key`` was applied (or skipped, the table being absent)."""
        tickets = self._loading.get(key)
        if tickets:
            for ticket in tickets:
                if ticket.touched < event_id:
                    ticket.touched = event_id

    def touched_db_locked(self, cat: str | None, db: str, event_id: int) -> None:
        """An event about a whole database: every load of one of its tables is stale."""
        for key in [k for k in self._loading if k.db == db and (cat is None or k.cat == cat)]:
            self.touched_locked(key, event_id)

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

    def drop_locked(self, key: TableName) -> TableEntry | None:
        old = self.entries.pop(key, None)
        if old is not None:
            self._forget(old)
        return old

    def constraints_changed_locked(self, key: TableName, event_id: int) -> None:
        """The constraints of ``key`` changed, or it was dropped or renamed: forget them, and
        those of every entry with a foreign key referencing it; loads read before are stale."""
        self.constraints_epoch = max(self.constraints_epoch, event_id)
        entry = self.entries.get(key)
        if entry is not None:
            self._forget_constraints(entry, event_id)
        for holder in list(self.fk_holders):
            other = self.entries.get(holder)
            if other is None or other.constraints is None:
                self.fk_holders.discard(holder)
            elif key in other.constraint_refs:
                self._forget_constraints(other, event_id)

    def forget_constraints_locked(self, event_id: int, db: tuple[str, str] | None = None) -> None:
        """An event about a whole database (``db``: catalog, name), or about everything: the
        constraints of every entry with a foreign key into it are forgotten."""
        self.constraints_epoch = max(self.constraints_epoch, event_id)
        for holder in list(self.fk_holders):
            other = self.entries.get(holder)
            if other is None or other.constraints is None:
                self.fk_holders.discard(holder)
            elif db is None or any((r.cat, r.db) == db for r in other.constraint_refs):
                self._forget_constraints(other, event_id)

    def _forget_constraints(self, entry: TableEntry, event_id: int) -> None:
        before = len(entry.parts) if entry.parts is not None else 0
        entry.forget_constraints(event_id)
        self.fk_holders.discard(entry.key)
        self.resized_locked(entry, before)

    def install_constraints_locked(
        self, key: TableName, data: bytes, refs: frozenset[TableName], at: int
    ) -> bool:
        """Constraints read at position ``at``, kept only if the entry reflects that position
        for them: the poller has applied every event up to ``at``, and no event since may have
        changed them (this table's, or a table a foreign key of any table may reference)."""
        entry = self.entries.get(key)
        if entry is None or self.position < at:
            return False
        if entry.constraints_changed > at or self.constraints_epoch > at:
            return False
        before = len(entry.parts) if entry.parts is not None else 0
        entry.constraints, entry.constraint_refs = data, refs
        if refs:
            self.fk_holders.add(key)
        self.resized_locked(entry, before)
        return True

    def clear_locked(self) -> list[TableName]:
        """Forget everything; loads made before the current position are refused."""
        keys = list(self.entries)
        self.entries.clear()
        self.nbytes = 0
        self.partitions = 0
        self.databases.clear()
        self.databases_complete = False
        self.databases_as_of = self.position
        self.constraints_epoch = self.position
        self.fk_holders.clear()
        for tickets in self._loading.values():
            for ticket in tickets:
                ticket.touched = STALE  # every load under way is now stale
        return keys

    def evict_locked(self, keep: TableName | None = None) -> None:
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
            self.databases_complete = True
            return True

    def database_names(self, cat: str) -> list[str] | None:
        """The names of the catalog's databases, sorted, or None when the map is incomplete."""
        with self.lock:
            if not self.databases_complete:
                return None
            return sorted(name for c, name in self.databases if c == cat)
