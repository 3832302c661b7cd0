"""``hms-cache-proxy check``: its options, and the run from the command line (exit 1 when any
invariant was violated, 2 on bad options or a run that could not be made)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from hms_cache_proxy.argtypes import (
    non_negative_float,
    output_directory,
    output_file,
    positive_float,
)
from hms_cache_proxy.check.faults import KINDS, parse_kinds

DESCRIPTION = (
    "Run a consistency check: INSTANCES caching hms-cache-proxy serve processes (plus one "
    "with the cache off: the database path) on one PostgreSQL; CLIENTS threads run random "
    "transactional writes (multi-statement, some aborted, some setting parameters with "
    "commit_txn keyValue or column statistics), plain creates/alters/renames/drops/re-creates "
    "and truncates of tables and partitions, and reads with snapshots, while faults are "
    "injected (loads are slowed by failpoints and the cache budget is tiny by default). Every call "
    "is recorded with its invocation and completion time and checked afterwards against "
    "docs/design.md's invariants; caches are compared with the database path at the end (and at "
    "checkpoints). Prints a summary and every violation with its object's history; exit "
    "status 1 when there are violations. See docs/consistency.md."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--instances",
        type=int,
        default=2,
        metavar="N",
        help="caching instances (default 2); one more with the cache off answers the audit",
    )
    p.add_argument(
        "--sidecars",
        type=int,
        default=0,
        metavar="N",
        help="instances in upstream mode (with their cache), sidecar j in front of caching "
        "instance j mod --instances; clients are spread over both tiers and kill faults hit "
        "both (default 0); their reads are judged as eventual (--eventual-bound)",
    )
    p.add_argument(
        "--clients",
        type=int,
        default=6,
        metavar="N",
        help="client threads, spread over the instances (default 6)",
    )
    p.add_argument(
        "--operations",
        type=int,
        metavar="N",
        help="stop after N client calls (every Thrift call counts, except check_lock polls "
        "while a lock is waited for)",
    )
    p.add_argument(
        "--duration",
        type=float,
        metavar="SECONDS",
        help="stop after this long (default 30 when --operations is not given; with both, "
        "whichever comes first); a run lasts until each fault kind was injected once (at "
        "most 60 s more per kind)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of clients and faults")
    p.add_argument(
        "--faults",
        default="all",
        metavar="LIST",
        help=f"comma-separated fault kinds, 'all' (default) or 'none': {', '.join(KINDS)}. "
        "kill: SIGKILL an instance and start it again; pg-restart: restart PostgreSQL "
        "(not with --database-url); stall: stall an instance's poller; purge: purge the "
        "notification log behind a stalled instance; drop: cut client connections mid-call; "
        "churn: admin refreshes and flushes of random tables, back to back",
    )
    p.add_argument(
        "--fault-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="mean time between faults (default 5); kinds are injected in turn",
    )
    p.add_argument(
        "--stall-seconds",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how long a stall, a purge's stall and a connection-dropping spell last (default 2)",
    )
    p.add_argument(
        "--database-url",
        metavar="URL",
        help="an empty PostgreSQL metastore database to run on (default: start a throwaway "
        "PostgreSQL server and remove it afterwards)",
    )
    p.add_argument(
        "--consistency",
        choices=["eventual", "strong"],
        default="strong",
        help="the instances' consistency setting (default strong: every read must see every "
        "write acknowledged before it began; eventual: within --eventual-bound)",
    )
    p.add_argument(
        "--eventual-bound",
        type=positive_float,
        default=30.0,
        metavar="SECONDS",
        help="in eventual mode, how far a read may lag an acknowledged write (default 30)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=non_negative_float,
        default=0.0,
        metavar="SECONDS",
        help="pause the clients this often and compare every cache with the database path "
        "(default 0: only at the end)",
    )
    p.add_argument(
        "--cache-max-bytes",
        type=int,
        default=20_000,
        metavar="N",
        help="the caching instances' cache_max_bytes (default 20000: a tiny budget, so tables "
        "are evicted and loaded again all the time; 0: the service's default)",
    )
    p.add_argument(
        "--failpoints",
        default=None,
        metavar="SPEC",
        help="the caching instances' failpoints (name=action;...: see "
        "hms_cache_proxy/failpoints.py); default: slow loads and applies "
        "(load.after_snapshot=50%%sleep(0.1);poller.before_apply=10%%sleep(0.02)); "
        "'none' for none",
    )
    p.add_argument(
        "--report", metavar="FILE", help="write the full report (all violations) as JSON here"
    )
    p.add_argument(
        "--workdir",
        type=output_directory,
        metavar="DIR",
        help="keep the instances' logs here (default: a temporary directory, removed)",
    )


def _failpoints(value: str | None) -> str:
    from hms_cache_proxy.check.runner import SLOW_LOADS

    if value is None:
        return SLOW_LOADS
    return "" if value.strip().lower() in ("", "none") else value


def run(args: argparse.Namespace) -> int:
    from hms_cache_proxy.check.report import text
    from hms_cache_proxy.check.runner import CheckConfig, run_check

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.report:  # written at the end: a path that cannot be written must not cost the run
        try:
            output_file(args.report)
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"check --report: {exc}") from None
    duration = args.duration
    if args.operations is None and duration is None:
        duration = 30.0
    cfg = CheckConfig(
        instances=args.instances,
        clients=args.clients,
        sidecars=args.sidecars,
        operations=args.operations,
        duration=duration,
        seed=args.seed,
        faults=parse_kinds(args.faults),
        database_url=args.database_url,
        consistency=args.consistency,
        fault_interval=args.fault_interval,
        stall_seconds=args.stall_seconds,
        eventual_bound=args.eventual_bound,
        checkpoint_every=args.checkpoint_every,
        workdir=args.workdir,
        cache_max_bytes=args.cache_max_bytes,
        failpoints=_failpoints(args.failpoints),
    )
    try:
        report = run_check(cfg)
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - a run that could not be made: say why
        print(
            f"hms-cache-proxy check: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return 2
    if args.report:
        Path(args.report).write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(text(report))
    return 1 if report["violations"]["total"] else 0
