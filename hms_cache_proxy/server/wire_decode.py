"""The second pass: a request's checked body bytes built into thriftpy2 structs.

Which decoder runs (``ENGINE``: Apache Thrift's C ``fastbinary`` when present and safe, else the
pure-Python engine of ``wire_python.py``), thriftpy2 specs converted once per class into the
form both decoders take, ``decode`` itself, and the structure budget that bounds what a small
message may build. The body was already read and size-checked by ``wire.MessageReader``, so a
failure here leaves the connection in step.

Keys of maps and elements of sets that are containers are built immutable (tuples,
frozensets), so ``map<list<string>,string>`` decodes with tuple keys.
"""

from __future__ import annotations

import io
import threading
from typing import Any

from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TType
from thrift.transport.TTransport import TTransportException as _ApacheError

from hms_cache_proxy.server.wire_limits import (
    LimitExceeded,
    Limits,
    Malformed,
    WireError,
    translate,
)
from hms_cache_proxy.server.wire_python import py_protocol

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


FAST = _fastbinary()
ENGINE = "fastbinary" if FAST is not None else "python"
"""Which decoder reads requests: "fastbinary" (C) or "python" (fallback, slower)."""


# -- specs: thriftpy2 -> Apache -------------------------------------------------------------------

_T_BINARY = 18  # thriftpy2's type for `binary` fields; a string on the wire
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


# -- decoding (pass 2) ----------------------------------------------------------------------------


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
            (FAST.decode_compact if compact else FAST.decode_binary)(obj, trans, args)
        else:
            proto = py_protocol(compact, trans, limits)
            proto.readStruct(obj, args[1])
    except WireError:
        raise
    except UnicodeDecodeError:
        raise Malformed("a string is not valid UTF-8") from None
    except TypeError as exc:
        if "wrong ttype" in str(exc):
            raise Malformed("a container's element type contradicts the IDL") from None
        raise translate(exc, limits) from None
    except (OverflowError, ValueError, _ApacheError, TProtocolException, EOFError) as exc:
        raise translate(exc, limits) from None
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
