"""``hms-cache-proxy fanout``: N instances on one throwaway PostgreSQL with its default
``max_connections = 100``, measured from the database's side, directly or through PgBouncer in
transaction mode (``--pooler pgbouncer``).

The instances connect as an ordinary role (``hive``: PostgreSQL keeps 3 of the 100 slots for
superusers; the command's own probe session is a superuser's). The command starts them in
batches (stopping early when the machine's free memory runs short), lets them go idle, and
reports:

- the PostgreSQL connections of the instances' role (pg_stat_activity): idle, at the busiest
  moment and right after every instance has read, the same for writes, and idle again;
- the statements they run per second while idle (pg_stat_statements, every statement of the
  role including BEGIN/COMMIT/LISTEN; pg_stat_database's transactions where the extension is
  missing), and the statements one write costs in all instances together;
- how many instances answered reads, answered a second round of reads from their caches (the
  statements that round ran), and wrote a table of their own;
- how long a write through one instance takes to be seen by every other (each polled with
  get_table until it answers the new table).

The figures go to stdout and, as JSON, to ``--output``. Everything the command started (the
instances, PgBouncer, PostgreSQL) is stopped on the way out, on SIGTERM and Ctrl-C too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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
"""application_name of the command's own sessions (a superuser's, left out of the counts)."""
ROLE = "hive"
"""The ordinary role the instances connect as."""
DB = "hms_fanout"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--instances", type=positive_int, default=4, help="instances (4)")
    parser.add_argument(
        "--pooler",
        choices=("none", "pgbouncer"),
        default="none",
        help="none: the instances connect to PostgreSQL; pgbouncer: through a PgBouncer in "
        "transaction mode on loopback (database_pooler: transaction)",
    )
    parser.add_argument(
        "--pooler-pool-size",
        type=positive_int,
        default=10,
        help="PgBouncer's default_pool_size: server connections it opens (10)",
    )
    parser.add_argument(
        "--listen",
        choices=("on", "off"),
        default=None,
        help="LISTEN for notifications (on: a direct session each, database_listen_url behind "
        "the pooler; off: poll every --poll-interval). Default: on without a pooler, off with",
    )
    parser.add_argument(
        "--poll-interval",
        type=positive_float,
        default=1.0,
        help="cache_poll_interval_seconds when LISTEN is off (1)",
    )
    parser.add_argument(
        "--pool-size", type=positive_int, default=1, help="database_pool_size (1, a sidecar's)"
    )
    parser.add_argument(
        "--pool-idle-seconds",
        type=non_negative_float,
        default=2.0,
        help="database_pool_idle_seconds of the instances (2; the service's default is 30)",
    )
    parser.add_argument(
        "--max-connections",
        type=positive_int,
        default=100,
        help="PostgreSQL's max_connections (100, its default)",
    )
    parser.add_argument(
        "--idle-seconds", type=positive_float, default=30.0, help="the idle measuring window (30)"
    )
    parser.add_argument(
        "--concurrency",
        type=positive_int,
        default=4,
        help="instances read from and written to at once (4)",
    )
    parser.add_argument(
        "--writes", type=positive_int, default=10, help="writes whose lag is measured (10)"
    )
    parser.add_argument(
        "--batch", type=positive_int, default=8, help="instances started at once (8)"
    )
    parser.add_argument(
        "--min-free-mb",
        type=positive_int,
        default=1500,
        help="start no more instances once the machine's available memory would fall below "
        "this (1500)",
    )
    parser.add_argument(
        "--output",
        type=output_file,
        default="fanout.json",
        help="where the JSON figures go (fanout.json)",
    )


def run(args: argparse.Namespace) -> int:
    from hms_cache_proxy.bench.pgbouncer import PgBouncer
    from hms_cache_proxy.bench.postgres import SUPERUSER, PostgresServer, find_bin_dir

    listen = (args.listen or ("on" if args.pooler == "none" else "off")) == "on"
    args.listen_on = listen
    lib = find_bin_dir().parent / "lib" / "pg_stat_statements.so"
    pg_settings = {"max_connections": str(args.max_connections)}
    if lib.exists():
        pg_settings["shared_preload_libraries"] = "'pg_stat_statements'"
    started_at = time.time()
    load_before = _load()
    pg = PostgresServer.start(pg_settings)
    bouncer: Any = None
    instances: list[Instance] = []
    workdir = Path(tempfile.mkdtemp(prefix="hms-fanout-"))
    try:
        pg.execute(f"CREATE ROLE {ROLE} LOGIN")
        pg.execute(f"CREATE DATABASE {DB} OWNER {ROLE}")
        probe = _probe(pg)
        counter = _Statements(probe) if lib.exists() else _Transactions(probe)
        direct = f"postgresql+psycopg2://{ROLE}@{pg.host}:{pg.port}/{DB}"
        settings: dict[str, Any] = {
            "database_pool_size": args.pool_size,
            "database_pool_idle_seconds": args.pool_idle_seconds,
            "prewarm": False,
            "cache_listen": listen,
            "cache_poll_interval_seconds": args.poll_interval,
        }
        url = direct
        if args.pooler == "pgbouncer":
            bouncer = PgBouncer(
                pg, pool_size=args.pooler_pool_size, max_client_conn=10_000, users=(SUPERUSER, ROLE)
            )
            url = bouncer.url_for(DB, user=ROLE)
            settings["database_pooler"] = "transaction"
            if listen:
                settings["database_listen_url"] = direct
        started = _start(args, url, workdir, settings, instances)
        figures: dict[str, Any] = {
            "command": "hms-cache-proxy fanout " + " ".join(_argv(args)),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started_at)),
            "machine": _machine(),
            "load_before": load_before,
            "postgresql_max_connections": args.max_connections,
            "pooler": args.pooler,
            "pooler_pool_size": args.pooler_pool_size if bouncer else None,
            "listen": listen,
            "poll_interval_seconds": None if listen else args.poll_interval,
            "database_pool_size": args.pool_size,
            "database_pool_idle_seconds": args.pool_idle_seconds,
            "statements_counted_from": counter.source,
            "instances_asked": args.instances,
            **started,
        }
        if instances:
            figures.update(_measure(args, pg, probe, counter, instances, bouncer))
        figures["load_after"] = _load()
        figures["seconds"] = round(time.time() - started_at, 1)
    finally:
        _stop_all(instances)
        if bouncer is not None:
            bouncer.stop()
        pg.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    Path(args.output).write_text(json.dumps(figures, indent=2) + "\n")
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(f"written to {args.output}")
    return 0


def _argv(args: argparse.Namespace) -> list[str]:
    out = [f"--instances {args.instances}", f"--pooler {args.pooler}"]
    if args.pooler == "pgbouncer":
        out.append(f"--pooler-pool-size {args.pooler_pool_size}")
    if args.listen:
        out.append(f"--listen {args.listen}")
    out += [
        f"--pool-size {args.pool_size}",
        f"--pool-idle-seconds {args.pool_idle_seconds:g}",
        f"--concurrency {args.concurrency}",
        f"--idle-seconds {args.idle_seconds:g}",
        f"--writes {args.writes}",
    ]
    return out


# -- starting and stopping ---------------------------------------------------------------------


def _start(
    args: argparse.Namespace,
    url: str,
    workdir: Path,
    settings: dict[str, Any],
    instances: list[Instance],
) -> dict[str, Any]:
    """Start the instances ``args.batch`` at a time (each batch answering before the next);
    stop starting when one fails or memory would run short. ``instances`` gets the ones up."""
    t0 = time.monotonic()
    failures: list[str] = []
    stopped_because = None
    per_instance_mb = 120.0  # until measured
    i = 0
    while i < args.instances:
        n = min(args.batch, args.instances - i)
        free_mb = _available_mb()
        if free_mb is not None and free_mb - n * per_instance_mb < args.min_free_mb:
            stopped_because = (
                f"memory: {free_mb:.0f} MB available, {per_instance_mb:.0f} MB per instance, "
                f"--min-free-mb {args.min_free_mb}"
            )
            break
        batch = []
        for j in range(i, i + n):
            name = f"fanout-{j}"
            inst = Instance(name, url, workdir, {**settings, "instance_name": name})
            inst.launch()
            batch.append(inst)
        for inst in batch:
            try:
                inst.wait_answering(timeout=180)
                instances.append(inst)
            except RuntimeError as exc:
                failures.append(f"{inst.name}: {str(exc)[:300]}")
                inst.stop()
        i += n
        rss = _rss_mb(instances)
        if rss:
            per_instance_mb = max(per_instance_mb, rss / len(instances) * 1.1)
        if failures:
            stopped_because = "an instance did not start"
            break
    return {
        "instances_started": len(instances),
        "start_seconds": round(time.monotonic() - t0, 1),
        "stopped_starting_because": stopped_because,
        "start_failures": failures[:5],
        "instance_rss_mb_mean": round(_rss_mb(instances) / max(1, len(instances)), 1),
    }


def _stop_all(instances: list[Instance]) -> None:
    """SIGTERM to every instance at once, then wait (SIGKILL whoever outlasts 30 s)."""
    import signal

    for inst in instances:
        if inst.proc is not None and inst.proc.poll() is None:
            inst.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 30
    for inst in instances:
        if inst.proc is None:
            continue
        try:
            inst.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:  # noqa: BLE001 - outlasted the deadline
            inst.kill()


# -- measuring ---------------------------------------------------------------------------------


def _measure(
    args: argparse.Namespace,
    pg: Any,
    probe: Any,
    counter: Any,
    instances: list[Instance],
    bouncer: Any,
) -> dict[str, Any]:
    n = len(instances)
    out: dict[str, Any] = {}
    settle = args.pool_idle_seconds + min(15.0, max(0.25, args.pool_idle_seconds / 4)) + 2
    sampler = _Sampler(pg)
    try:
        time.sleep(settle)
        out["connections_idle"] = _connections(probe)
        before, t0 = counter.count(), time.monotonic()
        top0 = counter.top()
        time.sleep(args.idle_seconds)
        after, t1 = counter.count(), time.monotonic()
        idle_rate = max(0.0, (after - before) / (t1 - t0))
        out["idle_statements_per_second"] = round(idle_rate, 3)
        out["idle_statements_per_second_per_instance"] = round(idle_rate / n, 4)
        out["idle_statements_top"] = counter.top_since(top0)

        first = connect("127.0.0.1", instances[0].port, timeout_s=60)
        try:
            first.create_database(hms.Database(name=BENCH_DB, parameters={}))
        finally:
            first.close()
        # Reads: every instance twice (the second round from the caches).
        sampler.reset()
        reads = _each(instances, args.concurrency, _read)
        out["peak_connections_reads"] = sampler.peak()
        out["connections_after_reads"] = _connections(probe)
        out["instances_read_ok"] = sum(1 for r in reads if r is None)
        out["read_errors"] = _errors(reads)
        before = counter.count()
        t0 = time.monotonic()
        hits = _each(instances, args.concurrency, _read)
        # Less what the instances run idle meanwhile (their polls, when LISTEN is off).
        spent = counter.count() - before - idle_rate * (time.monotonic() - t0)
        out["instances_cache_reads_ok"] = sum(1 for r in hits if r is None)
        out["statements_in_cache_read_round"] = round(spent, 1)

        # Writes: every instance creates a table of its own and reads it back.
        sampler.reset()
        writes = _each(instances, args.concurrency, _write)
        out["peak_connections_writes"] = sampler.peak()
        out["connections_after_writes"] = _connections(probe)
        out["instances_wrote_ok"] = sum(1 for r in writes if r is None)
        out["write_errors"] = _errors(writes)
        if bouncer is not None:
            out["pgbouncer_pools_after_writes"] = _pools(bouncer)
        time.sleep(settle)
        out["connections_idle_again"] = _connections(probe)
        out["peak_connections_whole_run"] = sampler.overall()
        out.update(_lag(args, instances, counter, idle_rate))
        if bouncer is not None:
            out["pgbouncer_pools_end"] = _pools(bouncer)
    finally:
        sampler.stop()
    return out


def _read(client: Any, i: int) -> None:
    client.get_all_databases()
    client.get_database(BENCH_DB)
    client.get_database(BENCH_DB)


def _write(client: Any, i: int) -> None:
    client.create_table(table(f"own_{i}", partitioned=False))
    client.get_table(BENCH_DB, f"own_{i}")


def _each(instances: list[Instance], concurrency: int, call: Any) -> list[str | None]:
    """``call(client, i)`` through every instance, ``concurrency`` at once; None where it
    succeeded, else the error."""

    def one(i: int) -> str | None:
        try:
            client = connect("127.0.0.1", instances[i].port, timeout_s=120)
        except Exception as exc:  # noqa: BLE001 - counted
            return f"connect: {type(exc).__name__}: {exc}"
        try:
            call(client, i)
            return None
        except Exception as exc:  # noqa: BLE001 - counted
            message = getattr(exc, "message", None) or str(exc)
            return f"{type(exc).__name__}: {message}"[:300]
        finally:
            client.close()

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, range(len(instances))))


def _errors(results: list[str | None]) -> dict[str, int]:
    """Distinct errors (their first 160 characters) and how many calls had each."""
    out: dict[str, int] = {}
    for r in results:
        if r is not None:
            out[r[:160]] = out.get(r[:160], 0) + 1
    return out


def _lag(
    args: argparse.Namespace, instances: list[Instance], counter: Any, idle_rate: float
) -> dict[str, Any]:
    """Writes through instance 0, one at a time: from the call until every other instance
    has applied the write's event (its ``hms_cache_event_position`` on /metrics, polled by
    ``args.concurrency`` threads going round their shares; a get_table of a table not yet
    there would be a cache miss, a database read, in every instance at once). Then the
    statements of one write alone: counted over a window long enough for every instance to
    follow, less the idle rate over it."""
    writer = connect("127.0.0.1", instances[0].port, timeout_s=60)
    to_all: list[float] = []
    each: list[float] = []
    misses = 0
    errors: dict[str, int] = {}
    try:
        k_threads = min(args.concurrency, max(1, len(instances) - 1))
        shares = [list(range(1 + k, len(instances), k_threads)) for k in range(k_threads)]
        shares = [s for s in shares if s]
        for w in range(args.writes):
            seen: dict[int, float] = {}
            started = time.monotonic()
            writer.create_table(table(f"lag_{w}", partitioned=False))
            event = writer.get_current_notificationEventId().eventId

            def poll(
                share: list[int],
                event: int = event,
                started: float = started,
                seen: dict[int, float] = seen,
            ) -> None:
                waiting = list(share)
                deadline = started + 60
                while waiting and time.monotonic() < deadline:
                    for i in list(waiting):
                        try:
                            position = _position(instances[i])
                        except Exception as exc:  # noqa: BLE001 - counted
                            key = f"{type(exc).__name__}: {exc}"[:160]
                            errors[key] = errors.get(key, 0) + 1
                            continue
                        if position >= event:
                            seen[i] = time.monotonic() - started
                            waiting.remove(i)
                    time.sleep(0.002)

            threads = [threading.Thread(target=poll, args=(s,)) for s in shares]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            misses += len(instances) - 1 - len(seen)
            each += seen.values()
            if len(seen) == len(instances) - 1:
                to_all.append(max(seen.values(), default=time.monotonic() - started))
        # One write alone, nobody polling: its statements and every instance's following it.
        window = 3.0 if args.listen_on else 2 * args.poll_interval + 2
        costs = []
        top: list[list[Any]] = []
        for k in range(3):
            top0 = counter.top()
            before, t0 = counter.count(), time.monotonic()
            writer.create_table(table(f"alone_{k}", partitioned=False))
            time.sleep(window)
            costs.append(counter.count() - before - idle_rate * (time.monotonic() - t0))
            top = counter.top_since(top0, limit=12)
    finally:
        writer.close()
    return {
        "write_to_all_lag_ms_p50": _pct(to_all, 0.5),
        "write_to_all_lag_ms_p99": _pct(to_all, 0.99),
        "write_to_one_lag_ms_p50": _pct(each, 0.5),
        "write_to_one_lag_ms_p99": _pct(each, 0.99),
        "lag_writes": args.writes,
        "lag_not_seen_within_60s": misses,
        "lag_poll_errors": errors,
        "statements_per_write_all_instances": round(sorted(costs)[1], 1),
        "statements_per_write_samples": [round(c, 1) for c in costs],
        "statements_of_the_last_write": top,
    }


def _position(inst: Instance) -> float:
    """The instance's applied event position, from its /metrics."""
    import urllib.request

    url = f"http://127.0.0.1:{inst.http_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("hms_cache_event_position "):
                return float(line.split()[1])
    raise RuntimeError("no hms_cache_event_position on /metrics")


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 1)


# -- the database's side -------------------------------------------------------------------------


def _probe(pg: Any) -> Any:
    conn = pg.connect("postgres")
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f"SET application_name = '{PROBE}'")
    return conn


def _connections(probe: Any) -> dict[str, Any]:
    """The instances' role's sessions on the database: in all, by state, and how many
    instances (application_name) hold how many."""
    with probe.cursor() as cur:
        cur.execute(
            "SELECT application_name, coalesce(state, ''), count(*) FROM pg_stat_activity"
            " WHERE datname = %s AND usename = %s GROUP BY 1, 2",
            (DB, ROLE),
        )
        rows = cur.fetchall()
    by_state: dict[str, int] = {}
    by_name: dict[str, int] = {}
    for name, state, count in rows:
        by_state[state] = by_state.get(state, 0) + int(count)
        by_name[name] = by_name.get(name, 0) + int(count)
    per: dict[int, int] = {}
    for count in by_name.values():
        per[count] = per.get(count, 0) + 1
    return {
        "total": sum(by_state.values()),
        "by_state": by_state,
        "application_names": len(by_name),
        "names_holding": {str(k): v for k, v in sorted(per.items())},
    }


def _pools(bouncer: Any) -> list[dict[str, Any]]:
    keep = ("database", "user", "cl_active", "cl_waiting", "sv_active", "sv_idle", "sv_used")
    return [{k: row.get(k) for k in keep} for row in bouncer.pools() if row.get("database") == DB]


class _Statements:
    """Statements of the instances' role on the database, from pg_stat_statements (utility
    statements such as BEGIN, COMMIT, LISTEN and SET included)."""

    source = "pg_stat_statements (calls of the instances' role on its database)"

    def __init__(self, probe: Any) -> None:
        self.probe = probe
        with probe.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def _where(self) -> str:
        return (
            " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE"
            f" datname = '{DB}') AND userid = (SELECT oid FROM pg_roles WHERE rolname = '{ROLE}')"
        )

    def count(self) -> int:
        with self.probe.cursor() as cur:
            cur.execute("SELECT coalesce(sum(calls), 0)" + self._where())
            return int(cur.fetchone()[0])

    def top(self) -> dict[str, int]:
        with self.probe.cursor() as cur:
            cur.execute("SELECT query, sum(calls)" + self._where() + " GROUP BY 1")
            return {str(q): int(c) for q, c in cur.fetchall()}

    def top_since(self, before: dict[str, int], limit: int = 6) -> list[list[Any]]:
        now = self.top()
        delta = [(c - before.get(q, 0), q) for q, c in now.items()]
        delta = [d for d in delta if d[0] > 0]
        delta.sort(reverse=True)
        return [[c, " ".join(q.split())[:120]] for c, q in delta[:limit]]


class _Transactions:
    """Where pg_stat_statements is missing: pg_stat_database's committed and rolled-back
    transactions (all sessions of the database; an idle backend flushes its counters within
    10 s, so each reading waits that long)."""

    source = "pg_stat_database (xact_commit + xact_rollback of the database)"

    def __init__(self, probe: Any) -> None:
        self.probe = probe

    def count(self) -> int:
        time.sleep(11)
        with self.probe.cursor() as cur:
            cur.execute("SELECT pg_stat_clear_snapshot()")
            cur.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
                (DB,),
            )
            return int(cur.fetchone()[0])

    def top(self) -> dict[str, int]:
        return {}

    def top_since(self, before: dict[str, int]) -> list[list[Any]]:
        return []


class _Sampler:
    """The instances' role's session count, every 0.2 s on a connection of its own: the peak
    since ``reset`` and over the whole run."""

    def __init__(self, pg: Any) -> None:
        self.conn = _probe(pg)
        self._peak = 0
        self._overall = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            with self.conn.cursor() as cur:
                cur.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND usename = %s",
                    (DB, ROLE),
                )
                n = int(cur.fetchone()[0])
            self._peak = max(self._peak, n)
            self._overall = max(self._overall, n)

    def reset(self) -> None:
        self._peak = 0

    def peak(self) -> int:
        time.sleep(0.3)
        return self._peak

    def overall(self) -> int:
        return self._overall

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.conn.close()


# -- the machine -------------------------------------------------------------------------------


def _load() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3]) + " (1 / 5 / 15 min)"
    except OSError:
        return "unknown"


def _available_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _total_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _rss_mb(instances: list[Instance]) -> float:
    total = 0.0
    for inst in instances:
        if inst.proc is None:
            continue
        try:
            for line in Path(f"/proc/{inst.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


def _machine() -> str:
    total = _total_mb()
    memory = f"{total / 1024:.1f} GB memory" if total else "memory unknown"
    python = platform.python_version()
    return f"{os.cpu_count()} cores; {memory}; {platform.platform()}; Python {python}"
