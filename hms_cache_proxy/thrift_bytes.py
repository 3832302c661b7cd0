"""Thrift objects as TBinaryProtocol bytes: what the cache stores and how replies are assembled.

The cache keeps tables and partitions encoded (about 0.8 KB for a partition of a 10-column
table, against about 5 KB as thriftpy2 objects) and writes a reply by joining stored bytes,
without building objects. The encoders here are generated once per struct from thriftpy2's
``thrift_spec`` and produce exactly the bytes thriftpy2's own binary protocol writes for the
same object (fields in declaration order, None fields left out); decoding uses thriftpy2.

A partition is stored as three pieces, ``head + cols + tail``, where ``cols`` is the encoded
``sd.cols`` field: partitions with the same columns share one ``cols`` object, which is most of
what a partition of a wide table would otherwise repeat.

Pure code: no I/O.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from thriftpy2.protocol.cybin import TCyBinaryProtocolFactory
from thriftpy2.thrift import TType
from thriftpy2.transport.memory import TCyMemoryBuffer

from hms_cache_proxy.idl import hms

_I16 = struct.Struct(">h").pack
_I32 = struct.Struct(">i").pack
_I64 = struct.Struct(">q").pack
_DBL = struct.Struct(">d").pack

STOP = b"\x00"
_PROTO = TCyBinaryProtocolFactory()

# Wire types: binary/utf8/utf16 travel as STRING.
_WIRE = {TType.BINARY: TType.STRING, TType.UTF8: TType.STRING, TType.UTF16: TType.STRING}


def wire_type(ttype: int) -> int:
    return _WIRE.get(ttype, ttype)


def field_header(ttype: int, fid: int) -> bytes:
    return bytes([wire_type(ttype)]) + _I16(fid)


class Encoded(bytes):
    """A Thrift value already in TBinaryProtocol form: a struct's fields and its STOP byte
    (``ttype`` STRUCT) or a list's header and elements (``ttype`` LIST).

    A handler may return one where the method's result is that value; the processor writes
    it as it is for binary-protocol clients and decodes it for the others.
    """

    ttype: int

    def __new__(cls, data: bytes, ttype: int = TType.STRUCT) -> Encoded:
        obj = super().__new__(cls, data)
        obj.ttype = ttype
        return obj


# -- encoders generated from thrift_spec -------------------------------------------------------

_encoders: dict[type, Callable[[Any, list[bytes]], None]] = {}
_lock = threading.Lock()


def _string(v: Any, out: list[bytes]) -> None:
    b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
    out.append(_I32(len(b)))
    out.append(b)


def _value_writer(spec: Any) -> tuple[int, Callable[[Any, list[bytes]], None]]:
    """(wire type, writer) for a container element or map key/value spec."""
    if isinstance(spec, int):
        return wire_type(spec), _scalar_writer(spec)
    ttype, inner = spec[0], spec[1]
    if ttype == TType.STRUCT:
        return TType.STRUCT, _struct_writer(inner)
    if ttype in (TType.LIST, TType.SET):
        return ttype, _list_writer(inner)
    if ttype == TType.MAP:
        return TType.MAP, _map_writer(inner)
    # an enum: (I32, EnumClass)
    return wire_type(ttype), _scalar_writer(ttype)


def _scalar_writer(ttype: int) -> Callable[[Any, list[bytes]], None]:
    if ttype in (TType.STRING, TType.BINARY, TType.UTF8, TType.UTF16):
        return _string
    if ttype == TType.I32:
        return lambda v, out: out.append(_I32(v))
    if ttype == TType.I64:
        return lambda v, out: out.append(_I64(v))
    if ttype == TType.I16:
        return lambda v, out: out.append(_I16(v))
    if ttype == TType.BOOL:
        return lambda v, out: out.append(b"\x01" if v else b"\x00")
    if ttype == TType.BYTE:
        return lambda v, out: out.append(struct.pack(">b", v))
    if ttype == TType.DOUBLE:
        return lambda v, out: out.append(_DBL(v))
    raise TypeError(f"no binary writer for Thrift type {ttype}")


def _list_writer(elem: Any) -> Callable[[Any, list[bytes]], None]:
    etype, write = _value_writer(elem)
    head = bytes([etype])

    def write_list(v: Any, out: list[bytes]) -> None:
        out.append(head + _I32(len(v)))
        for item in v:
            write(item, out)

    return write_list


def _map_writer(kv: Any) -> Callable[[Any, list[bytes]], None]:
    ktype, kwrite = _value_writer(kv[0])
    vtype, vwrite = _value_writer(kv[1])
    head = bytes([ktype, vtype])

    def write_map(v: Any, out: list[bytes]) -> None:
        out.append(head + _I32(len(v)))
        for k, val in v.items():
            kwrite(k, out)
            vwrite(val, out)

    return write_map


def _struct_writer(cls: type[Any]) -> Callable[[Any, list[bytes]], None]:
    found = _encoders.get(cls)
    if found is not None:
        return found
    with _lock:
        found = _encoders.get(cls)
        if found is not None:
            return found
        # A placeholder first, so recursive structs resolve to the final writer.
        slot: list[Callable[[Any, list[bytes]], None]] = []
        _encoders[cls] = lambda v, out: slot[0](v, out)
    fields = []
    for fid in sorted(cls.thrift_spec):
        spec = cls.thrift_spec[fid]
        ttype, name = spec[0], spec[1]
        if ttype == TType.STRUCT:
            write = _struct_writer(spec[2])
        elif ttype in (TType.LIST, TType.SET):
            write = _list_writer(spec[2])
        elif ttype == TType.MAP:
            write = _map_writer(spec[2])
        else:
            write = _scalar_writer(ttype)
        fields.append((name, field_header(ttype, fid), write))

    def write_struct(obj: Any, out: list[bytes]) -> None:
        for name, header, write in fields:
            v = getattr(obj, name, None)
            if v is not None:
                out.append(header)
                write(v, out)
        out.append(STOP)

    slot.append(write_struct)
    with _lock:
        _encoders[cls] = write_struct
    return write_struct


def encode(obj: Any) -> bytes:
    """The struct's TBinaryProtocol bytes (its fields and the STOP byte)."""
    out: list[bytes] = []
    _struct_writer(type(obj))(obj, out)
    return b"".join(out)


def encode_list(items: Sequence[Any], cls: type) -> Encoded:
    """A list of structs as one Encoded LIST value."""
    out: list[bytes] = [bytes([TType.STRUCT]) + _I32(len(items))]
    write = _struct_writer(cls)
    for item in items:
        write(item, out)
    return Encoded(b"".join(out), TType.LIST)


def decode(cls: type, data: bytes) -> Any:
    """A new object of ``cls`` read from its TBinaryProtocol bytes."""
    obj = cls()
    obj.read(_PROTO.get_protocol(TCyMemoryBuffer(bytes(data))))
    return obj


# -- partitions as (head, cols, tail) ----------------------------------------------------------

_SD_HEADER = field_header(TType.STRUCT, 6)
_COLS_HEADER = field_header(TType.LIST, 1) + bytes([TType.STRUCT])
_write_field_schema = _struct_writer(hms.FieldSchema)
_write_string_list = _list_writer(TType.STRING)


def encode_columns(cols: Sequence[Any] | None) -> bytes:
    """The ``cols`` field of a storage descriptor (b"" for None)."""
    if cols is None:
        return b""
    out = [_COLS_HEADER + _I32(len(cols))]
    for c in cols:
        _write_field_schema(c, out)
    return b"".join(out)


def partition_pieces(p: Any) -> tuple[bytes, bytes, bytes]:
    """``encode(p)`` cut into (head, cols, tail) around ``sd.cols``."""
    sd = p.sd
    head_obj = hms.Partition(
        values=p.values,
        dbName=p.dbName,
        tableName=p.tableName,
        createTime=p.createTime,
        lastAccessTime=p.lastAccessTime,
        writeId=None,
    )
    head = encode(head_obj)[:-1]
    rest = hms.Partition(
        parameters=p.parameters,
        privileges=p.privileges,
        catName=p.catName,
        writeId=p.writeId,
        isStatsCompliant=p.isStatsCompliant,
        colStats=p.colStats,
        fileMetadata=p.fileMetadata,
    )
    tail = encode(rest)
    if sd is None:
        return head, b"", tail
    sd_rest = hms.StorageDescriptor(**{**sd.__dict__, "cols": None})
    return head + _SD_HEADER, encode_columns(sd.cols), encode(sd_rest) + tail


def join_list(pieces: Iterable[bytes], count: int) -> Encoded:
    """A LIST of ``count`` structs from their already-encoded pieces (one join: the header is
    not added to megabytes of pieces afterwards)."""
    return Encoded(b"".join([bytes([TType.STRUCT]) + _I32(count), *pieces]), TType.LIST)


def struct_of(*fields: tuple[int, int, bytes]) -> Encoded:
    """A struct from (field id, Thrift type, encoded value) triples, in the order given."""
    out = []
    for fid, ttype, value in fields:
        out.append(field_header(ttype, fid))
        out.append(value)
    out.append(STOP)
    return Encoded(b"".join(out), TType.STRUCT)


def string_list(values: Sequence[str]) -> bytes:
    out: list[bytes] = []
    _write_string_list(values, out)
    return b"".join(out)


# -- building blocks for encoders that start from database rows --------------------------------

pack_i32 = _I32
pack_i64 = _I64


def string(value: str) -> bytes:
    """A STRING value (length and UTF-8 bytes)."""
    b = value.encode("utf-8")
    return _I32(len(b)) + b


def string_map(d: dict[str, str], key_cache: dict[str, bytes]) -> bytes:
    """A map<string,string> value; ``key_cache`` remembers encoded keys across calls."""
    out = [b"\x0b\x0b" + _I32(len(d))]
    for k, v in d.items():
        kb = key_cache.get(k)
        if kb is None:
            kb = key_cache[k] = string(k)
        out.append(kb)
        b = v.encode("utf-8")
        out.append(_I32(len(b)))
        out.append(b)
    return b"".join(out)
