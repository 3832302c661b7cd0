"""hms-cache-proxy: a Hive Metastore with a transactionally consistent cache."""

__version__ = "0.1.0"
