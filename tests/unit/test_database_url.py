"""A bare ``postgresql://`` URL (what the README, compose and the image's users write) must use
psycopg2, the driver the package depends on: SQLAlchemy 2.1 picks psycopg 3 for it, which a
clean install (the container image) does not have."""

from __future__ import annotations

import pytest

from hms_cache_proxy.dburl import resolve
from hms_cache_proxy.store.db.engine import Database


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("postgresql://hive:hive@postgres:5432/metastore", "postgresql+psycopg2"),
        ("postgresql+psycopg2://hive@db/metastore", "postgresql+psycopg2"),
        ("postgresql+psycopg://hive@db/metastore", "postgresql+psycopg"),
        ("sqlite:////var/lib/hms-cache-proxy/hms-cache-proxy.db", "sqlite"),
    ],
)
def test_database_url_names_psycopg2_for_a_bare_postgresql_url(given: str, driver: str) -> None:
    assert resolve(given).drivername == driver


def test_database_engines_for_a_bare_postgresql_url_use_psycopg2() -> None:
    db = Database("postgresql://hive:hive@127.0.0.1:1/metastore")  # engines connect lazily
    try:
        assert db.read_engine.dialect.driver == "psycopg2"
        assert db.write_engine.dialect.driver == "psycopg2"
        assert db.url.password == "hive"
    finally:
        db.read_engine.dispose()
        db.write_engine.dispose()
