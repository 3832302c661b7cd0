"""The request reader and decoder (hms_cache_proxy/server/wire.py and its wire_*.py), no server.

- Every struct of the IDL, filled with random values and encoded by thriftpy2 (binary and
  compact), decodes to an equal object with both engines (the C one and the pure-Python one).
- Both engines agree, on random and mutated messages, whether a message is read, refused for a
  limit, or malformed, and on what they decode.
- map<list<string>,string> decodes with tuple keys.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thriftpy2.protocol import TCompactProtocol
from thriftpy2.protocol.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TPayload, TType
from thriftpy2.transport.memory import TCyMemoryBuffer, TMemoryBuffer

from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.server import wire, wire_decode, wire_limits

ENGINES = ["fastbinary", "python"] if wire_decode.ENGINE == "fastbinary" else ["python"]
LIMITS = wire_limits.Limits(
    max_message_bytes=64 * 1024, max_string_bytes=2048, max_container_elements=50
)

STRUCTS = sorted(
    (
        v
        for v in vars(hms).values()
        if isinstance(v, type) and issubclass(v, TPayload) and v.thrift_spec
    ),
    key=lambda c: c.__name__,
)


# -- random values from thriftpy2 specs ---------------------------------------------------------


def _value(ttype: int, spec: Any, depth: int, hashable: bool = False) -> st.SearchStrategy[Any]:
    if ttype == TType.BOOL:
        return st.booleans()
    if ttype == TType.BYTE:
        return st.integers(-128, 127)
    if ttype == TType.I16:
        return st.integers(-(2**15), 2**15 - 1)
    if ttype == TType.I32:
        return st.integers(-(2**31), 2**31 - 1)
    if ttype == TType.I64:
        return st.integers(-(2**63), 2**63 - 1)
    if ttype == TType.DOUBLE:
        return st.floats(allow_nan=False)
    if ttype == TType.STRING:
        return st.text(max_size=8)
    if ttype == TType.BINARY:
        return st.binary(max_size=8)
    if ttype in (TType.LIST, TType.SET):
        etype, espec = (spec, None) if isinstance(spec, int) else spec
        elem = _value(etype, espec, depth + 1, hashable or ttype == TType.SET)
        if ttype == TType.SET:
            return st.frozensets(elem, max_size=3).map(frozenset if hashable else set)
        return st.lists(elem, max_size=3).map(tuple if hashable else list)
    if ttype == TType.MAP:
        (kt, ks), (vt, vs) = ((s, None) if isinstance(s, int) else s for s in spec)
        return st.dictionaries(
            _value(kt, ks, depth + 1, True), _value(vt, vs, depth + 1), max_size=3
        )
    if ttype == TType.STRUCT:
        return st.builds(spec) if depth > 2 else _struct(spec, depth + 1)
    raise AssertionError(ttype)


def _struct(cls: type, depth: int = 0) -> st.SearchStrategy[Any]:
    fields = {}
    for s in cls.thrift_spec.values():
        inner = s[2] if len(s) > 3 else None
        fields[s[1]] = st.none() | _value(s[0], inner, depth)
    # an absent field (None) is not sent, so it decodes to the IDL default: build it so
    return st.fixed_dictionaries(fields).map(
        lambda kw: cls(**{k: v for k, v in kw.items() if v is not None})
    )


def _plain(v: Any) -> Any:
    """Comparable form (thriftpy2's exceptions compare by identity)."""
    if hasattr(type(v), "thrift_spec"):
        return (type(v).__name__, {k: _plain(x) for k, x in vars(v).items()})
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {_plain_key(k): _plain(x) for k, x in v.items()}
    return v


def _plain_key(k: Any) -> Any:
    return tuple(k) if isinstance(k, (list, tuple)) else k


def _encode(obj: Any, compact: bool) -> bytes:
    if compact:
        buf = TMemoryBuffer()
        TCompactProtocol(buf).write_struct(obj)
        return buf.getvalue()
    buf = TCyMemoryBuffer()
    TCyBinaryProtocol(buf).write_struct(obj)
    return buf.getvalue()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("compact", [False, True], ids=["binary", "compact"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_struct_round_trips(engine: str, compact: bool, data: st.DataObject) -> None:
    cls = data.draw(st.sampled_from(STRUCTS))
    obj = data.draw(_struct(cls))
    big = wire_limits.Limits()
    out = wire_decode.decode(_encode(obj, compact), cls(), big, compact, engine)
    assert _plain(out) == _plain(obj)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("compact", [False, True], ids=["binary", "compact"])
def test_skewed_value_locations_decode_with_tuple_keys(engine: str, compact: bool) -> None:
    skew = hms.SkewedInfo(
        skewedColNames=["a", "b"],
        skewedColValues=[["1", "x"], ["2", "y"]],
        skewedColValueLocationMaps={("1", "x"): "file:/w/a=1/b=x", ("2", "y"): "file:/w/a=2/b=y"},
    )
    args = service.create_table_args(
        tbl=hms.Table(tableName="t", dbName="d", sd=hms.StorageDescriptor(skewedInfo=skew))
    )
    out = wire_decode.decode(
        _encode(args, compact), service.create_table_args(), LIMITS, compact, engine
    )
    assert out == args
    assert set(out.tbl.sd.skewedInfo.skewedColValueLocationMaps) == {("1", "x"), ("2", "y")}


# -- reading messages: both engines agree ------------------------------------------------------


def _read(data: bytes, engine: str, compact: bool = False) -> tuple[str, Any]:
    a, b = socket.socketpair()
    try:
        a.sendall(data)
        a.shutdown(socket.SHUT_WR)
        reader = wire.MessageReader(b, LIMITS, compact=compact, engine=engine)
        try:
            msg = reader.read_message()
        except wire_limits.LimitExceeded as exc:
            return "limit", exc.limit
        except wire_limits.Malformed:
            return "malformed", None
        except wire_limits.ClientGone:
            return "eof", None
        info = getattr(service, msg.name + "_args", None)
        if info is None:
            return "read", msg.body
        try:
            return "decoded", wire_decode.decode(msg.body, info(), LIMITS, compact, engine)
        except wire_limits.WireError as exc:
            return "undecodable", type(exc).__name__
    finally:
        a.close()
        b.close()


def _header(name: bytes) -> bytes:
    return struct.pack("!iI", -2147418111, len(name)) + name + struct.pack("!i", 1)


_METHODS = [b"get_database", b"get_table", b"get_partitions_by_names", b"create_database", b"x"]
_INTS = st.sampled_from([0, 1, 2, 50, 51, 2047, 2048, 2049, 2**31 - 1, -1, -(2**31), 65536])


@st.composite
def _messages(draw: st.DrawFn) -> bytes:
    """Thrift-ish bodies: valid fields of random types, then corrupted in places."""
    parts = []
    for _ in range(draw(st.integers(0, 6))):
        ftype = draw(st.sampled_from([2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15, 16, 1, 5, 18, 99]))
        fid = draw(st.integers(-3, 6))
        parts.append(struct.pack("!bh", ftype, fid))
        if ftype in (11, 18):
            n = draw(st.integers(0, 40))
            parts.append(struct.pack("!i", draw(st.just(n) | _INTS)) + b"s" * n)
        elif ftype in (14, 15):
            etype = draw(st.sampled_from([11, 8, 12, 15, 0, 7]))
            parts.append(struct.pack("!bi", etype, draw(st.integers(0, 3) | _INTS)))
        elif ftype == 13:
            parts.append(struct.pack("!bbi", 11, 11, draw(st.integers(0, 3) | _INTS)))
        parts.append(draw(st.binary(max_size=12)))
    body = b"".join(parts) + draw(st.sampled_from([b"\x00", b"", b"\x00\x00"]))
    return _header(draw(st.sampled_from(_METHODS))) + body


@pytest.mark.skipif(len(ENGINES) < 2, reason="needs thrift's C extension")
@settings(max_examples=400, deadline=None)
@given(data=st.one_of(st.binary(max_size=64), _messages()))
def test_engines_agree(data: bytes) -> None:
    fast, slow = _read(data, "fastbinary"), _read(data, "python")
    assert fast == slow


@pytest.mark.parametrize("engine", ENGINES)
def test_limits_and_errors_name_the_setting(engine: str) -> None:
    big_string = _header(b"get_database") + struct.pack("!bhi", 11, 1, 2049) + b"x" * 2049
    assert _read(big_string, engine) == ("limit", "max_string_bytes")
    ok_string = _header(b"get_database") + struct.pack("!bhi", 11, 1, 2048) + b"x" * 2048 + b"\0"
    assert _read(ok_string, engine)[0] == "decoded"
    big_list = _header(b"x") + struct.pack("!bhbi", 15, 1, 8, 51) + b"\0\0\0\0" * 51 + b"\0"
    assert _read(big_list, engine) == ("limit", "max_container_elements")
    too_long = _header(b"x") + (struct.pack("!bhi", 11, 1, 2000) + b"y" * 2000) * 40 + b"\0"
    assert _read(too_long, engine) == ("limit", "max_message_bytes")
    deep = _header(b"x") + struct.pack("!bh", 15, 1) + struct.pack("!bi", 15, 1) * 70
    assert _read(deep, engine) == ("malformed", None)
    assert _read(_header(b"x")[:7], engine) == ("eof", None)


def test_compact_header_and_limits() -> None:
    name = b"get_database"
    head = b"\x82\x21\x01" + bytes([len(name)]) + name
    for engine in ENGINES:
        # field 1 (delta 1, binary), length 5 as a varint
        ok = head + b"\x18\x05hello\x00"
        kind, args = _read(ok, engine, compact=True)
        assert kind == "decoded" and args.name == "hello"
        big = head + b"\x18\xff\x0f"  # 2047 ok? no: 0x7ff = 2047 declared, 0 sent -> eof
        assert _read(big, engine, compact=True) == ("eof", None)
        huge = head + b"\x18\xff\xff\xff\xff\x07"
        assert _read(huge, engine, compact=True) == ("limit", "max_string_bytes")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("compact", [False, True], ids=["binary", "compact"])
def test_structs_past_max_decoded_structures_are_refused(engine: str, compact: bool) -> None:
    parts = [hms.Partition(values=[str(i)], sd=hms.StorageDescriptor()) for i in range(10)]
    body = _encode(service.add_partitions_args(new_parts=parts), compact)
    tight = wire_limits.Limits(max_decoded_structures=19)  # 10 partitions + 10 storage descriptors
    with pytest.raises(wire_limits.LimitExceeded, match="max_decoded_structures = 19") as refused:
        wire_decode.decode(body, service.add_partitions_args(), tight, compact, engine)
    assert refused.value.limit == "max_decoded_structures"

    enough = wire_limits.Limits(max_decoded_structures=20)
    out = wire_decode.decode(body, service.add_partitions_args(), enough, compact, engine)
    assert out.new_parts == parts
    assert {type(p) for p in out.new_parts} == {hms.Partition}  # plain structs, not subclasses
    assert type(out.new_parts[0].sd) is hms.StorageDescriptor
    # the budget is per request: the next one starts afresh
    again = wire_decode.decode(body, service.add_partitions_args(), enough, compact, engine)
    assert again.new_parts == parts
