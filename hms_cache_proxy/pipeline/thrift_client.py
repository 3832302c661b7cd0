"""A plain Thrift client for polling an instance: far cheaper than a Spark query per poll."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from thriftpy2.protocol.binary import TBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.transport import TTransportException
from thriftpy2.transport.buffered import TBufferedTransportFactory

from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.pipeline.args import parse_uri
from hms_cache_proxy.pipeline.errors import PipelineError


@contextmanager
def connect(uri: str, timeout_s: float = 30.0, tls_ca: str | None = None) -> Iterator[Any]:
    """A client of ``uri`` (strict binary protocol, buffered socket: what Hive clients use);
    over TLS, verifying the server's certificate against ``tls_ca`` (PEM), when given."""
    host, port = parse_uri(uri)
    try:
        client = make_client(
            service,
            host,
            port,
            proto_factory=TBinaryProtocolFactory(),
            trans_factory=TBufferedTransportFactory(),
            timeout=int(timeout_s * 1000),
            cafile=tls_ca,
        )
    except Exception as exc:  # noqa: BLE001 - connection refused, DNS, timeout
        raise PipelineError(f"cannot connect to the metastore {uri}: {exc}") from None
    try:
        yield client
    except (TTransportException, OSError, EOFError) as exc:
        hint = "" if tls_ca else " (if it speaks TLS, give --tls-ca)"
        raise PipelineError(f"lost the connection to the metastore {uri}: {exc}{hint}") from None
    finally:
        client.close()


def partition_names(client: Any, database: str, table: str) -> set[str]:
    """The table's partition names, or none if the database or table is not there (yet)."""
    try:
        return set(client.get_partition_names(database, table, -1))
    except (hms.NoSuchObjectException, hms.MetaException):
        return set()


def wait_visible(
    client: Any,
    database: str,
    wanted: dict[str, Iterable[str]],
    timeout_s: float,
    interval_s: float = 0.005,
) -> dict[tuple[str, str], float]:
    """Poll until every (table, partition name) in ``wanted`` is listed; return when each was
    first seen (Unix time). Stops at the timeout with whatever was seen."""
    pending = {t: set(names) for t, names in wanted.items()}
    seen: dict[tuple[str, str], float] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        for table in [t for t, names in pending.items() if names]:
            listed = partition_names(client, database, table)
            now = time.time()
            for name in pending[table] & listed:
                seen[(table, name)] = now
            pending[table] -= listed
        if not any(pending.values()) or time.monotonic() >= deadline:
            return seen
        time.sleep(interval_s)
