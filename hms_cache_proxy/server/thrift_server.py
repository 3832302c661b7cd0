"""The Thrift endpoint: a listening socket and one thread per client connection.

thriftpy2's cython binary protocol over a buffered socket is the Hive Metastore default; framed
transport and the compact protocol are options. Requests are read by ``wire.MessageReader``,
which checks every declared size against the limits (message, string, container, nesting)
before anything is allocated, and tells a client idle between calls (``client_timeout_seconds``)
from one stalled mid-message (``message_timeout_seconds``). A message past a limit, or bytes
that are not a Thrift message, get a PROTOCOL_ERROR answer when the header could be read,
one log line, and the close of that connection only; everyone else keeps being served.
Replies are written by thriftpy2's cython encoder.
"""

from __future__ import annotations

import errno
import functools
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

from thriftpy2.protocol import TCompactProtocolFactory
from thriftpy2.protocol.cybin import TCyBinaryProtocolFactory
from thriftpy2.transport import TSocket, TTransportException
from thriftpy2.transport.buffered import TCyBufferedTransportFactory
from thriftpy2.transport.framed import TCyFramedTransportFactory

from hms_cache_proxy import logs
from hms_cache_proxy.server import wire
from hms_cache_proxy.server.processor import Processor
from hms_cache_proxy.server.wire import (
    ClientGone,
    ClientTimeout,
    LimitExceeded,
    Limits,
    MessageReader,
    WireError,
)

log = logging.getLogger(__name__)


class _Connection:
    __slots__ = ("sock", "busy", "peer")

    def __init__(self, sock: socket.socket, peer: Any) -> None:
        self.sock = sock
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
        max_message_bytes: int | None = None,
        limits: Limits | None = None,
        opener: Callable[[socket.socket, Any], socket.socket] | None = None,
    ) -> None:
        self.processor = processor
        self.opener = opener  # TLS handshake / SASL negotiation (server/secure.py)
        self.host = host
        self.port = port
        self.max_connections = max_connections
        if limits is None:
            limits = Limits(
                **({} if max_message_bytes is None else {"max_message_bytes": max_message_bytes})
            )
        self.limits = limits
        self.max_message_bytes = limits.max_message_bytes
        self.framed = transport == "framed"
        self.compact = protocol == "compact"
        self.trans_factory = (
            TCyFramedTransportFactory() if self.framed else TCyBufferedTransportFactory()
        )
        self.proto_factory = (
            TCompactProtocolFactory() if self.compact else TCyBinaryProtocolFactory()
        )
        self.engine = wire.ENGINE
        wire.prepare(processor.args_classes)
        self._decode = functools.partial(
            wire.decode, limits=limits, compact=self.compact, engine=self.engine
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
        lim = self.limits
        log.info(
            "serving Thrift on %s:%d (requests read by %s; max_message_bytes=%d, "
            "max_string_bytes=%d, max_container_elements=%d, client_timeout_seconds=%g, "
            "message_timeout_seconds=%g)",
            self.host,
            self.port,
            self.engine,
            lim.max_message_bytes,
            lim.max_string_bytes,
            lim.max_container_elements,
            lim.client_timeout_seconds,
            lim.message_timeout_seconds,
        )
        if self.engine != "fastbinary":
            log.warning(
                "the thrift package's C extension (fastbinary, 0.24 or later) is missing: "
                "requests are decoded in pure Python, many times slower; reinstall thrift "
                "where a C compiler is present"
            )
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
            conn = _Connection(client, peer)
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
        if self.opener is not None and not self._open(conn):
            return
        sock, peer = conn.sock, conn.peer
        trans = self.trans_factory.get_transport(TSocket(sock=sock))  # replies
        oprot = self.proto_factory.get_protocol(trans)
        call = logs.bind_connection(_peer(peer))  # request ids on this thread's log records
        try:
            reader = MessageReader(
                sock, self.limits, framed=self.framed, compact=self.compact, engine=self.engine
            )
            while not self._stopping.is_set():
                msg = reader.read_message()
                with self._lock:
                    conn.busy = True
                call.begin(msg.name)
                try:
                    self.processor.process_message(msg, oprot, self._decode)
                finally:
                    call.end()
                    with self._lock:
                        conn.busy = False
                        self._idle.notify_all()
        except ClientGone as exc:
            if exc.mid_message:
                log.info("%s closed the connection in the middle of a message", _peer(peer))
        except ClientTimeout as exc:
            (log.info if exc.idle else log.warning)("closing %s: %s", _peer(peer), exc)
        except WireError as exc:
            self._refuse(peer, exc)
        except (BlockingIOError, TimeoutError):
            log.warning(
                "closing %s: it did not take our reply for %g s",
                _peer(peer),
                self.limits.message_timeout_seconds,
            )
        except (TTransportException, OSError) as exc:
            log.debug("connection %s ended: %s", _peer(peer), exc)  # gone while we answered
        except Exception:  # noqa: BLE001 - a bad message ends only its own connection
            log.warning("closing %s after an unexpected error", _peer(peer), exc_info=True)
        finally:
            with self._lock:
                self._connections.discard(conn)
                self._idle.notify_all()
            try:
                trans.close()
            except Exception:  # noqa: BLE001
                pass
            try:
                sock.close()
            except OSError:
                pass

    def _open(self, conn: _Connection) -> bool:
        """Run the opener in this connection's thread; on failure log why and close."""
        try:
            conn.sock = self.opener(conn.sock, conn.peer)  # type: ignore[misc]
            return True
        except Exception as exc:  # noqa: BLE001 - a refused client ends only its connection
            from hms_cache_proxy.server.secure import describe_failure

            log.warning("closing %s: %s", _peer(conn.peer), describe_failure(exc))
            with self._lock:
                self._connections.discard(conn)
                self._idle.notify_all()
            try:
                conn.sock.close()
            except OSError:
                pass
            return False

    def _refuse(self, peer: Any, exc: WireError) -> None:
        """One log line; the connection is then closed (its stream cannot be followed further)."""
        what = f"{exc.name!r}" if exc.name is not None else "a message"
        log.warning("refused %s from %s: %s; closing the connection", what, _peer(peer), exc)
        outcome = "limit_exceeded" if isinstance(exc, LimitExceeded) else "protocol_error"
        self.processor.note(exc.name or "-", outcome)


def _peer(peer: Any) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
