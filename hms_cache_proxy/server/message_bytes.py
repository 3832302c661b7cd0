"""A Thrift message header as bytes (strict binary or compact), for relaying messages whole.

``wire.MessageReader`` hands over a message as its header fields and its body's exact bytes;
header + body is the message as it travelled. Pure code: no I/O.
"""

from __future__ import annotations

import struct

_BINARY = struct.Struct("!iI")
_SEQID = struct.Struct("!i")
_VERSION_1 = -2147418112  # 0x80010000, signed


def header(name: str, mtype: int, seqid: int, *, compact: bool = False) -> bytes:
    """The header of message ``name`` of type ``mtype`` with ``seqid``."""
    raw = name.encode("utf-8")
    if compact:
        return (
            bytes((0x82, ((mtype & 0x07) << 5) | 1))
            + _varint(seqid & 0xFFFFFFFF)
            + (_varint(len(raw)) + raw)
        )
    return _BINARY.pack(_VERSION_1 | (mtype & 0xFF), len(raw)) + raw + _SEQID.pack(seqid)


def framed(payload: bytes) -> bytes:
    """``payload`` in one frame of framed transport."""
    return _SEQID.pack(len(payload)) + payload


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
