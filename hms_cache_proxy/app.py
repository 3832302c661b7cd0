"""Assembles a running service from settings: database, store, handler, Thrift server, and the
HTTP endpoint for metrics, health, readiness and admin operations; or, with ``upstream_uri``,
the Thrift server passing every call through to an upstream metastore (no database)."""

from __future__ import annotations

import functools
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import OperationalError

from hms_cache_proxy import failpoints
from hms_cache_proxy.config import Settings, upstream_address
from hms_cache_proxy.handler import Handler, access
from hms_cache_proxy.idl import service
from hms_cache_proxy.observability import metrics, redact
from hms_cache_proxy.observability.admin import AdminTarget, NoCacheAdmin
from hms_cache_proxy.observability.health import DatabaseHealth
from hms_cache_proxy.observability.http import Endpoints, ObservabilityServer
from hms_cache_proxy.observability.readiness import Readiness
from hms_cache_proxy.server import tls
from hms_cache_proxy.server.passthrough import PassThrough
from hms_cache_proxy.server.processor import Processor
from hms_cache_proxy.server.reply_cache import ReplyCache
from hms_cache_proxy.server.sasl import PlainAuthenticator
from hms_cache_proxy.server.secure import SecureOpener
from hms_cache_proxy.server.sidecar_cache import SidecarCache
from hms_cache_proxy.server.thrift_server import ThriftServer
from hms_cache_proxy.server.upstream import UpstreamPool
from hms_cache_proxy.server.upstream_client import UpstreamClient
from hms_cache_proxy.server.upstream_events import NO_LOG, UpstreamEvents
from hms_cache_proxy.server.wire_limits import Limits
from hms_cache_proxy.store.cached.cache_service import CacheService
from hms_cache_proxy.store.cached.direct import DirectStore
from hms_cache_proxy.store.db.engine import Database, refused_connection
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.message_base import WRITER_NAME
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.sql.bootstrap import ensure_ready
from hms_cache_proxy.store.sql.sql_store import SqlStore
from hms_cache_proxy.store.txn.floor_primer import FloorPrimer
from hms_cache_proxy.store.txn.housekeeping import Housekeeper
from hms_cache_proxy.store.txn.install import install as install_txn_functions
from hms_cache_proxy.store.txn.txn_service import TxnConfig, TxnService

if TYPE_CHECKING:
    from hms_cache_proxy.rest.server import RestServer

log = logging.getLogger(__name__)


@dataclass
class Service:
    settings: Settings
    database: Database | None  # None in upstream mode
    store: SqlStore | None  # None in upstream mode
    server: ThriftServer
    housekeeper: Housekeeper | None = None
    floor_primer: FloorPrimer | None = None  # None in upstream mode
    readiness: Readiness = field(default_factory=Readiness)
    admin: AdminTarget = field(default_factory=NoCacheAdmin)
    http: ObservabilityServer | None = None  # None when metrics_port is off
    cache: CacheService | None = None  # None when cache_enabled is false
    rest: RestServer | None = None  # None when rest_port is off
    upstream: UpstreamPool | None = None  # upstream mode: the metastore calls go to
    sidecar: SidecarCache | None = None  # upstream mode with upstream_cache
    _thread: threading.Thread | None = field(default=None, repr=False)
    _serving: threading.Event = field(default_factory=threading.Event, repr=False)
    _bound: bool = field(default=False, repr=False)

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def metrics_port(self) -> int | None:
        return self.http.port if self.http is not None else None

    @property
    def metrics_url(self) -> str | None:
        return self.http.url if self.http is not None else None

    def describe(self) -> str:
        """What the service stands on: the database, or the upstream metastore."""
        if self.upstream is not None:
            return f"upstream {self.upstream.uri} (pass-through)"
        assert self.database is not None
        return self.database.describe()

    def close(self) -> None:
        """Release the database pool or the upstream connections."""
        if self.database is not None:
            self.database.dispose()
        if self.upstream is not None:
            self.upstream.close()

    def serving(self) -> bool:
        """The Thrift accept loop is running (read by /healthz and /readyz)."""
        return self._serving.is_set()

    def bind(self) -> None:
        """Open the Thrift and HTTP listening sockets (a taken port fails here, before serving)."""
        if self._bound:
            return
        try:
            self.server.bind()
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"cannot listen for Thrift on {self.server.host}:{self.server.port}: "
                f"{exc.strerror or exc}; set host and port (--host, --port)",
            ) from exc
        if self.http is not None:
            try:
                self.http.bind()
            except OSError as exc:
                self.server.stop(0)
                raise OSError(
                    exc.errno,
                    f"cannot listen for HTTP (metrics) on {self.http.host}:"
                    f"{self.http.requested_port}: {exc.strerror}; set metrics_port "
                    "(0 = any free port, -1 = off)",
                ) from exc
        if self.rest is not None:
            try:
                self.rest.bind()
            except OSError as exc:
                self.server.stop(0)
                if self.http is not None:
                    self.http.stop()
                raise OSError(
                    exc.errno,
                    f"cannot listen for the Iceberg REST catalog on {self.settings.rest_host}:"
                    f"{self.settings.rest_port}: {exc.strerror}; set rest_port "
                    "(0 = any free port, null = off)",
                ) from exc
        self._bound = True

    def start_background(self) -> None:
        """Serve in a background thread (tests, embedding)."""
        self._start()
        self._thread = threading.Thread(target=self._serve, name="hms-accept", daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        self._start()
        self._serve()

    def _start(self) -> None:
        self.bind()
        if self.floor_primer is not None:
            self.floor_primer.start()
        if self.housekeeper is not None:
            self.housekeeper.start()
        if self.cache is not None:
            self.cache.start()
        if self.sidecar is not None:
            self.sidecar.start()
        metrics.track_connections(self.server)
        if self.database is not None:
            metrics.track_pool(self.database)
        if self.http is not None:
            self.http.start()
        if self.rest is not None:
            self.rest.start()

    def _serve(self) -> None:
        self._serving.set()
        try:
            self.server.serve_forever()
        finally:
            self._serving.clear()

    def stop(self, grace_seconds: float = 10.0) -> None:
        # Probes answer 503 from here on, while calls in flight drain; HTTP stops last.
        self.readiness.mark_stopping()
        self._serving.clear()
        self.server.stop(grace_seconds)
        if self.floor_primer is not None:
            self.floor_primer.stop(grace_seconds)
        if self.housekeeper is not None:
            self.housekeeper.stop(grace_seconds)
        if self.cache is not None:
            self.cache.stop(grace_seconds)
        if self.sidecar is not None:
            self.sidecar.stop()
        if self._thread is not None:
            self._thread.join(timeout=grace_seconds)
        if self.rest is not None:
            self.rest.stop()
        if self.http is not None:
            self.http.stop()
        metrics.untrack_connections(self.server)
        if self.database is not None:
            metrics.untrack_pool(self.database)
        self.close()


def build_service(settings: Settings) -> Service:
    """Check the database (creating the schema if allowed) and wire every layer together."""
    redact.install(settings.secrets())  # before anything can log them
    if settings.failpoints:  # test only; in-process tests set theirs directly
        failpoints.configure(settings.failpoints)
    ctx = tls_context(settings)  # a bad certificate stops us before the database is touched
    opener = secure_opener(settings, ctx)
    if settings.upstream_uri is not None:
        return _build_upstream_service(settings, opener)
    database = Database(
        settings.database_url,
        pool_size=settings.database_pool_size,
        timeout_seconds=settings.database_timeout_seconds,
        statement_timeout_seconds=settings.database_statement_timeout_seconds,
        pool_idle_seconds=settings.database_pool_idle_seconds,
        instance_name=settings.instance_name or socket.gethostname(),
        pooler=settings.database_pooler,
        listen_url=settings.database_listen_url,
    )
    _count_database_errors(database)
    _retry_at_start(
        lambda: ensure_ready(database, settings.warehouse_uri(), settings.database_auto_create),
        settings.database_start_timeout_seconds,
    )
    functions = install_txn_functions(database).usable if settings.txn_server_functions else False
    readiness = Readiness()
    readiness.mark_schema_checked()
    database.refusals.listeners.append(metrics.DATABASE_REFUSED.inc)
    readiness.add_condition(functools.partial(_refusal_reason, database))
    # The SQL store and the transaction service write to one notification log.
    events = EventLog(
        IdAllocator(database, settings.id_block_size),
        settings.event_message_format,
        max_event_response=settings.notification_max_events,
    )
    messages = MessageBuilder(server=settings.server_uri, writer=WRITER_NAME)
    txn = TxnService(database, events, messages, _txn_config(settings, functions))
    store = SqlStore(
        database, txn, events=events, messages=messages, warehouse_uri=settings.warehouse_uri()
    )
    # The handler reads through the cache (or, with cache_enabled false, the database only).
    cache = CacheService(store, settings, readiness) if settings.cache_enabled else None
    housekeeper = _housekeeper(settings, txn, cache)
    handler = Handler(cache.store if cache is not None else DirectStore(store), settings)
    log_roots(settings)
    # read_only and allowed_databases (the handler itself when neither is set: no cost per call)
    guarded = access.guard(handler, settings)
    processor = Processor(service, guarded, observer=metrics.observe_call)
    server = _thrift_server(settings, processor, opener)
    if cache is None:
        readiness.mark_ready()  # nothing to prewarm (with a cache, its loader says when)
    svc = Service(
        settings,
        database,
        store,
        server,
        housekeeper,
        FloorPrimer(txn.txns),
        readiness=readiness,
        admin=cache if cache is not None else NoCacheAdmin(),
        cache=cache,
        rest=_rest_server(settings, guarded, ctx) if settings.rest_enabled else None,
    )
    if settings.metrics_enabled:
        assert settings.metrics_port is not None
        health = DatabaseHealth(
            # One indexed single-row read through the store: the database is up, has our schema.
            store.current_notification_event_id,
            timeout_seconds=settings.health_timeout_seconds,
            cache_seconds=settings.health_cache_seconds,
            secrets=[database.url.password or ""],
        )
        endpoints = Endpoints(settings, svc.serving, health, readiness, svc.admin)
        svc.http = ObservabilityServer(settings.metrics_host, settings.metrics_port, endpoints)
    return svc


def _txn_config(settings: Settings, functions: bool = False) -> TxnConfig:
    """The transaction service's knobs (Hive's metastore.txn.* settings); ``functions``: the
    transaction functions are installed (``store/txn/install.py``)."""
    return TxnConfig(
        timeout_ms=int(settings.txn_timeout_seconds * 1000),
        repl_timeout_ms=int(settings.repl_txn_timeout_seconds * 1000),
        open_txn_timeout_ms=settings.txn_open_timeout_ms,
        max_open_batch=settings.txn_max_open_batch,
        use_min_history_level=settings.txn_use_min_history_level,
        use_min_history_write_id=settings.txn_use_min_history_write_id,
        server_functions=functions,
    )


def _thrift_server(
    settings: Settings, processor: Processor | PassThrough, opener: SecureOpener | None
) -> ThriftServer:
    return ThriftServer(
        processor,  # type: ignore[arg-type]  # PassThrough serves the same three members
        settings.host,
        settings.port,
        # After SASL negotiation every message travels in a length-prefixed frame.
        transport="framed" if settings.sasl_enabled else settings.transport,
        protocol=settings.protocol,
        limits=Limits.of(settings),
        opener=opener,
        connection_limits=settings.thrift_connection_limits(),
        handshake_timeout_seconds=settings.handshake_timeout_seconds,
        first_call_timeout_seconds=settings.first_call_timeout_seconds,
        on_dropped=functools.partial(metrics.connection_dropped, "thrift"),
        reuse_port=settings.workers > 1,  # each worker listens; the kernel spreads connections
    )


def _build_upstream_service(settings: Settings, opener: SecureOpener | None) -> Service:
    """Upstream mode: no database; every call passes through to ``upstream_uri``."""
    assert settings.upstream_uri is not None
    host, port = upstream_address(settings.upstream_uri)
    pool = UpstreamPool(
        host,
        port,
        framed=settings.upstream_transport == "framed",
        compact=settings.protocol == "compact",
        max_connections=settings.upstream_max_connections,
        connect_timeout_seconds=settings.upstream_connect_timeout_seconds,
        timeout_seconds=settings.upstream_timeout_seconds,
        pool_wait_seconds=settings.upstream_pool_wait_seconds,
        tls=upstream_tls_context(settings),
        sasl=_upstream_login(settings),
        sasl_as_caller=settings.upstream_sasl_as_caller,
        on_count=metrics.UPSTREAM_CONNECTIONS.set,
    )
    sidecar = _sidecar_cache(settings, pool)
    log.info(
        "upstream mode: every call passes through to %s (no database; cache %s; "
        "upstream_max_connections=%d, TLS %s, SASL PLAIN %s)",
        pool.uri,
        "on, coherent from the upstream's notification log" if sidecar else "off",
        settings.upstream_max_connections,
        _upstream_tls_text(settings),
        _upstream_login_text(settings),
    )
    processor = PassThrough(
        service,
        pool,
        compact=settings.protocol == "compact",
        observer=metrics.observe_call,
        upstream_observer=metrics.observe_upstream_call,
        cache=sidecar,
        login_as_caller=settings.upstream_sasl_as_caller,
    )
    if settings.upstream_sasl_as_caller:
        assert opener is not None  # sasl_enabled: the settings check it
        opener.on_login = processor.remember_login
    readiness = Readiness()
    if sidecar is not None:
        readiness.add_detail("upstream_cache", sidecar.describe)
    readiness.mark_schema_checked()
    readiness.mark_ready()  # nothing to load: readiness follows the upstream via /healthz
    svc = Service(
        settings,
        None,
        None,
        _thrift_server(settings, processor, opener),
        readiness=readiness,
        upstream=pool,
        sidecar=sidecar,
    )
    if settings.metrics_enabled:
        assert settings.metrics_port is not None
        # /healthz: a connection to the upstream can be had (opened, or an idle one alive).
        health = DatabaseHealth(
            pool.check,
            timeout_seconds=settings.health_timeout_seconds,
            cache_seconds=settings.health_cache_seconds,
            subject="upstream",
        )
        endpoints = Endpoints(settings, svc.serving, health, readiness, svc.admin)
        svc.http = ObservabilityServer(settings.metrics_host, settings.metrics_port, endpoints)
    return svc


def _sidecar_cache(settings: Settings, pool: UpstreamPool) -> SidecarCache | None:
    """The upstream-mode cache and its poller (its own connection to the upstream)."""
    if not settings.upstream_cache:
        return None
    if pool.compact:
        log.info("upstream_cache: off with protocol compact (replies are cached as binary)")
        return None
    events_pool = UpstreamPool(
        pool.host,
        pool.port,
        framed=settings.upstream_transport == "framed",
        max_connections=4,  # the poller's, and read-your-writes' while it waits
        connect_timeout_seconds=settings.upstream_connect_timeout_seconds,
        timeout_seconds=min(settings.upstream_timeout_seconds, 60.0),
        pool_wait_seconds=min(settings.upstream_timeout_seconds, 60.0),
        tls=pool.tls,
        sasl=pool.sasl,
    )
    ttl = settings.upstream_cache_ttl_seconds
    cache = ReplyCache(settings.cache_max_bytes, ttl_seconds=ttl)
    events = UpstreamEvents(
        UpstreamClient(service, events_pool),
        cache,
        interval_seconds=settings.upstream_poll_interval_seconds,
        wait_seconds=settings.upstream_wait_seconds,
        on_state=lambda state: metrics.UPSTREAM_TTL.set(
            ttl if ttl is not None and state == NO_LOG else 0
        ),
    )
    return SidecarCache(
        service, cache, events, catch_up_seconds=settings.upstream_catch_up_seconds, ttl_seconds=ttl
    )


def _upstream_tls_text(settings: Settings) -> str:
    if not settings.upstream_tls:
        return "off"
    if settings.upstream_tls_cert_file is None:
        return "on"
    return f"on, client certificate {settings.upstream_tls_cert_file}"


def _upstream_login_text(settings: Settings) -> str:
    if settings.upstream_sasl_user is None:
        return "off"
    if settings.upstream_sasl_as_caller:
        return f"as each caller (the poller as {settings.upstream_sasl_user!r})"
    return f"as {settings.upstream_sasl_user!r}"


def _upstream_login(settings: Settings) -> tuple[str, str] | None:
    if settings.upstream_sasl_user is None or settings.upstream_sasl_password is None:
        return None
    return settings.upstream_sasl_user, settings.upstream_sasl_password.get_secret_value()


def _retry_at_start(step: Callable[[], None], timeout: float) -> None:
    """Run ``step``, again with backoff while PostgreSQL refuses the connection for want of a
    slot or is still starting, for up to ``timeout`` seconds; other errors fail at once."""
    deadline = time.monotonic() + timeout
    delay = 0.5
    while True:
        try:
            step()
            return
        except OperationalError as exc:
            transient = refused_connection(exc) or "starting up" in str(exc.orig)
            if not transient or time.monotonic() + delay > deadline:
                raise
            log.warning(
                "the metastore database cannot take a connection yet (%s); retrying in %.1fs",
                str(exc.orig).strip().splitlines()[0],
                delay,
            )
            time.sleep(delay)
            delay = min(10.0, delay * 2)


def _refusal_reason(database: Database) -> str | None:
    ago = database.refusals.recent(60.0)
    if ago is None:
        return None
    return (
        f"the metastore database refused a new connection {ago:.0f}s ago (too many clients); "
        "cache hits are served, calls needing a new connection wait for one of ours or fail"
    )


def _housekeeper(settings: Settings, txn: TxnService, cache: CacheService | None) -> Housekeeper:
    """Transaction housekeeping as ``txn_housekeeping`` says: with a lease, rounds run only
    while this instance's LISTEN session holds it (where there is no such session: every
    round, serialised with the other instances' by an advisory lock, as "always")."""
    interval = settings.txn_housekeeping_interval_seconds
    if settings.txn_housekeeping == "off":
        interval = 0
    holds_lease = None
    if settings.txn_housekeeping == "lease" and cache is not None and cache.poller.listen:
        poller = cache.poller
        holds_lease = lambda: poller.leader  # noqa: E731
    return Housekeeper(txn, interval, holds_lease)


def _rest_server(settings: Settings, handler: Any, ctx: ssl.SSLContext | None) -> RestServer:
    """The Iceberg REST catalog, imported only when it is on: PyIceberg brings pyarrow, whose
    import starts threads, and those must start after shutdown.py has blocked SIGTERM."""
    from hms_cache_proxy.rest.server import RestServer

    return RestServer(settings, handler, tls=ctx)


def upstream_tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The client context for the upstream (None without ``upstream_tls``): its certificate
    checked against ``upstream_tls_ca_file``, ours shown when ``upstream_tls_cert_file`` is set."""
    if not settings.upstream_tls:
        return None
    password = settings.upstream_tls_key_password
    return tls.client_context(
        settings.upstream_tls_ca_file,
        settings.upstream_tls_cert_file,
        settings.upstream_tls_key_file,
        password.get_secret_value() if password is not None else None,
    )


def tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The server TLS context of the Thrift port (and the REST port), None without TLS."""
    if settings.tls_cert_file is None or settings.tls_key_file is None:
        return None
    password = settings.tls_key_password
    return tls.server_context(
        settings.tls_cert_file,
        settings.tls_key_file,
        key_password=password.get_secret_value() if password is not None else None,
        ca_file=settings.tls_ca_file,
        client_auth=settings.tls_client_auth,
    )


def secure_opener(settings: Settings, ctx: ssl.SSLContext | None) -> SecureOpener | None:
    """TLS and SASL for the Thrift port as configured (None when neither is on)."""
    sasl = None
    if settings.sasl_enabled:
        users = {u: p.get_secret_value() for u, p in settings.sasl_users.items()}
        sasl = PlainAuthenticator(users)
    if ctx is None and sasl is None:
        return None
    timeout = settings.message_timeout_seconds or settings.client_timeout_seconds or None
    log.info(
        "Thrift port security: TLS %s, SASL PLAIN %s",
        f"on (client certificates: {settings.tls_client_auth})" if ctx is not None else "off",
        f"on ({len(settings.sasl_users)} users)" if sasl is not None else "off",
    )
    return SecureOpener(ctx, sasl, timeout, on_user=access.set_user)


def log_roots(settings: Settings) -> None:
    """Say at start which directories DDL may use: a client whose own warehouse lies elsewhere
    (Spark's default spark.sql.warehouse.dir is ./spark-warehouse in its working directory)
    gets CREATE DATABASE refused, and this line tells the operator why."""
    log.info(
        "file locations are confined to: warehouse %s, external warehouse %s, "
        "filesystem_roots %s; a database or managed table a client places elsewhere is refused",
        settings.warehouse_uri(),
        settings.external_warehouse_uri() or "(unset)",
        ", ".join(settings.extra_root_uris()) or "(none)",
    )


def _count_database_errors(database: Database) -> None:
    """Count every driver error in hms_database_errors_total, by SQLAlchemy error class: the
    pools' and those on the poller's LISTEN session (``Database.driver_errors`` has both)."""

    def on_error(name: str) -> None:
        metrics.DATABASE_ERRORS.labels(name).inc()

    database.driver_errors.listeners.append(on_error)
