"""A PostgreSQL restart (failover, maintenance) cuts every pooled connection. Read calls that
meet a dead connection are answered from a fresh one, not failed: Hive clients do not retry a
MetaException, so one failed read after a restart would fail a user's query."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.bench.postgres import PostgresServer
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.metastore import table
from tests.support.server import running_service

pytestmark = pytest.mark.postgres


@pytest.fixture
def own_pg() -> Iterator[PostgresServer]:
    """A server of this test's own: restarting the session's would disturb other tests."""
    server = PostgresServer.start()
    try:
        yield server
    finally:
        server.stop()


def test_reads_after_a_database_restart_are_answered(
    own_pg: PostgresServer, tmp_path: Path
) -> None:
    T: Any = load_apache_modules().ttypes
    url = own_pg.new_database()
    with running_service(
        url, tmp_path / "wh", cache_enabled=False, database_pool_size=2
    ) as service:
        client, transport = apache_client("127.0.0.1", service.port)
        try:
            client.create_database(T.Database(name="r", description="", parameters={}))
            client.create_table(table(T, "r", "t", ("a:int",), ()))
            for _ in range(4):  # every pooled connection has been used
                assert "r" in client.get_all_databases()
                assert client.get_table("r", "t").tableName == "t"

            own_pg.restart("fast")

            # Each read meets a connection the restart cut; none may fail.
            for _ in range(4):
                assert "r" in client.get_all_databases()
                assert client.get_table("r", "t").tableName == "t"
                assert client.get_database("r").name == "r"
        finally:
            transport.close()
