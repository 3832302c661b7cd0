"""get_all_databases / get_databases from the cache's databases map, on two instances sharing
one PostgreSQL database: each instance's list follows the other's creates, alters and drops,
reads its own writes, and goes to the database while the list is incomplete (a flush)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cache import Counted, clients, instances, settle

pytestmark = [pytest.mark.postgres]


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path) as svcs, clients(*svcs) as cls:
        yield svcs, cls
    pg_server.drop_database(url.rsplit("/", 1)[1])


def test_each_instance_lists_the_databases_the_other_creates_alters_and_drops(pair, T) -> None:
    (a, b), (ca, cb) = pair
    settle(a, b)
    with Counted() as counted:
        assert ca.get_all_databases() == cb.get_all_databases() == ["default"]
    assert counted.hits("get_databases") == 2
    ca.create_database(T.Database(name="north"))
    assert ca.get_all_databases() == ["default", "north"]  # its own write, at once
    cb.create_database(T.Database(name="south"))
    settle(a, b)
    altered = ca.get_database("north")
    altered.parameters = {"owner": "ops"}
    ca.alter_database("north", altered)
    settle(a, b)
    with Counted() as counted:
        for c in (ca, cb):
            assert c.get_all_databases() == ["default", "north", "south"]
            assert c.get_databases("n*|DEF*") == ["default", "north"]
            assert c.get_databases(None) == ["default", "north", "south"]
        assert cb.get_database("north").parameters == {"owner": "ops"}
    assert counted.hits("get_databases") == 6
    assert not counted.misses("get_databases")
    cb.drop_database("north", True, True)
    settle(a, b)
    with Counted() as counted:
        assert ca.get_all_databases() == cb.get_all_databases() == ["default", "south"]
    assert counted.hits("get_databases") == 2


def test_a_flushed_database_is_listed_from_the_database_until_the_list_is_loaded(
    pair, T, monkeypatch
) -> None:
    (a, b), (ca, cb) = pair
    ca.create_database(T.Database(name="kept"))
    settle(a, b)
    with monkeypatch.context() as held:
        held.setattr(b.cache.loader, "request_databases", lambda: None)  # no reload yet
        b.cache.flush("kept")
        with Counted() as counted:
            assert cb.get_all_databases() == ["default", "kept"]
        assert counted.misses("get_databases", "not_cached") == 1
    b.cache.loader.request_databases()
    settle(b)
    with Counted() as counted:
        assert cb.get_all_databases() == ["default", "kept"]
    assert counted.hits("get_databases") == 1
