"""Runs the Spark statements of docs/client-calls.md against a metastore and records what happened.

Started by test_spark.py as its own process (one Spark JVM per metastore), with the metastore
URI and a warehouse directory. After every statement it records the statement's rows and a
snapshot of the metastore state read through an Apache Thrift client, and prints one JSON
document at the end, which the test checks.

    python spark_statements.py thrift://127.0.0.1:9083 /tmp/warehouse
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.apache_thrift import apache_client  # noqa: E402


def _exists(uri: str | None) -> bool:
    return bool(uri) and Path(uri.removeprefix("file:")).exists()


def directories(warehouse: str) -> list[str]:
    """Every directory below the warehouse, relative to it."""
    root = Path(warehouse)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_dir())


def snapshot(uri: str) -> dict[str, Any]:
    """What the metastore holds for database `d`: tables, their columns/params, partitions."""
    host, port = uri.removeprefix("thrift://").split(":")
    client, transport = apache_client(host, int(port))
    try:
        state: dict[str, Any] = {"databases": sorted(client.get_all_databases())}
        if "d" not in state["databases"]:
            return state
        db = client.get_database("d")
        state["d_location"] = db.locationUri
        state["d_location_exists"] = _exists(db.locationUri)
        tables = {}
        for name in sorted(client.get_all_tables("d")):
            t = client.get_table("d", name)
            parts = client.get_partitions("d", name, -1) if t.partitionKeys else []
            tables[name] = {
                "type": t.tableType,
                "location": t.sd.location,
                "location_exists": _exists(t.sd.location),
                "columns": [(c.name, c.type) for c in t.sd.cols],
                "keys": [k.name for k in t.partitionKeys],
                "serde": t.sd.serdeInfo.serializationLib,
                "params": dict(t.parameters),
                "partitions": {
                    "/".join(
                        f"{k.name}={v}" for k, v in zip(t.partitionKeys, p.values, strict=False)
                    ): {
                        "location": p.sd.location,
                        "location_exists": _exists(p.sd.location),
                        "params": dict(p.parameters),
                        "columns": [c.name for c in p.sd.cols],
                    }
                    for p in parts
                },
            }
        state["tables"] = tables
        return state
    finally:
        transport.close()


def main() -> None:
    uri, warehouse = sys.argv[1], sys.argv[2]
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("hms-cache-proxy-statements")
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    statements = [
        "CREATE DATABASE d",
        "CREATE TABLE d.t (id INT, name STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET",
        "INSERT INTO d.t PARTITION (dt='2024-01-01') VALUES (1, 'a'), (2, 'b')",
        "INSERT INTO d.t PARTITION (dt='2024-01-02') VALUES (3, 'c')",
        "SHOW PARTITIONS d.t",
        "SELECT id, name, dt FROM d.t WHERE dt='2024-01-01' ORDER BY id",
        "ALTER TABLE d.t ADD COLUMNS (c STRING)",
        "ALTER TABLE d.t DROP PARTITION (dt='2024-01-02')",
        "ANALYZE TABLE d.t COMPUTE STATISTICS",
        "ANALYZE TABLE d.t PARTITION (dt) COMPUTE STATISTICS",
        "CREATE TABLE d.c STORED AS PARQUET AS SELECT id, name FROM d.t",
        "INSERT OVERWRITE TABLE d.c SELECT id + 10, name FROM d.t",
        "INSERT OVERWRITE TABLE d.t PARTITION (dt='2024-01-01') SELECT 9, 'z', 'q'",
        "@write-outside-spark dt=2024-01-03",
        "MSCK REPAIR TABLE d.t",
        "@write-outside-spark dt=2024-01-04",
        "ALTER TABLE d.t RECOVER PARTITIONS",
        "DESCRIBE FORMATTED d.t",
        "SHOW TABLES IN d",
        "SELECT id, name, c, dt FROM d.t ORDER BY dt, id",
        "SELECT id, name FROM d.c ORDER BY id",
        "DROP TABLE d.c",
        "DROP DATABASE d CASCADE",
    ]
    steps = []
    for stmt in statements:
        step: dict[str, Any] = {"statement": stmt}
        try:
            if stmt.startswith("@write-outside-spark"):
                # A partition directory written by something other than Spark's Hive path,
                # for MSCK REPAIR / RECOVER PARTITIONS to find.
                part = stmt.split()[1]
                location = spark.sql("DESCRIBE FORMATTED d.t").filter("col_name = 'Location'")
                table_dir = location.collect()[0]["data_type"].removeprefix("file:")
                spark.createDataFrame([(7, "x", "y")], "id INT, name STRING, c STRING").write.mode(
                    "overwrite"
                ).parquet(os.path.join(table_dir, part))
                step["rows"] = []
            else:
                step["rows"] = [
                    [None if v is None else str(v) for v in row]
                    for row in spark.sql(stmt).collect()
                ]
            step["ok"] = True
        except Exception as exc:  # noqa: BLE001 - recorded for the test to report
            step["ok"] = False
            step["error"] = str(exc)[:2000]
        step["state"] = snapshot(uri)
        step["dirs"] = directories(warehouse)
        steps.append(step)
    spark.stop()
    print("RESULT-JSON " + json.dumps(steps))


if __name__ == "__main__":
    main()
