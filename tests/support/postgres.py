"""The throwaway PostgreSQL server lives in the package (the benchmark command uses it too)."""

from hms_cache_proxy.bench.postgres import (  # noqa: F401
    INSTALL_HINT,
    PostgresServer,
    PostgresUnavailable,
    find_bin_dir,
)
