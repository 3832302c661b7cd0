"""Spark writing through one instance while another Spark session reads through a second
instance, both caching, on one PostgreSQL database (each Spark session its own JVM/process).

The reader sees the writer's rounds arrive in order (never a partition without its row, never
going back), ends with exactly the writer's state, and afterwards both instances answer Thrift
reads exactly as the database path does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.store.db.engine import Database
from tests.support.apache_thrift import apache_client
from tests.support.cache import ours
from tests.support.server import ServerProcess
from tests.support.stores import sql_store

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.postgres]

HERE = Path(__file__).resolve().parent
ROUNDS = 4


def _start(role: str, uri: str, warehouse: Path, log: Path) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    return subprocess.Popen(
        [sys.executable, str(HERE / "spark_cache_jobs.py"), role, uri, str(warehouse), str(ROUNDS)],
        stdout=subprocess.PIPE,
        stderr=open(log, "w"),  # noqa: SIM115 - closed with the process
        text=True,
        env=env,
    )


def _result(proc: subprocess.Popen[str], log: Path) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=600)
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT-JSON ")]
    tail = log.read_text()[-3000:]
    assert proc.returncode == 0 and lines, f"spark job failed, see {log}:\n{tail}"
    return json.loads(lines[-1].removeprefix("RESULT-JSON "))


def test_spark_writes_through_one_instance_and_reads_through_another(
    pg_server: Any, tmp_path: Path
) -> None:
    pytest.importorskip("pyspark")
    url = pg_server.new_database()
    warehouse = tmp_path / "warehouse"
    a = ServerProcess(url, warehouse, tmp_path / "a.log")
    b = ServerProcess(url, warehouse, tmp_path / "b.log")
    try:
        reader = _start("reader", b.uri, warehouse, tmp_path / "reader.log")
        writer = _start("writer", a.uri, warehouse, tmp_path / "writer.log")
        wrote = _result(writer, tmp_path / "writer.log")
        read = _result(reader, tmp_path / "reader.log")
        assert wrote["partitions"] == [f"dt=d{i:02d}" for i in range(ROUNDS)]
        assert wrote["rows"] == ROUNDS
        assert read["partitions"] == wrote["partitions"]
        seen = [tuple(s) for s in read["seen"]]
        assert seen and seen[-1] == (ROUNDS, ROUNDS, True)
        for parts, rows, _ in seen:
            # Rows are counted after the partitions are listed, and a partition's data is
            # written before it is added: never fewer rows than partitions seen.
            assert rows >= parts, seen
        assert [s[0] for s in seen] == sorted(s[0] for s in seen), seen  # never backwards
        store = sql_store(Database(url), f"file:{warehouse}")
        try:
            for srv in (a, b):
                c, tr = apache_client("127.0.0.1", srv.port)
                try:
                    assert ours(c.get_table("c", "t")) == store.get_table("hive", "c", "t")
                    assert ours(c.get_partitions("c", "t", -1)) == store.get_partitions(
                        "hive", "c", "t"
                    )
                finally:
                    tr.close()
        finally:
            store.db.dispose()
    finally:
        a.stop()
        b.stop()
