"""Spark jobs for test_spark_cache.py: a writer and a reader, each its own Spark JVM.

    python spark_cache_jobs.py writer thrift://127.0.0.1:A /tmp/warehouse ROUNDS
    python spark_cache_jobs.py reader thrift://127.0.0.1:B /tmp/warehouse ROUNDS

The writer creates ``c.t`` and inserts one row into a new partition per round, then adds a
column. The reader, against another metastore instance, lists partitions and counts rows until
it has seen every round and the new column, recording what it saw each time. Each prints one
``RESULT-JSON`` line at the end.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def session(uri: str, warehouse: str, name: str) -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName(name)
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def writer(uri: str, warehouse: str, rounds: int) -> dict[str, Any]:
    spark = session(uri, warehouse, "cache-writer")
    spark.sql("CREATE DATABASE IF NOT EXISTS c")
    spark.sql("CREATE TABLE c.t (id INT, v STRING) PARTITIONED BY (dt STRING) STORED AS PARQUET")
    for i in range(rounds):
        spark.sql(f"INSERT INTO c.t PARTITION (dt='d{i:02d}') VALUES ({i}, 'x{i}')")
    spark.sql("ALTER TABLE c.t ADD COLUMNS (extra STRING)")
    out = {
        "partitions": [r[0] for r in spark.sql("SHOW PARTITIONS c.t").collect()],
        "rows": spark.sql("SELECT count(*) FROM c.t").collect()[0][0],
    }
    spark.stop()
    return out


def reader(uri: str, warehouse: str, rounds: int, timeout: float = 240.0) -> dict[str, Any]:
    spark = session(uri, warehouse, "cache-reader")
    seen: list[tuple[int, int, bool]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dbs = [r[0] for r in spark.sql("SHOW DATABASES").collect()]
        if "c" not in dbs or "t" not in [r[1] for r in spark.sql("SHOW TABLES IN c").collect()]:
            time.sleep(0.2)
            continue
        spark.sql("REFRESH TABLE c.t")
        parts = len(spark.sql("SHOW PARTITIONS c.t").collect())
        rows = spark.sql("SELECT count(*) FROM c.t").collect()[0][0]
        columns = [r[0] for r in spark.sql("DESCRIBE c.t").collect()]
        seen.append((parts, rows, "extra" in columns))
        if parts == rounds and "extra" in columns:
            break
        time.sleep(0.1)
    out = {
        "seen": seen,
        "partitions": [r[0] for r in spark.sql("SHOW PARTITIONS c.t").collect()],
    }
    spark.stop()
    return out


def main() -> None:
    role, uri, warehouse, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    result = (writer if role == "writer" else reader)(uri, warehouse, rounds)
    print("RESULT-JSON " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
