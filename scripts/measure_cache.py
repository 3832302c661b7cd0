"""Measures the cache's figures on this machine against a private PostgreSQL.

    .venv/bin/python scripts/measure_cache.py [--quick]

Starts PostgreSQL (tests/support/postgres.py), fills it through the SQL store (a 10-column
Parquet-like table, tables of 1,000 and 10,000 partitions, and four more of 10,000 for
prewarm), then runs ``hms-cache-proxy serve`` processes: with the cache (eventual), a second
one (for the propagation lag), one in strong mode, one with the cache off (database path), and
the floor (hms_cache_proxy/bench/floor.py: a thriftpy2 server answering get_table from one
prebuilt object). Clients run in this process: thriftpy2's cython client for get_table (it
decodes the reply), and hms_cache_proxy/bench/rawclient.py for large replies (it times the
server, not a Python decoder). Prints one line per figure. No assertions: a measurement.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hms_cache_proxy.bench.cases import BENCH_DB, connect, partitions, table  # noqa: E402
from hms_cache_proxy.bench.floor import table_bytes  # noqa: E402
from hms_cache_proxy.bench.rawclient import RawClient, encode_call  # noqa: E402
from hms_cache_proxy.idl import hms  # noqa: E402
from hms_cache_proxy.store.db.engine import Database  # noqa: E402
from hms_cache_proxy.store.sql.bootstrap import init_db  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402
from tests.support.server import ServerProcess, free_port  # noqa: E402
from tests.support.stores import sql_store  # noqa: E402


def fill(url: str, warehouse: str, big_tables: int) -> int:
    db = Database(url)
    init_db(db, warehouse)
    store = sql_store(db, warehouse)
    store.create_database(
        hms.Database(
            name=BENCH_DB, locationUri=f"{warehouse}/b.db", parameters={}, catalogName="hive"
        )
    )
    plain = table("get_table", partitioned=False)
    plain.catName = "hive"
    store.create_table(plain)
    total = 0
    specs = [("p1k", 1000), ("p10k", 10_000)] + [(f"w{i}", 10_000) for i in range(big_tables)]
    for name, n in specs:
        t = table(name)
        t.catName = "hive"
        store.create_table(t)
        for start in range(0, n, 2000):
            parts = partitions(name, start, min(2000, n - start))
            for p in parts:
                p.catName = "hive"
            store.add_partitions("hive", BENCH_DB, name, parts)
        total += n
    db.dispose()
    return total


def serve(url: str, warehouse: Path, log: Path, **settings: Any) -> ServerProcess:
    env = {f"HMS_CACHE_PROXY_{k.upper()}": str(v) for k, v in settings.items()}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return ServerProcess(url, warehouse, log)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*) ([-+0-9.eEinfNa]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def timed(fn: Any, seconds: float) -> tuple[float, float, float]:
    """(calls/s, p50 ms, p99 ms) of ``fn`` called in a loop for ``seconds``."""
    for _ in range(50):
        fn()
    lat = []
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        fn()
        t1 = time.perf_counter()
        lat.append(t1 - t0)
        if t1 > end:
            break
    lat.sort()
    return len(lat) / (t1 - start), lat[len(lat) // 2] * 1e3, lat[int(len(lat) * 0.99)] * 1e3


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="shorter runs, one big table")
    args = p.parse_args()
    seconds = 2.0 if args.quick else 5.0
    pg = PostgresServer.start()
    procs: list[Any] = []
    try:
        url = pg.new_database()
        work = Path(tempfile.mkdtemp(prefix="hms-measure-"))
        warehouse = work / "warehouse"
        t0 = time.perf_counter()
        total = fill(url, f"file:{warehouse}", 1 if args.quick else 4)
        print(f"filled: {total} partitions in {time.perf_counter() - t0:.0f}s", flush=True)

        # Prewarm rate: a fresh server over everything, reading its own log line.
        cache = serve(
            url, warehouse, work / "cache.log", metrics_port=free_port(), prewarm_threads=2
        )
        procs.append(cache)
        log_text = ""
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and "prewarm finished" not in log_text:
            time.sleep(0.2)
            log_text = (work / "cache.log").read_text()
        m = re.search(
            r"prewarm finished: (\d+) partitions in ([\d.]+)s \((\d+) partitions/s\)", log_text
        )
        print(f"prewarm: {m.group(0) if m else 'not finished'}", flush=True)

        db_path = serve(url, warehouse, work / "db.log", cache_enabled="false")
        strong = serve(url, warehouse, work / "strong.log", consistency="strong")
        other = serve(url, warehouse, work / "other.log")
        # The floor answers with the very table the service returns (same reply bytes).
        c = connect("127.0.0.1", cache.port)
        table_file = work / "table.bin"
        table_file.write_bytes(table_bytes(c.get_table(BENCH_DB, "get_table")))
        c.close()
        floor_port = free_port()
        floor = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hms_cache_proxy.bench.floor",
                "--port",
                str(floor_port),
                "--table",
                str(table_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        procs += [db_path, strong, other]
        time.sleep(2)
        for srv in (strong, other):  # wait for their prewarm (they read everything once)
            c = connect("127.0.0.1", srv.port)
            c.get_partitions(BENCH_DB, "p10k", 1)
            c.close()
        time.sleep(15 if not args.quick else 8)

        # Memory: bytes the cache accounts per partition, and resident memory.
        metrics_port = None
        for line in log_text.splitlines():
            mm = re.search(r"metrics on http://[^:]+:(\d+)/metrics", line)
            if mm:
                metrics_port = int(mm.group(1))
        found = scrape(metrics_port) if metrics_port else {}
        if found.get("hms_cache_partitions"):
            print(
                f"memory: {found['hms_cache_bytes'] / found['hms_cache_partitions']:.0f} "
                f"bytes accounted per cached partition ({found['hms_cache_partitions']:.0f} "
                f"partitions, {found['hms_cache_bytes'] / 2**20:.1f} MiB)",
                flush=True,
            )
        cached_rss, db_rss = rss(cache.proc.pid), rss(db_path.proc.pid)
        print(
            f"rss: cache server {cached_rss / 2**20:.0f} MiB, db-path server "
            f"{db_rss / 2**20:.0f} MiB; difference per partition "
            f"{(cached_rss - db_rss) / total:.0f} bytes",
            flush=True,
        )

        # get_table, one client (thriftpy2 client, decodes the reply).
        for name, srv_port in (
            ("floor", floor_port),
            ("cache", cache.port),
            ("strong", strong.port),
            ("db path", db_path.port),
        ):
            c = connect("127.0.0.1", srv_port)
            rate, p50, p99 = timed(lambda c=c: c.get_table(BENCH_DB, "get_table"), seconds)
            c.close()
            print(
                f"get_table 1 client, {name}: {rate:.0f} calls/s, p50 {p50:.3f} ms, "
                f"p99 {p99:.3f} ms",
                flush=True,
            )

        # get_table again, timed with the raw client (the server only, no client decoding).
        request = encode_call("get_table", {"dbname": BENCH_DB, "tbl_name": "get_table"})
        for name, srv_port in (
            ("floor", floor_port),
            ("cache", cache.port),
            ("strong", strong.port),
        ):
            rc = RawClient("127.0.0.1", srv_port)
            rate, p50, p99 = timed(lambda rc=rc: rc.call(request), seconds)
            rc.close()
            print(
                f"get_table 1 raw client, {name}: {rate:.0f} calls/s, p50 {p50:.3f} ms, "
                f"p99 {p99:.3f} ms",
                flush=True,
            )

        # Large replies, timed with the raw client (no decoding on the client).
        cases = {
            "get_partitions 1,000": encode_call(
                "get_partitions", {"db_name": BENCH_DB, "tbl_name": "p1k", "max_parts": -1}
            ),
            "get_partitions_by_filter 1 of 10,000": encode_call(
                "get_partitions_by_filter",
                {
                    "db_name": BENCH_DB,
                    "tbl_name": "p10k",
                    "filter": 'dt = "p0004321"',
                    "max_parts": -1,
                },
            ),
            "get_partitions_by_filter 1 of 10,000, a range": encode_call(
                "get_partitions_by_filter",
                {
                    "db_name": BENCH_DB,
                    "tbl_name": "p10k",
                    "filter": 'dt >= "p0004321" and dt <= "p0004321"',
                    "max_parts": -1,
                },
            ),
        }
        for case, request in cases.items():
            for name, srv_port in (("cache", cache.port), ("db path", db_path.port)):
                rc = RawClient("127.0.0.1", srv_port)
                rate, p50, p99 = timed(lambda rc=rc, r=request: rc.call(r), seconds)
                rc.close()
                print(
                    f"{case}, {name}: p50 {p50:.3f} ms, p99 {p99:.3f} ms, {rate:.0f} calls/s",
                    flush=True,
                )

        # Propagation A -> B: alter through `cache`, poll `other` until it shows the change.
        ca = connect("127.0.0.1", cache.port)
        cb = connect("127.0.0.1", other.port)
        lags, writes = [], []
        for i in range(100 if args.quick else 300):
            t = ca.get_table(BENCH_DB, "get_table")
            t.parameters["probe"] = str(i)
            start = time.perf_counter()
            ca.alter_table(BENCH_DB, "get_table", t)
            acked = time.perf_counter()
            while cb.get_table(BENCH_DB, "get_table").parameters.get("probe") != str(i):
                pass
            seen = time.perf_counter()
            writes.append(acked - start)
            lags.append(seen - acked)
        lags.sort()
        writes.sort()
        print(
            f"lag A->B (from alter_table acknowledged by A until B's cache answers with it): "
            f"p50 {statistics.median(lags) * 1e3:.2f} ms, p99 "
            f"{lags[int(len(lags) * 0.99)] * 1e3:.2f} ms, max {lags[-1] * 1e3:.2f} ms "
            f"(the alter_table itself: p50 {statistics.median(writes) * 1e3:.2f} ms)",
            flush=True,
        )
        ca.close()
        cb.close()
        floor.terminate()
    finally:
        for proc in procs:
            proc.stop()
        pg.stop()


if __name__ == "__main__":
    main()
