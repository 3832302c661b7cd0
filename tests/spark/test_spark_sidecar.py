"""Spark through a sidecar (an instance in upstream mode, its cache on) in front of a central
instance on PostgreSQL, with a restart of each in between: the pipeline's etl job writes through
the sidecar, both are restarted, its verify job reads everything back through the sidecar; an
ad-hoc session writes, lives through the restarts, writes again and reads it all back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark.test_pipeline import _jobs
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.postgres]

HERE = Path(__file__).resolve().parent
DAYS = ["2024-03-01", "2024-03-02"]


class Tiers:
    """A central instance and a sidecar in front of it, each restartable on its port."""

    def __init__(self, url: str, tmp: Path) -> None:
        self.url, self.tmp = url, tmp
        self.warehouse = tmp / "warehouse"
        self.central = ServerProcess(url, self.warehouse, tmp / "central.log")
        self.sidecar = ServerProcess(
            "", self.warehouse, tmp / "sidecar.log", upstream=self.central.uri
        )

    def restart_both(self) -> None:
        self.central.stop()
        self.central = ServerProcess(
            self.url, self.warehouse, self.tmp / "central.log", port=self.central.port
        )
        self.sidecar.stop()
        self.sidecar = ServerProcess(
            "",
            self.warehouse,
            self.tmp / "sidecar.log",
            port=self.sidecar.port,
            upstream=self.central.uri,
        )

    def stop(self) -> None:
        self.sidecar.stop()
        self.central.stop()


@pytest.fixture
def tiers(pg_server: Any, tmp_path: Path) -> Iterator[Tiers]:
    pytest.importorskip("pyspark")
    url = pg_server.new_database()
    t = Tiers(url, tmp_path)
    try:
        yield t
    finally:
        t.stop()
        pg_server.drop_database(url.rsplit("/", 1)[1])


def test_the_pipeline_through_a_sidecar_reads_back_what_it_wrote_after_restarts(
    tiers: Tiers, tmp_path: Path
) -> None:
    uri = tiers.sidecar.uri
    etl = ["--metastore-uri", uri, "--start", DAYS[0], "--end", DAYS[-1], "--rows-per-day", "50"]
    assert _jobs(tmp_path, ("etl", "etl", etl))["etl"][0] == 0
    tiers.restart_both()
    verify = ["--metastore-uri", uri, "--timeout", "60", "--report", str(tmp_path / "v.json")]
    status, out = _jobs(tmp_path, ("verify", "verify", verify))["verify"]
    assert status == 0, out
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["problems"] == [] and len(report["partitions"]) >= 2 * len(DAYS), report


def test_an_ad_hoc_session_through_a_sidecar_lives_through_restarts_and_reads_its_writes(
    tiers: Tiers, tmp_path: Path
) -> None:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    script = HERE / "spark_session_across_restarts.py"
    with subprocess.Popen(
        [sys.executable, str(script), tiers.sidecar.uri, str(tiers.warehouse)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "spark.log").open("w"),
        text=True,
        env=env,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.strip() == "RESTART":
                tiers.restart_both()
                proc.stdin.write("go\n")
                proc.stdin.flush()
        proc.wait(timeout=600)
    results = [ln for ln in lines if ln.startswith("RESULT-JSON ")]
    assert proc.returncode == 0 and results, (tmp_path / "spark.log").read_text()[-4000:]
    result = json.loads(results[-1].removeprefix("RESULT-JSON "))
    assert result["before"] == ["day=d1", "day=d2"]
    assert result["after"] == ["day=d1", "day=d2", "day=d3"]
    assert result["rows"] == [["d1", 2, 4.0], ["d2", 1, 3.5], ["d3", 1, 4.5]]
