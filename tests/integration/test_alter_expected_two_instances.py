"""Iceberg's lock-free commit (HiveCatalog with engine.hive.lock-enabled=false) across two caching
instances on one PostgreSQL database: each writer alters the table with an EnvironmentContext that
expects the metadata_location it read. Hive 4 lets exactly one of two writers that read the same
value win; the other gets a MetaException and retries from the new value. No commit may be lost,
and neither instance's cache may answer a value the database did not keep."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.support.cache import Counted, clients, instances, settle, wait_until
from tests.support.metastore import event_types, last_event_id, table

pytestmark = [pytest.mark.postgres]

KEY = "metadata_location"
ROUNDS = 6
MODIFIED = "The table has been modified. The parameter value for key 'metadata_location' is"


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path) as svcs, clients(*svcs) as cls:
        yield svcs, cls
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _commit(client: Any, T: Any, base: str, new: str) -> None:
    """One Iceberg NoLock commit: the table as read, with the new metadata location, expecting
    the base location."""
    tbl = client.get_table("default", "ice")
    tbl.parameters = {**tbl.parameters, KEY: new, "previous_metadata_location": base}
    env = T.EnvironmentContext(
        properties={"expected_parameter_key": KEY, "expected_parameter_value": base}
    )
    client.alter_table_with_environment_context("default", "ice", tbl, env)


def _race(T: Any, writers: dict[str, Any], base: str, r: int) -> dict[str, Any]:
    """Both writers commit from ``base`` at once (released by a barrier); each one's outcome:
    None when its alter was accepted, else the exception it got."""
    barrier = threading.Barrier(len(writers))
    outcome: dict[str, Any] = {}

    def writer(name: str, client: Any) -> None:
        barrier.wait()
        try:
            _commit(client, T, base, f"v{r}-{name}")
            outcome[name] = None
        except BaseException as exc:  # noqa: BLE001 - judged by the test
            outcome[name] = exc

    threads = [threading.Thread(target=writer, args=item) for item in writers.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return outcome


def _answers(client: Any, value: str) -> bool:
    return client.get_table("default", "ice").parameters[KEY] == value


def test_racing_expected_value_alters_on_two_instances_let_exactly_one_win(T, pair) -> None:
    (a, b), (ca, cb) = pair
    writers = {"a": ca, "b": cb}
    ca.create_table(table(T, "default", "ice", params={KEY: "v0"}))
    created = last_event_id(ca)
    settle(a, b)
    base = "v0"
    for r in range(1, ROUNDS + 1):
        for c in (ca, cb):  # both instances have the table cached at the base
            assert _answers(c, base)
        settle(a, b)
        outcome = _race(T, writers, base, r)
        winners = [n for n, exc in outcome.items() if exc is None]
        assert len(outcome) == 2 and len(winners) == 1, f"round {r}: {outcome}"
        [loser] = [exc for exc in outcome.values() if exc is not None]
        assert isinstance(loser, T.MetaException) and loser.message.startswith(MODIFIED), loser
        won = f"v{r}-{winners[0]}"
        # Both instances end on the winner's value: the writer at once, the other once its
        # poller has applied the ALTER_TABLE event.
        assert _answers(writers[winners[0]], won)
        for c in (ca, cb):
            wait_until(lambda c=c, won=won: _answers(c, won), 30, f"round {r}: {won} everywhere")
        settle(a, b)
        with Counted() as counted:
            for c in (ca, cb):
                got = c.get_table("default", "ice").parameters
                assert (got[KEY], got["previous_metadata_location"]) == (won, base)
        assert counted.hits("get_table") == 2  # from the two caches' entries
        base = won
    # one ALTER_TABLE per round, the winner's: a refused alter left nothing for a cache to apply
    assert event_types(cb, T, created) == ["ALTER_TABLE"] * ROUNDS
