"""The upstream-mode cache: replies of the upstream, kept as their bytes, dropped by events.

An entry is one reply the upstream gave to one request: keyed by the connection's session
state, the method and the arguments' exact bytes, holding the result struct's bytes. It is
answered again only to the same request from the same session. Each entry names its
``Subject``, what it is about: a table, a database, a database's list of table names, a
database's table objects, or the constraints (which name other tables: foreign keys); the event
poller (``upstream_events.py``) drops the entries of every subject an event changes, so an
entry is never older than the events the poller has applied.

Loads race with events the same way as in database mode: a load takes a ``Ticket`` before it
forwards the call, and installs only if no event touched its subject (or its whole database,
or the whole cache) after that. Pure code: no I/O.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

TABLE = "table"  # one table (its object, its partitions)
DATABASE = "database"  # one database's object
TABLE_NAMES = "table_names"  # a database's table names (get_tables, get_all_tables)
TABLE_OBJECTS = "table_objects"  # tables of a database by name (get_table_objects_by_name)
CONSTRAINTS = "constraints"  # any table's constraints: a foreign key names another table
_WHOLE = "whole"  # the touch mark of a whole database (a drop): every subject in it


class Subject(NamedTuple):
    """What an entry is about: its ``kind`` and, in lower case, the catalog, database and table
    it names (table "" for a database's kinds; all "" for the constraints)."""

    kind: str
    cat: str = ""
    db: str = ""
    table: str = ""


Key = tuple[tuple[bytes, ...], str, bytes]
"""(session state, method, arguments' bytes)."""

_ENTRY_OVERHEAD = 200  # bytes counted per entry beyond its key and reply
_MAX_TOUCHED = 100_000  # touch marks kept while loads are under way before starting over


@dataclass(frozen=True)
class Ticket:
    """A load's claim: the cache's epoch and event clock when it began."""

    epoch: int
    clock: int
    subject: Subject


@dataclass
class _Entry:
    reply: bytes
    subject: Subject
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
        self._touched: dict[Subject, int] = {}
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

    def ticket(self, subject: Subject) -> Ticket:
        """Taken before the upstream is asked for the reply that ``install`` may keep."""
        with self._lock:
            self._loads += 1
            return Ticket(self._epoch, self._clock, subject)

    def install(self, ticket: Ticket, key: Key, reply: bytes) -> bool:
        """Keep ``reply`` unless an event touched its subject (or all) since ``ticket``."""
        subject = ticket.subject
        with self._lock:
            overtaken = ticket.epoch != self._epoch or any(
                self._touched.get(mark, -1) > ticket.clock
                for mark in (subject, Subject(_WHOLE, subject.cat, subject.db))
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
            self._entries[key] = _Entry(reply, subject, size, expires)
            self._by_db.setdefault((subject.cat, subject.db), set()).add(key)
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
        """An event about ``table``: its entries go, and the table objects of its database
        (they hold it, or would); loads under way of them install nothing."""
        cat, db = cat.lower(), db.lower()
        self._drop((Subject(TABLE, cat, db, table.lower()), Subject(TABLE_OBJECTS, cat, db)))

    def drop_table_names(self, cat: str, db: str) -> None:
        """A table of ``db`` was created, dropped or renamed: the lists of its names go."""
        self._drop((Subject(TABLE_NAMES, cat.lower(), db.lower()),))

    def drop_constraints(self) -> None:
        """A constraint was added or dropped, or a table dropped or renamed (a foreign key of
        any table may name it): every constraints entry goes."""
        self._drop((Subject(CONSTRAINTS),))

    def drop_database(self, cat: str, db: str, *, tables: bool) -> None:
        """An event about database ``db``: its entry goes; with ``tables``, every entry about
        anything in it."""
        cat, db = cat.lower(), db.lower()
        if not tables:
            self._drop((Subject(DATABASE, cat, db),))
            return
        with self._lock:
            self._touch(Subject(_WHOLE, cat, db))
            for key in list(self._by_db.get((cat, db), ())):
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

    def _drop(self, subjects: Iterable[Subject]) -> None:
        """Entries about any of ``subjects`` go; loads under way of them install nothing."""
        with self._lock:
            for subject in subjects:
                self._touch(subject)
                keys = self._by_db.get((subject.cat, subject.db), ())
                for key in [k for k in keys if self._entries[k].subject == subject]:
                    self._remove(key)

    def _touch(self, mark: Subject) -> None:
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
        db = (entry.subject.cat, entry.subject.db)
        keys = self._by_db.get(db)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_db[db]
