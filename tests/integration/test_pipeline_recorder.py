"""The writing jobs' bookkeeping against a real service: each commit lands in the manifest with
the time the partition appeared on the observed instance, even after that instance dropped the
idle connection (Spark can work longer than the server's idle timeout between commits)."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from hms_cache_proxy.pipeline import manifest
from hms_cache_proxy.pipeline.recorder import recorder
from tests.support.metastore import partition, table


def _setup(client: Any, T: Any) -> None:
    client.create_database(T.Database(name="shop", description="", parameters={}))
    client.create_table(table(T, "shop", "events", ("a:int",), ("ds:string",)))
    client.add_partition(partition(T, "shop", "events", ["2024-03-01"], ("a:int",)))


def test_a_commit_is_recorded_with_when_it_became_visible(
    service: Any, client: Any, T: Any, tmp_path: Path
) -> None:
    _setup(client, T)
    uri = f"thrift://127.0.0.1:{service.port}"
    path = tmp_path / "m.json"
    committed = time.time()
    with recorder(path, "shop", uri) as rec:
        rec.commit("etl", "events", {"ds=2024-03-01": 10}, committed, repaired=True)
    entry = manifest.load(path, "shop").partitions["events/ds=2024-03-01"]
    assert entry.rows == 10 and entry.repaired and entry.observed_on == uri
    assert entry.visible_at is not None and entry.visible_at >= committed


def test_the_observer_reconnects_after_its_connection_is_closed(
    service: Any, client: Any, T: Any, tmp_path: Path
) -> None:
    _setup(client, T)
    uri = f"thrift://127.0.0.1:{service.port}"
    with recorder(tmp_path / "m.json", "shop", uri) as rec:
        # As when the server closes an idle connection: the socket is dead, the client
        # object does not know.
        dead = rec.observer
        dead._oprot.trans._trans.sock.shutdown(socket.SHUT_RDWR)
        rec.commit("etl", "events", {"ds=2024-03-01": 10}, time.time())
        assert rec.observer is not dead
        assert rec.manifest.partitions["events/ds=2024-03-01"].visible_at is not None


def test_without_an_observer_nothing_is_polled(tmp_path: Path) -> None:
    with recorder(tmp_path / "m.json", "shop", None) as rec:
        rec.commit("backfill", "events", {"ds=2024-03-01": 5}, 1.0)
    entry = manifest.load(tmp_path / "m.json", "shop").partitions["events/ds=2024-03-01"]
    assert entry.visible_at is None and entry.observed_on is None and entry.job == "backfill"
