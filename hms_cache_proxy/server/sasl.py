"""SASL PLAIN on the Thrift port, as Hive clients speak it (Thrift's TSaslTransport).

The negotiation is a few messages of 1 status byte (START=1 OK=2 BAD=3 ERROR=4 COMPLETE=5),
a 4-byte big-endian length and a payload: the client sends START with the mechanism name,
then OK (or COMPLETE) with PLAIN's response ``authzid NUL user NUL password``; the server
answers COMPLETE, or BAD with the reason and closes. Afterwards every Thrift message travels
in a frame of a 4-byte length and the bytes, which is exactly framed transport (PLAIN has no
integrity or privacy layer), so the server then reads and writes framed.

Passwords are compared in constant time, also for unknown users.
"""

from __future__ import annotations

import hmac
import socket
import struct
from typing import NoReturn

START, OK, BAD, ERROR, COMPLETE = 1, 2, 3, 4, 5
MAX_NEGOTIATION_BYTES = 64 * 1024
"""Longest negotiation payload accepted (PLAIN needs a few hundred bytes)."""

_HEADER = struct.Struct(">BI")


class SaslError(Exception):
    """The negotiation failed; the message says why (and was sent to the client)."""


class PlainAuthenticator:
    """Checks PLAIN credentials against a fixed table of users and passwords."""

    def __init__(self, users: dict[str, str]) -> None:
        if not users:
            raise ValueError("sasl_enabled needs at least one user in sasl_users")
        self._users = {u: p.encode() for u, p in users.items()}
        self._dummy = b"\x00" * 32

    def negotiate(self, sock: socket.socket) -> str:
        """Run the server side of the negotiation on ``sock``; the authenticated user name.

        Raises SaslError (after telling the client) or OSError/TimeoutError."""
        return self.negotiate_login(sock)[0]

    def negotiate_login(self, sock: socket.socket) -> tuple[str, str]:
        """As ``negotiate``; the user and the password it proved (upstream mode logs in to the
        upstream with them when ``upstream_sasl_as_caller`` is on)."""
        status, mechanism = _receive(sock)
        if status != START:
            _fail(sock, ERROR, f"expected a SASL START message, got status {status}")
        if mechanism.strip().upper() != b"PLAIN":
            name = mechanism.decode("utf-8", "replace")
            _fail(sock, BAD, f"unsupported SASL mechanism {name!r}: this server offers PLAIN")
        status, response = _receive(sock)
        if status not in (OK, COMPLETE):
            _fail(sock, ERROR, f"expected the PLAIN response, got status {status}")
        parts = response.split(b"\x00")
        if len(parts) != 3 or not parts[1]:
            _fail(sock, BAD, "malformed PLAIN response (want authzid NUL user NUL password)")
        authzid, user_b, password = parts
        user = user_b.decode("utf-8", "replace")
        expected = self._users.get(user)
        ok = hmac.compare_digest(password, expected if expected is not None else self._dummy)
        if not ok or expected is None:
            _fail(sock, BAD, f"authentication failed for user {user!r}")
        if authzid and authzid != user_b:
            _fail(sock, BAD, f"user {user!r} may not act as {authzid.decode('utf-8', 'replace')!r}")
        _send(sock, COMPLETE, b"")
        return user, password.decode("utf-8", "replace")


def plain_login(sock: socket.socket, user: str, password: str) -> None:
    """The client side of the negotiation, as Thrift's TSaslClientTransport runs it: START with
    the mechanism, OK with ``NUL user NUL password``; returns on COMPLETE, else SaslError with
    the server's reason. Every message afterwards travels framed."""
    _send(sock, START, b"PLAIN")
    _send(sock, OK, b"\x00" + user.encode() + b"\x00" + password.encode())
    status, length = _HEADER.unpack(_exactly(sock, _HEADER.size))
    reason = _exactly(sock, min(length, MAX_NEGOTIATION_BYTES)).decode("utf-8", "replace")
    if status != COMPLETE:
        raise SaslError(f"SASL PLAIN login as {user!r} refused: {reason or f'status {status}'}")


def _receive(sock: socket.socket) -> tuple[int, bytes]:
    status, length = _HEADER.unpack(_exactly(sock, _HEADER.size))
    if status not in (START, OK, BAD, ERROR, COMPLETE):
        _fail(sock, ERROR, f"not a SASL negotiation message (status byte {status})")
    if length > MAX_NEGOTIATION_BYTES:
        _fail(sock, ERROR, f"SASL message of {length} bytes is too long")
    payload = _exactly(sock, length)
    if status in (BAD, ERROR):
        raise SaslError(f"the client gave up: {payload.decode('utf-8', 'replace')}")
    return status, payload


def _exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise SaslError("the peer closed the connection during SASL negotiation")
        data += chunk
    return data


def _send(sock: socket.socket, status: int, payload: bytes) -> None:
    sock.sendall(_HEADER.pack(status, len(payload)) + payload)


def _fail(sock: socket.socket, status: int, message: str) -> NoReturn:
    try:
        _send(sock, status, message.encode())
    except OSError:
        pass
    raise SaslError(message)
