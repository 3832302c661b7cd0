"""The Thrift endpoint: a listening socket and one thread per client connection.

thriftpy2's cython binary protocol over a buffered socket is the Hive Metastore default; framed
transport and the compact protocol are options. Requests are read by ``wire.MessageReader``,
which checks every declared size against the limits (message, string, container, nesting)
before anything is allocated, and tells a client idle between calls (``client_timeout_seconds``)
from one stalled mid-message (``message_timeout_seconds``). A message past a limit, or bytes
that are not a Thrift message, get a PROTOCOL_ERROR answer when the header could be read,
one log line, and the close of that connection only; everyone else keeps being served.
Replies are written by thriftpy2's cython encoder.

Connections are admitted by ``admission.Admission`` (a global limit, a share per client address
and a reserve; a refused connection is closed at once, counted and logged at most once per
interval). A connection must finish its TLS handshake and SASL negotiation within
``handshake_timeout`` and deliver its first call within ``first_call_timeout`` of connecting:
whole deadlines, kept by one reaper thread that shuts such sockets down, so a client
trickling a byte at a time cannot stretch them the way it stretches a per-read time-out.
"""

from __future__ import annotations

import errno
import functools
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from thriftpy2.protocol import TCompactProtocolFactory
from thriftpy2.protocol.cybin import TCyBinaryProtocolFactory
from thriftpy2.transport import TSocket, TTransportException
from thriftpy2.transport.buffered import TCyBufferedTransportFactory
from thriftpy2.transport.framed import TCyFramedTransportFactory

from hms_cache_proxy import logs
from hms_cache_proxy.admission import (
    CLIENT_LIMIT,
    GLOBAL_LIMIT,
    Admission,
    ConnectionLimits,
    QuietLog,
    client_address,
)
from hms_cache_proxy.server import wire_decode
from hms_cache_proxy.server.processor import Processor
from hms_cache_proxy.server.wire import MessageReader
from hms_cache_proxy.server.wire_limits import (
    ClientGone,
    ClientTimeout,
    LimitExceeded,
    Limits,
    WireError,
)

log = logging.getLogger(__name__)

HANDSHAKE = "handshake_timeout"
FIRST_CALL = "first_call_timeout"
_REAPER_TICK = 0.25  # how late past its deadline a connection may be cut, at most


class _Connection:
    __slots__ = ("sock", "busy", "peer", "client", "started", "deadline", "stage", "expired")

    def __init__(self, sock: socket.socket, peer: Any, client: str) -> None:
        self.sock = sock
        self.busy = False
        self.peer = peer
        self.client = client  # the address its slot is counted against
        self.started = time.monotonic()
        self.deadline: float | None = None  # when the reaper cuts it (None: never)
        self.stage = FIRST_CALL  # which deadline applies now
        self.expired: str | None = None  # set by the reaper: the deadline that passed


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
        opener: Callable[..., socket.socket] | None = None,
        connection_limits: ConnectionLimits | None = None,
        handshake_timeout_seconds: float = 0.0,
        first_call_timeout_seconds: float = 0.0,
        on_dropped: Callable[[str, str], None] | None = None,
        reuse_port: bool = False,
    ) -> None:
        self.processor = processor
        self.reuse_port = reuse_port  # SO_REUSEPORT: workers of one supervisor share the port
        # TLS handshake / SASL negotiation (server/secure.py): opener(sock, peer, adopt) -> sock
        self.opener = opener
        self.host = host
        self.port = port
        if connection_limits is None:
            connection_limits = ConnectionLimits(max_connections)
        self.connection_limits = connection_limits
        self.max_connections = connection_limits.total
        self.admission = Admission(connection_limits)
        self.handshake_timeout = handshake_timeout_seconds
        self.first_call_timeout = first_call_timeout_seconds
        self._on_dropped = on_dropped  # (outcome "refused"/"timed_out", reason): metrics
        self._quiet = QuietLog(log)  # refusals and deadlines come by the thousand under attack
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
        self.engine = wire_decode.ENGINE
        wire_decode.prepare(processor.args_classes)
        self._decode = functools.partial(
            wire_decode.decode, limits=limits, compact=self.compact, engine=self.engine
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
        if self.reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
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
        conn_lim = self.connection_limits
        log.info(
            "Thrift connections: max_connections=%d, max_connections_per_client=%d, "
            "reserved_connections=%d (for clients holding fewer than %d), "
            "handshake_timeout_seconds=%g, first_call_timeout_seconds=%g",
            conn_lim.total,
            conn_lim.per_client,
            conn_lim.reserved,
            conn_lim.reserved_per_client,
            self.handshake_timeout,
            self.first_call_timeout,
        )
        if self.engine != "fastbinary":
            log.warning(
                "the thrift package's C extension (fastbinary, 0.24 or later) is missing: "
                "requests are decoded in pure Python, many times slower; reinstall thrift "
                "where a C compiler is present"
            )
        if self.handshake_timeout > 0 or self.first_call_timeout > 0:
            threading.Thread(target=self._reap, name="hms-conn-reaper", daemon=True).start()
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
            address = client_address(peer)
            refused = self.admission.admit(address)
            if refused is not None:
                self._refuse_connection(client, peer, address, refused)
                continue
            conn = _Connection(client, peer, address)
            self._set_first_deadline(conn)
            with self._lock:
                self._connections.add(conn)
            try:
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                client.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                threading.Thread(
                    target=self._serve_connection,
                    args=(conn,),
                    name=f"hms-conn-{peer}",
                    daemon=True,
                ).start()
            except (OSError, RuntimeError) as exc:  # reset already, or no thread to be had
                log.error("cannot serve %s: %s", _peer(peer), exc)
                self._forget(conn)
                client.close()

    def _set_first_deadline(self, conn: _Connection) -> None:
        """The deadline a new connection meets first: its handshake's, else its first call's."""
        handshake = self.handshake_timeout if self.opener is not None else 0.0
        first_call = self.first_call_timeout
        if handshake > 0 and (first_call <= 0 or handshake < first_call):
            conn.stage, conn.deadline = HANDSHAKE, conn.started + handshake
        elif first_call > 0:
            conn.stage, conn.deadline = FIRST_CALL, conn.started + first_call

    def _refuse_connection(self, sock: socket.socket, peer: Any, address: str, why: str) -> None:
        """Close a connection over a limit at once: the client sees it closed, never a hang."""
        try:
            sock.close()
        except OSError:
            pass
        lim = self.connection_limits
        held = self.admission.held_by(address)
        if why == GLOBAL_LIMIT:
            detail = f"{lim.total} connections open (max_connections)"
        elif why == CLIENT_LIMIT:
            detail = f"{address} holds {held} (max_connections_per_client = {lim.per_client})"
        else:
            detail = (
                f"only the {lim.reserved} reserved slots are left (reserved_connections), kept "
                f"for clients holding fewer than {lim.reserved_per_client}; {address} holds {held}"
            )
        self._quiet.log(why, "refusing a connection from %s: %s", _peer(peer), detail)
        if self._on_dropped is not None:
            self._on_dropped("refused", why)

    def _reap(self) -> None:
        """Shut down connections past their deadline (their own threads then clean up)."""
        while not self._stopping.wait(_REAPER_TICK):
            now = time.monotonic()
            with self._lock:
                for conn in self._connections:
                    if conn.deadline is not None and now >= conn.deadline:
                        conn.deadline = None
                        conn.expired = conn.stage
                        _cut(conn.sock)

    def _adopt(self, conn: _Connection, sock: socket.socket) -> None:
        with self._lock:
            conn.sock = sock

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
        first = True
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
                    if first:
                        first = False
                        conn.deadline = None  # it got going: only the time-outs apply now
                call.begin(msg.name)
                try:
                    self.processor.process_message(msg, oprot, self._decode)
                finally:
                    call.end()
                    with self._lock:
                        conn.busy = False
                        self._idle.notify_all()
        except ClientGone as exc:
            if conn.expired is not None:
                self._timed_out(conn)
            elif exc.mid_message:
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
            if conn.expired is not None:
                self._timed_out(conn)
            else:
                log.debug("connection %s ended: %s", _peer(peer), exc)  # gone while we answered
        except Exception:  # noqa: BLE001 - a bad message ends only its own connection
            log.warning("closing %s after an unexpected error", _peer(peer), exc_info=True)
        finally:
            self._forget(conn)
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
        adopt = functools.partial(self._adopt, conn)
        try:
            sock = self.opener(conn.sock, conn.peer, adopt)  # type: ignore[misc]
            with self._lock:
                conn.sock = sock
                if conn.expired is None:
                    conn.stage, conn.deadline = FIRST_CALL, self._first_call_deadline(conn)
            if conn.expired is None:
                return True
            raise TimeoutError("deadline passed")
        except Exception as exc:  # noqa: BLE001 - a refused client ends only its connection
            from hms_cache_proxy.server.secure import describe_failure

            if conn.expired is not None:
                self._timed_out(conn)
            else:
                log.warning("closing %s: %s", _peer(conn.peer), describe_failure(exc))
            self._forget(conn)
            try:
                conn.sock.close()
            except OSError:
                pass
            return False

    def _first_call_deadline(self, conn: _Connection) -> float | None:
        if self.first_call_timeout > 0:
            return conn.started + self.first_call_timeout
        return None

    def _timed_out(self, conn: _Connection) -> None:
        reason = conn.expired or FIRST_CALL
        if reason == HANDSHAKE:
            what = "the TLS handshake and SASL negotiation were not done within %g s"
            seconds, setting = self.handshake_timeout, "handshake_timeout_seconds"
        else:
            what = "no complete first call within %g s of connecting"
            seconds, setting = self.first_call_timeout, "first_call_timeout_seconds"
        self._quiet.log(reason, f"closing %s: {what} (%s)", _peer(conn.peer), seconds, setting)
        if self._on_dropped is not None:
            self._on_dropped("timed_out", reason)

    def _forget(self, conn: _Connection) -> None:
        """Drop a connection from the books (before its socket is closed: the reaper and stop()
        shut down only sockets of connections still on the books)."""
        with self._lock:
            if conn not in self._connections:
                return
            self._connections.discard(conn)
            self._idle.notify_all()
        self.admission.release(conn.client)

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


def _cut(sock: socket.socket) -> None:
    """Shut a socket down under its reader's feet (also mid TLS handshake): the plain socket's
    shutdown, which leaves an SSL socket's state to the thread that uses it."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:
        pass


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
