"""The throwaway PgBouncer the tests start (it lives in the package: ``fanout`` starts one)."""

from hms_cache_proxy.bench.pgbouncer import PgBouncer, find_pgbouncer

__all__ = ["PgBouncer", "find_pgbouncer"]
