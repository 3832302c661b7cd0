"""Command-line arguments of the pipeline jobs, shared by ``hms-cache-proxy pipeline`` and
``python -m hms_cache_proxy.pipeline`` so both accept exactly the same shape."""

from __future__ import annotations

import argparse
import datetime
import re
from pathlib import Path

from hms_cache_proxy.argtypes import key_value, output_file, positive_float, readable_file
from hms_cache_proxy.pipeline.errors import PipelineError

_URI = re.compile(r"^thrift://([^:/\s]+):(\d{1,5})$")
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")

DEFAULT_DATABASE = "pipeline"
MAX_DAYS = 10_000


def parse_uri(uri: str) -> tuple[str, int]:
    """``thrift://HOST:PORT`` as (host, port); a clear error for anything else."""
    m = _URI.match(uri.strip())
    if not m or not 0 < int(m.group(2)) < 65536:
        raise PipelineError(f"metastore URI must look like thrift://HOST:PORT, got {uri!r}")
    return m.group(1), int(m.group(2))


def _uri(value: str) -> str:
    try:
        parse_uri(value)
    except PipelineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value.strip()


def _date(value: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"dates are YYYY-MM-DD, got {value!r}") from None


def _days(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--days takes a whole number, got {value!r}") from None
    if not 1 <= n <= MAX_DAYS:
        raise argparse.ArgumentTypeError(f"--days must be between 1 and {MAX_DAYS}, got {n}")
    return n


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a number of at least 1, got {n}")
    return n


def _database(value: str) -> str:
    if not _NAME.match(value):
        raise argparse.ArgumentTypeError(
            f"database names are lower-case letters, digits and _, got {value!r}"
        )
    return value


def _common(p: argparse.ArgumentParser, *, uri_help: str) -> None:
    p.add_argument(
        "--metastore-uri", required=True, type=_uri, metavar="thrift://HOST:PORT", help=uri_help
    )
    p.add_argument(
        "--warehouse",
        required=True,
        metavar="DIR",
        help="the warehouse directory (spark.sql.warehouse.dir); the same path every "
        "instance and job sees",
    )
    p.add_argument(
        "--database",
        default=DEFAULT_DATABASE,
        type=_database,
        metavar="NAME",
        help=f"database holding the pipeline's tables (default {DEFAULT_DATABASE})",
    )
    p.add_argument(
        "--manifest",
        metavar="FILE",
        help="JSON record of committed partitions (default WAREHOUSE/_pipeline/DATABASE.json)",
    )
    p.add_argument(
        "--tls-ca",
        type=readable_file,
        metavar="FILE",
        help="when the instances speak TLS: the CA certificate (PEM) the job's own Thrift "
        "client (polling for visibility) verifies them with. Spark's Hive client needs "
        "--conf spark.hadoop.hive.metastore.use.SSL=true and a truststore (docs/security.md)",
    )


def _spark(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--master", metavar="URL", help="Spark master (default: spark-submit's, else local[*])"
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        type=key_value,
        metavar="KEY=VALUE",
        help="extra Spark setting, repeatable (e.g. spark.driver.memory=1g)",
    )


def _dates(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "dates (one of: --date; --start with --end or --days; --days alone "
        "or with --end, counting back from --end or today, UTC)"
    )
    g.add_argument("--date", type=_date, metavar="YYYY-MM-DD", help="a single day")
    g.add_argument("--start", type=_date, metavar="YYYY-MM-DD", help="first day")
    g.add_argument("--end", type=_date, metavar="YYYY-MM-DD", help="last day (inclusive)")
    g.add_argument("--days", type=_days, metavar="N", help="number of days")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``etl``, ``backfill`` and ``verify`` subcommands on ``parser``."""
    sub = parser.add_subparsers(dest="job", required=True, metavar="JOB")
    observe_help = (
        "second instance to poll right after each commit, recording in the manifest "
        "when each partition became visible there (the precise visibility lag)"
    )

    etl = sub.add_parser(
        "etl",
        help="daily ETL: land files, MSCK REPAIR, static and dynamic inserts, statistics",
        description="For each day: write the day's raw events as Parquet files outside Spark's "
        "catalog and register them with MSCK REPAIR TABLE raw_events; INSERT OVERWRITE the "
        "static partition events (ds=DAY); aggregate into daily_country (ds, country) with a "
        "dynamic-partition insert; ANALYZE the partition. Then column statistics for events. "
        "Re-running a day rewrites it identically.",
    )
    _common(etl, uri_help="the metastore instance the job writes through")
    _dates(etl)
    etl.add_argument(
        "--rows-per-day",
        type=_positive,
        default=1000,
        metavar="N",
        help="events generated per day (deterministic; default 1000)",
    )
    etl.add_argument("--observe-uri", type=_uri, metavar="thrift://HOST:PORT", help=observe_help)
    _spark(etl)

    backfill = sub.add_parser(
        "backfill",
        help="add many daily partitions to events in one dynamic-partition insert",
        description="Generate every day's events and write them into events with one "
        "dynamic-partition INSERT OVERWRITE (Spark registers the new partitions in batches of "
        "spark.sql.addPartitionInBatch.size), then recompute table and column statistics. "
        "Prints partitions/s.",
    )
    _common(backfill, uri_help="the metastore instance the job writes through")
    _dates(backfill)
    backfill.add_argument(
        "--rows-per-day",
        type=_positive,
        default=20,
        metavar="N",
        help="events generated per day (default 20)",
    )
    backfill.add_argument(
        "--observe-uri", type=_uri, metavar="thrift://HOST:PORT", help=observe_help
    )
    backfill.add_argument(
        "--method",
        choices=["insert", "add"],
        default="insert",
        help="insert (default): write each day's rows with one dynamic-partition INSERT "
        "OVERWRITE; add: only register empty partitions with one ALTER TABLE ADD IF NOT EXISTS "
        "listing every day (the metastore's work alone; existing partitions are left alone)",
    )
    _spark(backfill)

    verify = sub.add_parser(
        "verify",
        help="check every committed partition is visible through another instance",
        description="Poll the given instance (a plain Thrift client: get_partition_names, "
        "get_partition, get_table) until every partition in the manifest is visible with its "
        "statistics, print per partition when it was committed, when it became visible and "
        "the lag, with p50/p99/max; then read the tables through that instance with Spark, "
        "pruned to the manifest's partitions, and compare row counts. Exit status 1 if a "
        "partition is not visible within --timeout or a count differs.",
    )
    _common(verify, uri_help="the instance to check (normally not the one the jobs wrote through)")
    verify.add_argument(
        "--timeout",
        type=positive_float,
        default=120.0,
        metavar="SECONDS",
        help="how long to wait for partitions to become visible (default 120)",
    )
    verify.add_argument(
        "--report", type=output_file, metavar="FILE", help="also write the results as JSON"
    )
    verify.add_argument(
        "--no-spark",
        action="store_true",
        help="skip the Spark read (Thrift checks only; no PySpark needed)",
    )
    _spark(verify)


def resolve_dates(
    args: argparse.Namespace, today: datetime.date | None = None
) -> list[datetime.date]:
    """The days a job covers, from --date / --start / --end / --days; errors name the mix."""
    date, start, end, days = args.date, args.start, args.end, args.days
    if date is not None:
        if start or end or days:
            raise PipelineError("--date cannot be combined with --start, --end or --days")
        return [date]
    if start is not None and end is not None:
        if days is not None:
            raise PipelineError("give two of --start, --end and --days, not all three")
    elif start is not None:
        if days is None:
            raise PipelineError("--start needs --end or --days")
        end = start + datetime.timedelta(days=days - 1)
    elif days is not None:
        end = end or today or datetime.datetime.now(datetime.timezone.utc).date()
        start = end - datetime.timedelta(days=days - 1)
    elif end is not None:
        raise PipelineError("--end needs --start or --days")
    else:
        raise PipelineError("which days? give --date, --start/--end or --days")
    if end < start:
        raise PipelineError(f"--end {end} is before --start {start}")
    n = (end - start).days + 1
    if n > MAX_DAYS:
        raise PipelineError(f"{n} days is more than the limit of {MAX_DAYS}")
    return [start + datetime.timedelta(days=i) for i in range(n)]


def manifest_path(args: argparse.Namespace) -> Path:
    """--manifest, else WAREHOUSE/_pipeline/DATABASE.json for a local warehouse."""
    if args.manifest:
        return Path(args.manifest)
    wh = str(args.warehouse)
    if wh.startswith("file://"):
        wh = wh[len("file://") :]
    elif wh.startswith("file:"):
        wh = wh[len("file:") :]
    elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", wh):
        raise PipelineError(f"the warehouse {wh} is not a local directory: give --manifest FILE")
    return Path(wh) / "_pipeline" / f"{args.database}.json"


def spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """--conf KEY=VALUE pairs as a dict."""
    out: dict[str, str] = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PipelineError(f"--conf takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out
