"""Reading requests off the wire with every declared size checked before it costs memory.

thriftpy2's cython decoder trusts the sizes a message declares: a string said to be 2 GB is
malloc'ed (and the read buffer grown to match) before a byte of it has arrived, a list of
2**31 elements of an unknown type is "skipped" by spinning 2**31 times, a map whose key type
disagrees with the IDL is read as the IDL type (the stream is then out of step and sizes come
from string bytes), and a map keyed by ``list<string>`` (SkewedInfo.skewedColValueLocationMaps)
cannot be built at all. None of that can be bounded from the outside of its compiled code.

So requests are read in two passes by the C decoder of Apache Thrift's Python library
(``thrift.protocol.fastbinary``, a dependency already), which checks string and container
sizes against limits before it allocates and bounds nesting depth:

1. ``MessageReader.read_message`` (this module) reads the message header, then *skips* the
   arguments struct straight off the socket, so the message's end is found without building
   anything. The bytes reach the C code through ``_Window``, which hands them over at most
   64 KiB at a time; a string longer than that therefore has to ask for more bytes
   (``cstringio_refill``) and is checked against ``max_string_bytes`` there, before any of it
   is read, and every request for bytes is checked against ``max_message_bytes``. Container
   sizes (``max_container_elements``), negative sizes, unknown type codes and nesting deeper
   than 64 are refused by the C code.
2. ``decode`` (``wire_decode.py``) builds the arguments (thriftpy2 objects, through specs
   converted once per class) from those bytes in memory. A failure here (an element type that
   contradicts the IDL) leaves the connection in step: the message's end is already known.
   Invalid UTF-8 in a string becomes U+FFFD, as Java's String does (thriftpy2 handed the
   handler bytes).

Without a usable fastbinary (``thrift`` installed without its C extension, or older than
0.24, whose skip has no depth bound) the same two passes run in Apache Thrift's pure-Python
protocols with the same limits (``wire_python.py``): correct, several times slower;
``wire_decode.ENGINE`` says which is used and the server logs it at start. The limits and the
errors of a message past them are in ``wire_limits.py``.

Replies are still written by thriftpy2's cython encoder, which handles tuple keys.
"""

from __future__ import annotations

import io
import socket
import ssl
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TType
from thrift.transport.TTransport import TTransportException as _ApacheError

from hms_cache_proxy.server.wire_decode import ENGINE, FAST
from hms_cache_proxy.server.wire_limits import (
    MAX_DEPTH,
    ClientGone,
    ClientTimeout,
    LimitExceeded,
    Limits,
    Malformed,
    WireError,
    translate,
)
from hms_cache_proxy.server.wire_python import py_protocol, py_skip

_MAX_RECV = 1024 * 1024


@dataclass
class Message:
    name: str
    mtype: int
    seqid: int
    body: bytes
    """The arguments struct, exactly as sent (already checked against the limits)."""


# -- reading messages off a socket (pass 1) -------------------------------------------------------


class _LimitsOf:
    """What fastbinary reads its limits and transport from."""

    __slots__ = ("trans", "string_length_limit", "container_length_limit")

    def __init__(self, trans: Any, limits: Limits) -> None:
        self.trans = trans
        self.string_length_limit = limits.max_string_bytes
        self.container_length_limit = limits.max_container_elements


class SocketIn:
    """Receives from a client socket, telling time-outs between calls from stalls mid-message.

    One socket time-out (SO_RCVTIMEO, the shorter of the two settings) is set once; each
    expiry is weighed against the setting that applies: ``client_timeout_seconds`` while
    waiting for a message to begin, ``message_timeout_seconds`` once it has. Sends stall out
    after ``message_timeout_seconds`` (SO_SNDTIMEO). No per-call system calls are added.
    """

    def __init__(self, sock: socket.socket, limits: Limits) -> None:
        self.sock = sock
        self.idle = True
        self._idle_limit = limits.client_timeout_seconds
        self._busy_limit = limits.message_timeout_seconds
        ticks = [t for t in (self._idle_limit, self._busy_limit) if t > 0]
        if ticks:
            _set_timeouts(sock, min(ticks), self._busy_limit)

    def recv(self, n: int) -> bytes:
        started = time.monotonic()
        while True:
            try:
                data = self.sock.recv(n)
            except (BlockingIOError, TimeoutError):
                waited = time.monotonic() - started
                limit = self._idle_limit if self.idle else self._busy_limit
                if limit > 0 and waited >= limit - 0.01:
                    raise ClientTimeout(self.idle, waited) from None
                continue
            if not data:
                raise ClientGone(not self.idle)
            self.idle = False
            return data


def _set_timeouts(sock: socket.socket, recv_seconds: float, send_seconds: float) -> None:
    def tv(seconds: float) -> bytes:  # struct timeval
        sec = int(seconds)
        return struct.pack("@ll", sec, int((seconds - sec) * 1_000_000))

    if isinstance(sock, ssl.SSLSocket):
        # SSL reads retry a kernel time-out forever; Python's own time-out raises instead.
        sock.settimeout(recv_seconds)
        return
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv(recv_seconds))
        if send_seconds > 0:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv(send_seconds))
    except (OSError, OverflowError):  # not Linux-like: Python's own time-out (polls per call)
        sock.settimeout(recv_seconds)


class _FramesIn:
    """The payloads of framed transport's frames, each frame's size checked first."""

    def __init__(self, raw: SocketIn, limits: Limits) -> None:
        self.raw = raw
        self.max = limits.max_message_bytes
        self.left = 0

    @property
    def idle(self) -> bool:
        return self.raw.idle

    @idle.setter
    def idle(self, value: bool) -> None:
        self.raw.idle = value

    def recv(self, n: int) -> bytes:
        if self.left == 0:
            head = b""
            while len(head) < 4:
                head += self.raw.recv(4 - len(head))
            size = int.from_bytes(head, "big", signed=True)
            if size <= 0:
                raise Malformed(f"frame of {size} bytes")
            if size > self.max:
                raise LimitExceeded(
                    "max_message_bytes",
                    f"frame of {size} bytes is larger than max_message_bytes = {self.max}",
                )
            self.left = size
        data = self.raw.recv(min(n, self.left))
        self.left -= len(data)
        return data


class _Window:
    """The bytes the decoder sees: ``cstringio_buf`` (a BytesIO over one window) and
    ``cstringio_refill``, as fastbinary wants them; ``read``/``readAll`` for the Python engine.

    Counts the current message's bytes and keeps its body's bytes for the second pass.
    """

    def __init__(self, source: Any, limits: Limits) -> None:
        self.source = source
        self.limits = limits
        self.size = limits.window
        self.cstringio_buf = io.BytesIO(b"")
        self.win = b""  # the bytes under cstringio_buf
        self._start = 0  # where the current message (or its body) begins in _win
        self._before = 0  # bytes of the current message in earlier windows
        self._parts: list[memoryview] = []  # body bytes from earlier windows
        self._keep = False  # keep the body's bytes

    # the message's bookkeeping

    def begin_message(self) -> None:
        self._start = self.cstringio_buf.tell()
        self._before = 0
        self._parts = []
        self._keep = False
        if self._start >= len(self.win):
            self.source.idle = True

    def begin_body(self) -> None:
        pos = self.cstringio_buf.tell()
        self._before += pos - self._start
        self._start = pos
        self._parts = []
        self._keep = True

    def body(self) -> bytes:
        pos = self.cstringio_buf.tell()
        tail = self.win[self._start : pos]
        if not self._parts:
            return tail
        return b"".join([*self._parts, tail])

    def used(self) -> int:
        return self._before + self.cstringio_buf.tell() - self._start

    # the decoder's interface

    def cstringio_refill(self, partial: bytes, reqlen: int) -> io.BytesIO:
        consumed_end = len(self.win) - len(partial)
        if self._keep and consumed_end > self._start:
            self._parts.append(memoryview(self.win)[self._start : consumed_end])
        self._before += consumed_end - self._start
        self._check(reqlen)
        data = self._fill(partial, reqlen)
        self.win = data
        self._start = 0
        self.cstringio_buf = io.BytesIO(data)
        return self.cstringio_buf

    def _check(self, reqlen: int) -> None:
        lim = self.limits
        if reqlen > 16 and reqlen > lim.max_string_bytes:
            # only strings ask for more than 16 bytes at once
            raise LimitExceeded(
                "max_string_bytes",
                f"string of {reqlen} bytes is longer than max_string_bytes = "
                f"{lim.max_string_bytes}",
            )
        if self._before + reqlen > lim.max_message_bytes:
            raise LimitExceeded(
                "max_message_bytes",
                f"message larger than max_message_bytes = {lim.max_message_bytes}",
            )

    def _fill(self, partial: bytes, reqlen: int) -> bytes:
        target = max(reqlen, self.size)
        pieces = [partial] if partial else []
        have = len(partial)
        while have < reqlen:
            chunk = self.source.recv(min(target - have, _MAX_RECV))
            pieces.append(chunk)
            have += len(chunk)
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def read(self, n: int) -> bytes:
        data = self.cstringio_buf.read(n)
        if len(data) < n:
            self.cstringio_refill(data, n)
            data = self.cstringio_buf.read(n)
        return data

    readAll = read  # noqa: N815 - Apache transport API


class MessageReader:
    """Reads one checked message at a time from a client connection."""

    def __init__(
        self,
        sock: socket.socket,
        limits: Limits,
        *,
        framed: bool = False,
        compact: bool = False,
        engine: str = ENGINE,
    ) -> None:
        self.limits = limits
        self.compact = compact
        self.engine = engine
        self.raw = SocketIn(sock, limits)
        source: Any = _FramesIn(self.raw, limits) if framed else self.raw
        self.window = _Window(source, limits)
        fast = engine == "fastbinary"
        self._skip: Callable[[], None] = self._skip_fast if fast else self._skip_py
        if fast:
            self._fast_skip = FAST.decode_compact if compact else FAST.decode_binary
            self._fast_proto = _LimitsOf(self.window, limits)

    @property
    def mid_message(self) -> bool:
        return self.window.used() > 0

    def read_message(self) -> Message:
        """The next message; raises ClientGone, ClientTimeout, LimitExceeded or Malformed."""
        w = self.window
        w.begin_message()
        header = None if self.compact else self._header_quick()
        if header is None:
            header = self._header_compact() if self.compact else self._header_binary()
        name_b, mtype, seqid = header
        name = name_b.decode("utf-8", "replace")
        w.begin_body()
        try:
            self._skip()
        except WireError as exc:
            exc.name, exc.seqid = name, seqid
            raise
        except (OverflowError, ValueError, TypeError, TProtocolException, _ApacheError) as exc:
            err = translate(exc, self.limits)
            err.name, err.seqid = name, seqid
            raise err from None
        return Message(name, mtype, seqid, w.body())

    # headers

    def _header_quick(self) -> tuple[bytes, int, int] | None:
        """The strict binary header parsed in one go when it is all in the window (the usual
        case); None sends the caller the slow way, which also explains what is wrong."""
        w = self.window
        buf = w.cstringio_buf
        win = w.win
        pos = buf.tell()
        if len(win) - pos < 12:
            w.cstringio_refill(buf.read(), 12)  # the smallest header; usually the whole call
            buf, win, pos = w.cstringio_buf, w.win, 0
        head, size = _HEAD.unpack_from(win, pos)
        end = pos + 8 + size
        if (
            head & -65536 != -2147418112
            or not 0 <= size <= self.limits.max_string_bytes
            or len(win) < end + 4
        ):
            return None
        buf.seek(end + 4)
        return win[pos + 8 : end], head & 0xFF, _I32.unpack_from(win, end)[0]

    def _header_binary(self) -> tuple[bytes, int, int]:
        w = self.window
        head = int.from_bytes(w.read(4), "big", signed=True)
        if head >= 0 or (head & -65536) != -2147418112:  # 0x8001 in the high half
            word = head & 0xFFFFFFFF
            raise Malformed(f"not a strict Thrift binary message (first word {word:#010x})")
        size = int.from_bytes(w.read(4), "big", signed=True)
        self._check_name(size)
        name = w.read(size)
        seqid = int.from_bytes(w.read(4), "big", signed=True)
        return name, head & 0xFF, seqid

    def _header_compact(self) -> tuple[bytes, int, int]:
        w = self.window
        proto_id, ver_type = w.read(2)
        if proto_id != 0x82 or ver_type & 0x1F != 1:
            raise Malformed(
                f"not a Thrift compact message (first bytes {proto_id:#04x} {ver_type:#04x})"
            )
        seqid = self._varint()
        if seqid >= 1 << 31:
            seqid -= 1 << 32
        size = self._varint()
        self._check_name(size)
        return w.read(size), (ver_type >> 5) & 0x07, seqid

    def _varint(self) -> int:
        out = shift = 0
        for _ in range(5):
            b = self.window.read(1)[0]
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
        raise Malformed("varint longer than 5 bytes in the message header")

    def _check_name(self, size: int) -> None:
        if size < 0:
            raise Malformed(f"method name of negative length {size}")
        if size > self.limits.max_string_bytes:
            raise LimitExceeded(
                "max_string_bytes",
                f"method name of {size} bytes is longer than max_string_bytes = "
                f"{self.limits.max_string_bytes}",
            )

    # the body

    def _skip_fast(self) -> None:
        self._fast_skip(_SKIPPED, self._fast_proto, _SKIP_ARGS)

    def _skip_py(self) -> None:
        proto = py_protocol(self.compact, self.window, self.limits)
        py_skip(proto, TType.STRUCT, MAX_DEPTH)


class _Skipped:
    thrift_spec: tuple[Any, ...] = ()


_SKIP_ARGS = [_Skipped, ()]
_SKIPPED = _Skipped()
_HEAD = struct.Struct("!ii")
_I32 = struct.Struct("!i")
