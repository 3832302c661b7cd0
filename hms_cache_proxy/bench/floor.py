"""The floor: the fastest a Python Thrift server can answer get_table on this machine.

A thriftpy2 threaded server (one thread per connection) with the cython binary protocol over a
buffered socket, whose handler returns one prebuilt Table object (the very table the get_table
case reads, fetched from this service when the benchmark has one, else built the same way) and
a prebuilt database list for get_all_databases. It does nothing else, so it bounds from below
what any Python metastore, cached or not, can reach for these calls.

Run as ``python -m hms_cache_proxy.bench.floor --port PORT [--table FILE]``, where FILE holds
the table in the binary protocol.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from thriftpy2.protocol.cybin import TCyBinaryProtocolFactory
from thriftpy2.rpc import make_server
from thriftpy2.transport.buffered import TCyBufferedTransportFactory
from thriftpy2.utils import deserialize, serialize

from hms_cache_proxy.idl import hms, service


def table_bytes(tbl: Any) -> bytes:
    return serialize(tbl, TCyBinaryProtocolFactory())


class FloorHandler:
    def __init__(self, tbl: Any, databases: list[str]) -> None:
        self._table = tbl
        self._databases = databases

    def get_table(self, dbname: str, tbl_name: str) -> Any:
        return self._table

    def get_all_databases(self) -> list[str]:
        return self._databases


def main(argv: list[str] | None = None) -> int:
    from hms_cache_proxy.bench.cases import BENCH_DB, GET_TABLE, table

    p = argparse.ArgumentParser(prog="hms-cache-proxy-bench-floor")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--table", help="file with the Table in the binary protocol")
    args = p.parse_args(argv)
    if args.table:
        tbl = deserialize(hms.Table(), Path(args.table).read_bytes(), TCyBinaryProtocolFactory())
    else:
        tbl = table(GET_TABLE, partitioned=False)
    handler = FloorHandler(tbl, ["default", BENCH_DB])
    server = make_server(
        service,
        handler,
        "127.0.0.1",
        args.port,
        proto_factory=TCyBinaryProtocolFactory(),
        trans_factory=TCyBufferedTransportFactory(),
        client_timeout=None,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"floor serving thrift://127.0.0.1:{args.port}", flush=True)
    server.serve()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
