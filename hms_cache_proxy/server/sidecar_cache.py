"""The upstream-mode cache's rules, for the pass-through processor (docs/cache.md, "In upstream
mode").

- A cached call (``cached_calls.CACHED``) is answered from the ``ReplyCache`` only while the
  poller follows the upstream's log and is fresh (or, opted in with a TTL, while the upstream
  has no log), and only with a reply the upstream gave to the same request bytes in the same
  session.
- A miss is forwarded; a successful reply is installed under the ticket taken before.
- Read-your-writes: after any call that may write passes through a connection, the next cached
  read on that connection first waits until the poller has applied the upstream's current
  event id (``UpstreamEvents.catch_up``); if it cannot, the read goes to the upstream.
- A column-statistics write (``statistics_writes``), which Hive before 4.0 logs no event for,
  drops the entries of the tables it names before it is answered, whatever its outcome.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hms_cache_proxy.observability import metrics
from hms_cache_proxy.server import cached_calls
from hms_cache_proxy.server.reply_cache import Key, ReplyCache, Ticket
from hms_cache_proxy.server.statistics_writes import tables_written
from hms_cache_proxy.server.upstream_events import NO_LOG, UpstreamEvents

READS = frozenset(
    {
        "set_ugi",
        "setMetaConf",
        "getMetaConf",
        "heartbeat",
        "heartbeat_txn_range",
        "check_lock",
        "show_locks",
        "show_compact",
        "getVersion",
        "getName",
        "aliveSince",
        "getStatus",
        "fb303_getStatus",
    }
)
"""Calls besides ``get_*`` that change no metadata: they leave read-your-writes alone."""

LOGGED_WRITES = frozenset(
    {
        "create_database",
        "alter_database",
        "drop_database",
        "create_table",
        "create_table_with_environment_context",
        "create_table_req",
        "alter_table",
        "alter_table_with_environment_context",
        "alter_table_with_cascade",
        "alter_table_req",
        "drop_table",
        "drop_table_with_environment_context",
        "add_partition",
        "add_partition_with_environment_context",
        "add_partitions",
        "add_partitions_req",
        "alter_partition",
        "alter_partitions",
        "alter_partitions_with_environment_context",
        "alter_partitions_req",
        "drop_partition",
        "drop_partition_by_name",
        "drop_partitions_req",
    }
)
"""Writes every Hive with a notification log logs: when one succeeds through this instance and
the upstream's event id does not move, the upstream has no log."""

MISS_NOT_FOLLOWING = "not_following"  # the poller is not reading the upstream's log
MISS_BEHIND = metrics.MISS_BEHIND  # a write passed through and the log could not be caught up


class Session(threading.local):
    """One connection's read-your-writes state (one thread serves each connection)."""

    wrote = False
    position_before: int | None = None  # the poller's position before a logged write


@dataclass(frozen=True)
class Load:
    """A miss to install when the upstream answers it."""

    key: Key
    ticket: Ticket


class SidecarCache:
    """The cache of a server in upstream mode."""

    def __init__(
        self,
        service: Any,
        cache: ReplyCache,
        events: UpstreamEvents,
        *,
        catch_up_seconds: float,
        ttl_seconds: float | None = None,
    ) -> None:
        self.cache = cache
        self.events = events
        self._service = service
        self._catch_up = catch_up_seconds
        self._ttl = ttl_seconds
        self._session = Session()
        self._hits: dict[str, Callable[[], None]] = {}

    def start(self) -> None:
        self.events.start()

    def stop(self) -> None:
        self.events.stop()

    def describe(self) -> dict[str, Any]:
        """For /readyz: whether the cache answers, and why (not)."""
        entries, size = self.cache.size
        return {
            "answering": self.answering(),
            "by_time": self.by_time(),
            "ttl_seconds": self._ttl,
            "notification_log": self.events.describe(),
            "entries": entries,
            "bytes": size,
        }

    def by_time(self) -> bool:
        """Entries are kept for a time only: no log, and the TTL opted in."""
        return self._ttl is not None and self.events.state == NO_LOG

    def answering(self) -> bool:
        return self.events.fresh() or self.by_time()

    def lookup(
        self, state: tuple[bytes, ...], api: str, body: bytes
    ) -> tuple[bytes | None, Load | None]:
        """The cached reply to this request, or the load to finish when it is forwarded."""
        if not self.answering():
            self._miss(api, MISS_NOT_FOLLOWING)
            return None, None
        session = self._session
        if session.wrote and not self._caught_up(session):
            self._miss(api, MISS_BEHIND)
            return None, None
        session.wrote, session.position_before = False, None
        key = (state, api, body)
        reply = self.cache.get(key)
        if reply is not None:
            self._hit(api)
            return reply, None
        self._miss(api, metrics.MISS_NOT_CACHED)
        subject = cached_calls.subject(self._service, api, body)
        if subject is None:
            return None, None
        return None, Load(key, self.cache.ticket(subject))

    def _caught_up(self, session: Session) -> bool:
        return self.by_time() or self.events.catch_up(self._catch_up, session.position_before)

    def finish(self, load: Load, reply_type: int, body: bytes | None) -> None:
        """Install the upstream's reply to a miss if it is a successful one."""
        if body is not None and reply_type == 2 and _success(body):  # 2: TMessageType.REPLY
            self.cache.install(load.ticket, load.key, body)
        else:
            self.cache.abandon(load.ticket)

    def before_write(self, api: str) -> int | None:
        """The poller's position before a call that may write (for ``wrote``)."""
        return self.events.position if api in LOGGED_WRITES else None

    def wrote(self, api: str, position_before: int | None, succeeded: bool, request: bytes) -> None:
        """A call that may write passed through this connection (``request``: its arguments),
        whatever the upstream answered."""
        if api.startswith("get_") or api in READS:
            return
        if self.by_time():
            self.cache.flush()  # no log to follow: what this instance forwarded it forgets
            return
        self._drop_statistics_tables(api, request)
        session = self._session
        session.wrote = True
        if succeeded and position_before is not None:
            session.position_before = position_before

    def _drop_statistics_tables(self, api: str, request: bytes) -> None:
        """A statistics write changed the tables' (or partitions') COLUMN_STATS_ACCURATE with no
        event behind a Hive 3 upstream: their entries go now (a write that failed may still
        have written some: set_aggr_stats_for writes partition by partition). A request that
        cannot be read empties the cache."""
        tables = tables_written(api, request)
        if tables is None:
            self.cache.flush()
            return
        for cat, db, table in tables:
            self.cache.drop_table(cat, db, table)

    def _hit(self, api: str) -> None:
        count = self._hits.get(api)
        if count is None:
            count = self._hits[api] = metrics.CACHE_HITS.labels(api).inc
        count()

    @staticmethod
    def _miss(api: str, reason: str) -> None:
        metrics.CACHE_MISSES.labels(api, reason).inc()


def _success(body: bytes) -> bool:
    """A binary-protocol result struct holding its success field (field 0)."""
    return len(body) >= 3 and body[0] != 0 and body[1:3] == b"\x00\x00"


def succeeded(body: bytes) -> bool:
    """A binary-protocol result struct with no exception field: void, or field 0 set."""
    return body[:1] == b"\x00" or _success(body)
