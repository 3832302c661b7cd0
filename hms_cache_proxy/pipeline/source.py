"""The pipeline's tables and its deterministic source data.

Events are generated in Spark SQL from (day, row number) with Spark's seeded murmur3 ``hash``,
so a day always has the same rows: re-running a day rewrites identical data, and the row
counts ``verify`` expects are known (``rows_per_day`` per day).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

COUNTRIES = ("US", "DE", "FR", "BR", "IN", "JP", "GB", "NG")
USERS = 500

EVENT_COLUMNS = "event_id STRING, user_id INT, country STRING, amount DOUBLE"


def ddl(database: str, landing: str) -> list[str]:
    """CREATE statements for the database and its three tables (idempotent)."""
    return [
        f"CREATE DATABASE IF NOT EXISTS {database}",
        # Where files arrive from outside Spark; registered by MSCK REPAIR TABLE.
        f"CREATE EXTERNAL TABLE IF NOT EXISTS {database}.raw_events ({EVENT_COLUMNS}) "
        f"PARTITIONED BY (ds STRING) STORED AS PARQUET LOCATION '{landing}'",
        f"CREATE TABLE IF NOT EXISTS {database}.events ({EVENT_COLUMNS}) "
        "PARTITIONED BY (ds STRING) STORED AS PARQUET",
        f"CREATE TABLE IF NOT EXISTS {database}.daily_country "
        "(events BIGINT, users BIGINT, amount DOUBLE) "
        "PARTITIONED BY (ds STRING, country STRING) STORED AS PARQUET",
    ]


def events_sql(days: Sequence[datetime.date], rows_per_day: int, with_ds: bool = True) -> str:
    """A SELECT producing ``rows_per_day`` events for each day (``ds`` last if ``with_ds``)."""
    values = ", ".join(f"('{d.isoformat()}')" for d in days)
    countries = ", ".join(f"'{c}'" for c in COUNTRIES)
    ds = ", ds" if with_ds else ""
    return (
        "SELECT concat(ds, '-', id) AS event_id, "
        f"CAST(pmod(hash(ds, id), {USERS}) AS INT) AS user_id, "
        f"element_at(array({countries}), CAST(pmod(hash(ds, id, 1), {len(COUNTRIES)}) AS INT) + 1)"
        " AS country, "
        "CAST(pmod(hash(ds, id, 2), 100000) AS DOUBLE) / 100 AS amount"
        f"{ds} FROM range({rows_per_day}) CROSS JOIN (VALUES {values}) AS d(ds)"
    )


def partition_name(**values: str) -> str:
    """Hive's partition name for simple values (``ds=2024-03-01/country=US``)."""
    return "/".join(f"{k}={v}" for k, v in values.items())
