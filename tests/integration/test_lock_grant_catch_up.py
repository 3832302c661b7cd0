"""A granted lock brings the caching instance up to the log as its grant saw it (PostgreSQL):
Iceberg's commit (lock, get_table, alter_table, unlock) may go to any instance, so after the
grant the holder reads every write committed before it, even one the instance's poller has not
seen. The grant statement reads NEXT_EVENT_ID in its own snapshot, so an instance that has
applied everything up to there reads nothing back from the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_txn_locks import component
from tests.support.cache import clients, instances
from tests.support.metastore import table

pytestmark = [pytest.mark.postgres]

KEY = "metadata_location"
QUIET = {"cache_listen": False, "cache_poll_interval_seconds": 3600.0}
"""No NOTIFY and no timed poll: the instance catches up only after its own writes and grants."""


@pytest.fixture
def pair(pg_server: Any, tmp_path: Path) -> Any:
    url = pg_server.new_database()
    with instances(url, tmp_path, **QUIET) as svcs, clients(*svcs) as cls:
        yield svcs, cls
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _exclusive(T: Any) -> Any:
    ice = component(T, "EXCLUSIVE", db="default", table="ice", transactional=True)
    return T.LockRequest(component=[ice], user="alice", hostname="host")


def _reads_of_the_log(svc: Any) -> list[int]:
    """Counts the instance's catch-up reads of the log from now on."""
    poller = svc.cache.poller
    read = poller._read_pooled
    count = [0]

    def counted() -> Any:
        count[0] += 1
        return read()

    poller._read_pooled = counted
    return count


def test_a_granted_lock_reads_what_another_instance_committed_before_it(T, pair) -> None:
    (a, b), (ca, cb) = pair
    ca.create_table(table(T, "default", "ice", params={KEY: "v0"}))
    for svc in (a, b):
        svc.cache.poller.catch_up()
    assert ca.get_table("default", "ice").parameters[KEY] == "v0"  # cached on a

    tbl = cb.get_table("default", "ice")
    tbl.parameters = {**tbl.parameters, KEY: "v1"}
    cb.alter_table("default", "ice", tbl)
    assert ca.get_table("default", "ice").parameters[KEY] == "v0"  # a has not polled

    resp = ca.lock(_exclusive(T))
    assert resp.state == T.LockState.ACQUIRED
    assert ca.get_table("default", "ice").parameters[KEY] == "v1"
    ca.unlock(T.UnlockRequest(lockid=resp.lockid))


def test_a_grant_with_nothing_new_in_the_log_reads_nothing_back(T, pair) -> None:
    (a, b), (ca, _) = pair
    ca.create_table(table(T, "default", "ice", params={KEY: "v0"}))
    for svc in (a, b):
        svc.cache.poller.catch_up()
    reads = _reads_of_the_log(a)
    for _ in range(3):
        resp = ca.lock(_exclusive(T))
        assert resp.state == T.LockState.ACQUIRED
        ca.unlock(T.UnlockRequest(lockid=resp.lockid))
    assert reads[0] == 0


def _check(client: Any, T: Any, lockid: int) -> Any:
    return client.check_lock(T.CheckLockRequest(lockid=lockid))


def test_check_lock_of_a_held_lock_reads_what_another_instance_committed(T, pair) -> None:
    """check_lock answering ACQUIRED for a lock granted earlier (elsewhere too): the answer
    reflects every write committed before it, as the grant's does."""
    (a, b), (ca, cb) = pair
    ca.create_table(table(T, "default", "ice", params={KEY: "v0"}))
    for svc in (a, b):
        svc.cache.poller.catch_up()
    held = cb.lock(_exclusive(T))
    assert held.state == T.LockState.ACQUIRED
    assert ca.get_table("default", "ice").parameters[KEY] == "v0"  # cached on a

    tbl = cb.get_table("default", "ice")
    tbl.parameters = {**tbl.parameters, KEY: "v1"}
    cb.alter_table("default", "ice", tbl)
    assert ca.get_table("default", "ice").parameters[KEY] == "v0"  # a has not polled

    assert _check(ca, T, held.lockid).state == T.LockState.ACQUIRED
    assert ca.get_table("default", "ice").parameters[KEY] == "v1"
    cb.unlock(T.UnlockRequest(lockid=held.lockid))


def test_check_lock_of_a_held_lock_with_nothing_new_reads_nothing_back(T, pair) -> None:
    """A client polling a lock it holds, nothing committed since the instance's position:
    the statement that heartbeats also reads NEXT_EVENT_ID, so the log is not read."""
    (a, b), (ca, _) = pair
    ca.create_table(table(T, "default", "ice", params={KEY: "v0"}))
    held = ca.lock(_exclusive(T))
    for svc in (a, b):
        svc.cache.poller.catch_up()
    reads = _reads_of_the_log(a)
    for _ in range(3):
        assert _check(ca, T, held.lockid).state == T.LockState.ACQUIRED
    assert reads[0] == 0
    ca.unlock(T.UnlockRequest(lockid=held.lockid))


def test_a_waiting_lock_granted_by_check_lock_reads_what_came_before(T, pair) -> None:
    """A waiting lock granted by check_lock once the blocker is gone: the holder reads the
    blocker's write (another instance's); with nothing new, nothing is read back."""
    (a, b), (ca, cb) = pair
    ca.create_table(table(T, "default", "ice", params={KEY: "v0"}))
    for svc in (a, b):
        svc.cache.poller.catch_up()
    assert ca.get_table("default", "ice").parameters[KEY] == "v0"  # cached on a

    blocker = cb.lock(_exclusive(T))
    waiting = ca.lock(_exclusive(T))
    assert waiting.state == T.LockState.WAITING
    tbl = cb.get_table("default", "ice")
    tbl.parameters = {**tbl.parameters, KEY: "v1"}
    cb.alter_table("default", "ice", tbl)
    cb.unlock(T.UnlockRequest(lockid=blocker.lockid))
    assert _check(ca, T, waiting.lockid).state == T.LockState.ACQUIRED
    assert ca.get_table("default", "ice").parameters[KEY] == "v1"
    ca.unlock(T.UnlockRequest(lockid=waiting.lockid))

    blocker = cb.lock(_exclusive(T))
    waiting = ca.lock(_exclusive(T))
    assert waiting.state == T.LockState.WAITING
    a.cache.poller.catch_up()
    reads = _reads_of_the_log(a)
    cb.unlock(T.UnlockRequest(lockid=blocker.lockid))
    assert _check(ca, T, waiting.lockid).state == T.LockState.ACQUIRED
    assert reads[0] == 0
    ca.unlock(T.UnlockRequest(lockid=waiting.lockid))
