"""Running the cache: eviction under a memory budget, prewarm while serving, recovery from a
purged log, strong consistency, refresh/flush (HTTP admin and flushCache), patterns, strict."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from hms_cache_proxy.observability import metrics
from hms_cache_proxy.store.sql import cacheload
from tests.support.cache import (
    TXN,
    Counted,
    clients,
    entry,
    instances,
    ours,
    settle,
    wait_until,
)
from tests.support.metastore import partition, raises, table
from tests.support.server import running_service

DB = "ops"
TOKEN = "s3cret-token-for-tests"


def _table_with_parts(c: Any, T: Any, name: str, n: int) -> None:
    c.create_table(table(T, DB, name, keys=("ds:string",)))
    for start in range(0, n, 500):
        c.add_partitions(
            [partition(T, DB, name, [f"d{i:05d}"]) for i in range(start, min(n, start + 500))]
        )


def _param(c: Any, name: str, key: str, value: str) -> None:
    t = c.get_table(DB, name)
    t.parameters[key] = value
    c.alter_table(DB, name, t)


def test_eviction_keeps_the_budget_and_an_evicted_table_is_never_stale(
    sqlite_url: str, tmp_path: Path, T
) -> None:
    budget = 1024 * 1024
    with (
        instances(sqlite_url, tmp_path, cache_max_bytes=budget) as (a, b),
        clients(a, b) as (
            ca,
            cb,
        ),
    ):
        ca.create_database(T.Database(name=DB))
        for name in ("t1", "t2", "t3", "t4"):
            _table_with_parts(ca, T, name, 700)
        settle(a, b)
        evictions = metrics.EVICTIONS._value.get()
        for name in ("t1", "t2", "t3", "t4"):
            cb.get_partitions(DB, name, -1)
            settle(b)
        assert b.cache.cache.nbytes <= budget
        assert metrics.EVICTIONS._value.get() > evictions
        cached = {k.table for k in b.cache.cache.table_keys()}
        assert "t4" in cached and "t1" not in cached
        # The evicted table changes through the other instance; reads of it on b are fresh.
        _param(ca, "t1", "marker", "fresh")
        with Counted() as c:
            got = cb.get_table(DB, "t1")
        assert got.parameters["marker"] == "fresh"
        assert c.misses("get_table", metrics.MISS_EVICTED) == 1
        settle(b)
        with Counted() as c:
            again = cb.get_partitions(DB, "t1", -1)
        assert c.hits("get_partitions") == 1 and len(again) == 700
        assert b.cache.cache.nbytes <= budget


def test_prewarm_serves_meanwhile_and_moves_a_table_read_to_the_front(
    sqlite_url: str, tmp_path: Path, T, monkeypatch: pytest.MonkeyPatch
) -> None:
    with instances(sqlite_url, tmp_path, n=1) as (a,), clients(a) as (ca,):
        ca.create_database(T.Database(name=DB))
        for i in range(12):
            ca.create_table(table(T, DB, f"t{i:02d}"))
        _table_with_parts(ca, T, "zz_last", 50)
    real = cacheload.load_table
    loads: list[str] = []

    def slow(store: Any, cat: str, db: str, name: str, **kw: Any) -> Any:
        loads.append(name)
        time.sleep(0.2)
        return real(store, cat, db, name, **kw)

    monkeypatch.setattr(cacheload, "load_table", slow)
    with instances(sqlite_url, tmp_path, n=1, prewarm_threads=1) as (b,), clients(b) as (cb,):
        wait_until(lambda: b.readiness.snapshot()["prewarm"]["running"], what="prewarm")
        with Counted() as c:
            parts = cb.get_partitions(DB, "zz_last", -1)  # not loaded yet: the database
        assert len(parts) == 50 and c.misses("get_partitions", metrics.MISS_NOT_CACHED) == 1
        wait_until(lambda: entry(b, DB, "zz_last") is not None, what="zz_last loaded")
        progress = b.readiness.snapshot()["prewarm"]
        assert progress["running"] and progress["tables_done"] < progress["tables_total"] == 13
        assert loads.index("zz_last") <= 3  # ahead of the tables queued before it
        assert b.readiness.ready  # serving (and ready) while prewarm runs
        wait_until(lambda: b.readiness.snapshot()["prewarm"]["finished"], timeout=30)
        assert b.readiness.snapshot()["prewarm"]["partitions_loaded"] == 50
        with Counted() as c:
            assert ours(cb.get_partitions(DB, "zz_last", -1)) == b.store.get_partitions(
                "hive", DB, "zz_last"
            )
        assert c.hits("get_partitions") == 1


@pytest.mark.postgres
@pytest.mark.parametrize("batch_fails", [False, True])
def test_prewarm_on_postgresql_loads_tables_in_batches(
    pg_server: Any, tmp_path: Path, T, monkeypatch: pytest.MonkeyPatch, batch_fails: bool
) -> None:
    """Prewarm reads several tables per snapshot (cut by table and partition counts); every
    table ends up cached with all its partitions, and a batch that fails is loaded table by
    table instead, so prewarm still finishes."""
    from hms_cache_proxy.store.cached import prewarm

    url = pg_server.new_database()
    sizes = {"a": 30, "b": 0, "c": 5, "d": 40, "e": 2}
    with instances(url, tmp_path, n=1) as (a,), clients(a) as (ca,):
        ca.create_database(T.Database(name=DB))
        for name, n in sizes.items():
            _table_with_parts(ca, T, name, n)
        ca.create_table(table(T, DB, "flat"))
    monkeypatch.setattr(prewarm, "BATCH_TABLES", 3)
    monkeypatch.setattr(prewarm, "BATCH_PARTITIONS", 50)
    real = cacheload.load_tables
    batches: list[list[str]] = []

    def recorded(store: Any, keys: Any) -> Any:
        batches.append([k[2] for k in keys])
        if batch_fails:
            raise RuntimeError("injected: the batch query failed")
        return real(store, keys)

    monkeypatch.setattr(cacheload, "load_tables", recorded)
    with instances(url, tmp_path, n=1, prewarm_threads=2) as (b,), clients(b) as (cb,):
        wait_until(lambda: b.readiness.snapshot()["prewarm"]["finished"], timeout=30)
        assert sorted(batches) == [["a", "b", "c"], ["d", "e", "flat"]]
        assert b.readiness.snapshot()["prewarm"]["partitions_loaded"] == sum(sizes.values())
        for name, n in sizes.items():
            cached = entry(b, DB, name)
            assert cached is not None and len(cached.parts) == n, name
            with Counted() as c:
                assert ours(cb.get_partitions(DB, name, -1)) == b.store.get_partitions(
                    "hive", DB, name
                )
            assert c.hits("get_partitions") == 1
        assert entry(b, DB, "flat") is not None


def test_prewarm_batches_are_cut_by_table_and_partition_counts() -> None:
    from hms_cache_proxy.store.cache.entries import TableName
    from hms_cache_proxy.store.cached import prewarm

    keys = [TableName("hive", DB, f"t{i}") for i in range(6)]
    sizes = dict(zip(keys, [10, 25_000, 0, 19_000, 1_500, 3], strict=True))
    cut = prewarm.batches(keys, sizes)
    assert [[k.table for k in b] for b in cut] == [["t0"], ["t1"], ["t2", "t3"], ["t4", "t5"]]
    many = [TableName("hive", DB, f"s{i:03d}") for i in range(450)]
    assert [len(b) for b in prewarm.batches(many, {})] == [200, 200, 50]


@pytest.mark.postgres
def test_a_purged_log_behind_a_lagging_instance_empties_its_cache(
    pg_server: Any, tmp_path: Path, T
) -> None:
    url = pg_server.new_database()
    with instances(url, tmp_path) as (a, b), clients(a, b) as (ca, cb):
        ca.create_database(T.Database(name=DB))
        _table_with_parts(ca, T, "t", 20)
        settle(a, b)
        assert cb.get_table(DB, "t").parameters.get("marker") is None
        assert entry(b, DB, "t") is not None
        invalidations = sum(
            s.value
            for f in metrics.REGISTRY.collect()
            if f.name == "hms_cache_invalidations"
            for s in f.samples
            if s.name.endswith("_total") and s.labels.get("reason") == "events_purged"
        )
        with b.cache.poller._poll_lock:  # b lags: its poller cannot apply anything
            _param(ca, "t", "marker", "new")
            ca.drop_partitions_req(
                T.DropPartitionsRequest(
                    dbName=DB,
                    tblName="t",
                    parts=T.RequestPartsSpec(names=["ds=d00001"]),
                    deleteData=False,
                )
            )
            engine = create_engine(url)
            with engine.begin() as conn:
                conn.execute(text('DELETE FROM "NOTIFICATION_LOG"'))  # purged by age, say
            engine.dispose()
            # Meanwhile b still answers from what it had (eventual mode, lagging).
            assert cb.get_table(DB, "t").parameters.get("marker") is None
        b.cache.poller.wake()
        wait_until(
            lambda: (
                entry(b, DB, "t") is None
                or entry(b, DB, "t").table.parameters.get("marker") == "new"
            ),
            what="b forgot what it could not update",
        )
        assert cb.get_table(DB, "t").parameters["marker"] == "new"
        assert "ds=d00001" not in cb.get_partition_names(DB, "t", -1)
        settle(b)
        assert ours(cb.get_partitions(DB, "t", -1)) == b.store.get_partitions("hive", DB, "t")
        after = sum(
            s.value
            for f in metrics.REGISTRY.collect()
            if f.name == "hms_cache_invalidations"
            for s in f.samples
            if s.name.endswith("_total") and s.labels.get("reason") == "events_purged"
        )
        assert after > invalidations
    pg_server.drop_database(url.rsplit("/", 1)[1])


@pytest.mark.postgres
def test_strong_mode_reads_every_write_finished_before_them(
    pg_server: Any, tmp_path: Path, T
) -> None:
    url = pg_server.new_database()
    slow = {"cache_listen": False, "cache_poll_interval_seconds": 30.0}
    with (
        running_service(url, tmp_path / "wh", **slow) as writer,
        running_service(url, tmp_path / "wh", consistency="strong", **slow) as strong,
        running_service(url, tmp_path / "wh", **slow) as eventual,
        clients(writer, strong, eventual) as (cw, cs, ce),
    ):
        cw.create_database(T.Database(name=DB))
        cw.create_table(table(T, DB, "t"))
        cw.create_table(table(T, DB, "acid", params=dict(TXN)))
        for svc in (strong, eventual):
            svc.cache.poller.catch_up()
            svc.cache.loader.wait_idle()
        cs.get_table(DB, "t")
        ce.get_table(DB, "t")
        stale = 0
        for i in range(5):
            _param(cw, "t", "round", str(i))
            with Counted() as c:
                got = cs.get_table(DB, "t")
            assert got.parameters["round"] == str(i)
            assert c.hits("get_table") == 1  # answered by the cache, after catching up
            stale += ce.get_table(DB, "t").parameters.get("round") != str(i)
        assert stale == 5  # the eventual instance polls every 30 s: it lags meanwhile
        # Concurrent strong reads share the position query and all see the write.
        _param(cw, "t", "round", "shared")
        seen: list[str] = []

        def read() -> None:
            from tests.support.apache_thrift import apache_client

            c, tr = apache_client("127.0.0.1", strong.port)
            try:
                seen.append(c.get_table(DB, "t").parameters["round"])
            finally:
                tr.close()

        threads = [threading.Thread(target=read) for _ in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert seen == ["shared"] * 8
    pg_server.drop_database(url.rsplit("/", 1)[1])


def _post(base: str, path: str, body: dict[str, str]) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_refresh_and_flush_through_the_admin_endpoint_and_flush_cache(
    sqlite_url: str, tmp_path: Path, T
) -> None:
    with (
        instances(sqlite_url, tmp_path, n=1, metrics_port=0, admin_token=TOKEN) as (a,),
        clients(a) as (ca,),
    ):
        ca.create_database(T.Database(name=DB))
        _table_with_parts(ca, T, "t", 10)
        ca.create_table(table(T, DB, "u"))
        settle(a)
        base = a.metrics_url
        status, body = _post(base, "/admin/flush", {"db": DB, "table": "t"})
        assert status == 200 and body == {"flushed": {"db": DB, "table": "t"}, "tables": 1}
        assert entry(a, DB, "t") is None and entry(a, DB, "u") is not None
        status, body = _post(base, "/admin/refresh", {"db": DB, "table": "t"})
        assert status == 200 and body["partitions"] == 10
        assert entry(a, DB, "t") is not None  # loaded before the answer
        status, body = _post(
            base, "/admin/flush", {"db": DB, "table": "t", "partition": "ds=d00001"}
        )
        assert status == 200 and body["partitions"] == 10
        assert entry(a, DB, "t").parts is None
        status, body = _post(base, "/admin/refresh", {"db": DB, "table": "nope"})
        assert status == 404
        status, body = _post(base, "/admin/refresh", {"db": DB})
        assert status == 200 and body["tables_queued"] == 2
        settle(a)
        assert entry(a, DB, "t").parts is not None
        status, body = _post(base, "/admin/flush", {"db": DB})
        assert status == 200 and body["tables"] == 2 and not a.cache.cache.table_keys()
        status, _ = _post(base, "/admin/refresh", {"db": "nope"})
        assert status == 404
        # flushCache (a Thrift call) empties this instance's cache.
        ca.get_table(DB, "u")
        settle(a)
        assert a.cache.cache.table_keys()
        ca.flushCache()
        assert not a.cache.cache.table_keys()


def test_patterns_keep_tables_out_and_strict_refuses_reads_without_a_list(
    sqlite_url: str, tmp_path: Path, T
) -> None:
    settings = {"cache_exclude": [r"ops\.scratch_.*"], "cache_strict": True}
    with instances(sqlite_url, tmp_path, n=1, **settings) as (a,), clients(a) as (ca,):
        ca.create_database(T.Database(name=DB))
        ca.create_table(table(T, DB, "scratch_1"))
        ca.create_table(table(T, DB, "kept"))
        ca.create_table(table(T, DB, "acid", params=dict(TXN)))
        settle(a)
        assert entry(a, DB, "scratch_1") is None and entry(a, DB, "kept") is not None
        with Counted() as c:
            ca.get_table(DB, "scratch_1")
            ca.get_table(DB, "kept")
        assert c.misses("get_table", metrics.MISS_FILTERED_OUT) == 1 and c.hits("get_table") == 1
        with raises(T.MetaException, contains="must carry its validWriteIdList"):
            ca.get_table(DB, "acid")
