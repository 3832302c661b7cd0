"""Calls of this process's own to the upstream (the event poller's), over an ``UpstreamPool``:
arguments encoded and results decoded with thriftpy2, in the pool's protocol."""

from __future__ import annotations

import itertools
from typing import Any

from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.utils import deserialize, serialize

from hms_cache_proxy.server import message_bytes
from hms_cache_proxy.server.upstream import UpstreamError, UpstreamPool


class UpstreamClient:
    """``call(name, **arguments)`` returns the result, raises the declared exception the
    upstream answered, a ``TApplicationException`` it sent, or ``UpstreamError``."""

    def __init__(self, service: Any, pool: UpstreamPool) -> None:
        self._service = service
        self._pool = pool
        self._proto = TCompactProtocolFactory() if pool.compact else TBinaryProtocolFactory()
        self._seqids = itertools.count(1)

    @property
    def uri(self) -> str:
        return self._pool.uri

    def close(self) -> None:
        self._pool.close()

    def call(self, api: str, **arguments: Any) -> Any:
        seqid = next(self._seqids) & 0x7FFFFFFF
        args = getattr(self._service, api + "_args")(**arguments)
        header = message_bytes.header(api, TMessageType.CALL, seqid, compact=self._pool.compact)
        reply = self._pool.call((), header + serialize(args, self._proto), True, ())
        assert reply is not None
        if reply.seqid != seqid:
            raise UpstreamError(f"upstream {self.uri}: reply seqid {reply.seqid} for {seqid}")
        if reply.mtype == TMessageType.EXCEPTION:
            raise deserialize(TApplicationException(), reply.body, self._proto)
        result = deserialize(getattr(self._service, api + "_result")(), reply.body, self._proto)
        for fid in sorted(result.thrift_spec):
            value = getattr(result, result.thrift_spec[fid][1], None)
            if fid != 0 and value is not None:
                raise value
        if 0 in result.thrift_spec:
            return result.success
        return None
