"""The Thrift endpoint: a listening socket and one thread per client connection.

thriftpy2's cython binary protocol over a buffered socket is the Hive Metastore default; framed
transport and the compact protocol are options. Each connection reads through ``LimitedSocket``,
which bounds how many bytes one message may take, so a client that declares a huge string or
sends garbage costs at most that much memory and loses only its own connection.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
from typing import Any

from thriftpy2.protocol import TCompactProtocolFactory
from thriftpy2.protocol.cybin import TCyBinaryProtocolFactory
from thriftpy2.transport import TSocket, TTransportException
from thriftpy2.transport.buffered import TCyBufferedTransportFactory
from thriftpy2.transport.framed import TCyFramedTransportFactory

from hms_cache_proxy.server.processor import Processor

log = logging.getLogger(__name__)

_READ_CHUNK = 64 * 1024


class MessageTooLarge(TTransportException):
    pass


class LimitedSocket(TSocket):
    """A client socket that refuses to read more than ``limit`` bytes for one message."""

    def __init__(self, sock: socket.socket, limit: int) -> None:
        super().__init__(sock=sock)
        self.limit = limit
        self.used = 0

    def read(self, sz: int) -> bytes:
        data = super().read(min(sz, _READ_CHUNK))
        self.used += len(data)
        if self.used > self.limit:
            raise MessageTooLarge(
                TTransportException.SIZE_LIMIT,
                f"message larger than the configured maximum of {self.limit} bytes",
            )
        return data


class _Connection:
    __slots__ = ("sock", "limited", "busy", "peer")

    def __init__(self, sock: socket.socket, limited: LimitedSocket, peer: Any) -> None:
        self.sock = sock
        self.limited = limited
        self.busy = False
        self.peer = peer


class ThriftServer:
    """Serves ``processor`` on host:port until ``stop()``."""

    def __init__(
        self,
        processor: Processor,
        host: str,
        port: int,
        *,
        transport: str = "buffered",
        protocol: str = "binary",
        max_connections: int = 1000,
        max_message_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.processor = processor
        self.host = host
        self.port = port
        self.max_connections = max_connections
        self.max_message_bytes = max_message_bytes
        self.trans_factory = (
            TCyFramedTransportFactory() if transport == "framed" else TCyBufferedTransportFactory()
        )
        self.proto_factory = (
            TCompactProtocolFactory() if protocol == "compact" else TCyBinaryProtocolFactory()
        )
        self._listener: socket.socket | None = None
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._idle = threading.Condition(self._lock)

    # -- lifecycle -------------------------------------------------------------------------------

    def bind(self) -> int:
        """Open the listening socket; returns the port (useful when asked for port 0)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(256)
        self._listener = sock
        self.port = sock.getsockname()[1]
        return self.port

    def serve_forever(self) -> None:
        if self._listener is None:
            self.bind()
        assert self._listener is not None
        log.info("serving Thrift on %s:%d", self.host, self.port)
        while not self._stopping.is_set():
            try:
                client, peer = self._listener.accept()
            except OSError as exc:
                if self._stopping.is_set():
                    break
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    log.error("accept failed: %s; pausing", exc)
                    self._stopping.wait(0.1)
                    continue
                raise
            with self._lock:
                too_many = len(self._connections) >= self.max_connections
            if too_many:
                log.warning("refusing %s: %d connections open", peer, self.max_connections)
                client.close()
                continue
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            conn = _Connection(client, LimitedSocket(client, self.max_message_bytes), peer)
            with self._lock:
                self._connections.add(conn)
            threading.Thread(
                target=self._serve_connection, args=(conn,), name=f"hms-conn-{peer}", daemon=True
            ).start()

    def stop(self, grace_seconds: float = 10.0) -> None:
        """Stop accepting, let calls in flight finish (up to the grace period), close the rest."""
        self._stopping.set()
        if self._listener is not None:
            try:
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
        with self._lock:
            for conn in self._connections:
                if not conn.busy:
                    _shutdown(conn.sock)
            self._idle.wait_for(
                lambda: not any(c.busy for c in self._connections), timeout=grace_seconds
            )
            for conn in self._connections:
                _shutdown(conn.sock)

    @property
    def connection_count(self) -> int:
        with self._lock:
            return len(self._connections)

    # -- one connection --------------------------------------------------------------------------

    def _serve_connection(self, conn: _Connection) -> None:
        trans = self.trans_factory.get_transport(conn.limited)
        proto = self.proto_factory.get_protocol(trans)
        try:
            def started() -> None:
                with self._lock:
                    conn.busy = True

            while not self._stopping.is_set():
                conn.limited.used = 0
                try:
                    self.processor.process(proto, proto, started)
                finally:
                    with self._lock:
                        conn.busy = False
                        self._idle.notify_all()
        except MessageTooLarge as exc:
            log.warning("closing %s: %s", conn.peer, exc)
        except (TTransportException, OSError):
            pass  # the client went away
        except Exception:  # noqa: BLE001 - a bad message ends only its own connection
            log.warning("closing %s after an unreadable message", conn.peer, exc_info=True)
        finally:
            with self._lock:
                self._connections.discard(conn)
                self._idle.notify_all()
            try:
                trans.close()
            except Exception:  # noqa: BLE001
                pass


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
