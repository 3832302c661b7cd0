"""What a connection passes before its first call: the TLS handshake, then SASL negotiation.

Runs in the connection's own thread (never the accept loop). Each read is bounded by the
message time-out, so a client that connects and stays silent is dropped like one stalled
mid-message; the whole of it by the server's ``handshake_timeout_seconds``, so one that
trickles a byte at a time is dropped too.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any

from hms_cache_proxy.server import tls as tls_mod
from hms_cache_proxy.server.sasl import PlainAuthenticator, SaslError

log = logging.getLogger(__name__)


class SecureOpener:
    """``opener(sock, peer, adopt) -> sock`` for ThriftServer: TLS and/or SASL PLAIN."""

    def __init__(
        self,
        tls: ssl.SSLContext | None,
        sasl: PlainAuthenticator | None,
        timeout_seconds: float | None,
        on_user: Callable[[str], None] | None = None,
        on_login: Callable[[str, str], None] | None = None,
    ) -> None:
        """``on_user``: told the SASL user of the connection (in its thread); ``on_login``:
        told the user and the password too (upstream mode, ``upstream_sasl_as_caller``)."""
        self.tls = tls
        self.sasl = sasl
        self.timeout = timeout_seconds or None
        self.on_user = on_user
        self.on_login = on_login

    def __call__(
        self,
        sock: socket.socket,
        peer: Any,
        adopt: Callable[[socket.socket], None] | None = None,
    ) -> socket.socket:
        """The socket to serve calls on; ``adopt`` learns of the TLS socket before its
        handshake, so the server's deadline can cut a handshake that drags on."""
        if self.tls is not None:
            sock = tls_mod.handshake(self.tls, sock, self.timeout, adopt)
        if self.sasl is not None:
            sock.settimeout(self.timeout)
            user, password = self.sasl.negotiate_login(sock)
            sock.settimeout(None)
            log.debug("%s authenticated as %r (SASL PLAIN)", peer, user)
            if self.on_user is not None:
                self.on_user(user)
            if self.on_login is not None:
                self.on_login(user, password)
        return sock


def describe_failure(exc: BaseException) -> str:
    """One line for the log: why a connection was refused before its first call."""
    if isinstance(exc, SaslError):
        return f"SASL negotiation failed: {exc}"
    if isinstance(exc, TimeoutError):
        return "timed out in the TLS handshake or SASL negotiation"
    return tls_mod.describe_failure(exc)
