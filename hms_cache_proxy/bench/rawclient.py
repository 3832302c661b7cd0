"""A client that times the server, not the client's decoder.

A Python client spends longer building the objects of a large reply than a fast server spends
producing it (about 300 ms for 10,000 partitions even from canned bytes). This client sends a
request encoded once in advance (TBinaryProtocol, strict, over a plain buffered socket, as the
HMS default) and reads the reply off the socket without building objects: the transport is
unframed, so the only way to know where a reply ends is to walk its binary structure.

The walk is skipper.c (built with the machine's C compiler on first use, see skipper.py): it is
fed the bytes as they arrive, keeps its place between reads and allocates nothing, so it costs
a few milliseconds for a 7 MB reply of 10,000 partitions. Without a compiler the client falls
back to thriftpy2's cython ``skip`` (about ten times slower, as it makes a bytes object of every
string). Either way the client checks the reply's message type and that the result's first
field is ``success`` (field 0), not one of the call's exceptions.

:func:`skip_value` is the same walk in plain Python, for the tests.
"""

from __future__ import annotations

import ctypes
import socket
import struct
from typing import Any

from thriftpy2.protocol.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TMessageType, TType
from thriftpy2.transport import TSocket
from thriftpy2.transport.buffered import TCyBufferedTransport
from thriftpy2.transport.memory import TCyMemoryBuffer

from hms_cache_proxy.bench import skipper
from hms_cache_proxy.idl import service

_BUFFER = 1 << 20


class RawCallError(RuntimeError):
    """The server answered with an exception (or a TApplicationException)."""


def encode_call(method: str, args: dict[str, Any], seqid: int = 0) -> bytes:
    """The bytes of one CALL message: strict binary protocol header, then the args struct."""
    args_cls = getattr(service, f"{method}_args")
    buf = TCyMemoryBuffer()
    proto = TCyBinaryProtocol(buf)
    proto.write_message_begin(method, TMessageType.CALL, seqid)
    proto.write_struct(args_cls(**args))
    proto.write_message_end()
    buf.flush()
    return buf.getvalue()


def walker_kind() -> str:
    """Which walk the client uses here: "c" (skipper.c) or "cython" (thriftpy2's skip)."""
    return "c" if skipper.load() is not None else "cython"


class RawClient:
    """One connection; ``call(request)`` sends pre-encoded bytes and walks over the reply."""

    def __init__(self, host: str, port: int, timeout_s: float = 600.0, walker: str = "auto"):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        lib = skipper.load() if walker in ("auto", "c") else None
        if walker == "c" and lib is None:
            raise RuntimeError("skipper.c could not be built (no C compiler?)")
        self.kind = "c" if lib is not None else "cython"
        if lib is not None:
            self._walker = skipper.Walker(lib)
            self._buf = bytearray(_BUFFER)
            self._view = memoryview(self._buf)
            self._addr = ctypes.addressof((ctypes.c_char * _BUFFER).from_buffer(self._buf))
        else:
            self._trans = TCyBufferedTransport(TSocket(sock=self.sock))
            self._proto = TCyBinaryProtocol(self._trans)

    def call(self, request: bytes) -> None:
        self.sock.sendall(request)
        if self.kind == "c":
            self._walk_c()
        else:
            self._walk_cython()

    def _walk_c(self) -> None:
        walker, view, addr, recv = self._walker, self._view, self._addr, self.sock.recv_into
        walker.reset()
        start = filled = 0
        head = b""
        while True:
            n = recv(view[filled:])
            if n == 0:
                raise ConnectionError("the server closed the connection mid-reply")
            if len(head) < 64:  # the reply's first bytes, to tell a result from an exception
                head += bytes(view[filled : filled + min(n, 64 - len(head))])
            filled += n
            used, done = walker.feed(addr + start, filled - start)
            start += used
            if done:
                break
            tail = filled - start
            if tail:
                view[:tail] = view[start:filled]
            start, filled = 0, tail
        _check_head(head)

    def _walk_cython(self) -> None:
        _name, mtype, _seqid = self._proto.read_message_begin()
        if mtype == TMessageType.EXCEPTION:
            self._proto.skip(TType.STRUCT)
            raise RawCallError("TApplicationException")
        ftype = self._trans.read(1)[0]
        if ftype == TType.STOP:
            return  # a void call's empty result
        (fid,) = struct.unpack("!h", self._trans.read(2))
        self._proto.skip(ftype)
        self._skip_rest()
        if fid != 0:
            raise RawCallError(f"the call raised its declared exception #{fid}")

    def _skip_rest(self) -> None:
        while True:
            ftype = self._trans.read(1)[0]
            if ftype == TType.STOP:
                return
            self._trans.read(2)
            self._proto.skip(ftype)

    def close(self) -> None:
        self.sock.close()


def _check_head(head: bytes) -> None:
    """Raise if the reply (whose first bytes are ``head``) is an exception."""
    if len(head) < 8:
        return
    (version, name_len) = struct.unpack_from("!ii", head, 0)
    if version & 0xFF == TMessageType.EXCEPTION:
        raise RawCallError("TApplicationException")
    at = 8 + name_len + 4
    if len(head) < at + 3:
        return  # a long method name: the first field is past what was kept
    ftype = head[at]
    if ftype != TType.STOP:
        (fid,) = struct.unpack_from("!h", head, at + 1)
        if fid != 0:
            raise RawCallError(f"the call raised its declared exception #{fid}")


# -- the same walk in plain Python (tests) --------------------------------------------------------

_FIXED = {TType.BOOL: 1, TType.BYTE: 1, TType.I16: 2, TType.I32: 4, TType.I64: 8, TType.DOUBLE: 8}


def skip_value(buf: bytes, pos: int, ttype: int) -> int:
    """The position just after the value of type ``ttype`` that starts at ``pos``."""
    if ttype in _FIXED:
        return pos + _FIXED[ttype]
    if ttype == TType.STRING:
        (n,) = struct.unpack_from("!i", buf, pos)
        return pos + 4 + n
    if ttype == TType.STRUCT:
        while True:
            ftype = buf[pos]
            pos += 1
            if ftype == TType.STOP:
                return pos
            pos = skip_value(buf, pos + 2, ftype)
    if ttype in (TType.LIST, TType.SET):
        etype = buf[pos]
        (n,) = struct.unpack_from("!i", buf, pos + 1)
        pos += 5
        if etype in _FIXED:
            return pos + n * _FIXED[etype]
        for _ in range(n):
            pos = skip_value(buf, pos, etype)
        return pos
    if ttype == TType.MAP:
        ktype, vtype = buf[pos], buf[pos + 1]
        (n,) = struct.unpack_from("!i", buf, pos + 2)
        pos += 6
        for _ in range(n):
            pos = skip_value(buf, pos, ktype)
            pos = skip_value(buf, pos, vtype)
        return pos
    raise ValueError(f"unknown Thrift type {ttype} at {pos}")


def message_end(buf: bytes) -> int:
    """Where the strict-binary message starting at offset 0 of ``buf`` ends."""
    (version,) = struct.unpack_from("!i", buf, 0)
    if version >= 0:
        raise ValueError("not a strict binary-protocol message")
    (name_len,) = struct.unpack_from("!i", buf, 4)
    return skip_value(buf, 8 + name_len + 4, TType.STRUCT)
