"""Unmodified Spark (local mode, Hive support, built-in Hive 2.3 client) against the service.

Every statement of the Spark table in docs/client-calls.md runs through a real
`hms-cache-proxy serve` process, on SQLite and on PostgreSQL. The test checks the statements'
results and, after each one, the metastore state read back over Thrift, and the warehouse
directories on disk.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import ServerProcess

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"


def _run_spark(uri: str, warehouse: Path, log: Path) -> list[dict[str, Any]]:
    pytest.importorskip("pyspark")
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    proc = subprocess.run(
        [sys.executable, str(HERE / "spark_statements.py"), uri, str(warehouse)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    log.write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT-JSON ")]
    assert proc.returncode == 0 and lines, f"spark job failed:\n{proc.stderr[-5000:]}"
    return json.loads(lines[-1].removeprefix("RESULT-JSON "))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def spark_steps(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, dict[str, Any]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'metastore.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    warehouse = tmp_path / "warehouse"
    server = ServerProcess(url, warehouse, tmp_path / "server.log")
    try:
        steps = _run_spark(server.uri, warehouse, tmp_path / "spark.log")
    finally:
        server.stop()
    failed = [(s["statement"], s.get("error")) for s in steps if not s["ok"]]
    assert not failed, f"statements failed: {failed}\nserver log: {tmp_path / 'server.log'}"
    return {s["statement"]: s for s in steps}


def test_every_spark_statement_works_and_leaves_the_expected_metastore_state(
    spark_steps: dict[str, dict[str, Any]],
) -> None:
    s = spark_steps

    state = s["CREATE DATABASE d"]["state"]
    assert "d" in state["databases"]
    assert state["d_location_exists"]

    t = s["CREATE TABLE d.t (id INT, name STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET"]
    table = t["state"]["tables"]["t"]
    assert table["type"] == "MANAGED_TABLE"
    assert table["columns"] == [["id", "int"], ["name", "string"]]
    assert table["keys"] == ["dt"]
    assert table["serde"] == PARQUET_SERDE
    assert table["location_exists"]

    after_insert = s["INSERT INTO d.t PARTITION (dt='2024-01-02') VALUES (3, 'c')"]["state"]
    parts = after_insert["tables"]["t"]["partitions"]
    assert sorted(parts) == ["dt=2024-01-01", "dt=2024-01-02"]
    assert parts["dt=2024-01-01"]["location"].endswith("/d.db/t/dt=2024-01-01")

    assert s["SHOW PARTITIONS d.t"]["rows"] == [["dt=2024-01-01"], ["dt=2024-01-02"]]
    assert s["SELECT id, name, dt FROM d.t WHERE dt='2024-01-01' ORDER BY id"]["rows"] == [
        ["1", "a", "2024-01-01"],
        ["2", "b", "2024-01-01"],
    ]

    added = s["ALTER TABLE d.t ADD COLUMNS (c STRING)"]["state"]["tables"]["t"]
    assert added["columns"] == [["id", "int"], ["name", "string"], ["c", "string"]]

    dropped = s["ALTER TABLE d.t DROP PARTITION (dt='2024-01-02')"]["state"]["tables"]["t"]
    assert sorted(dropped["partitions"]) == ["dt=2024-01-01"]
    assert parts["dt=2024-01-02"]["location_exists"]
    dirs = s["ALTER TABLE d.t DROP PARTITION (dt='2024-01-02')"]["dirs"]
    assert "d.db/t/dt=2024-01-02" not in dirs and "d.db/t/dt=2024-01-01" in dirs

    analyzed = s["ANALYZE TABLE d.t COMPUTE STATISTICS"]["state"]["tables"]["t"]["params"]
    assert analyzed.get("spark.sql.statistics.numRows") == "2", analyzed
    part_stats = s["ANALYZE TABLE d.t PARTITION (dt) COMPUTE STATISTICS"]["state"]["tables"]["t"]
    assert (
        part_stats["partitions"]["dt=2024-01-01"]["params"].get("spark.sql.statistics.numRows")
        == "2"
    )

    ctas = s["CREATE TABLE d.c STORED AS PARQUET AS SELECT id, name FROM d.t"]["state"]["tables"]
    assert ctas["c"]["columns"] == [["id", "int"], ["name", "string"]]
    assert s["SELECT id, name FROM d.c ORDER BY id"]["rows"] == [["11", "a"], ["12", "b"]]

    rows = s["SELECT id, name, c, dt FROM d.t ORDER BY dt, id"]["rows"]
    assert rows == [
        ["9", "z", "q", "2024-01-01"],
        ["7", "x", "y", "2024-01-03"],
        ["7", "x", "y", "2024-01-04"],
    ]
    assert "dt=2024-01-03" in s["MSCK REPAIR TABLE d.t"]["state"]["tables"]["t"]["partitions"]
    recovered = s["ALTER TABLE d.t RECOVER PARTITIONS"]["state"]["tables"]["t"]["partitions"]
    assert "dt=2024-01-04" in recovered

    described = {r[0]: r[1] for r in s["DESCRIBE FORMATTED d.t"]["rows"]}
    assert described.get("Location", "").endswith("/d.db/t")
    assert described.get("Type") == "MANAGED"
    assert sorted(r[1] for r in s["SHOW TABLES IN d"]["rows"]) == ["c", "t"]

    assert "d.db/c" in s["SHOW TABLES IN d"]["dirs"]
    assert "c" not in s["DROP TABLE d.c"]["state"]["tables"]
    assert "d.db/c" not in s["DROP TABLE d.c"]["dirs"]

    final = s["DROP DATABASE d CASCADE"]
    assert "d" not in final["state"]["databases"]
    assert not any(d == "d.db" or d.startswith("d.db/") for d in final["dirs"])
