"""The pure-Python engine: Apache Thrift's Python protocols, made to behave as fastbinary does.

Used when fastbinary is missing or unsafe (see ``wire_decode.ENGINE``), for both passes: the
same size limits, strings as bytes while skipping, unknown type codes refused, nesting depth
counted as the C decoder counts it, invalid UTF-8 as U+FFFD; correct, several times slower.
"""

from __future__ import annotations

from typing import Any

from thrift.protocol import TBinaryProtocol as _apache_binary
from thrift.protocol import TCompactProtocol as _apache_compact
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TType

from hms_cache_proxy.server.wire_limits import MAX_DEPTH, LimitExceeded, Limits, Malformed

_T_UUID = 16  # Apache Thrift 0.19+; fastbinary skips it as 16 bytes


class _PyMixin:
    """Apache's pure-Python protocol, made to build thriftpy2 structs and check wire types."""

    # Set by the Apache protocol this is mixed into (and by py_protocol).
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
                    py_skip(self, ftype, MAX_DEPTH - self._recursion_depth)
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


def py_protocol(compact: bool, trans: Any, limits: Limits) -> Any:
    cls = _PyCompact if compact else _PyBinary
    proto = cls(trans)
    proto.string_length_limit = limits.max_string_bytes
    proto.container_length_limit = limits.max_container_elements
    return proto


_SCALAR_READERS = {
    TType.BOOL: "readBool",
    TType.BYTE: "readByte",
    TType.I16: "readI16",
    TType.I32: "readI32",
    TType.I64: "readI64",
    TType.DOUBLE: "readDouble",
    TType.STRING: "readBinary",
}


def py_skip(proto: Any, ttype: int, depth: int) -> None:
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
            py_skip(proto, ftype, depth - 1)
            proto.readFieldEnd()
        proto.readStructEnd()
    elif ttype == TType.MAP:
        ktype, vtype, size = proto.readMapBegin()
        for _ in range(size):
            py_skip(proto, ktype, depth - 1)
            py_skip(proto, vtype, depth - 1)
        proto.readMapEnd()
    elif ttype in (TType.LIST, TType.SET):
        etype, size = proto.readListBegin()
        for _ in range(size):
            py_skip(proto, etype, depth - 1)
        proto.readListEnd()
    elif ttype == _T_UUID:
        proto.readUuid()  # 16 bytes, as fastbinary skips it
    else:
        raise TypeError(f"Unexpected TType for skip: {ttype}")
