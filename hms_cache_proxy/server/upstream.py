"""Connections to an upstream metastore: opened when first needed, reused, bounded in number.

Each connection carries the *session state* the calls on it ran under: the connection-scoped
calls (``set_ugi``, ``setMetaConf``) sent on it, as messages with seqid 0. A call borrows a
connection whose state is its client's; a connection with another state is replayed to the
right one (opened fresh when it cannot be), so clients of the same identity share connections
and no client's identity or session settings reach another client's calls.

With ``upstream_sasl_as_caller`` a call may name the SASL login its connection must have (the
caller's user and password): a connection is then also keyed by the user it logged in as, and
one logged in as another user (or as the proxy's own account) is never used for it: at the
limit an idle one is closed and its slot opened again with the caller's login.

An idle connection the upstream closed (a restart) is noticed before it is used and replaced,
so only calls in flight at the moment of the cut fail. Every failure is an ``UpstreamError``
naming the upstream; the connection it happened on is closed.
"""

from __future__ import annotations

import logging
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable

from hms_cache_proxy.server import message_bytes
from hms_cache_proxy.server.sasl import SaslError, plain_login
from hms_cache_proxy.server.tls import describe_failure
from hms_cache_proxy.server.wire import Message, MessageReader
from hms_cache_proxy.server.wire_limits import ClientGone, ClientTimeout, Limits, WireError

log = logging.getLogger(__name__)

State = tuple[bytes, ...]
"""The connection-scoped messages a connection has been sent, in order (seqid 0)."""

Login = tuple[str, str]
"""(user, password) for SASL PLAIN."""

_HUGE = 2**31 - 1  # replies are the upstream's business: only their framing is checked


class UpstreamError(Exception):
    """The upstream could not answer: unreachable, closed the connection, too slow, garbled."""


class UpstreamConnection:
    """One socket to the upstream and the reader of its replies."""

    def __init__(
        self, sock: socket.socket, reader: MessageReader, framed: bool, user: str | None
    ) -> None:
        self.sock = sock
        self.reader = reader
        self.framed = framed
        self.user = user  # the caller it logged in as; None: the pool's own login, or none
        self.state: State = ()

    def call(self, request: bytes, expect_reply: bool) -> Message | None:
        """Send one message (header + body); its reply when one is due."""
        self.sock.sendall(message_bytes.framed(request) if self.framed else request)
        if not expect_reply:
            return None
        return self.reader.read_message()

    def alive(self) -> bool:
        """False when the upstream closed it (or sent bytes nobody asked for) while idle: an
        idle connection has nothing to read (a closed one reads as its end, TLS's too)."""
        poller = select.poll()
        poller.register(self.sock, select.POLLIN | select.POLLERR | select.POLLHUP)
        try:
            return not poller.poll(0)
        except OSError:
            return False

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class UpstreamPool:
    """At most ``max_connections`` connections to ``host:port``, shared by session state."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        framed: bool = False,
        compact: bool = False,
        max_connections: int = 64,
        connect_timeout_seconds: float = 5.0,
        timeout_seconds: float = 600.0,
        pool_wait_seconds: float = 10.0,
        tls: ssl.SSLContext | None = None,
        sasl: Login | None = None,
        sasl_as_caller: bool = False,
        on_count: Callable[[int], None] | None = None,
    ) -> None:
        """``tls``: speak TLS with this client context (the host name is checked); ``sasl``:
        (user, password) to log in with SASL PLAIN, after which every message is framed;
        ``sasl_as_caller``: calls name their own login (``call(login=...)``);
        ``pool_wait_seconds``: how long a call waits for a connection when all are busy."""
        self.host = host
        self.port = port
        self.uri = f"thrift://{host}:{port}"
        self.framed = framed or sasl is not None or sasl_as_caller
        self.compact = compact
        self.tls = tls
        self.sasl = sasl
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout_seconds
        self.timeout = timeout_seconds
        self.pool_wait = pool_wait_seconds
        self._limits = Limits(
            max_message_bytes=_HUGE,
            max_string_bytes=_HUGE,
            max_container_elements=_HUGE,
            client_timeout_seconds=timeout_seconds,
            message_timeout_seconds=timeout_seconds,
        )
        self._on_count = on_count
        self._idle: list[UpstreamConnection] = []  # most recently returned last
        self._open = 0
        self._closed = False
        self._cond = threading.Condition()

    @property
    def open_connections(self) -> int:
        with self._cond:
            return self._open

    # -- borrowing -------------------------------------------------------------------------------

    def call(
        self,
        state: State,
        request: bytes,
        expect_reply: bool,
        after: State,
        login: Login | None = None,
    ) -> Message | None:
        """Send ``request`` on a connection in ``state``; it is in ``after`` once sent.
        ``login``: on a connection logged in with it (None: the pool's own login).

        Raises UpstreamError (the connection is then closed) when the upstream cannot answer.
        """
        conn = self._borrow(state, login)
        try:
            if conn.state != state or conn.user != _user(login):
                self._replay(conn, state, login)
            reply = conn.call(request, expect_reply)
        except Exception as exc:
            self._discard(conn)
            raise self._error(exc) from None
        conn.state = after
        self._give_back(conn)
        return reply

    def check(self) -> None:
        """Raise UpstreamError unless a connection to the upstream can be had (health). With
        every connection busy there is nothing to check without waiting: they are in use."""
        with self._cond:
            if self._open >= self.max_connections and not self._idle:
                return
        conn = self._borrow((), None)
        self._give_back(conn)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._open -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            conn.close()
        self._counted()

    def _borrow(self, state: State, login: Login | None) -> UpstreamConnection:
        deadline = time.monotonic() + self.pool_wait
        while True:
            with self._cond:
                if self._closed:
                    raise UpstreamError(f"upstream {self.uri}: the service is stopping")
                conn = self._take_idle(state, _user(login))
                if conn is None:
                    if self._open < self.max_connections:
                        self._open += 1
                    else:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise UpstreamError(
                                f"upstream {self.uri}: every upstream connection is busy (all "
                                f"{self.max_connections} of upstream_max_connections); none "
                                f"came free within {self.pool_wait:g} s "
                                "(upstream_pool_wait_seconds)"
                            )
                        self._cond.wait(left)
                        continue
            if conn is not None:
                if conn.alive():
                    return conn
                log.info("upstream %s closed an idle connection; opening another", self.uri)
                self._discard(conn)
                continue
            try:
                return self._connect(login)
            except Exception:
                with self._cond:
                    self._open -= 1
                    self._cond.notify()
                self._counted()
                raise

    def _take_idle(self, state: State, user: str | None) -> UpstreamConnection | None:
        """An idle connection in ``state`` logged in as ``user``; at the limit, any idle one
        (replayed to it, or opened again for another login)."""
        for i in range(len(self._idle) - 1, -1, -1):
            conn = self._idle[i]
            if conn.state == state and conn.user == user:
                return self._idle.pop(i)
        return self._idle.pop(0) if self._idle and self._open >= self.max_connections else None

    def _connect(self, login: Login | None = None) -> UpstreamConnection:
        """A new connection: TCP, then TLS and SASL PLAIN when configured (as ``login`` when
        given), each within the connect time-out."""
        credentials = login or self.sasl
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        except OSError as exc:
            raise UpstreamError(
                f"cannot connect to upstream {self.uri}: {exc.strerror or exc}"
            ) from None
        try:
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.host)
            if credentials is not None:
                plain_login(sock, *credentials)
        except (ssl.SSLError, ssl.CertificateError) as exc:
            sock.close()
            why = _tls_error_text(exc) if isinstance(exc, ssl.SSLError) else describe_failure(exc)
            raise UpstreamError(f"upstream {self.uri}: {why}") from None
        except (SaslError, OSError) as exc:
            sock.close()
            why = str(exc) if isinstance(exc, SaslError) else exc.strerror or str(exc)
            raise UpstreamError(f"upstream {self.uri}: {why}") from None
        sock.settimeout(None)  # the reader sets its own time-outs
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        reader = MessageReader(sock, self._limits, framed=self.framed, compact=self.compact)
        self._counted()
        return UpstreamConnection(sock, reader, self.framed, _user(login))

    def _replay(self, conn: UpstreamConnection, state: State, login: Login | None) -> None:
        """Bring ``conn`` to ``state`` under ``login``: a fresh session when needed (another
        login is always one), then each message sent."""
        if conn.user != _user(login) or conn.state != state[: len(conn.state)]:
            conn.close()  # a session cannot be undone: start another in the same slot
            fresh = self._connect(login)
            conn.sock, conn.reader, conn.state = fresh.sock, fresh.reader, ()
            conn.user = fresh.user
        for message in state[len(conn.state) :]:
            conn.call(message, True)  # its reply was the first client's business
        conn.state = state

    def _give_back(self, conn: UpstreamConnection) -> None:
        with self._cond:
            if self._closed:
                self._open -= 1
                conn.close()
            else:
                self._idle.append(conn)
            self._cond.notify()

    def _discard(self, conn: UpstreamConnection) -> None:
        conn.close()
        with self._cond:
            self._open -= 1
            self._cond.notify()
        self._counted()

    def _counted(self) -> None:
        if self._on_count is not None:
            self._on_count(self.open_connections)

    def _error(self, exc: BaseException) -> UpstreamError:
        if isinstance(exc, UpstreamError):
            return exc
        if isinstance(exc, ClientGone):
            why = "the upstream closed the connection"
        elif isinstance(exc, ClientTimeout):
            why = f"no reply within {self.timeout:g} s (upstream_timeout_seconds)"
        elif isinstance(exc, WireError):
            why = f"unreadable reply ({exc})"
        elif isinstance(exc, ssl.SSLError):
            why = _tls_error_text(exc)
        elif isinstance(exc, OSError):
            why = exc.strerror or str(exc)
        else:
            why = f"{type(exc).__name__}: {exc}"
        return UpstreamError(f"upstream {self.uri}: {why}")


def _user(login: Login | None) -> str | None:
    return None if login is None else login[0]


def _tls_error_text(exc: ssl.SSLError) -> str:
    """The TLS failure as the caller's message; a refused client certificate says which
    settings give one (with TLS 1.3 the upstream's refusal arrives at the first read)."""
    text = describe_failure(exc)
    if "CERTIFICATE_REQUIRED" in text.upper():
        text += (
            " (the upstream requires a client certificate: set upstream_tls_cert_file and "
            "upstream_tls_key_file)"
        )
    return text
