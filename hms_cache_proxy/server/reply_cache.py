"""The upstream-mode cache: replies of the upstream, kept as their bytes, dropped by events.

An entry is one reply the upstream gave to one request: keyed by the connection's session
state, the method and the arguments' exact bytes, holding the result struct's bytes. It is
answered again only to the same request from the same session. Each entry names the table (or
the database) it is about; the event poller (``upstream_events.py``) drops the entries of every
table an event names, so an entry is never older than the events the poller has applied.

Loads race with events the same way as in database mode: a load takes a ``Ticket`` before it
forwards the call, and installs only if no event touched its table (or database, or the whole
cache) after that. Pure code: no I/O.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

TableKey = tuple[str, str, str]
"""(catalog, database, table) in lower case; table ``""`` for an entry about the database."""

Key = tuple[tuple[bytes, ...], str, bytes]
"""(session state, method, arguments' bytes)."""

_WHOLE = "*"  # the touch mark of a whole database (a drop): every table of it
_ENTRY_OVERHEAD = 200  # bytes counted per entry beyond its key and reply
_MAX_TOUCHED = 100_000  # touch marks kept while loads are under way before starting over


@dataclass(frozen=True)
class Ticket:
    """A load's claim: the cache's epoch and event clock when it began."""

    epoch: int
    clock: int
    table: TableKey


@dataclass
class _Entry:
    reply: bytes
    table: TableKey
    size: int
    expires: float | None


class ReplyCache:
    """Replies by request, at most ``max_bytes`` of them (least recently used go first).

    ``ttl_seconds``: entries expire after that long (the opt-in for an upstream without a
    notification log); None keeps them until an event or eviction drops them.
    """

    def __init__(
        self,
        max_bytes: int,
        *,
        ttl_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_bytes = max_bytes
        self.ttl_seconds = ttl_seconds
        self._now = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._by_db: dict[tuple[str, str], set[Key]] = {}
        self._bytes = 0
        self._epoch = 0
        self._clock = 0  # counts touches; a ticket remembers its value
        self._touched: dict[TableKey, int] = {}
        self._loads = 0

    # -- reads -----------------------------------------------------------------------------------

    def get(self, key: Key) -> bytes | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.expires is not None and entry.expires <= self._now():
                self._remove(key)
                return None
            self._entries.move_to_end(key)
            return entry.reply

    @property
    def size(self) -> tuple[int, int]:
        """(entries, bytes)."""
        with self._lock:
            return len(self._entries), self._bytes

    # -- loads -----------------------------------------------------------------------------------

    def ticket(self, table: TableKey) -> Ticket:
        """Taken before the upstream is asked for the reply that ``install`` may keep."""
        with self._lock:
            self._loads += 1
            return Ticket(self._epoch, self._clock, table)

    def install(self, ticket: Ticket, key: Key, reply: bytes) -> bool:
        """Keep ``reply`` unless an event touched its table (or all) since ``ticket``."""
        cat, db, table = ticket.table
        with self._lock:
            overtaken = ticket.epoch != self._epoch or any(
                self._touched.get(mark, -1) > ticket.clock
                for mark in ((cat, db, table), (cat, db, _WHOLE))
            )
            self._end_load()  # after the check: the last load's end forgets the touches
            if overtaken:
                return False
            if key in self._entries:
                self._remove(key)
            size = len(key[1]) + len(key[2]) + sum(map(len, key[0])) + len(reply)
            size += _ENTRY_OVERHEAD
            if size > self.max_bytes:
                return False
            expires = None if self.ttl_seconds is None else self._now() + self.ttl_seconds
            self._entries[key] = _Entry(reply, ticket.table, size, expires)
            self._by_db.setdefault((cat, db), set()).add(key)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._remove(next(iter(self._entries)))
            return True

    def abandon(self, ticket: Ticket) -> None:
        """A load that installs nothing (the upstream failed or refused)."""
        with self._lock:
            self._end_load()

    # -- events ----------------------------------------------------------------------------------

    def drop_table(self, cat: str, db: str, table: str) -> None:
        """An event about ``table``: its entries go, and loads under way of it install nothing."""
        mark = (cat.lower(), db.lower(), table.lower())
        with self._lock:
            self._touch(mark)
            keys = self._by_db.get(mark[:2], ())
            for key in [k for k in keys if self._entries[k].table == mark]:
                self._remove(key)

    def drop_database(self, cat: str, db: str, *, tables: bool) -> None:
        """An event about database ``db``: its entries go; with ``tables``, its tables' too."""
        cat, db = cat.lower(), db.lower()
        with self._lock:
            self._touch((cat, db, _WHOLE if tables else ""))
            keys = self._by_db.get((cat, db), ())
            for key in [k for k in keys if tables or self._entries[k].table[2] == ""]:
                self._remove(key)

    def flush(self) -> None:
        """Everything goes, and every load under way installs nothing (a hole in the log, an
        upstream that restarted with another log, the log no longer followed)."""
        with self._lock:
            self._entries.clear()
            self._by_db.clear()
            self._touched.clear()
            self._bytes = 0
            self._epoch += 1

    # -- inside the lock -------------------------------------------------------------------------

    def _touch(self, mark: TableKey) -> None:
        if self._loads == 0:
            return  # no load to refuse: nothing to remember
        self._clock += 1
        self._touched[mark] = self._clock
        if len(self._touched) > _MAX_TOUCHED:
            self._touched.clear()
            self._epoch += 1  # loads under way cannot be judged any more: they install nothing

    def _end_load(self) -> None:
        self._loads -= 1
        if self._loads == 0:
            self._touched.clear()

    def _remove(self, key: Key) -> None:
        entry = self._entries.pop(key)
        self._bytes -= entry.size
        db = entry.table[:2]
        keys = self._by_db.get(db)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_db[db]
