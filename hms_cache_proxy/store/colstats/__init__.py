"""Column-statistics rules without SQL: the accuracy flag, rows <-> Thrift objects, merging and
aggregation. The SQL store (sql/stats_reads.py, sql/stats_writes.py) and the cache
(cached/stats_cache.py) both answer through them, so their answers agree."""
