"""``hms-cache-proxy fanout``: N instances on one throwaway PostgreSQL, measured from the
database's side. It starts them, lets them go idle, and reports the PostgreSQL connections they
hold (idle, and after reads and writes), the transactions they run per second while idle
(pg_stat_database's commit and rollback counts, less the command's own), the transactions one
write costs in all instances together, and how long a write through the first instance takes
to be seen by all the others (each polled until it answers the new table). The figures go to
stdout and, as JSON, to ``--output``."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from hms_cache_proxy.argtypes import (
    non_negative_float,
    output_file,
    positive_float,
    positive_int,
)
from hms_cache_proxy.bench.cases import BENCH_DB, connect, table
from hms_cache_proxy.check.instances import Instance
from hms_cache_proxy.idl import hms

PROBE = "hms-cache-proxy-fanout"
"""application_name of the command's own session (left out of the counts)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instances", type=positive_int, default=4, help="instances (4)")
    parser.add_argument("--pool-size", type=positive_int, default=2, help="database_pool_size")
    parser.add_argument(
        "--pool-idle-seconds",
        type=non_negative_float,
        default=5.0,
        help="database_pool_idle_seconds of the instances (5; the service's default is 60)",
    )
    parser.add_argument(
        "--idle-seconds", type=positive_float, default=30.0, help="the idle measuring window (30)"
    )
    parser.add_argument(
        "--writes", type=positive_int, default=5, help="writes whose lag is measured (5)"
    )
    parser.add_argument(
        "--output",
        type=output_file,
        default="fanout.json",
        help="where the JSON figures go (fanout.json)",
    )


def run(args: argparse.Namespace) -> int:
    from hms_cache_proxy.bench.postgres import PostgresServer

    pg = PostgresServer.start()
    workdir = Path(tempfile.mkdtemp(prefix="hms-fanout-"))
    instances: list[Any] = []
    try:
        url = pg.new_database("hms_fanout")
        probe = pg.connect("hms_fanout")
        probe.autocommit = True
        with probe.cursor() as cur:
            cur.execute(f"SET application_name = '{PROBE}'")
        settings = {
            "database_pool_size": args.pool_size,
            "database_pool_idle_seconds": args.pool_idle_seconds,
            "prewarm": False,
        }
        for i in range(args.instances):
            settings_i = {**settings, "instance_name": f"fanout-{i}"}
            instances.append(Instance(f"fanout-{i}", url, workdir, settings_i))
        for inst in instances:
            inst.start()
        figures = _measure(args, probe, instances)
    finally:
        for inst in instances:
            inst.stop()
        pg.stop()
    Path(args.output).write_text(json.dumps(figures, indent=2) + "\n")
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(f"written to {args.output}")
    return 0


def _measure(args: argparse.Namespace, probe: Any, instances: list[Any]) -> dict[str, Any]:
    n = len(instances)
    settle = args.pool_idle_seconds + min(15.0, max(0.2, args.pool_idle_seconds / 4)) + 2
    time.sleep(settle)
    idle_conns = _connections(probe)
    before, t0 = _xacts(probe), time.monotonic()
    time.sleep(args.idle_seconds)
    after, t1 = _xacts(probe), time.monotonic()
    idle_rate = (after - before - 2) / (t1 - t0)  # less the probe's own two statements

    clients = [connect("127.0.0.1", inst.port, timeout_s=60) for inst in instances]
    try:
        clients[0].create_database(hms.Database(name=BENCH_DB, parameters={}))
        for c in clients:
            c.get_all_databases()
            c.get_database(BENCH_DB)
        after_reads = _connections(probe)
        lags = []
        for w in range(args.writes):
            name = f"fanout_{w}"
            started = time.monotonic()
            clients[0].create_table(table(name, partitioned=False))
            for c in clients[1:]:
                _until_seen(c, name)
            lags.append(time.monotonic() - started)
        after_writes = _connections(probe)
        # One write alone: its transaction and what every other instance runs to follow it.
        start_x = _xacts(probe)
        clients[0].create_table(table("fanout_alone", partitioned=False))
        per_write = _xacts(probe) - start_x - 2
    finally:
        for c in clients:
            c.close()
    return {
        "instances": n,
        "database_pool_size": args.pool_size,
        "database_pool_idle_seconds": args.pool_idle_seconds,
        "connections_idle": idle_conns,
        "connections_idle_per_instance": round(idle_conns / n, 2),
        "idle_transactions_per_second": round(max(0.0, idle_rate), 3),
        "idle_transactions_per_second_per_instance": round(max(0.0, idle_rate) / n, 3),
        "connections_after_reads": after_reads,
        "connections_after_writes": after_writes,
        "transactions_per_write_all_instances": per_write,
        "write_to_all_lag_ms_median": round(sorted(lags)[len(lags) // 2] * 1000, 1),
        "write_to_all_lag_ms_max": round(max(lags) * 1000, 1),
    }


def _connections(probe: Any) -> int:
    with probe.cursor() as cur:
        cur.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name LIKE 'hms-cache-proxy/%'"
        )
        return int(cur.fetchone()[0])


def _xacts(probe: Any) -> int:
    """Committed and rolled-back transactions of the database so far. An idle backend
    flushes its counters within 10 s (PostgreSQL's PGSTAT_IDLE_INTERVAL): wait that long."""
    time.sleep(11)
    with probe.cursor() as cur:
        cur.execute("SELECT pg_stat_clear_snapshot()")
        cur.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        )
        return int(cur.fetchone()[0])


def _until_seen(client: Any, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.get_table(BENCH_DB, name)
            return
        except hms.NoSuchObjectException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.002)
