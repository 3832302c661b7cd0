"""Replies whose result the handler returned already encoded (the cache's stored bytes).

A binary-protocol reply is the message header, field 0 (``success``) of the result struct
holding those bytes, and the STOP byte: written as they are, with no object built. Other
protocols (compact) get the bytes decoded into the result object and written as usual.
"""

from __future__ import annotations

from typing import Any

from thriftpy2.protocol.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TMessageType

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.thrift_bytes import Encoded


def write_encoded(oprot: Any, api: str, seqid: int, value: Encoded) -> bool:
    """Write the reply straight from ``value``; False when ``oprot`` is not the binary one."""
    if not isinstance(oprot, TCyBinaryProtocol):
        return False
    oprot.write_message_begin(api, TMessageType.REPLY, seqid)
    # One copy of a reply of megabytes (``a + b + c`` makes two); the transport takes bytes.
    oprot.trans.write(
        b"".join((thrift_bytes.field_header(value.ttype, 0), value, thrift_bytes.STOP))
    )
    oprot.write_message_end()
    oprot.trans.flush()
    return True


def decoded_result(result_cls: type, value: Encoded) -> Any:
    """The result struct with ``success`` decoded from ``value``."""
    return thrift_bytes.decode(
        result_cls, thrift_bytes.field_header(value.ttype, 0) + value + thrift_bytes.STOP
    )
