"""Whether the service is ready to take traffic, and how far the cache's prewarm has got.

``/readyz`` reads a ``Readiness``; the start-up code and (later) the cache's prewarm write it.
It holds counters only, so the cache can update it from its loader threads without knowing
anything about HTTP, and the HTTP side can read it without touching the cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from hms_cache_proxy.observability import metrics

NOT_STARTED = "not_started"
RUNNING = "running"
FINISHED = "finished"


class Readiness:
    """Thread-safe readiness flags and prewarm counters (also exported as hms_prewarm_*)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._schema_checked = False
        self._ready = False
        self._stopping = False
        self._reason: str | None = "starting"
        self._prewarm = NOT_STARTED
        self._tables_done = 0
        self._tables_total = 0
        self._partitions = 0
        self._details: dict[str, Callable[[], Any]] = {}
        self._conditions: list[Callable[[], str | None]] = []

    def add_condition(self, condition: Callable[[], str | None]) -> None:
        """A check that names a degradation (or None): shown in /readyz as ``degraded``
        without making the instance unready (it still serves what it can)."""
        self._conditions.append(condition)

    # -- written by start-up and the cache -------------------------------------------------------

    def mark_schema_checked(self) -> None:
        """The database holds a schema this service can serve (ensure_ready passed)."""
        with self._lock:
            self._schema_checked = True

    def mark_ready(self) -> None:
        """The service may take traffic (with no cache: at once; with one: the cache decides).

        No effect once stopping: a prewarm that ends during shutdown must not bring it back."""
        with self._lock:
            if self._stopping:
                return
            self._ready = True
            self._reason = None

    def mark_not_ready(self, reason: str) -> None:
        with self._lock:
            if self._stopping:
                return
            self._ready = False
            self._reason = reason

    def mark_stopping(self) -> None:
        """Shutdown has begun: not ready from now on, whatever else reports (load balancers
        take the instance out while its calls in flight are finished)."""
        with self._lock:
            self._stopping = True
            self._ready = False
            self._reason = "shutting down: no new connections, calls in flight being finished"

    def prewarm_started(self, tables_total: int) -> None:
        with self._lock:
            self._prewarm = RUNNING
            self._tables_total = tables_total
            self._tables_done = 0
            self._partitions = 0
        metrics.PREWARM_TABLES_TOTAL.set(tables_total)
        metrics.PREWARM_TABLES_DONE.set(0)

    def add_tables(self, count: int) -> None:
        """More tables to load (created while prewarm runs)."""
        with self._lock:
            self._tables_total += count
            total = self._tables_total
        metrics.PREWARM_TABLES_TOTAL.set(total)

    def table_loaded(self, partitions: int = 0) -> None:
        """One table (and ``partitions`` of its partitions) is in the cache."""
        with self._lock:
            self._tables_done += 1
            self._partitions += partitions
            done = self._tables_done
        metrics.PREWARM_TABLES_DONE.set(done)
        if partitions:
            metrics.PREWARM_PARTITIONS.inc(partitions)

    def prewarm_finished(self) -> None:
        with self._lock:
            self._prewarm = FINISHED

    def add_detail(self, name: str, read: Callable[[], Any]) -> None:
        """Show ``read()`` as ``name`` in /readyz (it does not decide readiness)."""
        with self._lock:
            self._details[name] = read

    # -- read by /readyz ---------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        with self._lock:
            return self._schema_checked and self._ready

    def snapshot(self) -> dict[str, Any]:
        """A consistent copy of every field, as /readyz shows it."""
        with self._lock:
            details = dict(self._details)
            snap = {
                "schema_checked": self._schema_checked,
                "ready": self._schema_checked and self._ready,
                "stopping": self._stopping,
                "reason": self._reason,
                "degraded": [d for d in (c() for c in self._conditions) if d],
                "prewarm": {
                    "state": self._prewarm,
                    "running": self._prewarm == RUNNING,
                    "finished": self._prewarm == FINISHED,
                    "tables_done": self._tables_done,
                    "tables_total": self._tables_total,
                    "partitions_loaded": self._partitions,
                },
            }
        for name, read in details.items():
            snap[name] = read()
        return snap
