"""`hms-cache-proxy bench`: start the servers, run the cases, write the report.

One run measures, side by side and one after another (so no two servers compete for the
cores): this service with the cache off (database path), with the cache, the stock Java HMS
2.3.10 from PySpark's jars, and the floor server. Each of the first three gets a fresh database
of its own on one PostgreSQL server (a throwaway one the command starts, or --postgres-url) and
makes its cases' data through itself, so their data never mix and each starts from the same
state: the cache server does not inherit the dead rows, grown notification log and planner
statistics of the database path's run (the bench's PostgreSQL runs without autovacuum), which
would measure the order of the targets, not their code. Only --database-url puts both of this
service's servers on one given database. With --uri the command measures only that server,
whatever it is.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fnmatch
import os
import secrets
import shlex
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from hms_cache_proxy.argtypes import (
    non_negative_float,
    output_directory,
    positive_float,
    positive_int,
    readable_file,
    thrift_uri,
)
from hms_cache_proxy.bench import targets
from hms_cache_proxy.bench.case_catalog import all_cases, case_by_name
from hms_cache_proxy.bench.cases import BENCH_DB, GET_TABLE, Case
from hms_cache_proxy.bench.databases import Databases
from hms_cache_proxy.bench.rawclient import walker_kind
from hms_cache_proxy.bench.report import Report, machine, write_docs, write_outputs
from hms_cache_proxy.bench.runner import Result, Timing, prepare, run_case, teardown

DEFAULT_OUTPUT = "bench-results"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--uri",
        type=thrift_uri,
        metavar="thrift://HOST:PORT",
        help="measure only this running metastore (any HMS) instead of starting servers",
    )
    p.add_argument(
        "--targets",
        nargs="+",
        choices=list(targets.ORDER),
        default=list(targets.ORDER),
        help="servers to start and compare (default: all: db cache stock floor)",
    )
    p.add_argument("--no-stock", action="store_true", help="leave out the stock Java metastore")
    p.add_argument(
        "--database",
        choices=["postgres", "sqlite"],
        default="postgres",
        help="database of the servers the command starts (default postgres: a throwaway "
        "PostgreSQL server it starts and removes; the stock server needs it)",
    )
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="the database this service's servers (db path, cache) use, as it is, instead of "
        "a fresh one each (the cases add their tables to database hms_bench; the cache server "
        "then runs on what the db path's run left). On "
        "PostgreSQL the stock server gets a database of its own on the same server (needs "
        "CREATEDB) unless --postgres-url says otherwise",
    )
    p.add_argument(
        "--postgres-url",
        metavar="URL",
        help="use this PostgreSQL server instead of a throwaway one: the command creates a "
        "database per server on it (needs CREATEDB) and drops them afterwards",
    )
    p.add_argument(
        "--cases",
        nargs="+",
        metavar="NAME",
        help="run only these cases (names or shell patterns, e.g. 'get_partitions*')",
    )
    p.add_argument(
        "--clients",
        nargs="+",
        type=int,
        choices=[1, 8],
        default=[1, 8],
        help="client counts to measure (default: 1 8)",
    )
    p.add_argument(
        "--duration",
        type=positive_float,
        metavar="SECONDS",
        help="measuring time per run (default 3)",
    )
    p.add_argument(
        "--warmup",
        type=non_negative_float,
        metavar="SECONDS",
        help="warm-up time per run (default 1)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 0.5 s per run, no 10,000-partition full reads, 20 lag writes",
    )
    p.add_argument(
        "--cache-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra setting for the cache server (YAML value), e.g. consistency=strong",
    )
    p.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra setting for both of this service's servers (db path and cache; YAML "
        "value), e.g. txn_use_min_history_level=false; --cache-setting wins for the cache",
    )
    p.add_argument(
        "--lag-writes",
        type=positive_int,
        metavar="N",
        help="writes for the propagation-lag measurement (default 200; --quick 20)",
    )
    p.add_argument(
        "--output",
        type=output_directory,
        metavar="DIR",
        help="where to write bench-<time>.json, latest.json, latest.md and latest.png "
        f"(default: ./{DEFAULT_OUTPUT})",
    )
    p.add_argument(
        "--write-docs",
        type=output_directory,
        metavar="DIR",
        help="also write DIR/benchmarks.md, benchmarks.png and benchmarks.json (the committed "
        "docs/benchmarks.md comes from `--write-docs docs`)",
    )
    p.add_argument(
        "--note",
        metavar="TEXT",
        help="a remark printed with the report (e.g. what else ran on the machine)",
    )
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument(
        "--render",
        type=readable_file,
        metavar="JSON",
        help="run nothing: write the outputs (and --write-docs) again from a saved JSON report",
    )


# -- running -------------------------------------------------------------------------------------


def select_cases(patterns: list[str] | None, quick: bool) -> list[Case]:
    cases = all_cases()
    if patterns:
        chosen = [c for c in cases if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]
        unknown = [p for p in patterns if not any(fnmatch.fnmatchcase(c.name, p) for c in cases)]
        if unknown:
            raise ValueError(f"no case matches {unknown}; see --list")
        return chosen
    return [c for c in cases if c.quick] if quick else cases


class Run:
    def __init__(self, args: argparse.Namespace, report: Report, cases: list[Case]) -> None:
        self.args = args
        self.report = report
        self.cases = cases
        self.clients = set(args.clients)
        self.timing = Timing(
            duration_s=args.duration if args.duration is not None else (0.5 if args.quick else 3),
            warmup_s=args.warmup if args.warmup is not None else (0.2 if args.quick else 1),
            hard_cap_s=20.0 if args.quick else 60.0,
        )
        self.run_id = secrets.token_hex(2)
        report.settings.update(
            {
                "duration_s": self.timing.duration_s,
                "warmup_s": self.timing.warmup_s,
                "hard_cap_s": self.timing.hard_cap_s,
                "clients": sorted(self.clients),
                "cases": [c.name for c in cases],
                "client": "thriftpy2 0.7 cython binary protocol over a buffered socket "
                "(decoded) and a raw-bytes reader (bytes); each client a process",
                "bytes_walker": walker_kind(),
            }
        )

    def runs_of(self, case: Case, key: str) -> list[tuple[int, str]]:
        runs = [(n, m) for n, m in case.runs if n in self.clients]
        if key == targets.FLOOR and not case.floor:
            return []
        return runs

    def mark_all(self, target: targets.Target, status: str, reason: str) -> None:
        for case in self.cases:
            for n, mode in self.runs_of(case, target.key):
                self.report.results.append(
                    Result(
                        target.key, case.name, n, mode, status=status, note=case.note, reason=reason
                    )
                )

    def measure(
        self, target: targets.Target, host: str, port: int, database_url: str | None = None
    ) -> None:
        """Make every case's data first (which also warms the server up: a JVM compiles its
        hot paths, a database fills its caches), then time the cases one after another."""
        made: set[str] = set()
        failed: dict[str, str] = {}
        t0 = time.monotonic()
        for case in self.cases:
            if not self.runs_of(case, target.key) or target.key == targets.FLOOR:
                continue
            if target.key == targets.STOCK and case.stock:
                continue
            try:
                prepare(target.key, host, port, case, made, self.run_id)
            except Exception as exc:
                failed[case.name] = f"setup: {type(exc).__name__}: {exc}"[:500]
        if made:
            print(f"{target.key}: data made in {time.monotonic() - t0:.0f} s", flush=True)
        history = _History(
            database_url,
            target.key == targets.STOCK,
            bool((target.settings or {}).get("txn_use_min_history_level", True)),
            (host, port),
        )
        for case in self.cases:
            runs = self.runs_of(case, target.key)
            reason = case.stock if target.key == targets.STOCK and case.stock else None
            if case.history and runs and not reason and case.name not in failed:
                reason = history.ready()
            for n, mode in runs:
                if reason:
                    self._add(
                        Result(target.key, case.name, n, mode, "n/a", note=case.note, reason=reason)
                    )
                elif case.name in failed:
                    self._add(
                        Result(
                            target.key,
                            case.name,
                            n,
                            mode,
                            "error",
                            note=case.note,
                            reason=failed[case.name],
                        )
                    )
                else:
                    self._add(
                        run_case(
                            target.key,
                            host,
                            port,
                            case,
                            clients=n,
                            mode=mode,
                            timing=self.timing,
                            run_id=self.run_id,
                        )
                    )
            if runs and not reason and case.name not in failed:
                try:
                    teardown(target.key, host, port, case, self.run_id)
                except Exception as exc:  # noqa: BLE001 - reported, the next cases still run
                    print(f"{target.key} {case.name}: teardown failed: {exc}", flush=True)
        history.remove()

    def _add(self, r: Result) -> None:
        self.report.results.append(r)
        if r.status == "ok":
            figures = (
                f"p50 {r.p50_ms:9.2f} ms  p99 {r.p99_ms:9.2f} ms  "
                f"{r.calls_per_s:10,.1f}/s  ({r.calls} calls)"
            )
        else:
            figures = f"{r.status}: {r.reason}"
        print(f"{r.target:6} {r.case:40} x{r.clients} {r.mode:8} {figures}", flush=True)


class _History:
    """The finished transactions the ``*_history`` cases run with: added to the target's
    database before the first of them (as a server with ``min_history_level`` leaves them; ours
    then settles, txn_history.settle), removed after the target's cases."""

    def __init__(
        self,
        database_url: str | None,
        stock: bool,
        min_history_level: bool,
        server: tuple[str, int],
    ) -> None:
        self.url = database_url
        self.stock = stock
        self.min_history_level = min_history_level
        self.server = server
        self.added = False
        self.failed: str | None = None

    def ready(self) -> str | None:
        """None once the history is in; else why the case cannot run."""
        if self.url is None or not self.url.startswith("postgresql"):
            return "needs a PostgreSQL database the command started (not --uri)"
        if not self.added and self.failed is None:
            from hms_cache_proxy.bench import txn_history

            t0 = time.monotonic()
            try:
                txn_history.add(self.url, self.stock, min_history_level=self.min_history_level)
                self.added = True
                if not self.stock:
                    txn_history.settle(*self.server)
                print(
                    f"history: {txn_history.HISTORY_TXNS:,} finished txns added (and settled) in "
                    f"{time.monotonic() - t0:.1f} s",
                    flush=True,
                )
            except Exception as exc:
                self.failed = f"adding the history failed: {type(exc).__name__}: {exc}"[:500]
        return self.failed

    def remove(self) -> None:
        if self.added:
            from hms_cache_proxy.bench import txn_history

            left = txn_history.remove(self.url, self.stock)  # type: ignore[arg-type]
            self.added = False
            if left < txn_history.HISTORY_TXNS:
                print(
                    f"history: {left:,} of its {txn_history.HISTORY_TXNS:,} txns were left at "
                    "the end: a housekeeping round removed the rest while the *_history cases "
                    f"ran (--setting {_HOUSEKEEPING_INTERVAL}=0 keeps them)",
                    flush=True,
                )


_HOUSEKEEPING_INTERVAL = "txn_housekeeping_interval_seconds"


def _history_settings(cases: list[Case]) -> dict[str, Any]:
    """With ``*_history`` cases our servers run no housekeeping rounds (unless --setting says
    otherwise): a round removes the history's TXNS rows (about 4 s of database work at 100,000),
    and one that came while those cases ran would time its removal in one case and leave the
    rest with no history."""
    if any(c.history for c in cases) and _HOUSEKEEPING_INTERVAL in targets.known_settings():
        return {_HOUSEKEEPING_INTERVAL: 0}
    return {}


def run(args: argparse.Namespace) -> int:
    if args.list:
        for c in all_cases():
            runs = ", ".join(f"{n}×{m}" for n, m in c.runs)
            stock = f"  [stock n/a: {c.stock}]" if c.stock else ""
            print(f"{c.name:40} {c.group:6} {runs:32} {c.note}{stock}")
        return 0
    if args.render:
        import json

        report = Report.from_dict(json.loads(Path(args.render).read_text()))
        return _finish(report, args)
    try:
        cases = select_cases(args.cases, args.quick)
        service_extra = {**_history_settings(cases), **_parse_settings(args.setting, "--setting")}
        cache_extra = {**service_extra, **_parse_settings(args.cache_setting)}
        if args.output is None:  # the default, checked here so that --list never needs it
            args.output = _default_output()
    except ValueError as exc:
        print(f"hms-cache-proxy bench: {exc}", file=sys.stderr)
        return 2
    started_at = time.monotonic()
    report = Report(
        started=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        command="hms-cache-proxy " + shlex.join(sys.argv[1:]),
        machine={},
        settings={},
    )
    bench = Run(args, report, cases)
    load = _load()
    if load is not None and load > 1.0:
        print(
            f"warning: load average {load:.1f} on {os.cpu_count()} cores before the run: other "
            "work on this machine will move the figures",
            flush=True,
        )
    with tempfile.TemporaryDirectory(prefix="hms-bench-") as tmp:
        workdir = Path(tmp)
        if args.uri:
            report.machine = machine()
            host, port = args.uri.removeprefix("thrift://").rsplit(":", 1)
            target = targets.Target(targets.URI, args.uri, "ok", uri=args.uri)
            report.targets.append(target.as_dict())
            bench.measure(target, host, int(port))
        else:
            keys = [
                k
                for k in targets.ORDER
                if k in args.targets and not (args.no_stock and k == targets.STOCK)
            ]
            with Databases(args.database, args.postgres_url, workdir, args.database_url) as dbs:
                report.machine = machine(dbs.version)
                report.settings["database"] = dbs.version or args.database
                _run_servers(bench, keys, dbs, workdir, cache_extra, service_extra)
    report.finished = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    report.run_seconds = time.monotonic() - started_at
    with contextlib.suppress(OSError):
        report.machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return _finish(report, args)


def _finish(report: Report, args: argparse.Namespace) -> int:
    if args.note:
        report.settings["note"] = args.note
    paths = write_outputs(report, Path(args.output or DEFAULT_OUTPUT))
    print()
    print(report.markdown())
    print()
    print(report.cache_markdown())
    if args.write_docs:
        docs = write_docs(report, Path(args.write_docs))
        print(f"\ndocs: {docs}")
    print(f"\nreport: {', '.join(str(p) for p in paths.values())}")
    print(f"run time: {report.run_seconds / 60:.1f} min")
    return 0


def _default_output() -> str:
    try:
        return output_directory(DEFAULT_OUTPUT)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"--output {DEFAULT_OUTPUT} (the default): {exc}") from None


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _parse_settings(items: list[str], flag: str = "--cache-setting") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{flag} {item!r}: expected KEY=VALUE")
        out[key.strip()] = yaml.safe_load(value)
    return out


def _run_servers(
    bench: Run,
    keys: list[str],
    dbs: Databases,
    workdir: Path,
    cache_extra: dict[str, Any],
    service_extra: dict[str, Any] | None = None,
) -> None:
    report = bench.report
    table_file: Path | None = None
    cache_settings, cache_how = targets.cache_support(cache_extra)
    db_settings = {**targets.database_path_settings(), **(service_extra or {})}
    for key in keys:
        target = targets.Target(key, targets.LABELS[key])
        report.targets.append(target.as_dict())
        reason = None
        if key == targets.CACHE and cache_settings is None:
            reason = cache_how
        elif key == targets.STOCK:
            if dbs.kind != "postgres":
                reason = "stock server unavailable: it runs here on PostgreSQL only"
            else:
                reason = targets.stock_unavailable_reason()
        if reason:
            target.status, target.reason = "unavailable", reason
            report.targets[-1] = target.as_dict()
            print(f"{key}: {reason}", flush=True)
            bench.mark_all(target, "n/a", reason)
            continue
        print(f"{key}: starting {target.label}", flush=True)
        try:
            with _start(key, dbs, workdir, cache_settings, db_settings, table_file) as (port, uri):
                target.status, target.uri = "ok", uri
                if key in (targets.DB, targets.CACHE):
                    target.settings = (
                        cache_settings if key == targets.CACHE else db_settings
                    ) or {}
                report.targets[-1] = target.as_dict()
                bench.measure(target, "127.0.0.1", port, target_database(dbs, key))
                if key == targets.DB:
                    table_file = _save_table(port, workdir)
        except Exception as exc:
            target.status, target.reason = "failed", f"{type(exc).__name__}: {exc}"[:2000]
            report.targets[-1] = target.as_dict()
            print(f"{key}: failed: {target.reason}", flush=True)
            done = {(r.case, r.clients, r.mode) for r in report.results if r.target == key}
            for case in bench.cases:
                for n, mode in bench.runs_of(case, key):
                    if (case.name, n, mode) not in done:
                        report.results.append(
                            Result(
                                key,
                                case.name,
                                n,
                                mode,
                                "error",
                                note=case.note,
                                reason=target.reason[:300],
                            )
                        )
            continue
        if key == targets.CACHE:
            report.cache = _cache_figures(bench, dbs, workdir, cache_settings or {}, db_settings)
    if targets.CACHE not in keys or cache_settings is None:
        report.cache = {
            "status": "n/a",
            "reason": cache_how if cache_settings is None else "the cache target was not run",
        }


def target_database(dbs: Databases, key: str) -> str | None:
    """The database a target's server runs on: a fresh one each for the db path, the cache
    server and stock (so the db path's run leaves nothing the cache server's is measured on;
    ``Databases`` gives both of ours the one --database-url names); none for the floor."""
    return None if key == targets.FLOOR else dbs.url(key)


@contextlib.contextmanager
def _start(
    key: str,
    dbs: Databases,
    workdir: Path,
    cache_settings: dict[str, Any] | None,
    db_settings: dict[str, Any],
    table_file: Path | None,
) -> Iterator[tuple[int, str]]:
    if key == targets.DB:
        with targets.serve(dbs.url(targets.DB), workdir, key, db_settings) as srv:
            yield srv.port, f"thrift://127.0.0.1:{srv.port}"
    elif key == targets.CACHE:
        # On a database of its own (target_database); measuring starts once prewarm has loaded
        # what is there (with --database-url: the db path's data), and the cases' data is made
        # through the server, as for the other targets.
        with targets.serve(dbs.url(key), workdir, key, cache_settings, with_metrics=True) as srv:
            from hms_cache_proxy.bench.cache_measures import wait_prewarm

            wait_prewarm(srv)
            yield srv.port, f"thrift://127.0.0.1:{srv.port}"
    elif key == targets.STOCK:
        with targets.stock_server(dbs.url(key), workdir) as stock:
            yield stock.port, stock.uri
    else:
        with targets.floor_server(workdir, table_file) as srv:
            yield srv.port, f"thrift://127.0.0.1:{srv.port}"


def _save_table(port: int, workdir: Path) -> Path | None:
    """The get_table case's table as this service returns it, for the floor to serve."""
    from hms_cache_proxy.bench.cases import connect
    from hms_cache_proxy.bench.floor import table_bytes

    try:
        client = connect("127.0.0.1", port)
        try:
            tbl = client.get_table(BENCH_DB, GET_TABLE)
        finally:
            client.close()
    except Exception:
        return None
    path = workdir / "floor-table.bin"
    path.write_bytes(table_bytes(tbl))
    return path


def _strong_mode(
    bench: Run, url: str, workdir: Path, cache_settings: dict[str, Any]
) -> dict[str, Any]:
    """get_table, 1 client, on a cache server in strong mode and one in eventual mode (the
    same database, one after the other), for docs/design.md's "strong ≤ 1.5× eventual"."""
    from hms_cache_proxy.bench.cases import FIXTURES, GET_TABLE, connect

    case = case_by_name("get_table")
    out: dict[str, Any] = {}
    for mode in ("eventual", "strong"):
        settings = {**cache_settings, "consistency": mode}
        with targets.serve(url, workdir, f"cache-{mode}", settings) as srv:
            client = connect("127.0.0.1", srv.port)
            try:
                FIXTURES[GET_TABLE](client)
            finally:
                client.close()
            r = run_case(
                f"cache-{mode}",
                "127.0.0.1",
                srv.port,
                case,
                clients=1,
                mode="decoded",
                timing=bench.timing,
                run_id=bench.run_id,
            )
        out[mode] = {
            "p50_ms": r.p50_ms,
            "p99_ms": r.p99_ms,
            "calls_per_s": r.calls_per_s,
            "status": r.status,
            "reason": r.reason,
        }
    if out["strong"]["p50_ms"] and out["eventual"]["p50_ms"]:
        out["p50_ratio"] = out["strong"]["p50_ms"] / out["eventual"]["p50_ms"]
    return out


def _cache_figures(
    bench: Run,
    dbs: Databases,
    workdir: Path,
    cache_settings: dict[str, Any],
    db_settings: dict[str, Any],
) -> dict[str, Any]:
    from hms_cache_proxy.bench import cache_measures

    out: dict[str, Any] = {"status": "ok"}
    # The database the cache target ran on (with every table its cases made): prewarm loads
    # all of it, and the memory figure divides by its partition count.
    url = dbs.url(targets.CACHE)
    try:
        print("cache: prewarm and memory", flush=True)
        out["memory"] = cache_measures.prewarm_and_memory(
            url,
            workdir,
            cache_settings,
            db_settings,
            cache_measures.count_partitions(url),
        )
        if "consistency" in targets.known_settings():
            out["strong"] = _strong_mode(bench, url, workdir, cache_settings)
        if dbs.kind == "postgres":
            writes = bench.args.lag_writes or (20 if bench.args.quick else 200)
            print(f"cache: propagation lag over {writes} writes", flush=True)
            out["propagation"] = cache_measures.propagation_lag(
                url, workdir, cache_settings, writes
            )
        else:
            out["propagation"] = {"status": "n/a", "reason": "measured on PostgreSQL only"}
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:1000]
    return out
