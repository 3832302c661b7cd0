"""The PySpark pipeline end to end on two instances over one PostgreSQL database.

``hms-cache-proxy pipeline etl`` (two days) and ``backfill`` (twenty days) write through
instance A, each timing how long its partitions take to appear on instance B; ``verify`` then
checks everything through B: visibility, statistics and a pruned Spark read. One Spark JVM per
job (three in all); the tests below check the results of that one run, and the metastore state
read back from B with an Apache Thrift client.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.apache_thrift import apache_client
from tests.support.server import ROOT, ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.postgres]

ETL_DAYS = ["2024-03-01", "2024-03-02"]
ETL_ROWS = 200
BACKFILL_DAYS = [f"2024-01-{d:02d}" for d in range(1, 21)]
BACKFILL_ROWS = 5
SPARK = ["--master", "local[1]", "--conf", "spark.driver.memory=1g"]


# The three jobs run in one Python process, one after the other, each through the CLI's
# main(): each builds and stops its own SparkSession, but the JVM is started once (on this
# loaded 2-core machine a Spark JVM and its Hive client take most of a minute to start).
DRIVER = """
import json, sys
from hms_cache_proxy.cli import main
for label, argv in json.loads(sys.argv[1]):
    rc = main(argv)
    print(f"@@JOB {label} {rc}", flush=True)
    if rc:
        break
"""


def _jobs(tmp: Path, *jobs: tuple[str, str, list[str]]) -> dict[str, tuple[int, str]]:
    """Run ``hms-cache-proxy pipeline JOB ARGS`` for each (label, JOB, ARGS); (exit status,
    stdout) by label."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    common = ["--warehouse", str(tmp / "warehouse"), "--database", "shop", *SPARK]
    argvs = [(label, ["pipeline", job, *args, *common]) for label, job, args in jobs]
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=tmp,
    )
    (tmp / "jobs.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    results: dict[str, tuple[int, str]] = {}
    chunk: list[str] = []
    for line in proc.stdout.splitlines():
        m = re.match(r"@@JOB ([\w-]+) (\d+)$", line)
        if m:
            results[m.group(1)] = (int(m.group(2)), "\n".join(chunk))
            chunk = []
        else:
            chunk.append(line)
    for name, _, _ in jobs[:-1]:  # the last job's exit status is for its test to check
        assert results.get(name, (1,))[0] == 0, (
            f"pipeline {name} failed (exit {proc.returncode}), see {tmp / 'jobs.log'}:\n"
            + proc.stderr[-3000:]
        )
    results.setdefault(jobs[-1][0], (proc.returncode or 1, "\n".join(chunk)))
    return results


def _state(uri: str) -> dict[str, Any]:
    """What instance B answers for the pipeline's tables."""
    host, port = uri.removeprefix("thrift://").split(":")
    client, transport = apache_client(host, int(port))
    try:
        names = {
            t: sorted(client.get_partition_names("shop", t, -1))
            for t in ("raw_events", "events", "daily_country")
        }
        part_params = {
            ds: dict(client.get_partition("shop", "events", [ds]).parameters) for ds in ETL_DAYS
        }
        return {
            "names": names,
            "partition_params": part_params,
            "table_params": dict(client.get_table("shop", "events").parameters),
        }
    finally:
        transport.close()


@pytest.fixture(scope="module")
def pipeline(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    pytest.importorskip("pyspark")
    tmp = tmp_path_factory.mktemp("pipeline")
    url = pg_server.new_database()
    warehouse = tmp / "warehouse"
    a = ServerProcess(url, warehouse, tmp / "a.log")
    b = ServerProcess(url, warehouse, tmp / "b.log")
    try:
        etl = ["--metastore-uri", a.uri, "--start", ETL_DAYS[0], "--end", ETL_DAYS[-1]]
        etl += ["--rows-per-day", str(ETL_ROWS), "--observe-uri", b.uri]
        backfill = ["--metastore-uri", a.uri, "--start", BACKFILL_DAYS[0]]
        backfill += ["--days", str(len(BACKFILL_DAYS)), "--rows-per-day", str(BACKFILL_ROWS)]
        backfill += ["--observe-uri", b.uri]
        verify = ["--metastore-uri", b.uri, "--timeout", "60"]
        verify += ["--report", str(tmp / "report.json")]
        out: dict[str, Any] = {"tmp": tmp}
        rerun = ["--metastore-uri", a.uri, "--date", ETL_DAYS[-1], "--rows-per-day", str(ETL_ROWS)]
        rerun += ["--observe-uri", b.uri]
        out.update(
            _jobs(
                tmp,
                ("etl", "etl", etl),
                ("backfill", "backfill", backfill),
                ("etl-rerun", "etl", rerun),
                ("verify", "verify", verify),
            )
        )
        out["report"] = json.loads((tmp / "report.json").read_text())
        out["state"] = _state(b.uri)
        out["manifest"] = json.loads((warehouse / "_pipeline" / "shop.json").read_text())
        yield out
    finally:
        a.stop()
        b.stop()
        pg_server.drop_database(url.rsplit("/", 1)[1])


def test_verify_passes_through_the_other_instance(pipeline: dict[str, Any]) -> None:
    rc, out = pipeline["verify"]
    assert rc == 0, f"verify failed, see {pipeline['tmp'] / 'jobs.log'}:\n{out[-3000:]}"
    assert pipeline["report"]["problems"] == []


def test_every_committed_partition_is_visible_on_the_other_instance(
    pipeline: dict[str, Any],
) -> None:
    names = pipeline["state"]["names"]
    assert names["events"] == sorted(f"ds={d}" for d in ETL_DAYS + BACKFILL_DAYS)
    assert names["raw_events"] == [f"ds={d}" for d in ETL_DAYS]
    assert {n.split("/")[0] for n in names["daily_country"]} == {f"ds={d}" for d in ETL_DAYS}
    parts = pipeline["report"]["partitions"]
    assert len(parts) == len(names["events"]) + len(names["raw_events"]) + len(
        names["daily_country"]
    )
    assert all(p["visible_at"] is not None for p in parts)
    # Observed by the writing jobs right after each commit: the lag is measured, not bounded.
    assert all(p["exact"] for p in parts)
    assert pipeline["report"]["summary"]["exact"]["count"] == len(parts)


def test_row_counts_read_with_spark_through_the_other_instance(pipeline: dict[str, Any]) -> None:
    out = pipeline["verify"][1]
    n = len(ETL_DAYS) * ETL_ROWS + len(BACKFILL_DAYS) * BACKFILL_ROWS
    assert f"spark read events: {len(ETL_DAYS) + len(BACKFILL_DAYS)} partitions, {n} rows" in out
    assert f"spark read raw_events: {len(ETL_DAYS)} partitions, {len(ETL_DAYS) * ETL_ROWS}" in out
    rows = {
        p["partition"]: p["rows"]
        for p in pipeline["report"]["partitions"]
        if p["table"] == "events"
    }
    assert rows == {
        **{f"ds={d}": ETL_ROWS for d in ETL_DAYS},
        **{f"ds={d}": BACKFILL_ROWS for d in BACKFILL_DAYS},
    }


def test_statistics_are_visible_on_the_other_instance(pipeline: dict[str, Any]) -> None:
    for ds, params in pipeline["state"]["partition_params"].items():
        assert params.get("spark.sql.statistics.numRows") == str(ETL_ROWS), (ds, params)
    table = pipeline["state"]["table_params"]
    n = len(ETL_DAYS) * ETL_ROWS + len(BACKFILL_DAYS) * BACKFILL_ROWS
    assert table.get("spark.sql.statistics.numRows") == str(n)
    for col in ("user_id", "country", "amount"):
        assert any(k.startswith(f"spark.sql.statistics.colStats.{col}.") for k in table), col


def test_partitions_written_outside_spark_are_registered_by_repair(
    pipeline: dict[str, Any],
) -> None:
    repaired = [p for p in pipeline["report"]["partitions"] if p["repaired"]]
    assert sorted(p["partition"] for p in repaired) == [f"ds={d}" for d in ETL_DAYS]
    assert all(p["table"] == "raw_events" and p["visible_at"] for p in repaired)
    landing = pipeline["tmp"] / "warehouse" / "landing" / "shop" / "raw_events"
    assert sorted(p.name for p in landing.iterdir() if p.is_dir()) == [f"ds={d}" for d in ETL_DAYS]


def test_backfill_reports_its_partition_rate(pipeline: dict[str, Any]) -> None:
    out = pipeline["backfill"][1]
    m = re.search(
        r"backfill: (\d+) partitions of shop\.events \((\d+) new, .*: ([\d.]+) "
        r"partitions/s",
        out,
    )
    assert m, out
    assert (int(m.group(1)), int(m.group(2))) == (len(BACKFILL_DAYS), len(BACKFILL_DAYS))
    assert float(m.group(3)) > 0
    jobs = {
        e["job"]
        for k, e in pipeline["manifest"]["partitions"].items()
        if k.startswith("events/ds=2024-01-")
    }
    assert jobs == {"backfill"}


def test_rerunning_a_day_leaves_the_same_state(pipeline: dict[str, Any]) -> None:
    assert pipeline["etl-rerun"][0] == 0
    day = ETL_DAYS[-1]
    entries = {k: e for k, e in pipeline["manifest"]["partitions"].items() if f"ds={day}" in k}
    assert entries["events/ds=" + day]["rows"] == ETL_ROWS  # counted by verify's Spark read
    assert len([k for k in entries if k.startswith("daily_country/")]) == len(
        [n for n in pipeline["state"]["names"]["daily_country"] if n.startswith(f"ds={day}/")]
    )
    # Overwritten, not appended: the re-run day has as many data files as the other day.
    events = pipeline["tmp"] / "warehouse" / "shop.db" / "events"
    files = {d: len(list((events / f"ds={d}").glob("part-*"))) for d in ETL_DAYS}
    assert files[day] == files[ETL_DAYS[0]], files
