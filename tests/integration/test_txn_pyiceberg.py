"""PyIceberg's commit protocol on SQLite and PostgreSQL: writers serialise on the table lock.

PyIceberg's HiveCatalog.commit_table takes ``LockRequest[EXCLUSIVE, TABLE, isTransactional=True]``
without a txn, waits with check_lock, reads the table, writes the new metadata location with
alter_table_with_environment_context and unlocks. Two writers must never both write on the base
they read: a counter each writer increments under the lock must end at the exact total.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import ServerProcess

WRITERS = 4
COMMITS_PER_WRITER = 15


def iceberg_table(T: Any, db: str, name: str) -> Any:
    sd = T.StorageDescriptor(
        cols=[T.FieldSchema(name="id", type="bigint")],
        location=None,
        inputFormat="org.apache.hadoop.mapred.FileInputFormat",
        outputFormat="org.apache.hadoop.mapred.FileOutputFormat",
        serdeInfo=T.SerDeInfo(
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}
        ),
        numBuckets=-1,
        compressed=False,
        parameters={},
        bucketCols=[],
        sortCols=[],
    )
    return T.Table(
        tableName=name,
        dbName=db,
        owner="pyiceberg",
        sd=sd,
        partitionKeys=[],
        parameters={
            "EXTERNAL": "TRUE",
            "table_type": "ICEBERG",
            "metadata_location": "s3://bucket/t/metadata/00000.metadata.json",
            "counter": "0",
        },
        tableType="EXTERNAL_TABLE",
    )


@contextmanager
def table_lock(client: Any, T: Any, db: str, table: str, host: str) -> Iterator[None]:
    """PyIceberg's lock: EXCLUSIVE on the table, no txn, waited for with check_lock."""
    request = T.LockRequest(
        component=[
            T.LockComponent(
                type=T.LockType.EXCLUSIVE,
                level=T.LockLevel.TABLE,
                dbname=db,
                tablename=table,
                isTransactional=True,
            )
        ],
        user="pyiceberg",
        hostname=host,
    )
    resp = client.lock(request)
    try:
        while resp.state == T.LockState.WAITING:
            time.sleep(0.005)
            resp = client.check_lock(T.CheckLockRequest(lockid=resp.lockid))
        assert resp.state == T.LockState.ACQUIRED, resp
        yield
    finally:
        client.unlock(T.UnlockRequest(lockid=resp.lockid))


def iceberg_commit(client: Any, T: Any, db: str, table: str, after_read: Callable[[], None]) -> int:
    """One PyIceberg-style commit; returns the counter value it wrote."""
    with table_lock(client, T, db, table, "writer"):
        hive_table = client.get_table(db, table)
        base = int(hive_table.parameters["counter"])
        after_read()
        params = dict(hive_table.parameters)
        params["previous_metadata_location"] = params["metadata_location"]
        params["metadata_location"] = f"s3://bucket/t/metadata/{base + 1:05d}.metadata.json"
        params["counter"] = str(base + 1)
        hive_table.parameters = params
        client.alter_table_with_environment_context(
            db,
            table,
            hive_table,
            T.EnvironmentContext(properties={"DO_NOT_UPDATE_STATS": "true"}),
        )
        return base + 1


def locked_counter(client: Any, T: Any, db: str, table: str) -> str:
    """The table's counter read under an exclusive table lock, as a committer would read it."""
    with table_lock(client, T, db, table, "reader"):
        return client.get_table(db, table).parameters["counter"]


def run_writers(
    ports: list[int], db: str, table: str, writers: int, commits: int
) -> dict[int, int]:
    """``writers`` threads spread over ``ports``; returns each counter value written → its port."""
    T = load_apache_modules().ttypes
    written: dict[int, int] = {}
    errors: list[BaseException] = []
    guard = threading.Lock()
    inside = [0]

    def in_critical_section() -> None:
        with guard:
            inside[0] += 1
            overlap = inside[0]
        time.sleep(0.001)  # widen the window a stale read would need
        with guard:
            inside[0] -= 1
        assert overlap == 1, "two writers inside the table lock at once"

    def writer(port: int) -> None:
        try:
            client, trans = apache_client("127.0.0.1", port)
            try:
                for _ in range(commits):
                    value = iceberg_commit(client, T, db, table, in_critical_section)
                    with guard:
                        assert value not in written, f"counter {value} written twice"
                        written[value] = port
            finally:
                trans.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [
        threading.Thread(target=writer, args=(ports[i % len(ports)],)) for i in range(writers)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    return written


def test_pyiceberg_writers_serialise_on_the_table_lock(client, T, service) -> None:
    client.create_database(T.Database(name="ice"))
    client.create_table(iceberg_table(T, "ice", "events"))
    written = run_writers([service.port], "ice", "events", WRITERS, COMMITS_PER_WRITER)
    total = WRITERS * COMMITS_PER_WRITER
    assert sorted(written) == list(range(1, total + 1))  # no two commits on one base
    final = client.get_table("ice", "events").parameters
    assert final["counter"] == str(total)
    assert final["metadata_location"].endswith(f"{total:05d}.metadata.json")
    assert final["previous_metadata_location"].endswith(f"{total - 1:05d}.metadata.json")
    assert client.show_locks(T.ShowLocksRequest()).locks == []


@pytest.mark.postgres
@pytest.mark.slow
def test_pyiceberg_writers_on_two_servers_serialise(pg_server: Any, tmp_path: Path) -> None:
    """The same protocol through two `serve` processes on one PostgreSQL database."""
    url = pg_server.new_database()
    servers = [
        ServerProcess(url, tmp_path / "warehouse", tmp_path / f"server{i}.log") for i in range(2)
    ]
    try:
        T = load_apache_modules().ttypes
        client, trans = apache_client("127.0.0.1", servers[0].port)
        try:
            client.create_database(T.Database(name="ice"))
            client.create_table(iceberg_table(T, "ice", "shared"))
            writers, commits = 6, 10
            written = run_writers([srv.port for srv in servers], "ice", "shared", writers, commits)
            assert sorted(written) == list(range(1, writers * commits + 1))
            total = str(writers * commits)
            last_writer = written[writers * commits]
            for srv in servers:
                c, t = apache_client("127.0.0.1", srv.port)
                try:
                    if srv.port == last_writer:  # read-your-writes on the writing instance
                        assert c.get_table("ice", "shared").parameters["counter"] == total
                    # Under the table lock the answer is current whichever instance wrote last.
                    assert locked_counter(c, T, "ice", "shared") == total
                    # Without a lock (eventual mode) the other instance converges within the lag.
                    deadline = time.monotonic() + 10
                    seen = c.get_table("ice", "shared").parameters["counter"]
                    while seen != total and time.monotonic() < deadline:
                        time.sleep(0.02)
                        seen = c.get_table("ice", "shared").parameters["counter"]
                    assert seen == total
                finally:
                    t.close()
        finally:
            trans.close()
    finally:
        for srv in servers:
            srv.stop()
