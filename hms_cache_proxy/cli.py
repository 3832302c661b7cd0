"""The ``hms-cache-proxy`` command."""

from __future__ import annotations

import argparse
import logging
import re
import signal
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import DBAPIError

from hms_cache_proxy import __version__
from hms_cache_proxy.argtypes import non_negative_float, positive_float, positive_int
from hms_cache_proxy.closed_stdout import quiet_on_closed_stdout


def _add_config(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        metavar="FILE",
        help="YAML settings file (default: $HMS_CACHE_PROXY_CONFIG, else "
        "conf/hms-cache-proxy.yaml if it exists). Environment variables HMS_CACHE_PROXY_<NAME> "
        "override the file; flags override both.",
    )


def _add_database(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="metastore database as a SQLAlchemy URL: sqlite:///PATH (default "
        "sqlite:///hms-cache-proxy.db in the working directory) or "
        "postgresql://USER:PASSWORD@HOST:PORT/DB",
    )
    p.add_argument(
        "--warehouse-dir",
        metavar="PATH_OR_URI",
        help="root of the warehouse: the default database's location and the parent of new "
        "databases (default: ./warehouse)",
    )
    p.add_argument(
        "--hive-site",
        metavar="FILE",
        help="a stock metastore's hive-site.xml or metastore-site.xml to start from (also "
        "$HMS_CACHE_PROXY_HIVE_SITE or hive_site in the YAML file; default: none). Read from "
        "it: the database (javax.jdo.option.ConnectionURL, a jdbc:postgresql:// URL, with "
        "javax.jdo.option.ConnectionUserName and javax.jdo.option.ConnectionPassword), the "
        "warehouse (metastore.warehouse.dir or hive.metastore.warehouse.dir), the external "
        "warehouse (metastore.warehouse.external.dir or hive.metastore.warehouse.external.dir) "
        "and the Thrift port (metastore.thrift.port or hive.metastore.port, else the port of "
        "metastore.thrift.uris or hive.metastore.uris). The YAML file, HMS_CACHE_PROXY_* "
        "variables and flags override it. Refused at start: Derby, MySQL/MariaDB, Oracle or "
        "SQL Server databases, a password kept only in a Hadoop credential provider, "
        "Kerberos (metastore.sasl.enabled=true) and keystore TLS (metastore.use.SSL=true).",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hms-cache-proxy",
        description="A Hive Metastore (Thrift) over a Hive 4.0 metastore database.",
    )
    parser.add_argument("--version", action="version", version=f"hms-cache-proxy {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the metastore service",
        description="Serve the Hive Metastore Thrift API (clients connect to "
        "thrift://HOST:PORT). On the default SQLite database the schema is created on first "
        "start; on any database of another schema version the service refuses to start.",
    )
    _add_config(serve)
    serve.add_argument("--host", help="address to listen on (default 0.0.0.0: every interface)")
    serve.add_argument("--port", type=int, help="Thrift port to listen on (default 9083)")
    serve.add_argument(
        "--workers",
        type=positive_int,
        metavar="N",
        help="processes answering the Thrift port, each a whole instance with its own cache "
        "(default 1; PostgreSQL only; worker i serves HTTP on metrics_port + i; "
        'docs/operations.md, "Workers")',
    )
    _add_database(serve)
    serve.add_argument(
        "--upstream",
        metavar="thrift://HOST:PORT",
        help="stand in front of this running metastore instead of a database: every call is "
        "passed through to it unchanged (the alternative to --database-url; docs/operations.md)",
    )
    serve.add_argument(
        "--upstream-from-hive-site",
        action="store_true",
        default=None,
        help="with --hive-site: stand in front of the metastore its hive.metastore.uris names "
        "(the first URI) instead of using its database (default: off)",
    )
    serve.add_argument(
        "--external-warehouse-dir",
        metavar="PATH_OR_URI",
        help="root of the external warehouse: where an external table created without a "
        "location goes, as in Hive 4; a directory this service may change files in "
        "(default: none)",
    )
    serve.add_argument(
        "--log-level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="logging threshold (default INFO)",
    )
    serve.add_argument(
        "--log-format",
        choices=["text", "json"],
        help="text lines, or one JSON object per line with request ids (default text)",
    )
    serve.add_argument(
        "--metrics-host",
        metavar="HOST",
        help="address of the HTTP endpoint (/metrics, /healthz, /readyz, /config, /admin); "
        "default 0.0.0.0",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="port of the HTTP endpoint (default 9090; 0 = any free port; -1 = off)",
    )
    serve.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="PEM certificate (chain) of the Thrift port: with --tls-key, the port speaks TLS "
        "only (docs/security.md)",
    )
    serve.add_argument("--tls-key", metavar="FILE", help="PEM private key of --tls-cert")

    status = sub.add_parser(
        "status",
        help="summarise a running instance (health, readiness, cache, events, hit rate)",
        description="Fetch /healthz, /readyz and /metrics from a running hms-cache-proxy and "
        "print: whether it is up and ready (with prewarm progress), open Thrift connections and "
        "calls answered, cache bytes/tables/partitions, the event position and lag, the hit rate "
        "(hits / (hits + misses)) and the commonest miss reasons. Exit status: 0 up and ready, "
        "1 answering but not healthy or not ready, 2 unreachable.",
    )
    status.add_argument(
        "--url",
        default=None,
        metavar="URL",
        help="the instance's HTTP endpoint (default http://127.0.0.1:9090)",
    )
    status.add_argument(
        "--interval",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="scrape twice this far apart and also print calls/s (default: one scrape)",
    )
    status.add_argument(
        "--timeout",
        type=positive_float,
        default=5.0,
        metavar="SECONDS",
        help="give up on an unanswered request after this long (default 5)",
    )

    init = sub.add_parser(
        "init-db",
        help="create the Hive 4.0.0 metastore schema in an empty database",
        description="Create every table of Hive 4.0.0's metastore schema with Hive's seed rows, "
        "the 'hive' catalog and the 'default' database. On a database that already holds a "
        "metastore schema it says so and changes nothing.",
    )
    _add_config(init)
    _add_database(init)

    bench = sub.add_parser(
        "bench",
        help="measure calls/s and latency: this service with and without its cache, the "
        "stock Java metastore, a floor",
        description="Run hmsbench-style cases (get_table, get_partitions at 100 / 1,000 / "
        "10,000 partitions, filters, adds and drops, transactions and locks; 1 and 8 client "
        "processes) against this service with the cache off and on, the stock Hive Metastore "
        "2.3.10 from PySpark's jars and a floor server, all on one throwaway PostgreSQL, or "
        "against --uri. Writes a JSON report, a Markdown table and a PNG chart; see "
        "docs/benchmarks.md.",
    )
    from hms_cache_proxy.bench.command import add_arguments

    add_arguments(bench)

    pipeline = sub.add_parser(
        "pipeline",
        help="PySpark ETL, backfill and cross-instance verification jobs (needs the spark extra)",
        description="Spark jobs that use a metastore as a daily ETL deployment does: etl "
        "(MSCK REPAIR, static and dynamic partition inserts, statistics), backfill (many "
        "partitions at once) and verify (visibility lag and pruned reads through another "
        "instance). See docs/pipeline.md.",
    )
    from hms_cache_proxy.pipeline.args import add_arguments as add_pipeline_arguments

    add_pipeline_arguments(pipeline)

    soak = sub.add_parser(
        "soak",
        help="load and soak run: 8 to 32 clients at full speed, bounded, on loopback only",
        description="Call a server (one the command starts on a throwaway PostgreSQL, or a "
        "running one at --uri on this machine) with a read-heavy mix from 8 to 32 client "
        "processes at full speed for a capped time and number of calls; report calls/s, "
        "p50/p99, errors and the server's memory per time window, and judge them: no errors, "
        "p99 stable, memory flat. Exit status: 0 pass, 1 errors, 2 bad options, 3 p99 or "
        "memory not steady. See docs/soak.md.",
    )
    from hms_cache_proxy.bench.soak import add_arguments as add_soak_arguments

    add_soak_arguments(soak)

    fanout = sub.add_parser(
        "fanout",
        help="N instances on one throwaway PostgreSQL: connections, idle transactions/s, "
        "transactions per write, write-to-all lag",
        description="Start N instances on one throwaway PostgreSQL, let them go idle, read "
        "and write through them, and report the PostgreSQL connections they hold, the "
        "transactions they run per second while idle, the transactions one write costs and "
        "how long a write takes to reach every instance's cache (JSON to --output).",
    )
    from hms_cache_proxy.check.fanout import add_arguments as add_fanout_arguments

    add_fanout_arguments(fanout)

    from hms_cache_proxy.check.command import DESCRIPTION as CHECK_DESCRIPTION
    from hms_cache_proxy.check.command import add_arguments as add_check_arguments

    check = sub.add_parser(
        "check",
        help="consistency checker: instances, random workloads and faults, every call checked "
        "against the cache's invariants",
        description=CHECK_DESCRIPTION,
    )
    add_check_arguments(check)
    return parser


# setting -> the flag that sets it, so that an error names what the user typed.
_FLAGS = {
    "host": "--host",
    "port": "--port",
    "workers": "--workers",
    "database_url": "--database-url",
    "upstream_uri": "--upstream",
    "upstream_from_hive_site": "--upstream-from-hive-site",
    "warehouse_dir": "--warehouse-dir",
    "external_warehouse_dir": "--external-warehouse-dir",
    "hive_site": "--hive-site",
    "log_level": "--log-level",
    "log_format": "--log-format",
    "metrics_host": "--metrics-host",
    "metrics_port": "--metrics-port",
    "tls_cert_file": "--tls-cert",
    "tls_key_file": "--tls-key",
}


def _settings(args: argparse.Namespace, notes: list[str], **extra: Any) -> Any:
    from hms_cache_proxy.config import load_settings

    given = dict(
        database_url=args.database_url,
        warehouse_dir=args.warehouse_dir,
        hive_site=args.hive_site,
        **extra,
    )
    flags = {k: v for k, v in _FLAGS.items() if k in given}
    return load_settings(args.config, flag_names=flags, notes=notes, **given)


def _configure_logging(level: str, log_format: str = "text") -> None:
    from hms_cache_proxy import logs

    logs.configure(level, log_format)


def cmd_serve(args: argparse.Namespace) -> int:
    notes: list[str] = []
    settings = _settings(
        args,
        notes,
        host=args.host,
        port=args.port,
        workers=args.workers,
        external_warehouse_dir=args.external_warehouse_dir,
        upstream_uri=args.upstream,
        upstream_from_hive_site=args.upstream_from_hive_site,
        log_level=args.log_level,
        log_format=args.log_format,
        metrics_host=args.metrics_host,
        metrics_port=args.metrics_port,
        tls_cert_file=args.tls_cert,
        tls_key_file=args.tls_key,
    )
    _configure_logging(settings.log_level, settings.log_format)
    log = logging.getLogger("hms_cache_proxy")
    log.info("settings: %s", settings.redacted())
    for note in notes:
        log.warning("%s", note)
    if settings.workers > 1:
        return _supervise(args, settings, log)
    return _serve(args, settings, log)


def _supervise(args: argparse.Namespace, settings: Any, log: logging.Logger) -> int:
    """``serve --workers N``: hold the port and run N forked workers (workers.py)."""
    import hms_cache_proxy.app  # noqa: F401 - imported once: workers share its pages
    from hms_cache_proxy.workers import Supervisor, reserve_port, worker_settings

    try:
        reservation = reserve_port(settings.host, settings.port)
    except OSError as exc:
        print(f"hms-cache-proxy: {exc}", file=sys.stderr)
        return 2
    port = reservation.getsockname()[1]
    banner = (
        f"hms-cache-proxy {__version__} supervising {settings.workers} workers on "
        f"thrift://{settings.host}:{port}"
    )
    if settings.log_format == "json":
        log.info("%s", banner)
    else:
        print(banner, flush=True)

    def run_worker(index: int) -> int:
        reservation.close()  # the supervisor's copy keeps holding the port
        from hms_cache_proxy import logs
        from hms_cache_proxy.observability import metrics

        logs.set_worker(index)
        metrics.WORKER.set(index)
        mine = worker_settings(settings, port, index)
        return _serve(args, mine, log, f" (worker {index} of {settings.workers})")

    try:
        return Supervisor(settings.workers, run_worker, settings.shutdown_grace_seconds).run()
    finally:
        reservation.close()


def _serve(args: argparse.Namespace, settings: Any, log: logging.Logger, worker: str = "") -> int:
    """One instance: build it, listen, serve until SIGTERM/SIGINT has stopped it."""
    from hms_cache_proxy.app import build_service
    from hms_cache_proxy.shutdown import StopOnSignal
    from hms_cache_proxy.store.sql.bootstrap import SchemaError

    # SIGTERM/SIGINT are held from here (before any thread starts) and taken by one thread.
    with StopOnSignal(settings.shutdown_grace_seconds, log) as stopper:
        try:
            service = build_service(settings)
        except SchemaError as exc:
            print(f"hms-cache-proxy: {exc}", file=sys.stderr)
            return 2
        except DBAPIError as exc:
            print(f"hms-cache-proxy: {_database_error(settings, exc)}", file=sys.stderr)
            return 2
        except ValueError as exc:  # a setting that validated but does not work (a TLS file)
            print(f"hms-cache-proxy: {_as_given(str(exc), args)}", file=sys.stderr)
            return 2
        try:
            service.bind()
        except OSError as exc:
            service.close()
            print(f"hms-cache-proxy: {exc}", file=sys.stderr)
            return 2
        stopper.watch(service)
        http = f"; metrics on {service.metrics_url}/metrics" if service.metrics_url else ""
        banner = (
            f"hms-cache-proxy {__version__} serving thrift://{settings.host}:{service.port} "
            f"on {service.describe()}{http}{worker}"
        )
        if settings.log_format == "json":
            log.info("%s", banner)  # every line of a JSON log stays JSON
        else:
            print(banner, flush=True)
        service.serve_forever()
        # The accept loop ends as soon as the listener closes; calls in flight and the
        # database pool are still being finished by the stopping thread: wait for it.
        stopper.wait()
    return 0


def cmd_init_db(args: argparse.Namespace) -> int:
    from hms_cache_proxy.store.db.engine import Database
    from hms_cache_proxy.store.sql.bootstrap import SchemaError, init_db
    from hms_cache_proxy.store.txn.install import install as install_txn_functions

    notes: list[str] = []
    settings = _settings(args, notes)
    _configure_logging(settings.log_level, settings.log_format)
    for note in notes:
        logging.getLogger("hms_cache_proxy").warning("%s", note)
    db = Database(settings.database_url, timeout_seconds=settings.database_timeout_seconds)
    try:
        print(init_db(db, settings.warehouse_uri()))
        if settings.txn_server_functions and db.dialect == "postgresql":
            installed = install_txn_functions(db)
            print(
                "Transaction functions: "
                + (installed.reason if installed.usable else f"not installed ({installed.reason})")
                + "."
            )
    except SchemaError as exc:
        print(f"hms-cache-proxy: {exc}", file=sys.stderr)
        return 2
    except DBAPIError as exc:
        print(f"hms-cache-proxy: {_database_error(settings, exc)}", file=sys.stderr)
        return 2
    finally:
        db.dispose()
    return 0


def _as_given(message: str, args: argparse.Namespace) -> str:
    """``message`` with each setting the user gave as a flag named as that flag."""
    dests = {"tls_cert_file": "tls_cert", "tls_key_file": "tls_key"}
    for setting, flag in _FLAGS.items():
        if getattr(args, dests.get(setting, setting), None) is not None:
            message = re.sub(rf"\b{setting}\b", flag, message)
    return message


def _database_error(settings: Any, exc: DBAPIError) -> str:
    """One line for a database that refused us (down, wrong password, no such database)."""
    from hms_cache_proxy import dburl

    reason = " ".join(str(exc.orig).split()) or type(exc.orig).__name__
    return f"cannot use the database {dburl.masked(settings.database_url)}: {reason}"


# Commands that start servers, PostgreSQL or Spark of their own and remove them when they end.
_CLEANING_UP = ("bench", "check", "fanout", "pipeline", "soak")


def _stop_on_sigterm(signum: int, _frame: Any) -> None:
    """SIGTERM ends the command as Ctrl-C does: its clean-up (the throwaway PostgreSQL, the
    servers it started, temporary directories) runs, instead of leaving them behind."""
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in _CLEANING_UP:
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        if args.command == "serve":
            return cmd_serve(args)
        if args.command == "init-db":
            return cmd_init_db(args)
        if args.command == "status":
            from hms_cache_proxy.observability import status

            url = args.url or status.DEFAULT_URL
            return status.run(url, timeout=args.timeout, interval=args.interval)
        if args.command == "bench":
            from hms_cache_proxy.bench.command import run

            return run(args)
        if args.command == "check":
            from hms_cache_proxy.check.command import run as run_check

            return run_check(args)
        if args.command == "pipeline":
            from hms_cache_proxy.pipeline.command import run as run_pipeline

            return run_pipeline(args)
        if args.command == "fanout":
            from hms_cache_proxy.check.fanout import run as run_fanout

            return run_fanout(args)
        if args.command == "soak":
            from hms_cache_proxy.bench.soak import run as run_soak

            return run_soak(args)
    except (ValidationError, FileNotFoundError, ValueError) as exc:
        for line in str(exc).splitlines():
            print(f"hms-cache-proxy: {line}", file=sys.stderr)
        return 2
    return 1


# `hms-cache-proxy status | head -5`: exit 141 after clean-up, not a BrokenPipeError traceback.
main = quiet_on_closed_stdout(main)

if __name__ == "__main__":
    raise SystemExit(main())
