"""The bench gives each of its targets a database of its own: the cache server starts on a fresh
one, not on what the db path's run left (dead rows, a grown notification log, its statistics),
so db path and cache are compared from the same starting state. --database-url alone puts both
of this service's servers on the one database it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from hms_cache_proxy.bench import targets
from hms_cache_proxy.bench.cases import BENCH_DB, connect, ensure_database
from hms_cache_proxy.bench.command import _start, target_database
from hms_cache_proxy.bench.databases import Databases

pytestmark = pytest.mark.slow


def _databases_seen(dbs: Databases, key: str, workdir: Path) -> list[str]:
    """Start ``key``'s server as the bench does, make the bench's database through it, and
    return the databases it listed before that."""
    cache_settings, why = targets.cache_support()
    if key == targets.CACHE and cache_settings is None:
        pytest.skip(why)
    db_settings = targets.database_path_settings()
    with _start(key, dbs, workdir, cache_settings, db_settings, None) as (port, _uri):
        client = connect("127.0.0.1", port)
        try:
            seen = list(client.get_all_databases())
            ensure_database(client)
        finally:
            client.close()
    return seen


def test_the_cache_server_starts_on_a_database_the_db_path_never_wrote(tmp_path: Path) -> None:
    with Databases("sqlite", None, tmp_path) as dbs:
        assert target_database(dbs, targets.CACHE) != target_database(dbs, targets.DB)
        assert target_database(dbs, targets.FLOOR) is None
        assert BENCH_DB not in _databases_seen(dbs, targets.DB, tmp_path)
        # the db path's run made hms_bench; the cache server's database has none of it
        assert BENCH_DB not in _databases_seen(dbs, targets.CACHE, tmp_path)


def test_database_url_puts_both_of_our_servers_on_that_database(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'given.db'}"
    with Databases("postgres", None, tmp_path, database_url=url) as dbs:
        assert target_database(dbs, targets.DB) == target_database(dbs, targets.CACHE) == url
        _databases_seen(dbs, targets.DB, tmp_path)
        assert BENCH_DB in _databases_seen(dbs, targets.CACHE, tmp_path)
