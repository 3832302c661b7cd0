"""Hive's own Java client answered alike by a stock metastore 2.3.10 and by this service.

``tests/java/HmsScenario.java`` makes a fixed scenario of a few hundred calls through
HiveMetaStoreClient 2.3.10 (the client inside Spark, from PySpark's jars) and prints one
normalised line per call. It runs once against the stock Hive Metastore 2.3.10 and once against
this service, each on a fresh PostgreSQL database of its own, and the two outputs must agree
line by line, except for the calls in ALLOWED, each a difference docs/compatibility.md
documents.

It runs twice more through a sidecar (this service in upstream mode, its cache on): in front of
the stock metastore (no notification log: every call passes through) and in front of this
service (the cache follows its log); each must answer exactly as its upstream does directly.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.app import build_service
from hms_cache_proxy.bench.stock_hms import (
    StockMetastore,
    check_prerequisites,
    find_javac,
)
from hms_cache_proxy.bench.targets import create_stock_txn_tables
from hms_cache_proxy.config import Settings
from tests.support.server import running_service

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.stock]

SOURCE = Path(__file__).resolve().parents[1] / "java" / "HmsScenario.java"

# Calls whose answers may differ, by the name the program prints (the text after the line
# number, up to " | "), each naming the section of docs/compatibility.md that documents why.
_COMPARED = "Hive's own client, compared"
ALLOWED: dict[str, str] = {
    # create_database owner: the set_ugi user here, unset by 2.3 (Hive 4: the caller's UGI).
    "getDatabase jsc_db2": "Deviations (create_database owner)",
    # Hive 4 takes a non-blank description in alter_database; 2.3 keeps the old one.
    "alterDatabase": _COMPARED,
    "reread getDatabase": _COMPARED,
    "reread getDatabase upper case": _COMPARED,
    # Hive 4's validateName allows special characters in database and table names.
    "createDatabase bad name": "Deviations (Everything else ... validateName)",
    "createTable bad name": "Deviations (Everything else ... validateName)",
    # insert_only is Hive 3+; 2.3's TransactionalValidationListener refuses it, we check none.
    "createTable insert-only": "Deviations (create_table / alter_table transactional properties)",
    "getTable t_mm": "Deviations (create_table / alter_table transactional properties)",
    # Hive 4's IDL declares no exception for get_table_objects_by_name (2.3: UnknownDBException).
    "getTableObjectsByName missing db": "Deviations (get_table_objects_by_name) and " + _COMPARED,
    # 2.3 fails inside (INTERNAL_ERROR); we answer the declared MetaException.
    "listPartitionNames missing table": "Policy (Hive's bugs and crashes are not copied)",
    # Partition-filter LIKE: a JDOQL matches() regex in 2.3, SQL LIKE in Hive 4 and here.
    'listPartitionsByFilter ds like "2024-01-0%"': "Small calls (LIKE) and " + _COMPARED,
    'getNumPartitionsByFilter ds like "2024-01-0%"': "Small calls (LIKE) and " + _COMPARED,
    # Hive 3 made GetOpenTxnsResponse.open_txns a list; 2.3's client reads only a set.
    "getValidTxns": _COMPARED,
    "getValidTxns current": _COMPARED,
    "getValidTxns after": _COMPARED,
    # A second request for a queued compaction: Hive 4 answers id -1, "refused".
    "compact2 again": "Transactions: the compaction queue, locks",
    # Role errors arrive as the declared MetaException; 2.3 fails inside.
    "create_role again": "Roles and privileges",
    # PySpark's jars have no DbNotificationListener: the stock server logs no events.
    "getNextNotification": _COMPARED,
    # The partition value whitelist is only what a client sets with setMetaConf here; 2.3
    # reads it once from its own configuration.
    "validatePartitionNameCharacters whitelisted": "Deviations (partition value whitelist)",
    "add_partition bad value": "Deviations (partition value whitelist)",
    # Hive 4 keeps constraint names per table; 2.3 refuses a name another table uses.
    "addPrimaryKey name taken": _COMPARED,
    # 2.3 fails inside on a missing destination table (TApplicationException); Hive 4 and this
    # service answer the declared exception.
    "exchange_partition missing table": "Policy (Hive's bugs and crashes are not copied)",
    # 2.3 ignores alter_database on a missing database.
    "alterDatabase missing": "Policy (Hive's bugs and crashes are not copied)",
}

_LINE = re.compile(r"^(\d+) (.*?) \| (.*)$")


@dataclass
class Run:
    lines: list[str]
    times: list[str]
    seconds: float


@dataclass
class Runs:
    stock: Run
    ours: Run
    stock_sidecar: Run  # through a sidecar in front of the stock metastore
    ours_sidecar: Run  # through a sidecar in front of this service


def _run_through_sidecar(classes: Path, upstream_uri: str, warehouse: Path, workdir: Path) -> Run:
    sidecar = build_service(
        Settings(upstream_uri=upstream_uri, host="127.0.0.1", port=0, metrics_port=None)
    )
    sidecar.start_background()
    try:
        return _run(classes, f"thrift://127.0.0.1:{sidecar.port}", warehouse, workdir)
    finally:
        sidecar.stop(grace_seconds=5)


def _compile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    java, jars, _driver = check_prerequisites()
    classes = tmp_path_factory.mktemp("java-scenario-classes")
    subprocess.run(
        [str(find_javac(java)), "-nowarn", "-d", str(classes), "-cp", str(jars / "*"), str(SOURCE)],
        check=True,
        capture_output=True,
    )
    return classes


def _run(classes: Path, uri: str, warehouse: Path, workdir: Path) -> Run:
    java, jars, _driver = check_prerequisites()
    out, times = workdir / "result.txt", workdir / "times.txt"
    started = time.perf_counter()
    proc = subprocess.run(
        [
            str(java),
            "-Xmx512m",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            os.pathsep.join([str(classes), str(jars / "*")]),
            "HmsScenario",
            uri,
            str(warehouse),
            str(out),
            str(times),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    assert proc.returncode == 0, f"HmsScenario failed against {uri}:\n{proc.stderr[-4000:]}"
    return Run(out.read_text().splitlines(), times.read_text().splitlines(), seconds)


@pytest.fixture(scope="module")
def runs(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory, stock_hms_prerequisites: None
) -> Iterator[Runs]:
    classes = _compile(tmp_path_factory)
    base = tmp_path_factory.mktemp("java-scenario")
    urls = [pg_server.new_database() for _ in range(4)]
    done: dict[str, Run] = {}
    try:
        for name, url in zip(("stock", "stock_sidecar"), urls[:2], strict=True):
            # The stock server builds Hive 2.3's schema itself; its transaction tables are made
            # as Hive 2.3's TxnDbUtil makes them (the benchmarks do the same).
            create_stock_txn_tables(url)
            work = base / name
            work.mkdir()
            with StockMetastore.start(
                url,
                workdir=work,
                warehouse_dir=work / "warehouse",
                jvm_args=["-XX:TieredStopAtLevel=1"],
                # A refused write (a duplicate key) is retried by 2.3's RetryingHMSHandler, by
                # default 10 times 2 s apart, before the same answer comes back: 20 s a call.
                extra_settings={"hive.hmshandler.retry.interval": "10ms"},
            ) as stock:
                run = _run_through_sidecar if name.endswith("sidecar") else _run
                done[name] = run(classes, stock.uri, work / "warehouse", work)
        for name, url in zip(("ours", "ours_sidecar"), urls[2:], strict=True):
            work = base / name
            (work / "warehouse").mkdir(parents=True)
            with running_service(url, work / "warehouse") as service:
                run = _run_through_sidecar if name.endswith("sidecar") else _run
                done[name] = run(
                    classes, f"thrift://127.0.0.1:{service.port}", work / "warehouse", work
                )
        yield Runs(**done)
    finally:
        for url in urls:
            pg_server.drop_database(url.rsplit("/", 1)[1])


def _split(line: str) -> tuple[str, str]:
    match = _LINE.match(line)
    assert match, f"not a scenario line: {line!r}"
    return match.group(2), match.group(3)


def _timings(run: Run) -> str:
    """Total of the per-call times, the function calls' share, and the slowest calls."""
    timed = []
    for line in run.times:
        head, _, rest = line.rpartition(" ")
        name, _, ms = head.rpartition(" ")
        if rest == "ms" and not line.startswith("total"):
            timed.append((float(ms), name.split(" ", 1)[1]))
    functions = sum(ms for ms, name in timed if "Function" in name)
    slowest = ", ".join(f"{name} {ms:.0f} ms" for ms, name in sorted(timed, reverse=True)[:5])
    return (
        f"{len(timed)} calls in {sum(ms for ms, _ in timed):.0f} ms "
        f"(function calls {functions:.0f} ms); slowest: {slowest}"
    )


def test_same_calls_in_the_same_order(runs: Runs) -> None:
    stock, ours = runs.stock, runs.ours
    assert len(stock.lines) >= 350
    names = [_split(x)[0] for x in stock.lines]
    assert len(set(names)) == len(names), "call names must be unique (ALLOWED names them)"
    assert [_split(x)[0] for x in stock.lines] == [_split(x)[0] for x in ours.lines]


def test_answers_differ_only_where_documented(runs: Runs) -> None:
    stock, ours = runs.stock, runs.ours
    for run, who in ((stock, "stock 2.3.10"), (ours, "hms-cache-proxy")):
        print(f"{who}: {_timings(run)}; JVM run {run.seconds:.1f} s")
    unexpected = []
    for a, b in zip(stock.lines, ours.lines, strict=True):
        name, stock_answer = _split(a)
        _, our_answer = _split(b)
        if stock_answer != our_answer and name not in ALLOWED:
            unexpected.append(f"- {a}\n+ {b}")
    assert not unexpected, (
        f"{len(unexpected)} answers differ (- stock 2.3.10, + this service):\n"
        + "\n".join(unexpected)
    )


def test_allowed_differences_are_still_differences(runs: Runs) -> None:
    """An entry of ALLOWED that now agrees is stale and should go."""
    stock, ours = runs.stock, runs.ours
    answers = {
        _split(a)[0]: (_split(a)[1], _split(b)[1])
        for a, b in zip(stock.lines, ours.lines, strict=True)
    }
    stale = [name for name in ALLOWED if name in answers and answers[name][0] == answers[name][1]]
    missing = [name for name in ALLOWED if name not in answers]
    assert not stale and not missing, f"stale: {stale}; not in the scenario: {missing}"


def test_a_sidecar_in_front_of_stock_answers_as_stock_does(runs: Runs) -> None:
    _same(runs.stock, runs.stock_sidecar, "stock 2.3.10", "a sidecar in front of it")


def test_a_sidecar_in_front_of_this_service_answers_as_it_does(runs: Runs) -> None:
    _same(runs.ours, runs.ours_sidecar, "hms-cache-proxy", "a sidecar in front of it")


def _same(direct: Run, through: Run, upstream: str, sidecar: str) -> None:
    print(f"{sidecar} of {upstream}: {_timings(through)}; JVM run {through.seconds:.1f} s")
    differ = [f"- {a}\n+ {b}" for a, b in zip(direct.lines, through.lines, strict=False) if a != b]
    assert len(direct.lines) == len(through.lines) and not differ, (
        f"{len(differ)} answers differ (- {upstream}, + {sidecar}):\n" + "\n".join(differ)
    )


def test_allowed_entries_name_sections_of_compatibility_md() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
    headings = [line[3:].strip() for line in doc.read_text().splitlines() if line.startswith("## ")]
    assert _COMPARED in headings
    unknown = {
        call: where
        for call, where in ALLOWED.items()
        if not any(where.startswith(h) for h in headings)
    }
    assert not unknown, f"ALLOWED entries naming no section of {doc.name}: {unknown}"
