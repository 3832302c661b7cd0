"""``consistency: strong``: a read first confirms the cache has applied every event the
database had when the read arrived.

The database's position (NEXT_EVENT_ID - 1) is read by one single-row query that every read
in flight shares: a read waits for the next query that *starts* after it arrived (one already
running may have started before the read's write-before-it committed), and one query serves
all reads that arrived while the previous one ran. If the cache is behind that position the
poller is woken and the read waits up to ``wait_seconds`` for it; past that it is answered
from the database. Table reads take their answer from the cache first, at ``applied``, and
keep it when that covers the position (CachedStore._read).

The query cannot be skipped while no NOTIFY arrived: a commit acknowledged elsewhere may not
have reached our LISTEN socket yet (docs/cache.md, "why the position query cannot be skipped").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class PositionBarrier:
    def __init__(self, read_current: Callable[[], int], poller: Any, wait_seconds: float = 1.0):
        self._read = read_current
        self._poller = poller
        self.wait_seconds = wait_seconds
        self._cond = threading.Condition()
        self._issued = 0  # queries started so far
        self._done = 0  # the number of the last query that finished
        self._value = 0
        self._running = False

    def database_position(self) -> int:
        """The database's position, read by a query that started after this call did."""
        with self._cond:
            ticket = self._issued
            while True:
                if self._done > ticket:
                    return self._value
                if not self._running:
                    self._running = True
                    self._issued += 1
                    number = self._issued
                    break
                self._cond.wait()
        value: int | None = None
        try:
            value = self._read()
        finally:
            with self._cond:
                self._running = False
                if value is not None:
                    self._value = max(self._value, value)
                    self._done = number
                self._cond.notify_all()
        return self._value

    @property
    def applied(self) -> int:
        """The poller's position: every event up to it is in the cache."""
        return self._poller.position

    def wait_current(self) -> bool:
        """True when the cache has applied every event the database holds now."""
        return self.reach(self.database_position())

    def reach(self, target: int) -> bool:
        """True once the poller has applied every event up to ``target``: from memory when this
        process committed every one missing, else woken and waited for up to
        ``wait_seconds``."""
        if self._poller.position >= target:
            return True
        if self._poller.apply_recorded(target):
            return True  # only this process's own events were missing (some not announced)
        self._poller.wake()
        return self._poller.wait_for(target, self.wait_seconds)
