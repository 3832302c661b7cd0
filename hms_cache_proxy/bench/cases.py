"""Benchmark cases: the data each needs (fixtures), and the one call (or call sequence) it times.

Cases talk to any HMS through Thrift only, so the same case measures this service, the stock
Java metastore and the floor alike. A case is run in one or more *modes*:

- ``decoded``: a thriftpy2 client (cython binary protocol, buffered socket) that builds the
  reply's objects, as a real Python client does;
- ``bytes``: :mod:`hms_cache_proxy.bench.rawclient`, which sends a pre-encoded request and reads
  the reply's bytes off the socket without building objects. For large replies a Python client
  spends longer decoding than a fast server spends answering (about 300 ms for 10,000
  partitions even from canned bytes), so only this figure shows the server.

with 1 client or with 8 concurrent client processes (``Case.runs``).

An op's call is timed whole by the runner, unless the op returns :class:`Timed`: the seconds
it measured itself, when it has untimed preparation around the timed call (drop_partitions adds
the partitions it then drops).
"""

from __future__ import annotations

import getpass
import itertools
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thriftpy2.protocol.cybin import TCyBinaryProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.transport.buffered import TCyBufferedTransportFactory

from hms_cache_proxy.idl import hms, service

BENCH_DB = "hms_bench"
USER = getpass.getuser()
HOST = socket.gethostname()
PARQUET = {
    "input": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "output": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    "serde": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
}

DECODED = "decoded"
BYTES = "bytes"


class Timed(float):
    """Seconds an op measured itself (its preparation left out)."""


Op = Callable[[], Any]


def connect(host: str, port: int, timeout_s: float = 600.0) -> Any:
    return make_client(
        service,
        host,
        port,
        proto_factory=TCyBinaryProtocolFactory(),
        trans_factory=TCyBufferedTransportFactory(),
        timeout=int(timeout_s * 1000),
    )


# -- objects -------------------------------------------------------------------------------------


def storage(columns: int = 10, location: str | None = None) -> hms.StorageDescriptor:
    return hms.StorageDescriptor(
        cols=[
            hms.FieldSchema(name=f"col_{i}", type="string", comment=f"c{i}") for i in range(columns)
        ],
        location=location,
        inputFormat=PARQUET["input"],
        outputFormat=PARQUET["output"],
        compressed=False,
        numBuckets=-1,
        serdeInfo=hms.SerDeInfo(
            serializationLib=PARQUET["serde"], parameters={"serialization.format": "1"}
        ),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )


def table(name: str, partitioned: bool = True) -> hms.Table:
    """A 10-column Parquet table (partitioned by ``dt`` unless told otherwise)."""
    return hms.Table(
        tableName=name,
        dbName=BENCH_DB,
        owner="bench",
        createTime=0,
        lastAccessTime=0,
        retention=0,
        sd=storage(),
        partitionKeys=[hms.FieldSchema(name="dt", type="string")] if partitioned else [],
        parameters={"EXTERNAL": "TRUE"},
        tableType="EXTERNAL_TABLE",
    )


def part_value(i: int) -> str:
    return f"p{i:07d}"


def partitions(tbl: str, start: int, count: int) -> list[hms.Partition]:
    return [
        hms.Partition(
            values=[part_value(start + i)],
            dbName=BENCH_DB,
            tableName=tbl,
            sd=storage(),
            parameters={"numRows": "100", "totalSize": "1024"},
        )
        for i in range(count)
    ]


def part_names(start: int, count: int) -> list[str]:
    return [f"dt={part_value(start + i)}" for i in range(count)]


# -- fixtures: data a case needs, made once per target (untimed) --------------------------------


def ensure_database(client: Any) -> None:
    try:
        client.get_database(BENCH_DB)
    except hms.NoSuchObjectException:
        client.create_database(
            hms.Database(name=BENCH_DB, description="hms-cache-proxy bench", parameters={})
        )


def drop_table_if_exists(client: Any, name: str) -> None:
    try:
        client.drop_table(BENCH_DB, name, False)
    except hms.NoSuchObjectException:
        pass


def recreate_table(client: Any, name: str, partitioned: bool = True) -> None:
    drop_table_if_exists(client, name)
    client.create_table(table(name, partitioned))


def add_partitions_in_batches(client: Any, tbl: str, count: int, batch: int = 1000) -> None:
    for start in range(0, count, batch):
        client.add_partitions(partitions(tbl, start, min(batch, count - start)))


def _partitioned_fixture(name: str, count: int) -> Callable[[Any], None]:
    def make(client: Any) -> None:
        ensure_database(client)
        try:
            client.get_table(BENCH_DB, name)
        except hms.NoSuchObjectException:
            pass  # (Hive 2.3 answers get_partition_names of a missing table with an internal error)
        else:
            if len(client.get_partition_names(BENCH_DB, name, -1)) == count:
                return  # already there (a rerun against --uri)
        recreate_table(client, name)
        add_partitions_in_batches(client, name, count)

    return make


def _table_fixture(client: Any) -> None:
    ensure_database(client)
    try:
        client.get_table(BENCH_DB, GET_TABLE)
    except hms.NoSuchObjectException:
        client.create_table(table(GET_TABLE, partitioned=False))


GET_TABLE = "get_table_10c"
PARTS = {100: "parts_100", 1000: "parts_1000", 10_000: "parts_10000"}

FIXTURES: dict[str, Callable[[Any], None]] = {
    "database": ensure_database,
    GET_TABLE: _table_fixture,
    **{name: _partitioned_fixture(name, n) for n, name in PARTS.items()},
    "alter_parts_100": _partitioned_fixture("alter_parts_100", 100),
}
"""Fixture name -> idempotent maker. Each is made once per target, before the cases using it."""


def partitions_in_fixtures(names: list[str]) -> int:
    sizes = {name: n for n, name in PARTS.items()} | {"alter_parts_100": 100}
    return sum(sizes.get(n, 0) for n in names)


# -- cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ctx:
    """Where an op runs: worker ``index`` of ``clients`` against target ``target``."""

    target: str
    index: int = 0
    clients: int = 1
    run_id: str = "0"

    def unique(self, prefix: str) -> str:
        """A table name no other worker, server sharing the database, or earlier run uses
        (lower case, as Hive stores it)."""
        return f"{prefix}_{self.target}_{self.run_id}_{self.index}".lower().replace("-", "_")


@dataclass(frozen=True)
class Case:
    """A named measurement.

    ``make_op(client, ctx)`` returns the op (called once per timed call) for the decoded mode;
    ``raw(ctx)`` returns ``(method, args)`` for the bytes mode. ``runs`` lists the
    (clients, mode) pairs measured. ``fixtures`` (names in FIXTURES) and ``setup(client, ctx)``
    run once per server, untimed, before the case; state of a worker's own (a table it writes)
    is made in ``make_op``, which also runs before timing. ``stock`` says why the stock 2.3
    server cannot run the case (None: it can). ``floor``: the floor server answers it.
    ``quick``: part of the --quick set. ``warmup``: False for cases whose calls take seconds
    (making the data has exercised the same call on the server already).
    """

    name: str
    group: str
    note: str
    make_op: Callable[[Any, Ctx], Op] | None = None
    raw: Callable[[Ctx], tuple[str, dict[str, Any]]] | None = None
    runs: tuple[tuple[int, str], ...] = ((1, DECODED),)
    fixtures: tuple[str, ...] = ()
    setup: Callable[[Any, Ctx], None] | None = None
    max_calls: int = 200_000
    min_calls: int = 3
    floor: bool = False
    stock: str | None = None
    quick: bool = True
    warmup: bool = True
    teardown: Callable[[Any, Ctx], None] | None = None
    """Runs once per server after the case's runs (e.g. ends what its workers left open)."""
    history: bool = False
    """Measured with txn_history's finished transactions in the database (the command adds
    them before the first such case and removes them after the last)."""


def _get(name: str, *args: Any) -> Callable[[Any, Ctx], Op]:
    def make(client: Any, ctx: Ctx) -> Op:
        method = getattr(client, name)
        return lambda: method(*args)

    return make


def _raw(name: str, **kwargs: Any) -> Callable[[Ctx], tuple[str, dict[str, Any]]]:
    return lambda ctx: (name, kwargs)


def _add_partitions(count: int) -> Callable[[Any, Ctx], Op]:
    """add_partitions of ``count`` new partitions per call into a table of the worker's own
    (made before timing; it grows by ``count`` per call, which the case's max_calls bounds)."""

    def make(client: Any, ctx: Ctx) -> Op:
        tbl = ctx.unique(f"add_parts_{count}")
        ensure_database(client)
        recreate_table(client, tbl)
        counter = itertools.count()

        def op() -> None:
            client.add_partitions(partitions(tbl, next(counter) * count, count))

        return op

    return make


def _drop_partitions(count: int) -> Callable[[Any, Ctx], Op]:
    """drop_partitions_req of ``count`` partitions by name; each call first adds them (untimed)."""

    def make(client: Any, ctx: Ctx) -> Op:
        tbl = ctx.unique(f"drop_parts_{count}")
        ensure_database(client)
        recreate_table(client, tbl)
        counter = itertools.count()

        def op() -> Timed:
            start = next(counter) * count
            client.add_partitions(partitions(tbl, start, count))
            req = hms.DropPartitionsRequest(
                dbName=BENCH_DB,
                tblName=tbl,
                parts=hms.RequestPartsSpec(names=part_names(start, count)),
                deleteData=False,
                ifExists=False,
                needResult=False,
            )
            t0 = time.perf_counter()
            client.drop_partitions_req(req)
            return Timed(time.perf_counter() - t0)

        return op

    return make


def _alter_partitions_op(client: Any, ctx: Ctx) -> Op:
    parts = client.get_partitions(BENCH_DB, "alter_parts_100", -1)
    counter = itertools.count()

    def op() -> None:
        n = str(next(counter))
        for p in parts:
            p.parameters["bench.seq"] = n
        client.alter_partitions(BENCH_DB, "alter_parts_100", parts)

    return op


def _create_table_op(client: Any, ctx: Ctx) -> Op:
    counter = itertools.count()
    prefix = ctx.unique("ct")

    def op() -> None:
        client.create_table(table(f"{prefix}_{next(counter)}"))

    return op


def _drop_table_op(client: Any, ctx: Ctx) -> Op:
    counter = itertools.count()
    prefix = ctx.unique("dt")

    def op() -> Timed:
        name = f"{prefix}_{next(counter)}"
        client.create_table(table(name))
        t0 = time.perf_counter()
        client.drop_table(BENCH_DB, name, False)
        return time.perf_counter() - t0

    return op


FILTER_VALUE = part_value(4321)
BY_NAMES = part_names(5000, 100)


def read_cases() -> list[Case]:
    both = ((1, DECODED), (1, BYTES))
    cases = [
        Case(
            "get_table",
            "read",
            "table with 10 columns",
            make_op=_get("get_table", BENCH_DB, GET_TABLE),
            raw=_raw("get_table", dbname=BENCH_DB, tbl_name=GET_TABLE),
            runs=((1, DECODED), (8, DECODED)),
            fixtures=(GET_TABLE,),
            floor=True,
        ),
        Case(
            "get_all_databases",
            "read",
            "two databases",
            make_op=_get("get_all_databases"),
            runs=((1, DECODED), (8, DECODED)),
            fixtures=("database",),
            floor=True,
        ),
    ]
    for n, name in PARTS.items():
        runs = both + (((8, BYTES),) if n == 1000 else ())
        cases.append(
            Case(
                f"get_partitions_{n}",
                "read",
                f"all {n:,} partitions of a 10-column table",
                make_op=_get("get_partitions", BENCH_DB, name, -1),
                raw=_raw("get_partitions", db_name=BENCH_DB, tbl_name=name, max_parts=-1),
                runs=runs,
                fixtures=(name,),
                max_calls=5_000,
                quick=n <= 1000,
            )
        )
    for n, name in PARTS.items():
        cases.append(
            Case(
                f"get_partition_names_{n}",
                "read",
                f"all {n:,} partition names",
                make_op=_get("get_partition_names", BENCH_DB, name, -1),
                raw=_raw("get_partition_names", db_name=BENCH_DB, tbl_name=name, max_parts=-1),
                runs=both if n == 10_000 else ((1, DECODED),),
                fixtures=(name,),
                quick=n <= 1000,
            )
        )
    cases += [
        Case(
            "get_partitions_by_filter_1_of_10000",
            "read",
            f'filter dt = "{FILTER_VALUE}" selects 1 of 10,000 partitions',
            make_op=_get(
                "get_partitions_by_filter", BENCH_DB, PARTS[10_000], f'dt = "{FILTER_VALUE}"', -1
            ),
            runs=((1, DECODED), (8, DECODED)),
            fixtures=(PARTS[10_000],),
            quick=False,
        ),
        Case(
            "get_partitions_by_names_100_of_10000",
            "read",
            "100 partitions by name out of 10,000",
            make_op=_get("get_partitions_by_names", BENCH_DB, PARTS[10_000], BY_NAMES),
            raw=_raw(
                "get_partitions_by_names",
                db_name=BENCH_DB,
                tbl_name=PARTS[10_000],
                names=BY_NAMES,
            ),
            runs=both,
            fixtures=(PARTS[10_000],),
            quick=False,
        ),
    ]
    return cases


def write_cases() -> list[Case]:
    cases = []
    for n in (100, 1000):
        cases.append(
            Case(
                f"add_partitions_{n}",
                "write",
                f"{n:,} new partitions in one add_partitions call",
                make_op=_add_partitions(n),
                max_calls=200 if n == 100 else 20,
                min_calls=3 if n == 100 else 2,
                quick=n == 100,
                warmup=n == 100,
            )
        )
    for n in (100, 1000):
        cases.append(
            Case(
                f"drop_partitions_{n}",
                "write",
                f"drop_partitions_req of {n:,} partitions by name (each call first adds them, "
                "untimed)",
                make_op=_drop_partitions(n),
                max_calls=200 if n == 100 else 20,
                min_calls=3 if n == 100 else 2,
                quick=n == 100,
                warmup=n == 100,
            )
        )
    cases += [
        Case(
            "alter_partitions_100",
            "write",
            "alter_partitions changing a parameter of 100 partitions",
            make_op=_alter_partitions_op,
            fixtures=("alter_parts_100",),
            max_calls=2_000,
        ),
        Case(
            "create_table",
            "write",
            "create_table of a partitioned 10-column table",
            make_op=_create_table_op,
            fixtures=("database",),
            max_calls=5_000,
        ),
        Case(
            "drop_table",
            "write",
            "drop_table of an empty table (each call first creates it, untimed)",
            make_op=_drop_table_op,
            fixtures=("database",),
            max_calls=5_000,
        ),
    ]
    return cases
