"""An ad-hoc Spark session through one metastore URI that lives across restarts of the
metastores behind it. Started by test_spark_sidecar.py as its own process:

    python spark_session_across_restarts.py thrift://127.0.0.1:9083 /tmp/warehouse

It writes a partitioned Parquet table, prints ``RESTART`` and waits for a line on stdin (the
test restarts the instances meanwhile), writes one more partition, reads everything back and
prints one ``RESULT-JSON`` line.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession


def main(uri: str, warehouse: str) -> None:
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("hms-cache-proxy-session-across-restarts")
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sql("CREATE DATABASE IF NOT EXISTS adhoc")
    spark.sql(
        "CREATE TABLE adhoc.sales (id INT, amount DOUBLE) PARTITIONED BY (day STRING) "
        "STORED AS PARQUET"
    )
    spark.sql("INSERT INTO adhoc.sales PARTITION (day='d1') VALUES (1, 1.5), (2, 2.5)")
    spark.sql("INSERT INTO adhoc.sales PARTITION (day='d2') VALUES (3, 3.5)")
    before = [r[0] for r in spark.sql("SHOW PARTITIONS adhoc.sales").collect()]
    print("RESTART", flush=True)
    sys.stdin.readline()
    spark.sql("INSERT INTO adhoc.sales PARTITION (day='d3') VALUES (4, 4.5)")
    after = [r[0] for r in spark.sql("SHOW PARTITIONS adhoc.sales").collect()]
    rows = spark.sql(
        "SELECT day, count(*), sum(amount) FROM adhoc.sales GROUP BY day ORDER BY day"
    ).collect()
    result = {
        "before": before,
        "after": after,
        "rows": [[r[0], r[1], r[2]] for r in rows],
    }
    print("RESULT-JSON " + json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
