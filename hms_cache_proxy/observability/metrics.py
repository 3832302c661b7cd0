"""The service's Prometheus metrics, in one registry per process.

Every layer records through the names below; `observability/http.py` exposes them on /metrics.
Miss reasons are a fixed vocabulary so dashboards and alerts can rely on them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from hms_cache_proxy import __version__

REGISTRY = CollectorRegistry(auto_describe=True)

# The usual process_*, python_info and python_gc_* series, on our registry rather than the
# default one (which this process does not expose).
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

# Why a read was not answered from the cache.
MISS_NOT_CACHED = "not_cached"
MISS_NOT_EQUIVALENT = "write_ids_not_equivalent"
MISS_UNCOMMITTED = "uncommitted"
MISS_NO_SNAPSHOT = "no_snapshot"
MISS_FILTERED_OUT = "filtered_out"  # the entry cannot answer this kind of request
MISS_EVICTED = "evicted"
MISS_BEHIND = "behind"  # strong mode: the cache had not applied every event in time
MISS_REPLICATION = "replication"  # a database holding replication state (changed eventless)
MISS_REASONS = (
    MISS_NOT_CACHED,
    MISS_NOT_EQUIVALENT,
    MISS_UNCOMMITTED,
    MISS_NO_SNAPSHOT,
    MISS_FILTERED_OUT,
    MISS_EVICTED,
    MISS_BEHIND,
    MISS_REPLICATION,
)

REQUESTS = Counter(
    "hms_requests_total",
    "Thrift calls answered, by method and outcome (ok or the exception's name).",
    ["method", "outcome"],
    registry=REGISTRY,
)
REQUEST_SECONDS = Histogram(
    "hms_request_seconds",
    "Time to answer a Thrift call, by method.",
    ["method"],
    buckets=(0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
    registry=REGISTRY,
)
REST_REQUESTS = Counter(
    "hms_rest_requests_total",
    "Iceberg REST catalog requests answered, by operation and HTTP status.",
    ["operation", "status"],
    registry=REGISTRY,
)
REST_REQUEST_SECONDS = Histogram(
    "hms_rest_request_seconds",
    "Time to answer an Iceberg REST catalog request, by operation (commits include lock waits).",
    ["operation"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30),
    registry=REGISTRY,
)
CACHE_HITS = Counter(
    "hms_cache_hits_total", "Reads answered from the cache, by call.", ["method"], registry=REGISTRY
)
CACHE_MISSES = Counter(
    "hms_cache_misses_total",
    "Reads answered from the database instead of the cache, by call and reason.",
    ["method", "reason"],
    registry=REGISTRY,
)
EVENTS_APPLIED = Counter(
    "hms_cache_events_applied_total",
    "Notification events applied to the cache, by event type.",
    ["event_type"],
    registry=REGISTRY,
)
NOTIFICATION_ENCODINGS = Counter(
    "hms_cache_notification_answers_encoded_total",
    "get_next_notification answers encoded from the events applied last; each one goes to "
    "every caller asking the same until the next event (sidecars held at one position).",
    registry=REGISTRY,
)
INVALIDATIONS = Counter(
    "hms_cache_invalidations_total",
    "Cache entries dropped instead of updated, by reason.",
    ["reason"],
    registry=REGISTRY,
)
LAG_EVENTS = Gauge(
    "hms_cache_lag_events",
    "Events in the database's notification log not yet applied to this cache.",
    registry=REGISTRY,
)
LAG_SECONDS = Gauge(
    "hms_cache_lag_seconds",
    "Age of the oldest event not yet applied to this cache (0 when caught up).",
    registry=REGISTRY,
)
POSITION = Gauge(
    "hms_cache_event_position",
    "Id of the last notification event applied to this cache.",
    registry=REGISTRY,
)
LAST_POLL = Gauge(
    "hms_cache_last_poll_timestamp_seconds",
    "Unix time the poller last read the notification log to its end (every "
    "cache_poll_interval_seconds when healthy; lag gauges stand still while it is stuck).",
    registry=REGISTRY,
)
CACHE_BYTES = Gauge("hms_cache_bytes", "Bytes the cache accounts for.", registry=REGISTRY)
CACHE_TABLES = Gauge("hms_cache_tables", "Tables held in the cache.", registry=REGISTRY)
CACHE_PARTITIONS = Gauge("hms_cache_partitions", "Partitions held in the cache.", registry=REGISTRY)
EVICTIONS = Counter(
    "hms_cache_evictions_total",
    "Tables evicted to stay within the memory budget.",
    registry=REGISTRY,
)
PREWARM_TABLES_DONE = Gauge(
    "hms_prewarm_tables_done", "Tables loaded by prewarm so far.", registry=REGISTRY
)
PREWARM_TABLES_TOTAL = Gauge(
    "hms_prewarm_tables_total", "Tables prewarm has to load.", registry=REGISTRY
)
PREWARM_PARTITIONS = Counter(
    "hms_prewarm_partitions_total", "Partitions loaded by prewarm.", registry=REGISTRY
)

BUILD_INFO = Gauge(
    "hms_build_info",
    "Always 1; the version label says which release runs.",
    ["version"],
    registry=REGISTRY,
)
BUILD_INFO.labels(__version__).set(1)
WORKER = Gauge(
    "hms_worker",
    "Index of this process among the workers of `serve --workers N` (0 to N-1; 0 without "
    "workers); each worker serves its own /metrics on metrics_port + index.",
    registry=REGISTRY,
)
DATABASE_ERRORS = Counter(
    "hms_database_errors_total",
    "Errors raised by the database driver, by SQLAlchemy error class (includes retried "
    "deadlocks and constraint violations the store turns into Thrift exceptions).",
    ["kind"],
    registry=REGISTRY,
)
DATABASE_REFUSED = Counter(
    "hms_database_connections_refused_total",
    "New database connections PostgreSQL refused for want of a slot (too many clients); the "
    "instance goes on with the connections it holds (/readyz shows it as degraded).",
    registry=REGISTRY,
)


class PoolSource(Protocol):
    def pool_usage(self) -> dict[str, tuple[int, int]]: ...


# Databases of this process (tests run several); read only when /metrics is scraped.
_pool_sources: weakref.WeakSet[PoolSource] = weakref.WeakSet()


def track_pool(source: PoolSource) -> None:
    """Export the pool of ``source`` as hms_database_pool_in_use and _limit (until untracked)."""
    _pool_sources.add(source)


def untrack_pool(source: PoolSource) -> None:
    _pool_sources.discard(source)


class _PoolCollector:
    """hms_database_pool_in_use and hms_database_pool_limit by engine, summed over databases."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        in_use: dict[str, float] = {}
        limit: dict[str, float] = {}
        for source in list(_pool_sources):
            for engine, (used, most) in source.pool_usage().items():
                in_use[engine] = in_use.get(engine, 0.0) + used
                limit[engine] = limit.get(engine, 0.0) + most
        used_family = GaugeMetricFamily(
            "hms_database_pool_in_use",
            "Database connections checked out of the pool now, by engine (read and write on "
            "PostgreSQL, shared on SQLite).",
            labels=["engine"],
        )
        limit_family = GaugeMetricFamily(
            "hms_database_pool_limit",
            "Most connections the pool opens (database_pool_size x 5), by engine; beyond it "
            "calls wait up to database_timeout_seconds for a connection.",
            labels=["engine"],
        )
        for engine in sorted(in_use):
            used_family.add_metric([engine], in_use[engine])
            limit_family.add_metric([engine], limit[engine])
        yield used_family
        yield limit_family

    def describe(self) -> Iterator[GaugeMetricFamily]:
        # Names only (the registry checks them for duplicates); values come with collect().
        yield GaugeMetricFamily("hms_database_pool_in_use", "", labels=["engine"])
        yield GaugeMetricFamily("hms_database_pool_limit", "", labels=["engine"])


REGISTRY.register(_PoolCollector())  # type: ignore[arg-type]

THRIFT_CONNECTIONS = Gauge(
    "hms_thrift_connections",
    "Thrift client connections open now.",
    registry=REGISTRY,
)

CONNECTIONS_REFUSED = Counter(
    "hms_connections_refused_total",
    "Connections closed right after accept because of a connection limit, by endpoint "
    "(thrift, http) and the limit (max_connections, max_connections_per_client, "
    "reserved_connections).",
    ["endpoint", "reason"],
    registry=REGISTRY,
)
CONNECTIONS_TIMED_OUT = Counter(
    "hms_connections_timed_out_total",
    "Connections closed because a deadline passed before they got going, by endpoint and "
    "deadline (handshake_timeout, first_call_timeout, request_timeout).",
    ["endpoint", "reason"],
    registry=REGISTRY,
)


UPSTREAM_CALLS = Counter(
    "hms_upstream_calls_total",
    "Calls forwarded to the upstream metastore (upstream mode), by method and outcome (ok, "
    "upstream_error).",
    ["method", "outcome"],
    registry=REGISTRY,
)
UPSTREAM_SECONDS = Histogram(
    "hms_upstream_call_seconds",
    "Time from forwarding a call to the upstream to its reply (upstream mode), by method.",
    ["method"],
    buckets=(0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
    registry=REGISTRY,
)
UPSTREAM_CONNECTIONS = Gauge(
    "hms_upstream_connections",
    "Connections open to the upstream metastore now (at most upstream_max_connections).",
    registry=REGISTRY,
)


UPSTREAM_LOG = Gauge(
    "hms_upstream_notification_log",
    "1 while the upstream-mode cache follows the upstream's notification log, else 0 (no "
    "log, unreachable, or the cache off).",
    registry=REGISTRY,
)
UPSTREAM_TTL = Gauge(
    "hms_upstream_cache_ttl_seconds",
    "upstream_cache_ttl_seconds while the upstream-mode cache keeps replies for a time only "
    "(an upstream without a notification log, opted in), else 0.",
    registry=REGISTRY,
)


_upstream_recorders: dict[tuple[str, str], Callable[[float], None]] = {}


def observe_upstream_call(method: str, seconds: float, outcome: str) -> None:
    """Count and time one call forwarded to the upstream (server/passthrough.py); the bound
    children are kept, as for ``observe_call``, since ``labels()`` costs a few microseconds."""
    record = _upstream_recorders.get((method, outcome))
    if record is None:
        count = UPSTREAM_CALLS.labels(method, outcome).inc
        observe = UPSTREAM_SECONDS.labels(method).observe

        def record(seconds: float) -> None:
            count()
            observe(seconds)

        _upstream_recorders[(method, outcome)] = record  # a race only builds it twice
    record(seconds)


class ConnectionSource(Protocol):
    @property
    def connection_count(self) -> int: ...


# Thrift servers of this process (tests run several); read only when /metrics is scraped.
_connection_sources: weakref.WeakSet[ConnectionSource] = weakref.WeakSet()


def track_connections(source: ConnectionSource) -> None:
    """Count ``source``'s open connections in hms_thrift_connections (until untracked)."""
    _connection_sources.add(source)


def untrack_connections(source: ConnectionSource) -> None:
    _connection_sources.discard(source)


THRIFT_CONNECTIONS.set_function(
    lambda: float(sum(s.connection_count for s in list(_connection_sources)))
)


# -- the per-call observer (hot path) ----------------------------------------------------------

# labels() costs about 3 us per call (a lock, a tuple, a dict lookup); the bound children cost
# one dict lookup here. Keys are bounded: the service's method names times the outcomes seen.
_recorders: dict[tuple[str, str], Callable[[float], None]] = {}
_recorders_lock = threading.Lock()


def _recorder(method: str, outcome: str) -> Callable[[float], None]:
    with _recorders_lock:
        found = _recorders.get((method, outcome))
        if found is not None:
            return found
        count = REQUESTS.labels(method, outcome).inc
        observe = REQUEST_SECONDS.labels(method).observe

        def record(seconds: float) -> None:
            count()
            observe(seconds)

        _recorders[(method, outcome)] = record
        return record


def observe_call(method: str, seconds: float, outcome: str) -> None:
    """The Thrift processor's observer (see server/processor.py): count and time one call."""
    record = _recorders.get((method, outcome))
    if record is None:
        record = _recorder(method, outcome)
    record(seconds)


def observe_rest(operation: str, status: int, seconds: float) -> None:
    """Count and time one Iceberg REST request."""
    REST_REQUESTS.labels(operation, str(status)).inc()
    REST_REQUEST_SECONDS.labels(operation).observe(seconds)


def connection_dropped(endpoint: str, outcome: str, reason: str) -> None:
    """Count a connection refused at accept (``outcome`` "refused") or cut by a deadline
    ("timed_out"); ``reason`` names the limit or the deadline."""
    counter = CONNECTIONS_REFUSED if outcome == "refused" else CONNECTIONS_TIMED_OUT
    counter.labels(endpoint, reason).inc()
