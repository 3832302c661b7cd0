"""`hms-cache-proxy soak`: a bounded load and soak run, on loopback only.

8 to 32 client processes call the service at full speed with a read-heavy mix (see
soak_workload.py) for a capped time and a capped number of requests. The run is cut into
windows (10 s by default); for each the report gives calls/s, p50 and p99, errors, and the
server's resident memory (read from /proc/<pid>/status at the window's end), then judges it
(soak_stats.py): no failed call, a stable p99, flat memory.

The server is one the command starts (``serve`` with the cache on, on a throwaway PostgreSQL
or on --database-url), or one already running on this machine (--uri, a loopback address
only: a soak at full speed is not something to point at a shared server by mistake).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import ipaddress
import json
import math
import os
import queue as queue_mod
import secrets
import shlex
import sys
import tempfile
import threading
import time
import urllib.request
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from hms_cache_proxy.argtypes import output_directory, output_file
from hms_cache_proxy.bench import soak_workload
from hms_cache_proxy.bench.soak_stats import Limits, Window, make_window, percentile, verdict

MIN_CLIENTS, MAX_CLIENTS = 8, 32
MAX_DURATION_S = 1800.0
MAX_REQUESTS = 10_000_000
DEFAULT_URI_PORT = 9083

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_UNSTABLE = 0, 1, 2, 3


class UsageError(ValueError):
    """Bad options: the message says which and why."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--clients",
        type=int,
        default=16,
        metavar="N",
        help=f"client processes calling at full speed, {MIN_CLIENTS}..{MAX_CLIENTS} (default 16)",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=180.0,
        metavar="SECONDS",
        help=f"length of the run, at most {MAX_DURATION_S:.0f} (default 180)",
    )
    p.add_argument(
        "--max-requests",
        type=int,
        default=2_000_000,
        metavar="N",
        help=f"stop after this many calls in all, at most {MAX_REQUESTS:,} (default 2,000,000)",
    )
    p.add_argument(
        "--window",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="length of a reporting window (default 10)",
    )
    p.add_argument(
        "--warmup",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="first seconds left out of the p99 and memory verdict (default 30)",
    )
    p.add_argument(
        "--uri",
        metavar="thrift://HOST:PORT",
        help="soak this running server (loopback addresses only) instead of starting one",
    )
    p.add_argument(
        "--server-pid",
        type=int,
        metavar="PID",
        help="with --uri: the server's process, for its memory (default: the process "
        "listening on the --uri port, found through /proc)",
    )
    p.add_argument(
        "--metrics-url",
        metavar="URL",
        help="with --uri: the server's HTTP endpoint (loopback only), for cache figures per "
        "window (default: none)",
    )
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="the database of the server the command starts (default: a throwaway PostgreSQL "
        "server it starts and removes). The workload adds tables to database hms_bench",
    )
    p.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the server the command starts (YAML value), e.g. "
        "cache_enabled=false or consistency=strong; repeatable",
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the clients' call choices")
    p.add_argument(
        "--output", type=output_file, metavar="FILE.json", help="write the JSON report here"
    )
    p.add_argument(
        "--write-docs",
        type=output_directory,
        metavar="DIR",
        help="also write DIR/soak.md (`--write-docs docs`)",
    )


# -- options -------------------------------------------------------------------------------------


def loopback_target(uri: str) -> tuple[str, int]:
    """(host, port) of a thrift://HOST:PORT on this machine; UsageError for anything else."""
    rest = uri.strip()
    if "://" in rest:
        scheme, rest = rest.split("://", 1)
        if scheme != "thrift":
            raise UsageError(f"--uri {uri!r}: expected thrift://HOST:PORT")
    rest = rest.rstrip("/")
    if rest.startswith("["):  # [::1]:9083
        host, sep, port_text = rest[1:].partition("]")
        port_text = port_text.removeprefix(":")
    else:
        host, sep, port_text = rest.rpartition(":")
        if not sep:
            host, port_text = rest, str(DEFAULT_URI_PORT)
    if not host:
        raise UsageError(f"--uri {uri!r}: no host")
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f"--uri {uri!r}: the port {port_text!r} is not a number") from None
    if not 0 < port < 65536:
        raise UsageError(f"--uri {uri!r}: port {port} is out of range")
    if not is_loopback(host):
        raise UsageError(
            f"--uri {uri!r}: {host} is not a loopback address. A soak calls at full speed "
            "for minutes, so it only runs against a server on this machine: use 127.0.0.1, "
            "::1 or localhost"
        )
    return host, port


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or the name localhost (no name is resolved: that could go anywhere)."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_options(args: argparse.Namespace) -> None:
    if args.uri:
        loopback_target(args.uri)  # first: the one refusal that protects someone else
    if not MIN_CLIENTS <= args.clients <= MAX_CLIENTS:
        raise UsageError(f"--clients {args.clients}: use {MIN_CLIENTS} to {MAX_CLIENTS}")
    if not 0 < args.duration <= MAX_DURATION_S:
        raise UsageError(
            f"--duration {args.duration:g}: use more than 0 and at most {MAX_DURATION_S:.0f} s"
        )
    if not 0 < args.max_requests <= MAX_REQUESTS:
        raise UsageError(f"--max-requests {args.max_requests}: use 1 to {MAX_REQUESTS:,}")
    if not 0.5 <= args.window <= args.duration:
        raise UsageError(f"--window {args.window:g}: use 0.5 s up to --duration")
    if not 0 <= args.warmup < args.duration:
        raise UsageError(f"--warmup {args.warmup:g}: use 0 up to less than --duration")
    if args.uri:
        if args.database_url or args.setting:
            raise UsageError(
                "--database-url and --setting are for the server the command "
                "starts; with --uri the server is already running"
            )
    elif args.server_pid or args.metrics_url:
        raise UsageError("--server-pid and --metrics-url go with --uri")
    if args.metrics_url:
        from urllib.parse import urlsplit

        host = (
            urlsplit(
                args.metrics_url if "://" in args.metrics_url else "http://" + args.metrics_url
            ).hostname
            or ""
        )
        if not is_loopback(host):
            raise UsageError(f"--metrics-url {args.metrics_url!r}: not a loopback address")
    parse_settings(args.setting)


def parse_settings(items: list[str]) -> dict[str, Any]:
    from hms_cache_proxy.bench.targets import known_settings

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--setting {item!r}: expected KEY=VALUE")
        if key.strip() not in known_settings():
            raise UsageError(f"--setting {item!r}: the service has no setting {key.strip()!r}")
        out[key.strip()] = yaml.safe_load(value)
    return out


# -- the server's process and figures ------------------------------------------------------------


def listening_pid(port: int) -> int | None:
    """The process listening on TCP ``port`` (through /proc; None when not found or not ours
    to see)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{cols[9]}]")
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in inodes:
                    return int(proc.name)
        except OSError:
            continue
    return None


def rss_bytes(pid: int | None) -> int | None:
    if pid is None:
        return None
    from hms_cache_proxy.bench.targets import rss_bytes as read

    return read(pid)


def cache_figures(metrics_url: str | None) -> dict[str, float]:
    """Cache bytes, partitions, hits, misses and lag from /metrics (empty when unavailable)."""
    if not metrics_url:
        return {}
    from hms_cache_proxy.observability.status import Scrape, normalise_url

    try:
        with urllib.request.urlopen(normalise_url(metrics_url) + "/metrics", timeout=5) as r:
            m = Scrape.parse(r.read().decode("utf-8"), time.monotonic())
    except (OSError, ValueError):
        return {}
    return {
        "cache_bytes": m.total("hms_cache_bytes"),
        "cache_partitions": m.total("hms_cache_partitions"),
        "hits": m.total("hms_cache_hits_total"),
        "misses": m.total("hms_cache_misses_total"),
        "lag_events": m.total("hms_cache_lag_events"),
    }


def take_sample(server: Server) -> tuple[int | None, dict[str, float]]:
    """The server's RSS, its cache figures and the machine's 1-minute load average, now."""
    figures = cache_figures(server.metrics_url)
    with contextlib.suppress(OSError):
        figures["load1"] = os.getloadavg()[0]
    return rss_bytes(server.pid), figures


class Server:
    """Where the soak points: (host, port, pid, metrics URL), and what it is."""

    def __init__(self, host: str, port: int, pid: int | None, metrics_url: str | None) -> None:
        self.host, self.port, self.pid, self.metrics_url = host, port, pid, metrics_url
        self.description: dict[str, Any] = {}


@contextlib.contextmanager
def own_server(args: argparse.Namespace, workdir: Path) -> Iterator[Server]:
    """``serve`` with the cache on (unless --setting says otherwise), on --database-url or on
    a throwaway PostgreSQL."""
    from hms_cache_proxy.bench import targets
    from hms_cache_proxy.bench.cache_measures import wait_prewarm

    settings = {"cache_enabled": True, **parse_settings(args.setting)}
    pg = None
    try:
        url = args.database_url
        database = "given database (--database-url)"
        if not url:
            from hms_cache_proxy.bench.postgres import PostgresServer

            pg = PostgresServer.start()
            url = pg.new_database("soak")
            version = _pg_version(pg)
            database = "throwaway PostgreSQL " + version
        with targets.serve(url, workdir, "soak", settings, with_metrics=True) as srv:
            wait_prewarm(srv)
            metrics = f"http://127.0.0.1:{srv.metrics_port}" if srv.metrics_port else None
            server = Server("127.0.0.1", srv.port, srv.pid, metrics)
            server.description = {
                "target": "hms-cache-proxy serve, started by the command",
                "database": database,
                "settings": settings,
            }
            if pg is not None:
                server.description["postgres"] = "PostgreSQL " + version
            yield server
    finally:
        if pg is not None:
            pg.stop()


def _pg_version(pg: Any) -> str:
    try:
        conn = pg.connect()
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW server_version")
                return str(cur.fetchone()[0])
        finally:
            conn.close()
    except Exception:
        return ""


# -- the run -------------------------------------------------------------------------------------


class Collector:
    """The clients' window reports, merged: latencies per window and per method, errors."""

    def __init__(self) -> None:
        self.window_lat: dict[int, array[float]] = {}
        self.window_errors: dict[int, int] = {}
        self.method_lat: dict[int, array[float]] = {}
        self.errors: list[str] = []
        self.done: dict[int, int] = {}
        self.failed: dict[int, str] = {}

    def take(self, msg: tuple[Any, ...]) -> None:
        kind, index = msg[0], msg[1]
        if kind == "window":
            _, _, w, lat_b, meth_b, n_err, messages = msg
            lat, meth = array("d"), array("b")
            lat.frombytes(lat_b)
            meth.frombytes(meth_b)
            self.window_lat.setdefault(w, array("d")).extend(lat)
            self.window_errors[w] = self.window_errors.get(w, 0) + n_err
            for m, s in zip(meth, lat, strict=True):
                self.method_lat.setdefault(m, array("d")).append(s)
            room = 20 - len(self.errors)
            self.errors.extend(f"client {index}: {m}" for m in messages[: max(0, room)])
        elif kind == "done":
            self.done[index] = msg[2]
        elif kind == "failed":
            self.failed[index] = msg[2]

    def finished(self, clients: int) -> bool:
        return len(self.done) + len(self.failed) >= clients


def drive(args: argparse.Namespace, server: Server, run_id: str) -> dict[str, Any]:
    """Start the clients, sample the server at every window's end, and merge the results."""
    from hms_cache_proxy.bench.runner import _context

    ctx = _context()
    barrier = ctx.Barrier(args.clients + 1)
    start_at = ctx.Value("d", 0.0)
    out = ctx.Queue()
    share = math.ceil(args.max_requests / args.clients)
    spec = soak_workload.ClientSpec(
        server.host, server.port, run_id, args.seed, args.window, args.duration, share
    )
    procs = [
        ctx.Process(
            target=soak_workload.client_main, args=(spec, i, barrier, start_at, out), daemon=True
        )
        for i in range(args.clients)
    ]
    for p in procs:
        p.start()
    col = Collector()
    samples: dict[int, tuple[int | None, dict[str, float]]] = {}
    finished = False
    try:
        try:
            barrier.wait(timeout=300)
        except threading.BrokenBarrierError:
            _drain(out, col, time.monotonic() + 5)
            reason = next(iter(col.failed.values()), "a client could not start")
            raise RuntimeError(f"the clients did not start: {reason}") from None
        start = time.monotonic() + 0.2
        start_at.value = start
        samples[-1] = take_sample(server)
        print(
            f"soak: {args.clients} clients for {args.duration:g} s (at most "
            f"{args.max_requests:,} calls) against thrift://{server.host}:{server.port}",
            flush=True,
        )
        n_windows = math.ceil(args.duration / args.window - 1e-9)
        deadline = start + args.duration + 120  # a call stuck past the end: give up then
        k = 0
        while not col.finished(args.clients) and time.monotonic() < deadline:
            boundary = start + (k + 1) * args.window
            _drain(out, col, min(boundary, deadline), stop=lambda: col.finished(args.clients))
            if time.monotonic() >= boundary and k < n_windows:
                samples[k] = take_sample(server)
                if k >= 1:
                    _progress(k - 1, args.window, col, samples)
                k += 1
            if all(not p.is_alive() for p in procs):
                _drain(out, col, time.monotonic() + 2, stop=lambda: col.finished(args.clients))
                break
        ended = time.monotonic()
        if k < n_windows:  # stopped early (request cap): the last window ends now
            samples[k] = take_sample(server)
        finished = True
    finally:
        for p in procs:
            p.join(timeout=10 if finished else 0)  # interrupted: stop the clients at once
            if p.is_alive():
                p.kill()
                p.join(timeout=10)
        with contextlib.suppress(Exception):
            barrier.abort()
    missing = [i for i in range(args.clients) if i not in col.done and i not in col.failed]
    for i in missing:
        col.failed[i] = "the client process died or did not finish in time"
    return _results(args, col, samples, start, ended)


def _drain(out: Any, col: Collector, until: float, stop: Any = None) -> None:
    while True:
        left = until - time.monotonic()
        if left <= 0 or (stop is not None and stop()):
            return
        try:
            col.take(out.get(timeout=min(left, 0.5)))
        except queue_mod.Empty:
            continue


def _progress(k: int, window_s: float, col: Collector, samples: dict[int, Any]) -> None:
    lat = col.window_lat.get(k, array("d"))
    rss = samples.get(k, (None, {}))[0]
    p99 = percentile(lat, 0.99) * 1000 if lat else float("nan")
    mem = f"{rss / 2**20:7.1f} MiB" if rss else "n/a"
    print(
        f"  window {k:3d}  {len(lat) / window_s:9,.1f} calls/s  p99 {p99:8.2f} ms  "
        f"errors {col.window_errors.get(k, 0)}  RSS {mem}",
        flush=True,
    )


def _results(
    args: argparse.Namespace,
    col: Collector,
    samples: dict[int, tuple[int | None, dict[str, float]]],
    start: float,
    ended: float,
) -> dict[str, Any]:
    elapsed = ended - start
    windows: list[Window] = []
    last = max([*col.window_lat, *col.window_errors, *(k for k in samples if k >= 0), 0])
    for k in range(last + 1):
        w_start = k * args.window
        w_end = min((k + 1) * args.window, elapsed, args.duration)
        if w_end <= w_start:
            continue
        rss, cache = samples.get(k, (None, {}))
        w = make_window(
            k,
            w_start,
            w_end,
            col.window_lat.get(k, array("d")),
            col.window_errors.get(k, 0),
            rss,
        )
        w.extra = _cache_window(cache, samples.get(k - 1, (None, {}))[1])
        windows.append(w)
    failed_clients = len(col.failed)
    methods = {}
    for m, lat in sorted(col.method_lat.items()):
        methods[soak_workload.METHODS[m]] = {
            "calls": len(lat),
            "p50_ms": percentile(lat, 0.5) * 1000,
            "p99_ms": percentile(lat, 0.99) * 1000,
        }
    judged = verdict(windows, warmup_s=args.warmup, window_s=args.window, limits=Limits())
    if failed_clients:
        judged["passed"] = False
        judged["errors_verdict"] = {
            "status": "fail",
            "why": f"{failed_clients} client process(es) failed: "
            + "; ".join(sorted(set(col.failed.values())))[:500],
        }
    calls = sum(w.calls for w in windows)
    return {
        "seconds": round(elapsed, 3),
        "calls": calls,
        "calls_issued": sum(col.done.values()),  # calls answered + calls failed
        "calls_per_s": calls / elapsed if elapsed > 0 else None,
        "rss_before_bytes": samples.get(-1, (None, {}))[0],
        "windows": [w.as_dict() for w in windows],
        "methods": methods,
        "error_messages": col.errors,
        "client_failures": col.failed,
        "verdict": judged,
    }


def _cache_window(now: dict[str, float], before: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "load1" in now:
        out["load1"] = now["load1"]
    if "cache_bytes" in now:
        out["cache_bytes"] = now["cache_bytes"]
        out["cache_partitions"] = now["cache_partitions"]
        out["lag_events"] = now["lag_events"]
    if "hits" in now and "hits" in before:
        hits = now["hits"] - before["hits"]
        misses = now["misses"] - before["misses"]
        out["hit_rate"] = hits / (hits + misses) if hits + misses > 0 else None
    return out


# -- the command ---------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    try:
        check_options(args)
    except UsageError as exc:
        print(f"hms-cache-proxy soak: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from hms_cache_proxy.bench.report import machine

    report: dict[str, Any] = {
        "kind": "soak",
        "started": _now(),
        "command": "hms-cache-proxy " + shlex.join(sys.argv[1:]),
        "machine": machine(),
        "settings": {
            "clients": args.clients,
            "duration_s": args.duration,
            "max_requests": args.max_requests,
            "window_s": args.window,
            "warmup_s": args.warmup,
            "seed": args.seed,
            "mix": soak_workload.mix_description(),
            "read_table": f"{soak_workload.BENCH_DB}.{soak_workload.READ_TABLE} "
            f"({soak_workload.READ_PARTITIONS:,} partitions)",
            "client": "thriftpy2 cython binary protocol over a buffered socket; each client "
            "a process of its own",
        },
    }
    run_id = secrets.token_hex(2)
    with tempfile.TemporaryDirectory(prefix="hms-soak-") as tmp:
        try:
            with _server(args, Path(tmp)) as server:
                report["server"] = {
                    **server.description,
                    "uri": f"thrift://{server.host}:{server.port}",
                    "pid": server.pid,
                }
                report["machine"]["postgres"] = server.description.get("postgres")
                soak_workload.prepare(server.host, server.port)
                try:
                    report.update(drive(args, server, run_id))
                finally:
                    with contextlib.suppress(Exception):
                        soak_workload.drop_scratch(server.host, server.port, run_id, args.clients)
        except Exception as exc:
            print(f"hms-cache-proxy soak: {type(exc).__name__}: {exc}", file=sys.stderr)
            return EXIT_ERRORS
    report["finished"] = _now()
    with contextlib.suppress(OSError):
        report["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    from hms_cache_proxy.bench.soak_report import markdown

    text = markdown(report)
    print()
    print(text)
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
        print(f"report: {args.output}")
    if args.write_docs:
        docs = Path(args.write_docs)
        docs.mkdir(parents=True, exist_ok=True)
        (docs / "soak.md").write_text(text + "\n")
        print(f"docs: {docs / 'soak.md'}")
    v = report["verdict"]
    if v["errors_verdict"]["status"] == "fail":
        return EXIT_ERRORS
    return EXIT_OK if v["passed"] else EXIT_UNSTABLE


@contextlib.contextmanager
def _server(args: argparse.Namespace, workdir: Path) -> Iterator[Server]:
    if not args.uri:
        with own_server(args, workdir) as server:
            yield server
        return
    host, port = loopback_target(args.uri)
    pid = args.server_pid or listening_pid(port)
    server = Server(host, port, pid, args.metrics_url)
    server.description = {"target": f"a running server ({args.uri})"}
    yield server


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
