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

1. ``MessageReader.read_message`` reads the message header, then *skips* the arguments struct
   straight off the socket, so the message's end is found without building anything. The
   bytes reach the C code through ``_Window``, which hands them over at most 64 KiB at a time;
   a string longer than that therefore has to ask for more bytes (``cstringio_refill``) and is
   checked against ``max_string_bytes`` there, before any of it is read, and every request for
   bytes is checked against ``max_message_bytes``. Container sizes (``max_container_elements``),
   negative sizes, unknown type codes and nesting deeper than 64 are refused by the C code.
2. ``decode`` builds the arguments (thriftpy2 objects, through specs converted once per class)
   from those bytes in memory. A failure here (an element type that contradicts the IDL)
   leaves the connection in step: the message's end is already known. Invalid UTF-8 in a
   string becomes U+FFFD, as Java's String does (thriftpy2 handed the handler bytes).

Keys of maps and elements of sets that are containers are built immutable (tuples,
frozensets), so ``map<list<string>,string>`` decodes with tuple keys.

Without a usable fastbinary (``thrift`` installed without its C extension, or older than
0.24, whose skip has no depth bound) the same two passes run in Apache Thrift's pure-Python
protocols with the same limits: correct, several times slower; ``ENGINE`` says which is used
and the server logs it at start.

Replies are still written by thriftpy2's cython encoder, which handles tuple keys.
"""

from __future__ import annotations

import io
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thrift.protocol import TBinaryProtocol as _apache_binary
from thrift.protocol import TCompactProtocol as _apache_compact
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TType
from thrift.transport.TTransport import TTransportException as _ApacheError

WINDOW = 64 * 1024
"""Most bytes the decoder is handed at once, unless one read asks for more."""

MAX_DEPTH = 64
"""Nesting depth of structs and containers refused past this (fixed by the C decoder)."""

_MAX_RECV = 1024 * 1024

# -- limits and errors ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    max_message_bytes: int = 100 * 1024 * 1024
    max_string_bytes: int = 16 * 1024 * 1024
    max_container_elements: int = 1_000_000
    max_decoded_structures: int = 2_000_000
    client_timeout_seconds: float = 600.0
    message_timeout_seconds: float = 60.0

    @property
    def window(self) -> int:
        return max(16, min(WINDOW, self.max_string_bytes))

    @classmethod
    def of(cls, settings: Any) -> Limits:
        """The limits among ``settings`` (any object with the same attribute names)."""
        names = [f for f in cls.__dataclass_fields__ if hasattr(settings, f)]
        return cls(**{f: getattr(settings, f) for f in names})


class WireError(Exception):
    """A message that cannot be read. ``name``/``seqid`` are set once its header was read."""

    name: str | None = None
    seqid: int = 0


class LimitExceeded(WireError):
    """A declared or actual size past a configured limit; ``limit`` names the setting."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


class Malformed(WireError):
    """Bytes that are not a Thrift message of the configured protocol."""


class ClientGone(Exception):
    """The client closed the connection (``mid_message`` says whether it left one unfinished)."""

    def __init__(self, mid_message: bool) -> None:
        super().__init__("client closed the connection" + (" mid-message" if mid_message else ""))
        self.mid_message = mid_message


class ClientTimeout(Exception):
    """Nothing arrived for a configured time: between calls (idle) or mid-message (stalled)."""

    def __init__(self, idle: bool, seconds: float) -> None:
        what = "idle" if idle else "stalled mid-message"
        super().__init__(f"{what} for {seconds:.0f} s")
        self.idle = idle


@dataclass
class Message:
    name: str
    mtype: int
    seqid: int
    body: bytes
    """The arguments struct, exactly as sent (already checked against the limits)."""


# -- the C decoder, if present and safe -----------------------------------------------------------


def _fastbinary() -> Any:
    try:
        from thrift.protocol import fastbinary
    except ImportError:
        return None

    class _Probe:
        thrift_spec = ()

    class _Proto:
        string_length_limit = 1000
        container_length_limit = 1000

        def __init__(self, data: bytes) -> None:
            self.trans = _MemoryIn(data)

    # fastbinary before 0.24 recurses without bound on nested containers (a crash on deep
    # input). Nested lists 200 deep must be refused here, not decoded.
    deep = b"\x0f\x00\x01" + b"\x0f\x00\x00\x00\x01" * 200 + b"\x08\x00\x00\x00\x00" + b"\x00"
    try:
        fastbinary.decode_binary(_Probe(), _Proto(deep), [_Probe, ()])
    except TProtocolException:
        return fastbinary
    except Exception:  # noqa: BLE001
        return None
    return None


class _MemoryIn:
    """Bytes already in memory, for the second pass (no refill: the end is the end).

    Also what fastbinary takes its limits from (``trans`` is itself)."""

    def __init__(self, data: bytes, limits: Limits | None = None) -> None:
        self.cstringio_buf = io.BytesIO(data)
        self.trans = self
        if limits is not None:
            self.string_length_limit = limits.max_string_bytes
            self.container_length_limit = limits.max_container_elements

    def cstringio_refill(self, partial: bytes, reqlen: int) -> io.BytesIO:
        raise Malformed(f"the arguments end early ({reqlen} more bytes wanted)")

    def read(self, n: int) -> bytes:
        return self.cstringio_buf.read(n)

    def readAll(self, n: int) -> bytes:  # noqa: N802 - Apache transport API
        data = self.cstringio_buf.read(n)
        if len(data) < n:
            raise Malformed(f"the arguments end early ({n - len(data)} more bytes wanted)")
        return data


_FAST = _fastbinary()
ENGINE = "fastbinary" if _FAST is not None else "python"
"""Which decoder reads requests: "fastbinary" (C) or "python" (fallback, slower)."""


# -- specs: thriftpy2 -> Apache -------------------------------------------------------------------

_T_BINARY = 18  # thriftpy2's type for `binary` fields; a string on the wire
_T_UUID = 16  # Apache Thrift 0.19+; fastbinary skips it as 16 bytes
_struct_args: dict[type, list[Any]] = {}
_struct_lock = threading.Lock()


def struct_args(cls: type) -> list[Any]:
    """``[cls, spec]`` as fastbinary and Apache's protocols want it for a thriftpy2 struct.

    Built once per class, under a lock, and published only when complete (a struct's spec
    refers to the specs of the structs it holds, possibly itself)."""
    done = _struct_args.get(cls)
    if done is not None:
        return done
    with _struct_lock:
        building: dict[type, list[Any]] = {}
        out = _convert(cls, building, _struct_args)
        _struct_args.update(building)
        return out


def prepare(classes: Any) -> None:
    """Convert these structs' specs now rather than on their first request."""
    for cls in classes:
        struct_args(cls)


def _convert(cls: Any, building: dict[type, list[Any]], done: dict[type, list[Any]]) -> list[Any]:
    # cls is a thriftpy2 struct class: its thrift_spec is made at run time, so untyped.
    hit = done.get(cls) or building.get(cls)
    if hit is not None:
        return hit
    out: list[Any] = [_counted(cls), ()]
    building[cls] = out
    fields = {fid: s for fid, s in cls.thrift_spec.items() if fid >= 0}
    spec: list[Any] = [None] * (max(fields) + 1 if fields else 0)
    for fid, s in fields.items():
        ttype, name = s[0], s[1]
        inner = s[2] if len(s) > 3 else None
        args = _typeargs(ttype, inner, False, building, done)
        spec[fid] = (fid, _wire(ttype), name, args, None)
    out[1] = tuple(spec)
    return out


def _typeargs(ttype: int, spec: Any, frozen: bool, building: Any, done: Any) -> Any:
    if ttype == TType.STRING:
        return "UTF8"
    if ttype == _T_BINARY:
        return "BINARY"
    if ttype in (TType.LIST, TType.SET):
        etype, espec = (spec, None) if isinstance(spec, int) else spec
        # elements of a set, and anything inside a map key or set, must be hashable
        inner = frozen or ttype == TType.SET
        return (_wire(etype), _typeargs(etype, espec, inner, building, done), frozen)
    if ttype == TType.MAP:
        (ktype, kspec), (vtype, vspec) = ((s, None) if isinstance(s, int) else s for s in spec)
        return (
            _wire(ktype),
            _typeargs(ktype, kspec, True, building, done),
            _wire(vtype),
            _typeargs(vtype, vspec, frozen, building, done),
            frozen,
        )
    if ttype == TType.STRUCT:
        return _convert(spec, building, done)
    return None  # scalars (an enum's class is thriftpy2's business only)


def _wire(ttype: int) -> int:
    return TType.STRING if ttype == _T_BINARY else ttype


# -- the pure-Python engine -----------------------------------------------------------------------


class _PyMixin:
    """Apache's pure-Python protocol, made to build thriftpy2 structs and check wire types."""

    # Set by the Apache protocol this is mixed into (and by _py_protocol).
    string_length_limit: int
    container_length_limit: int
    _recursion_depth: int

    def readContainerStruct(self, spec: Any) -> Any:  # noqa: N802
        cls, fields = spec
        obj = cls()
        self.readStruct(obj, fields)  # type: ignore[attr-defined]
        return obj

    def readContainerList(self, spec: Any) -> Any:  # noqa: N802
        etype, espec, frozen = spec
        wtype, size = self.readListBegin()  # type: ignore[attr-defined]
        _expect(size, wtype, etype)
        items = [self.readFieldByTType(etype, espec) for _ in range(size)]  # type: ignore[attr-defined]
        self.readListEnd()  # type: ignore[attr-defined]
        return tuple(items) if frozen else items

    def readContainerSet(self, spec: Any) -> Any:  # noqa: N802
        etype, espec, frozen = spec
        wtype, size = self.readSetBegin()  # type: ignore[attr-defined]
        _expect(size, wtype, etype)
        items = [self.readFieldByTType(etype, espec) for _ in range(size)]  # type: ignore[attr-defined]
        self.readSetEnd()  # type: ignore[attr-defined]
        return frozenset(items) if frozen else set(items)

    def readContainerMap(self, spec: Any) -> Any:  # noqa: N802
        ktype, kspec, vtype, vspec, frozen = spec
        wk, wv, size = self.readMapBegin()  # type: ignore[attr-defined]
        _expect(size, wk, ktype)
        _expect(size, wv, vtype)
        out = {}
        for _ in range(size):
            k = self.readFieldByTType(ktype, kspec)  # type: ignore[attr-defined]
            out[k] = self.readFieldByTType(vtype, vspec)  # type: ignore[attr-defined]
        self.readMapEnd()  # type: ignore[attr-defined]
        if frozen:
            from thrift.Thrift import TFrozenDict

            return TFrozenDict(out)
        return out

    def readString(self) -> str:  # noqa: N802
        # as fastbinary (and Java's String): invalid UTF-8 becomes U+FFFD
        return self.readBinary().decode("utf-8", "replace")  # type: ignore[attr-defined]

    def readStruct(self, obj: Any, spec: Any, is_immutable: bool = False) -> None:  # noqa: N802
        """Apache's, except that ids outside the spec (negative ones too) are skipped."""
        self.increment_recursion_depth()  # type: ignore[attr-defined]
        try:
            self.readStructBegin()  # type: ignore[attr-defined]
            while True:
                _, ftype, fid = self.readFieldBegin()  # type: ignore[attr-defined]
                if ftype == TType.STOP:
                    break
                field = spec[fid] if 0 <= fid < len(spec) else None
                if field is not None and ftype == field[1]:
                    setattr(obj, field[2], self.readFieldByTType(ftype, field[3]))  # type: ignore[attr-defined]
                else:
                    _py_skip(self, ftype, MAX_DEPTH - self._recursion_depth)
                self.readFieldEnd()  # type: ignore[attr-defined]
            self.readStructEnd()  # type: ignore[attr-defined]
        finally:
            self.decrement_recursion_depth()  # type: ignore[attr-defined]

    def _check_string_length(self, length: int) -> None:
        _check_size(length, self.string_length_limit, "max_string_bytes", "string of")

    def _check_container_length(self, length: int) -> None:
        _check_size(
            length,
            self.container_length_limit,
            "max_container_elements",
            "container of",
        )


def _check_size(size: int, limit: int, setting: str, what: str) -> None:
    if size < 0:
        raise Malformed("negative size for a string or container")
    if size > limit:
        unit = "bytes" if setting == "max_string_bytes" else "elements"
        raise LimitExceeded(setting, f"{what} {size} {unit} is over {setting} = {limit}")


def _expect(size: int, got: int, want: int) -> None:
    if size > 0 and got != want:
        raise TypeError("got wrong ttype while reading field")


class _PyBinary(_PyMixin, _apache_binary.TBinaryProtocol):
    pass


class _PyCompact(_PyMixin, _apache_compact.TCompactProtocol):
    pass


def _py_protocol(compact: bool, trans: Any, limits: Limits) -> Any:
    cls = _PyCompact if compact else _PyBinary
    proto = cls(trans)
    proto.string_length_limit = limits.max_string_bytes
    proto.container_length_limit = limits.max_container_elements
    return proto


# -- decoding (pass 2) ----------------------------------------------------------------------------


class _LimitsOf:
    """What fastbinary reads its limits and transport from."""

    __slots__ = ("trans", "string_length_limit", "container_length_limit")

    def __init__(self, trans: Any, limits: Limits) -> None:
        self.trans = trans
        self.string_length_limit = limits.max_string_bytes
        self.container_length_limit = limits.max_container_elements


def decode(
    body: bytes, obj: Any, limits: Limits, compact: bool = False, engine: str = ENGINE
) -> Any:
    """Fill thriftpy2 struct ``obj`` from its encoding ``body`` (checked by ``MessageReader``)."""
    args = _struct_args.get(type(obj)) or struct_args(type(obj))
    trans = _MemoryIn(body, limits)
    _budget.left = limits.max_decoded_structures
    _budget.limit = limits.max_decoded_structures
    try:
        if engine == "fastbinary":
            (_FAST.decode_compact if compact else _FAST.decode_binary)(obj, trans, args)
        else:
            proto = _py_protocol(compact, trans, limits)
            proto.readStruct(obj, args[1])
    except WireError:
        raise
    except UnicodeDecodeError:
        raise Malformed("a string is not valid UTF-8") from None
    except TypeError as exc:
        if "wrong ttype" in str(exc):
            raise Malformed("a container's element type contradicts the IDL") from None
        raise _translate(exc, limits) from None
    except (OverflowError, ValueError, _ApacheError, TProtocolException, EOFError) as exc:
        raise _translate(exc, limits) from None
    finally:
        _budget.left = None
    return obj


# -- the structure budget (pass 2) ----------------------------------------------------------------
# A struct takes one byte on the wire (its STOP) and a few hundred in memory once built, so a
# request of empty structs inside max_message_bytes could take ~85 times its size. Each struct
# the decoders build is charged to the request's budget (max_decoded_structures); past it the
# decoding stops with LimitExceeded. Outside ``decode`` nothing is counted.

_budget = threading.local()


def _charge() -> None:
    left = getattr(_budget, "left", None)
    if left is None:
        return
    if left <= 0:
        raise LimitExceeded(
            "max_decoded_structures",
            f"request holds more than max_decoded_structures = {_budget.limit} structs",
        )
    _budget.left = left - 1


UNSET_KEPT: dict[str, tuple[str, ...]] = {"LockComponent": ("isTransactional",)}
"""Optional fields whose IDL default would hide that a client left them unset, where Hive
tells the two apart (TxnHandler skips a lock component only when isTransactional is *set* to
false): decoded as None when absent, instead of the default."""


def _counted(cls: type) -> type:
    """A subclass whose construction charges the budget and returns a plain ``cls`` object
    (the decoders call the class they are given; what they get back is an ordinary struct).
    The fast decoder passes the fields it read as keywords, the Python one sets them after:
    fields of UNSET_KEPT not passed start as None either way."""
    kept = UNSET_KEPT.get(cls.__name__, ())

    def __new__(_sub: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        _charge()
        obj = cls(*args, **kwargs)
        for name in kept:
            if name not in kwargs:
                setattr(obj, name, None)
        return obj

    return type(cls.__name__, (cls,), {"__new__": __new__, "__module__": cls.__module__})


# -- reading messages off a socket (pass 1) -------------------------------------------------------


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
            self._fast_skip = _FAST.decode_compact if compact else _FAST.decode_binary
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
            err = _translate(exc, self.limits)
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
        proto = _py_protocol(self.compact, self.window, self.limits)
        _py_skip(proto, TType.STRUCT, MAX_DEPTH)


class _Skipped:
    thrift_spec: tuple[Any, ...] = ()


_SKIP_ARGS = [_Skipped, ()]
_SKIPPED = _Skipped()
_HEAD = struct.Struct("!ii")
_I32 = struct.Struct("!i")

_SCALAR_READERS = {
    TType.BOOL: "readBool",
    TType.BYTE: "readByte",
    TType.I16: "readI16",
    TType.I32: "readI32",
    TType.I64: "readI64",
    TType.DOUBLE: "readDouble",
    TType.STRING: "readBinary",
}


def _py_skip(proto: Any, ttype: int, depth: int) -> None:
    """Apache's skip, but strings as bytes, unknown types refused, depth counted as fastbinary."""
    if depth <= 0:
        raise TProtocolException(TProtocolException.DEPTH_LIMIT, "Maximum recursion depth exceeded")
    reader = _SCALAR_READERS.get(ttype)
    if reader is not None:
        getattr(proto, reader)()
    elif ttype == TType.STRUCT:
        proto.readStructBegin()
        while True:
            _, ftype, _ = proto.readFieldBegin()
            if ftype == TType.STOP:
                break
            _py_skip(proto, ftype, depth - 1)
            proto.readFieldEnd()
        proto.readStructEnd()
    elif ttype == TType.MAP:
        ktype, vtype, size = proto.readMapBegin()
        for _ in range(size):
            _py_skip(proto, ktype, depth - 1)
            _py_skip(proto, vtype, depth - 1)
        proto.readMapEnd()
    elif ttype in (TType.LIST, TType.SET):
        etype, size = proto.readListBegin()
        for _ in range(size):
            _py_skip(proto, etype, depth - 1)
        proto.readListEnd()
    elif ttype == _T_UUID:
        proto.readUuid()  # 16 bytes, as fastbinary skips it
    else:
        raise TypeError(f"Unexpected TType for skip: {ttype}")


def _translate(exc: BaseException, limits: Limits) -> WireError:
    """The decoders' errors, in words that name the setting or the fault."""
    text = str(exc)
    if isinstance(exc, TProtocolException) and exc.type == TProtocolException.DEPTH_LIMIT:
        return Malformed(f"structs and containers nested deeper than {MAX_DEPTH}")
    negative = "negative length" in text.lower() or (
        isinstance(exc, _ApacheError) and exc.type == _ApacheError.NEGATIVE_SIZE
    )
    if negative:
        return Malformed("negative size for a string or container")
    if isinstance(exc, OverflowError) or (
        isinstance(exc, _ApacheError) and exc.type == _ApacheError.SIZE_LIMIT
    ):
        # fastbinary checks container sizes; pure-Python also strings (its message says which)
        if isinstance(exc, _ApacheError) and "string" in text:
            return LimitExceeded(
                "max_string_bytes",
                f"string longer than max_string_bytes = {limits.max_string_bytes}",
            )
        return LimitExceeded(
            "max_container_elements",
            f"container of more than max_container_elements = {limits.max_container_elements} "
            "elements",
        )
    if isinstance(exc, TypeError) and "TType" in text:
        return Malformed(f"unknown Thrift type code ({text})")
    return Malformed(text)
