"""CPU time per operation of one of our servers and of its PostgreSQL, for a benchmark case.

    .venv/bin/python scripts/measure_cpu_per_call.py --target db --cases txn_open_commit \
        acid_insert [--clients 8] [--duration 5] [--setting KEY=VALUE ...] [--waits] [--stats]

On a machine others load, calls/s and latencies move with their work; the CPU an operation
costs moves much less. This starts a throwaway PostgreSQL (bench/postgres.py; with --stats
with pg_stat_statements, track = all, so a PL/pgSQL function's own statements show), one
`serve` (target db: cache off, cache: cache on; --setting as `bench --setting`) or the stock
Hive metastore (target stock: bench/stock_hms.py's JVM, settings not passed), runs each case
with bench.runner at N client processes and reads /proc/PID/stat of the server's process tree
(its workers too) and of the postmaster's (every backend) before and after: the CPU seconds
over the run divided by the operations done (warm-up included on both sides). The client
processes' CPU per operation (getrusage of the reaped children) is printed too: a server
whose replies made the clients work more would cost that as well. --waits samples
pg_stat_activity's wait events of active backends every 10 ms (a backend in a row-lock
queue is shown with the relation of the row: the tuple lock it holds or waits for; statements
are grouped by their text up to the first parenthesis, so an EXECUTE's values do not split them);
--stats prints the shared buffers per operation of all top-level statements (a function's own
statements not counted twice: the figure a load does not move) and pg_stat_statements' top
statements per operation (calls, execution + planning ms, planning ms, buffers per call;
track_planning is on; the first line gives plans and planning ms per operation). Before the
first ``*_history`` case txn_history's finished txns are added and settled, as `bench` does
(--no-settle: not settled, to see the seconds after they appear); they stay for the cases after
it.
For a profile, run `py-spy record --gil --subprocesses -p SERVER_PID` beside it.
No assertions: a measurement (docs/benchmarks.md, "Transaction writes at 8 clients").
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hms_cache_proxy.bench import targets, txn_history  # noqa: E402
from hms_cache_proxy.bench.case_catalog import case_by_name  # noqa: E402
from hms_cache_proxy.bench.cases import DECODED  # noqa: E402
from hms_cache_proxy.bench.postgres import PostgresServer  # noqa: E402
from hms_cache_proxy.bench.runner import Timing, prepare, run_case, teardown  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def _tree(pid: int) -> list[int]:
    found = [pid]
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return found
    for child in children:
        found += _tree(int(child))
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` and its live descendants."""
    ticks = 0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / _TICK


def _children_cpu() -> float:
    """User + system CPU of this process's reaped children (the case's client processes)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _postmaster(pg: PostgresServer) -> int:
    return int((pg.data_dir / "postmaster.pid").read_text().split()[0])


class WaitSampler:
    """pg_stat_activity's wait events of active client backends, every 10 ms, in a thread."""

    def __init__(self, pg: PostgresServer, dbname: str) -> None:
        self.pg = pg
        self.dbname = dbname
        self.counts: collections.Counter[tuple[str, str]] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> WaitSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        conn = self.pg.connect(self.dbname)  # its pg_class names the rows' relations
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                while not self._stop.is_set():
                    cur.execute(
                        "SELECT coalesce(wait_event_type, 'CPU') || ':' || "
                        "coalesce(wait_event, '-'), "
                        "left(regexp_replace(query, '\\s*\\(.*', '', 's'), 44) "
                        "|| coalesce(' [row of ' || "
                        "(SELECT string_agg(DISTINCT c.relname, ',') FROM pg_locks l "
                        "JOIN pg_class c ON c.oid = l.relation WHERE l.pid = a.pid "
                        "AND l.locktype = 'tuple') || ']', '') FROM pg_stat_activity a "
                        "WHERE backend_type = 'client backend' AND state = 'active' "
                        "AND pid <> pg_backend_pid()"
                    )
                    for wait, query in cur.fetchall():
                        self.counts[(wait, query)] += 1
                    time.sleep(0.01)
        finally:
            conn.close()


def _statements(pg: PostgresServer, dbname: str, reset: bool) -> list[Any]:
    conn = pg.connect(dbname)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            if reset:
                cur.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                cur.execute("SELECT pg_stat_statements_reset()")
                return []
            cur.execute(
                "SELECT sum(plans), sum(total_plan_time), NULL, "
                "sum(shared_blks_hit + shared_blks_read), 'all top-level statements' "
                "FROM pg_stat_statements WHERE toplevel UNION ALL ("
                "SELECT calls, total_exec_time + total_plan_time, total_plan_time, "
                "shared_blks_hit::float / greatest(calls, 1), "
                "left(regexp_replace(query, '\\s+', ' ', 'g'), 100) FROM pg_stat_statements "
                "ORDER BY total_exec_time + total_plan_time DESC LIMIT 15)"
            )
            return list(cur.fetchall())
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=["db", "cache", "stock"], default="db")
    ap.add_argument("--cases", nargs="+", default=["txn_open_commit"])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--pg-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a postgresql.conf value of the throwaway server, e.g. autovacuum=on",
    )
    ap.add_argument("--waits", action="store_true", help="sample pg_stat_activity")
    ap.add_argument("--stats", action="store_true", help="pg_stat_statements per operation")
    ap.add_argument(
        "--no-settle", action="store_true", help="time *_history cases without txn_history.settle"
    )
    args = ap.parse_args()
    extra = {k: yaml.safe_load(v) for k, v in (s.split("=", 1) for s in args.setting)}
    pg_settings = (
        {
            "shared_preload_libraries": "'pg_stat_statements'",
            "pg_stat_statements.track": "all",
            "pg_stat_statements.track_planning": "on",
        }
        if args.stats
        else None
    )
    for item in args.pg_setting:
        key, _, value = item.partition("=")
        pg_settings = (pg_settings or {}) | {key: value}
    pg = PostgresServer.start(pg_settings)
    work = Path(tempfile.mkdtemp(prefix="hms-cpu-"))
    dbname = "hms"
    url = pg.new_database(dbname)
    stack = contextlib.ExitStack()
    server: Any
    if args.target == "stock":
        server = stack.enter_context(targets.stock_server(url, work))
    else:
        server = targets.start_serve(
            url, work, args.target, {"cache_enabled": args.target == "cache", **extra}
        )
        stack.callback(server.stop)
    made: set[str] = set()
    history_added = False
    try:
        print(f"server pid {server.pid}; settings {extra or '{}'}", flush=True)
        for name in args.cases:
            case = case_by_name(name)
            prepare(args.target, "127.0.0.1", server.port, case, made, "cpu")
            if case.history and not history_added:  # as `bench` does, before the first one
                level = extra.get("txn_use_min_history_level", True)
                stock = args.target == "stock"
                txn_history.add(url, stock=stock, min_history_level=bool(level))
                if not args.no_settle and not stock:
                    txn_history.settle("127.0.0.1", server.port)
                history_added = True
            if args.stats:
                _statements(pg, dbname, reset=True)
            sampler = WaitSampler(pg, dbname) if args.waits else None
            clients0 = _children_cpu()
            server0, pg0, t0 = cpu_seconds(server.pid), cpu_seconds(_postmaster(pg)), time.time()
            if sampler:
                sampler.__enter__()
            result = run_case(
                args.target,
                "127.0.0.1",
                server.port,
                case,
                clients=args.clients,
                mode=DECODED,
                timing=Timing(args.duration, 1.0),
                run_id="cpu",
            )
            if sampler:
                sampler.__exit__()
            server_s = cpu_seconds(server.pid) - server0
            pg_s = cpu_seconds(_postmaster(pg)) - pg0
            clients_s = _children_cpu() - clients0
            elapsed = time.time() - t0
            if result.status != "ok" or not result.calls_per_s:
                print(f"{name}: {result.status} {result.reason}")
                teardown(args.target, "127.0.0.1", server.port, case, "cpu")
                continue
            ops = result.calls_per_s * elapsed
            print(
                f"{args.target} {name} x{args.clients}: p50 {result.p50_ms:.2f} ms, "
                f"{result.calls_per_s:.0f}/s; CPU per op: server {server_s * 1000 / ops:.3f} ms, "
                f"PostgreSQL {pg_s * 1000 / ops:.3f} ms, clients {clients_s * 1000 / ops:.3f} ms; "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            if args.stats:
                total, *top = _statements(pg, dbname, reset=False)
                print(
                    f"  {float(total[3] or 0) / ops:7.1f} buffers/op in all top-level statements; "
                    f"{float(total[0] or 0) / ops:.2f} plans/op, "
                    f"{float(total[1] or 0) / ops:.3f} ms planning/op"
                )
                for calls, total_ms, plan_ms, blocks, query in (
                    (int(a), float(b), float(p), float(c), d) for a, b, p, c, d in top
                ):
                    print(
                        f"  {calls / ops:5.2f}/op {total_ms / ops:7.3f} ms/op "
                        f"(plan {plan_ms / ops:.3f}) "
                        f"{blocks:7.1f} buffers/call  {query}"
                    )
            if sampler and sampler.counts:
                total = sum(sampler.counts.values())
                for (wait, query), n in sampler.counts.most_common(8):
                    print(f"  {n / total * 100:5.1f}% {wait:28s} {query}")
            # As `bench`: the txns a case holds open end after it (the next case would list them).
            teardown(args.target, "127.0.0.1", server.port, case, "cpu")
    finally:
        stack.close()
        pg.stop()


if __name__ == "__main__":
    main()
