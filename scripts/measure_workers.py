"""Measures what `serve --workers N` costs in memory, with a prewarmed cache.

    .venv/bin/python scripts/measure_workers.py [--tables 5] [--partitions 1000]

Starts PostgreSQL (tests/support/postgres.py), fills it through the SQL store (TABLES tables of
PARTITIONS partitions each), then runs `hms-cache-proxy serve` with 1 worker (no supervisor)
and with `--workers 2`; once every worker has prewarmed every table and answered a
get_partitions of each, reads /proc/PID/smaps_rollup of each process (the supervisor too) and
prints RSS, PSS and the shared part per process and in all; first, whether forking after
prewarm would share the cache (copy_on_write). PSS counts a page shared by k
processes as 1/k in each, so the PSS total is what the processes cost together.
No assertions: a measurement.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hms_cache_proxy.bench.cases import BENCH_DB, partitions, table  # noqa: E402
from hms_cache_proxy.bench.rawclient import RawClient, encode_call  # noqa: E402
from hms_cache_proxy.idl import hms  # noqa: E402
from hms_cache_proxy.store.db.engine import Database  # noqa: E402
from hms_cache_proxy.store.sql.bootstrap import init_db  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402
from tests.support.server import ServerProcess  # noqa: E402
from tests.support.stores import sql_store  # noqa: E402

_BANNER = re.compile(r"metrics on (http://\S+)/metrics")


def fill(url: str, warehouse: str, tables: int, per_table: int) -> list[str]:
    db = Database(url)
    init_db(db, warehouse)
    store = sql_store(db, warehouse)
    store.create_database(
        hms.Database(
            name=BENCH_DB, locationUri=f"{warehouse}/b.db", parameters={}, catalogName="hive"
        )
    )
    names = [f"m{i}" for i in range(tables)]
    for name in names:
        t = table(name)
        t.catName = "hive"
        store.create_table(t)
        for start in range(0, per_table, 2000):
            parts = partitions(name, start, min(2000, per_table - start))
            for p in parts:
                p.catName = "hive"
            store.add_partitions("hive", BENCH_DB, name, parts)
    db.dispose()
    return names


def metric(url: str, name: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    m = re.search(rf"^{name} ([-+0-9.eE]+)$", text, re.M)
    return float(m.group(1)) if m else -1.0


def rollup(pid: int) -> dict[str, int]:
    """smaps_rollup's fields in KiB."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split(":", 1)
        fields[key] = int(value.split()[0])
    return fields


def measure(url: str, wh: Path, log: Path, workers: int, names: list[str], total: int) -> None:
    extra = ["--metrics-port", "0"] + (["--workers", str(workers)] if workers > 1 else [])
    server = ServerProcess(url, wh, log, *extra)
    try:
        deadline = time.monotonic() + 600
        while True:
            urls = _BANNER.findall(log.read_text())
            if len(urls) == workers and all(
                metric(u, "hms_cache_partitions") >= total for u in urls
            ):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"prewarm did not finish:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        for _ in range(4 * workers):  # reads from the cache on (very likely) every worker
            client = RawClient("127.0.0.1", server.port)
            for name in names:
                client.call(
                    encode_call(
                        "get_partitions", {"db_name": BENCH_DB, "tbl_name": name, "max_parts": -1}
                    )
                )
            client.close()
        time.sleep(2)
        children = Path(f"/proc/{server.proc.pid}/task/{server.proc.pid}/children").read_text()
        pids = [server.proc.pid] + [int(p) for p in children.split()]
        rows = [(pid, rollup(pid)) for pid in pids]
        cached = [metric(u, "hms_cache_bytes") / 2**20 for u in urls]
        print(
            f"--- workers={workers}: {total} partitions cached in each worker "
            f"(hms_cache_bytes {', '.join(f'{c:.1f}' for c in cached)} MiB)"
        )
        for pid, r in rows:
            role = "supervisor" if workers > 1 and pid == server.proc.pid else "worker"
            shared = r["Shared_Clean"] + r["Shared_Dirty"]
            print(
                f"  pid {pid} {role:10s} RSS {r['Rss'] / 1024:7.1f} MiB  PSS "
                f"{r['Pss'] / 1024:7.1f} MiB  shared {shared / 1024:6.1f} MiB"
            )
        rss = sum(r["Rss"] for _, r in rows) / 1024
        pss = sum(r["Pss"] for _, r in rows) / 1024
        print(f"  total      RSS {rss:7.1f} MiB  PSS {pss:7.1f} MiB")
    finally:
        server.stop()


def copy_on_write(count: int) -> None:
    """Would forking after prewarm share the cache? ``count`` cache Parts (the cache's
    partition objects) made, gc.freeze(), fork; the child reads every partition once, as a
    reply does, and reports how much of the parent's memory it had to copy."""
    import gc

    from hms_cache_proxy.store.cache.entries import Part

    cols = os.urandom(400)  # one column list shared by every partition, as in the cache
    parts = [Part((str(i),), os.urandom(300), cols, os.urandom(300)) for i in range(count)]
    gc.collect()
    gc.freeze()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        before = rollup(os.getpid())["Private_Dirty"]
        read = sum(len(p.head) + len(p.cols) + len(p.tail) for p in parts)
        after = rollup(os.getpid())["Private_Dirty"]
        os.write(write_end, f"{before} {after} {read}".encode())
        os._exit(0)
    os.close(write_end)
    before, after, read = (int(x) for x in os.read(read_end, 100).split())
    os.waitpid(pid, 0)
    print(
        f"--- fork after {count} partitions were cached, gc.freeze(): the child's private "
        f"memory {before / 1024:.1f} MiB, after reading each partition once "
        f"{after / 1024:.1f} MiB (parent RSS {rollup(os.getpid())['Rss'] / 1024:.1f} MiB)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=1000)
    args = parser.parse_args()
    copy_on_write(args.tables * args.partitions)
    pg = PostgresServer.start()
    try:
        url = pg.new_database()
        with tempfile.TemporaryDirectory() as tmp:
            wh = Path(tmp) / "wh"
            names = fill(url, f"file:{wh}", args.tables, args.partitions)
            total = args.tables * args.partitions
            for workers in (1, 2):
                measure(url, wh, Path(tmp) / f"w{workers}.log", workers, names, total)
    finally:
        pg.stop()


if __name__ == "__main__":
    os.environ.setdefault("HMS_CACHE_PROXY_LOG_LEVEL", "WARNING")
    main()
