"""A PySpark pipeline that exercises the metastore the way a daily ETL deployment does.

Three jobs, run as ``hms-cache-proxy pipeline etl|backfill|verify`` (or
``python -m hms_cache_proxy.pipeline`` / ``spark-submit hms_cache_proxy/pipeline/__main__.py``):

- ``etl`` lands a day's files outside Spark's catalog and registers them with MSCK REPAIR, writes
  the day into a partitioned Parquet table with a static-partition INSERT OVERWRITE, aggregates it
  into a second table with a dynamic-partition insert and computes statistics;
- ``backfill`` adds many daily partitions in one dynamic-partition insert;
- ``verify`` polls a second instance until every partition the jobs committed is visible there,
  reports the visibility lag per partition, and reads the data back through that instance with
  partition pruning.

The jobs record what they committed, and when, in a JSON manifest (``manifest.py``) that
``verify`` checks against. PySpark is imported only when a Spark job runs (``session.py``): the
package and the CLI work without it.
"""
