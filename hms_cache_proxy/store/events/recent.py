"""The events the poller applied last, kept so ``get_next_notification`` can be answered from
memory: sidecars (instances in upstream mode) tail this instance's log every fraction of a
second, and an idle one then costs no database statement.

The window covers the event ids ``(base, end]`` with every event of that range, in id order
(the poller applies the log without holes). A request after ``last >= base`` is answered from
it: the events after ``last`` up to ``end``, the position the poller has reached, which may be
behind the database's newest event (a reader then sees the rest on its next read, as when the
poller catches up). A request from before ``base`` is the database's to answer.

Sidecars held at the same position are answered together when an event comes: the answer is
encoded once (``after_encoded``) and the same bytes go to each of them, until the window moves.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.thrift_bytes import Encoded, encode_list

WAIT_MARK = "hms-cache-proxy:wait-ms="
"""An ``eventTypeSkipList`` entry ``WAIT_MARK + N``: hold the request up to N ms until an
event after ``lastEvent`` is applied (sidecars' long poll). A metastore that does not know it
skips an event type that does not exist and answers at once: plain polling."""

MAX_WAIT_SECONDS = 5.0

_MAX_ENCODED = 64
"""Encoded answers kept for the window as it is (one per position and filter asked)."""


def split_wait(skip_types: Sequence[str]) -> tuple[float, list[str]]:
    """(seconds to wait, at most MAX_WAIT_SECONDS; the skip list without the mark)."""
    wait, rest = 0.0, []
    for kind in skip_types:
        if kind.startswith(WAIT_MARK):
            try:
                wait = min(MAX_WAIT_SECONDS, max(0.0, int(kind[len(WAIT_MARK) :]) / 1000))
            except ValueError:
                pass
        else:
            rest.append(kind)
    return wait, rest


class RecentEvents:
    """At most ``capacity`` events; ``cap``: the most one answer holds (notification_max_events)."""

    def __init__(self, position: int, *, capacity: int = 10_000, cap: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._events: deque[Any] = deque()
        self._base = self._end = position
        self._capacity = capacity
        self._cap = cap
        self._encoded: dict[tuple[int, int, frozenset[str]], Encoded] = {}
        self.encodings = 0
        """Answers encoded by ``after_encoded`` (each one then served to every asker)."""

    def add(self, events: Sequence[Any]) -> None:
        """Events the poller applied (in id order, following what it applied before)."""
        if not events:
            return
        with self._lock:
            if events[0].eventId != self._end + 1:
                self._events.clear()
                self._base = events[0].eventId - 1
            self._events.extend(events)
            self._end = events[-1].eventId
            while len(self._events) > self._capacity:
                self._base = self._events.popleft().eventId
            self._encoded.clear()

    @property
    def end(self) -> int:
        """The newest event id held (the poller's position)."""
        return self._end

    def reset(self, position: int) -> None:
        """The poller starts over at ``position`` (a hole in the log): nothing before it."""
        with self._lock:
            self._events.clear()
            self._base = self._end = position
            self._encoded.clear()

    def after(
        self, last_event: int, max_events: int | None, skip_types: Sequence[str] = ()
    ) -> list[Any] | None:
        """The events after ``last_event`` as ``get_next_notification`` returns them, or None
        when the window does not reach back that far."""
        limit = self._limit(max_events)
        skip = frozenset(skip_types)
        with self._lock:
            return self._after_locked(last_event, limit, skip)

    def after_encoded(
        self, last_event: int, max_events: int | None, skip_types: Sequence[str] = ()
    ) -> Encoded | None:
        """``after`` as one Encoded LIST of NotificationEvents, encoded once for every caller
        asking the same (position, limit, skipped types) while the window stays as it is: a
        hundred sidecars woken by one event cost one encoding."""
        limit = self._limit(max_events)
        skip = frozenset(skip_types)
        key = (last_event, limit, skip)
        with self._lock:
            found = self._encoded.get(key)
            if found is not None:
                return found
            events = self._after_locked(last_event, limit, skip)
            if events is None:
                return None
            found = encode_list(events, hms.NotificationEvent)
            self.encodings += 1
            metrics.NOTIFICATION_ENCODINGS.inc()
            if len(self._encoded) >= _MAX_ENCODED:
                self._encoded.clear()
            self._encoded[key] = found
            return found

    def _limit(self, max_events: int | None) -> int:
        if max_events is not None and 0 < max_events < self._cap:
            return max_events
        return self._cap

    def _after_locked(self, last_event: int, limit: int, skip: frozenset[str]) -> list[Any] | None:
        if last_event < self._base:
            return None
        out: list[Any] = []
        for event in itertools.islice(self._events, last_event - self._base, None):
            if event.eventType in skip:
                continue
            out.append(event)
            if len(out) >= limit:
                break
        return out
