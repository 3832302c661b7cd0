"""A REST writer and a Thrift writer (PyIceberg's HiveCatalog, which locks the table and then
alters it blindly) append to one table through two `serve` processes on one PostgreSQL
database: no append is lost, and both instances' caches end on the final metadata_location
(read under the table lock, which brings a cache up to the log: no deadline to race)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import ServerProcess, free_port

APPENDS = 8


def append_until_done(load: Callable[[], Any], ids: range, errors: list[BaseException]) -> None:
    """Append one row per id, reloading and retrying on a conflict (CommitFailedException)."""
    try:
        for i in ids:
            while True:
                try:
                    load().append(pa.table({"id": pa.array([i], pa.int64())}))
                    break
                except CommitFailedException:
                    time.sleep(0.01)
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)


@pytest.mark.postgres
@pytest.mark.slow
def test_rest_and_thrift_writers_lose_no_append(
    pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = pg_server.new_database()
    warehouse = tmp_path / "warehouse"
    rest_port = free_port()
    monkeypatch.setenv("HMS_CACHE_PROXY_REST_PORT", str(rest_port))
    with_rest = ServerProcess(url, warehouse, tmp_path / "rest.log")
    monkeypatch.delenv("HMS_CACHE_PROXY_REST_PORT")
    thrift_only = ServerProcess(url, warehouse, tmp_path / "thrift.log")
    try:
        rest = RestCatalog("rest", uri=f"http://127.0.0.1:{rest_port}")
        hive = HiveCatalog("hive", uri=thrift_only.uri)
        rest.create_namespace("mix")
        schema = Schema(NestedField(1, "id", LongType(), required=False))
        # PyIceberg's own retries off: each writer's loop retries, so every conflict is seen.
        rest.create_table("mix.t", schema, properties={"commit.retry.num-retries": "0"})

        errors: list[BaseException] = []
        writers = [
            threading.Thread(
                target=append_until_done,
                args=(lambda: rest.load_table("mix.t"), range(0, APPENDS), errors),
            ),
            threading.Thread(
                target=append_until_done,
                args=(lambda: hive.load_table("mix.t"), range(100, 100 + APPENDS), errors),
            ),
        ]
        for w in writers:
            w.start()
        for w in writers:
            w.join(timeout=240)
        logs = "".join((tmp_path / f).read_text()[-3000:] for f in ("rest.log", "thrift.log"))
        assert not errors, f"{errors!r}\n{logs}"
        assert not any(w.is_alive() for w in writers)

        final = rest.load_table("mix.t")
        ids = sorted(final.scan().to_arrow()["id"].to_pylist())
        assert ids == list(range(APPENDS)) + list(range(100, 100 + APPENDS))
        assert len(final.metadata.snapshots) == 2 * APPENDS
        assert hive.load_table("mix.t").metadata_location == final.metadata_location
        T = load_apache_modules().ttypes
        for server in (with_rest, thrift_only):
            client, transport = apache_client("127.0.0.1", server.port)
            try:
                # Under the table's lock an instance's cache has caught up with the log.
                lock = client.lock(
                    T.LockRequest(
                        component=[
                            T.LockComponent(
                                type=T.LockType.EXCLUSIVE,
                                level=T.LockLevel.TABLE,
                                dbname="mix",
                                tablename="t",
                                isTransactional=True,
                            )
                        ],
                        user="test",
                        hostname="test",
                    )
                )
                assert lock.state == T.LockState.ACQUIRED
                try:
                    seen = client.get_table("mix", "t").parameters["metadata_location"]
                finally:
                    client.unlock(T.UnlockRequest(lockid=lock.lockid))
                assert seen == final.metadata_location
            finally:
                transport.close()
    finally:
        with_rest.stop()
        thrift_only.stop()
