"""The Spark session the jobs use: Hive support through a remote metastore.

PySpark is imported here, on first use, so that the rest of the package (and the CLI's help and
argument checks) work without the ``spark`` extra installed.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from hms_cache_proxy.pipeline.errors import PipelineError

INSTALL_HINT = "pip install 'hms-cache-proxy[spark]'"


def require_pyspark() -> Any:
    """The ``pyspark.sql`` module, or a PipelineError saying how to install it."""
    try:
        import pyspark.sql
    except ImportError as exc:
        raise PipelineError(
            f"the pipeline's Spark jobs need PySpark, which is not installed ({exc}): "
            f"{INSTALL_HINT} (PySpark also needs Java 17 or later)"
        ) from None
    return pyspark.sql


def settings(metastore_uri: str, warehouse: str) -> dict[str, str]:
    """What a Spark job needs to use this service as its metastore (docs/pipeline.md)."""
    return {
        # The metastore to talk to; without it Spark starts an embedded Derby metastore.
        "spark.hadoop.hive.metastore.uris": metastore_uri,
        # Where managed tables live; must be the same path the service's --warehouse-dir names.
        "spark.sql.warehouse.dir": warehouse,
        # Dynamic-partition inserts (PARTITION (ds, country)) without a static leading key
        # (Hive's own insert path checks it; spark.hadoop.* reaches Hive's configuration).
        "spark.hadoop.hive.exec.dynamic.partition": "true",
        "spark.hadoop.hive.exec.dynamic.partition.mode": "nonstrict",
        # INSERT OVERWRITE ... PARTITION (ds) replaces only the partitions it writes.
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        # The default, stated: partition filters go to the metastore (get_partitions_by_filter).
        "spark.sql.hive.metastorePartitionPruning": "true",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "2",
    }


def build(
    app_name: str,
    metastore_uri: str,
    warehouse: str,
    master: str | None = None,
    extra: dict[str, str] | None = None,
) -> Any:
    """A SparkSession with Hive support on ``metastore_uri``; ``extra`` overrides settings."""
    sql = require_pyspark()
    # Python workers (if any) run on this interpreter, not whatever `python3` is on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = sql.SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**settings(metastore_uri, warehouse), **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
