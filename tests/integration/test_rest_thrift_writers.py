"""A REST writer and a Thrift writer (PyIceberg's HiveCatalog, which locks the table and then
alters it blindly) append to one table through two `serve` processes on one PostgreSQL
database: no append is lost, and both instances' caches end on the final metadata_location
(read under the table lock, which brings a cache up to the log: no deadline to race)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import ROOT, ServerProcess, free_port

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
        rest.create_namespace("mix")
        schema = Schema(NestedField(1, "id", LongType(), required=False))
        # PyIceberg's own retries off: each writer's loop retries, so every conflict is seen.
        rest.create_table("mix.t", schema, properties={"commit.retry.num-retries": "0"})

        # The Thrift writer: PyIceberg's HiveCatalog in a process of its own.
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        hive_writer = subprocess.Popen(
            [sys.executable, "-m", "tests.support.hive_catalog_writer", thrift_only.uri, "mix.t"]
            + ["100", str(APPENDS)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        assert hive_writer.stdout is not None
        assert hive_writer.stdout.readline().strip() == b"ready"
        errors: list[BaseException] = []
        rest_writer = threading.Thread(
            target=append_until_done,
            args=(lambda: rest.load_table("mix.t"), range(0, APPENDS), errors),
        )
        rest_writer.start()
        output, _ = hive_writer.communicate(timeout=240)
        rest_writer.join(timeout=240)
        logs = "".join((tmp_path / f).read_text()[-3000:] for f in ("rest.log", "thrift.log"))
        assert hive_writer.returncode == 0, f"{output.decode()[-3000:]}\n{logs}"
        assert not errors, f"{errors!r}\n{logs}"
        assert not rest_writer.is_alive()

        final = rest.load_table("mix.t")
        ids = sorted(final.scan().to_arrow()["id"].to_pylist())
        assert ids == list(range(APPENDS)) + list(range(100, 100 + APPENDS))
        assert len(final.metadata.snapshots) == 2 * APPENDS
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
    assert with_rest.proc.returncode == 0  # SIGTERM: a clean stop, REST port and all
