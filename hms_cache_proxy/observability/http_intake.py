"""Reads HTTP requests off the listening socket on one thread, before any handler runs.

A thread per connection lets slow clients hold every thread: forty connections sending a
header line every few seconds kept /healthz answering 503 when the time-out was per read.
Here every connection is read by one selector loop until its request (line, headers and a
body of a size the handlers accept) has arrived whole, within one deadline counted from
connect; only then is it handed to a handler thread, which finds the request already in
memory. A connection that misses the deadline gets 408 and is closed; connections are
admitted per client address with a reserve (``admission``), and a refused one gets 503 and
is closed at once. A slow client therefore costs a socket and a buffer, never a thread.
"""

from __future__ import annotations

import errno
import logging
import re
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hms_cache_proxy.admission import Admission, QuietLog, client_address

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024
"""Longest request line plus headers; longer ones are answered 431."""
_ACCEPTS_PER_WAKE = 64  # the loop still reads pending requests under a connection flood
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d{1,12})[ \t]*\r?$", re.I | re.M)
_CHUNKED = re.compile(rb"^transfer-encoding[ \t]*:", re.I | re.M)

Handoff = Callable[[socket.socket, Any, bytes, Callable[[], None]], None]
"""(socket in blocking mode, peer, the request's bytes, release): the receiver answers,
closes the socket and calls ``release`` once, whatever happens."""


def status_only(code: int, reason: str) -> bytes:
    """A complete HTTP/1.0 answer without a body."""
    return (f"HTTP/1.0 {code} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").encode()


@dataclass
class _Pending:
    sock: socket.socket
    peer: Any
    address: str
    deadline: float
    data: bytearray = field(default_factory=bytearray)


class RequestIntake:
    """Accepts on ``listener`` and reads each request whole, then calls ``handoff``."""

    def __init__(
        self,
        listener: socket.socket,
        admission: Admission,
        timeout_seconds: float,
        max_body_bytes: int,
        handoff: Handoff,
        on_dropped: Callable[[str, str], None] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.listener = listener
        self.tls = tls  # TLS: the handshake is read within the same deadline as the request
        self.admission = admission
        self.timeout = timeout_seconds
        self.max_body_bytes = max_body_bytes
        self.handoff = handoff
        self._on_dropped = on_dropped  # (outcome "refused"/"timed_out", reason): metrics
        self._quiet = QuietLog(log)  # refusals and deadlines come by the thousand under attack
        self._pending: dict[socket.socket, _Pending] = {}  # in arrival order = deadline order
        self._stop = threading.Event()
        self._done = threading.Event()
        self._done.set()

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._done.clear()
        self.listener.setblocking(False)
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ, None)
        try:
            while not self._stop.is_set():
                wait = poll_interval
                if self._pending:
                    first = next(iter(self._pending.values()))
                    wait = min(wait, max(0.0, first.deadline - time.monotonic()))
                for key, _ in selector.select(wait):
                    try:
                        if key.data is None:
                            self._accept(selector)
                        else:
                            self._receive(selector, key.data)
                    except Exception:  # noqa: BLE001 - one connection must not stop the loop
                        log.exception("HTTP intake: unexpected error")
                        if key.data is not None and key.data.sock in self._pending:
                            self._drop(selector, key.data)
                self._expire(selector)
        finally:
            for pending in list(self._pending.values()):
                self._drop(selector, pending)
            selector.close()
            self._done.set()

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the loop (pending connections are closed) and wait for it to end."""
        self._stop.set()
        self._done.wait(timeout)

    # -- the loop's steps ------------------------------------------------------------------------

    def _accept(self, selector: selectors.BaseSelector) -> None:
        for _ in range(_ACCEPTS_PER_WAKE):
            try:
                sock, peer = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._quiet.log("accept", "HTTP accept failed: %s", exc)
                return
            address = client_address(peer)
            refused = self.admission.admit(address)
            if refused is not None:
                answer_and_close(sock, status_only(503, "Service Unavailable"))
                self._quiet.log(
                    refused,
                    "refusing an HTTP connection from %s: %s reached (it holds %d)",
                    address,
                    refused.replace("max_connections", "http_max_connections").replace(
                        "reserved_connections", "http_reserved_connections"
                    ),
                    self.admission.held_by(address),
                )
                if self._on_dropped is not None:
                    self._on_dropped("refused", refused)
                continue
            sock.setblocking(False)
            if self.tls is not None:
                try:
                    sock = self.tls.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
                except (OSError, ValueError):
                    answer_and_close(sock, b"")
                    self.admission.release(address)
                    continue
            pending = _Pending(sock, peer, address, time.monotonic() + self.timeout)
            self._pending[sock] = pending
            selector.register(sock, selectors.EVENT_READ, pending)

    def _receive(self, selector: selectors.BaseSelector, pending: _Pending) -> None:
        try:
            chunk = pending.sock.recv(65536)
            # TLS: decrypted bytes already buffered would never wake the selector.
            while chunk and isinstance(pending.sock, ssl.SSLSocket) and pending.sock.pending():
                chunk += pending.sock.recv(65536)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return  # (TLS: the handshake goes on, SSL_read performs it)
        except OSError:
            chunk = b""
        if not chunk:  # gone before sending a whole request (or a failed TLS handshake)
            self._drop(selector, pending)
            return
        pending.data += chunk
        whole = whole_request(pending.data, self.max_body_bytes)
        if whole is None:
            return
        selector.unregister(pending.sock)
        del self._pending[pending.sock]
        if not whole:
            answer_and_close(pending.sock, status_only(431, "Request Header Fields Too Large"))
            self.admission.release(pending.address)
            return
        pending.sock.setblocking(True)
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                self.admission.release(pending.address)

        try:
            self.handoff(pending.sock, pending.peer, bytes(pending.data), release)
        except Exception:  # noqa: BLE001 - the loop must survive any one request
            log.exception("HTTP request from %s could not be handed on", pending.address)
            answer_and_close(pending.sock, status_only(500, "Internal Server Error"))
            release()

    def _expire(self, selector: selectors.BaseSelector) -> None:
        now = time.monotonic()
        while self._pending:
            pending = next(iter(self._pending.values()))
            if pending.deadline > now:
                return
            got = "nothing" if not pending.data else f"{len(pending.data)} bytes"
            self._quiet.log(
                "request_timeout",
                "closing the HTTP connection from %s: no whole request within %g s of "
                "connecting (http_request_timeout_seconds; got %s)",
                pending.address,
                self.timeout,
                got,
            )
            if self._on_dropped is not None:
                self._on_dropped("timed_out", "request_timeout")
            self._drop(selector, pending, status_only(408, "Request Timeout"))

    def _drop(
        self, selector: selectors.BaseSelector, pending: _Pending, answer: bytes = b""
    ) -> None:
        try:
            selector.unregister(pending.sock)
        except (KeyError, ValueError):
            pass
        self._pending.pop(pending.sock, None)
        answer_and_close(pending.sock, answer)
        self.admission.release(pending.address)


def whole_request(data: bytearray, max_body_bytes: int) -> bool | None:
    """True when ``data`` holds a whole request, False when its head is too long, else None.

    The body counts only up to ``max_body_bytes``, the size handlers accept: a longer one is
    refused by the handler (413) from its headers, so waiting for it would only hold the
    connection."""
    ends = [i for i in (data.find(b"\n\r\n"), data.find(b"\n\n")) if i >= 0]
    if not ends:
        return False if len(data) > MAX_HEAD_BYTES else None
    head_end = min(ends)
    head_end += 3 if data[head_end : head_end + 3] == b"\n\r\n" else 2
    if head_end > MAX_HEAD_BYTES:
        return False
    head = bytes(data[:head_end])
    if _CHUNKED.search(head):
        return True  # answered 411 by the handler
    match = _CONTENT_LENGTH.search(head)
    length = int(match.group(1)) if match else 0
    if length > max_body_bytes:
        return True
    return len(data) - head_end >= length or None


def answer_and_close(sock: socket.socket, answer: bytes) -> None:
    """Best effort, never blocking: a short answer if the socket takes it, then close.

    What the client sent and we did not read is swallowed first, as far as it has arrived:
    closing over unread bytes makes the kernel send a reset, which can destroy the answer."""
    try:
        sock.setblocking(False)
        if answer:
            sock.send(answer)
        sock.recv(65536)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
