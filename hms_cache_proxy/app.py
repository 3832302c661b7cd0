"""Assembles a running service from settings: database, store, handler, Thrift server."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from hms_cache_proxy.config import Settings
from hms_cache_proxy.handler import Handler
from hms_cache_proxy.idl import service
from hms_cache_proxy.server.processor import Processor
from hms_cache_proxy.server.thrift_server import ThriftServer
from hms_cache_proxy.store.sql.bootstrap import ensure_ready
from hms_cache_proxy.store.sql.engine import Database
from hms_cache_proxy.store.sql.store import SqlStore
from hms_cache_proxy.store.txn.housekeeping import Housekeeper
from hms_cache_proxy.store.txn.service import TxnConfig

log = logging.getLogger(__name__)


@dataclass
class Service:
    settings: Settings
    database: Database
    store: SqlStore
    server: ThriftServer
    housekeeper: Housekeeper | None = None
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def port(self) -> int:
        return self.server.port

    def start_background(self) -> None:
        """Serve in a background thread (tests, embedding)."""
        self.server.bind()
        if self.housekeeper is not None:
            self.housekeeper.start()
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="hms-accept", daemon=True
        )
        self._thread.start()

    def serve_forever(self) -> None:
        if self.housekeeper is not None:
            self.housekeeper.start()
        self.server.serve_forever()

    def stop(self, grace_seconds: float = 10.0) -> None:
        self.server.stop(grace_seconds)
        if self.housekeeper is not None:
            self.housekeeper.stop(grace_seconds)
        if self._thread is not None:
            self._thread.join(timeout=grace_seconds)
        self.database.dispose()


def build_service(settings: Settings) -> Service:
    """Check the database (creating the schema if allowed) and wire every layer together."""
    database = Database(
        settings.database_url,
        pool_size=settings.database_pool_size,
        timeout_seconds=settings.database_timeout_seconds,
    )
    ensure_ready(database, settings.warehouse_uri(), settings.database_auto_create)
    store = SqlStore(
        database,
        warehouse_uri=settings.warehouse_uri(),
        message_format=settings.event_message_format,
        id_block_size=settings.id_block_size,
        notification_max_events=settings.notification_max_events,
        server_uri=settings.server_uri,
        txn_config=TxnConfig(
            timeout_ms=int(settings.txn_timeout_seconds * 1000),
            open_txn_timeout_ms=settings.txn_open_timeout_ms,
            max_open_batch=settings.txn_max_open_batch,
        ),
    )
    housekeeper = Housekeeper(store.txn, settings.txn_housekeeping_interval_seconds)
    handler = Handler(store, settings)
    processor = Processor(service, handler)
    server = ThriftServer(
        processor,
        settings.host,
        settings.port,
        transport=settings.transport,
        protocol=settings.protocol,
        max_connections=settings.max_connections,
        max_message_bytes=settings.max_message_bytes,
    )
    return Service(settings, database, store, server, housekeeper)
