"""`serve --workers 2` on PostgreSQL as a real process tree: both workers answer the one
Thrift port, a write through one worker is read through the other, a killed worker is started
again, and SIGTERM to the supervisor stops every worker with exit status 0.

Which worker holds a connection is read from each worker's own /metrics (hms_worker says
which worker the endpoint is, hms_thrift_connections how many connections it holds)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.apache_thrift import apache_client
from tests.support.server import ROOT, ServerProcess

pytestmark = pytest.mark.postgres

_BANNER = re.compile(r"metrics on (http://\S+)/metrics \(worker (\d+) of 2\)")


def _until(check: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.1)


def _metrics(url: str) -> dict[str, float]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.labels:
                values[sample.name] = sample.value
    return values


def _worker_urls(log_path: Path, after: int = 0) -> dict[int, str]:
    """Worker index -> its HTTP endpoint, from the banners printed after ``after`` bytes."""
    text = log_path.read_text()[after:]
    return {int(m.group(2)): m.group(1) for m in _BANNER.finditer(text)}


def _children(pid: int) -> set[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return {int(p) for p in text.split()}


@pytest.fixture
def workers(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[ServerProcess, dict[int, str]]]:
    # Strong consistency: a read waits until its worker applied every event the database had.
    monkeypatch.setenv("HMS_CACHE_PROXY_CONSISTENCY", "strong")
    monkeypatch.setenv("HMS_CACHE_PROXY_SHUTDOWN_GRACE_SECONDS", "5")
    log_path = tmp_path / "serve.log"
    server = ServerProcess(
        pg_url, tmp_path / "wh", log_path, "--workers", "2", "--metrics-port", "0"
    )
    try:
        urls = _until(lambda: len(_worker_urls(log_path)) == 2 and _worker_urls(log_path), "2")
        yield server, urls
    finally:
        server.stop()


def _connections(urls: dict[int, str]) -> dict[int, float]:
    return {i: _metrics(url)["hms_thrift_connections"] for i, url in urls.items()}


def test_both_workers_answer_and_each_reads_the_others_writes(
    workers: tuple[ServerProcess, dict[int, str]], T: Any
) -> None:
    server, urls = workers
    assert {i: _metrics(url)["hms_worker"] for i, url in urls.items()} == {0: 0.0, 1: 1.0}
    held: list[Any] = []
    on: dict[int, Any] = {}  # worker index -> a client connected to it
    try:
        for _ in range(40):
            before = _connections(urls)
            client, trans = apache_client("127.0.0.1", server.port, timeout=30)
            held.append(trans)
            assert client.get_all_databases() == ["default"]
            after = _connections(urls)
            grew = [i for i in urls if after[i] == before[i] + 1]
            assert len(grew) == 1, (before, after)
            on.setdefault(grew[0], client)
        assert set(on) == {0, 1}, f"40 connections all went to worker {set(on)}"
        assert sum(_connections(urls).values()) == 40

        on[0].create_database(T.Database(name="shared", parameters={"v": "1"}))
        assert on[1].get_database("shared").parameters == {"v": "1"}  # now in worker 1's cache
        on[0].alter_database("shared", T.Database(name="shared", parameters={"v": "2"}))
        assert on[1].get_database("shared").parameters == {"v": "2"}
        on[1].create_database(T.Database(name="from_one", parameters={}))
        assert on[0].get_database("from_one").name == "from_one"
    finally:
        for trans in held:
            trans.close()


def test_a_killed_worker_is_started_again_and_sigterm_stops_all(
    workers: tuple[ServerProcess, dict[int, str]], T: Any
) -> None:
    server, _ = workers
    first = _children(server.proc.pid)
    assert len(first) == 2
    victim = max(first)
    size = server.log_path.stat().st_size
    os.kill(victim, signal.SIGKILL)

    def replaced() -> set[int]:
        now = _children(server.proc.pid)
        return now if len(now) == 2 and victim not in now else set()

    second = _until(replaced, "a new worker in place of the killed one")
    restarted = _until(lambda: _worker_urls(server.log_path, size), "the new worker's banner")
    assert re.search(
        rf"worker \d \(pid {victim}\) was killed by SIGKILL", server.log_path.read_text()
    )
    ((index, url),) = restarted.items()
    assert _metrics(url)["hms_worker"] == index
    for _ in range(10):
        client, trans = apache_client("127.0.0.1", server.port, timeout=30)
        assert "default" in client.get_all_databases()
        trans.close()

    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=60) == 0
    for pid in second:
        assert not Path(f"/proc/{pid}").exists(), f"worker {pid} outlived the supervisor"
    log = server.log_path.read_text()
    assert "all workers stopped" in log
    assert "[worker=0]" in log and "[worker=1]" in log  # each worker's lines say whose they are


def test_sigterm_answers_the_call_in_flight_on_a_worker(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    from tests.integration.test_graceful_shutdown import _HeldCall, _refused

    conf = tmp_path / "proxy.yaml"
    conf.write_text("cache_enabled: false\nshutdown_grace_seconds: 60\nworkers: 2\n")
    server = ServerProcess(pg_url, tmp_path / "wh", tmp_path / "serve.log", "--config", str(conf))
    held = None
    try:
        _until(lambda: len(_children(server.proc.pid)) == 2, "two workers")
        held = _HeldCall(pg_url, server, T)  # create_database, waiting inside a worker
        server.proc.send_signal(signal.SIGTERM)
        _until(lambda: _refused(server.port), "every worker's listener to close")
        assert held.thread.is_alive() and server.proc.poll() is None  # still in flight
        held.release()
        assert held.outcome.get("answer") == "ok"
        assert server.proc.wait(60) == 0
    finally:
        if held is not None:
            held.close()
        server.stop()


def test_a_worker_that_cannot_start_stops_the_supervisor_with_status_2(
    pg_url: str, tmp_path: Path
) -> None:
    with socket.socket() as taken:  # worker 1's HTTP port (metrics_port + 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        http = taken.getsockname()[1] - 1
        cmd = [
            sys.executable, "-m", "hms_cache_proxy", "serve", "--workers", "2",
            "--host", "127.0.0.1", "--port", "0", "--metrics-host", "127.0.0.1",
            "--metrics-port", str(http), "--database-url", pg_url,
            "--warehouse-dir", str(tmp_path / "wh"),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr
    assert f"cannot listen for HTTP (metrics) on 127.0.0.1:{http + 1}" in done.stderr
    assert "worker 1 could not start (exited with status 2): stopping the others" in done.stderr


def _labelled(url: str, name: str, **labels: str) -> float:
    """One labelled sample of a worker's /metrics (0 when absent)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def test_two_upstream_mode_workers_in_front_of_a_central_instance(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    """What docs/operations.md promises: each worker is a pass-through instance with its own
    reply cache; a write through one worker is read back at once on its connection, and read
    through the other worker once that worker's poller has applied its event (the held read
    brings it within moments; no wait is timed here)."""
    central = ServerProcess(pg_url, tmp_path / "wh", tmp_path / "central.log")
    log_path = tmp_path / "sidecar.log"
    sidecar = None
    held: list[Any] = []
    try:
        seed, trans = apache_client("127.0.0.1", central.port, timeout=30)
        seed.create_database(T.Database(name="seed"))  # a log with an event: followed
        trans.close()
        sidecar = ServerProcess(
            pg_url, tmp_path / "unused", log_path, "--workers", "2", "--metrics-port", "0",
            upstream=central.uri,
        )  # fmt: skip
        urls = _until(lambda: len(_worker_urls(log_path)) == 2 and _worker_urls(log_path), "2")
        on: dict[int, Any] = {}  # worker index -> a client connected to it
        for _ in range(40):
            before = _connections(urls)
            client, trans = apache_client("127.0.0.1", sidecar.port, timeout=30)
            held.append(trans)
            assert "default" in client.get_all_databases()
            after = _connections(urls)
            (grew,) = [i for i in urls if after[i] == before[i] + 1]
            on.setdefault(grew, client)
            if len(on) == 2:
                break
        assert set(on) == {0, 1}, f"40 connections all went to worker {set(on)}"

        def reads(worker: int, value: str) -> bool:
            try:
                return on[worker].get_database("shared").parameters == {"v": value}
            except T.NoSuchObjectException:
                return False

        on[0].create_database(T.Database(name="shared", parameters={"v": "1"}))
        assert reads(0, "1")  # its own write, on its connection, at once
        _until(lambda: reads(1, "1"), "worker 1 reads worker 0's new database")
        hits = _labelled(urls[1], "hms_cache_hits_total", method="get_database")
        assert reads(1, "1") and reads(1, "1")
        assert _labelled(urls[1], "hms_cache_hits_total", method="get_database") == hits + 2
        on[0].alter_database("shared", T.Database(name="shared", parameters={"v": "2"}))
        assert reads(0, "2")
        _until(lambda: reads(1, "2"), "worker 1 drops its entry on worker 0's write's event")
        on[1].alter_database("shared", T.Database(name="shared", parameters={"v": "3"}))
        assert reads(1, "3")
        _until(lambda: reads(0, "3"), "worker 0 reads worker 1's write")
        for trans in held:
            trans.close()
        held.clear()

        workers = _children(sidecar.proc.pid)
        assert len(workers) == 2
        sidecar.proc.send_signal(signal.SIGTERM)
        assert sidecar.proc.wait(timeout=60) == 0
        for pid in workers:
            assert not Path(f"/proc/{pid}").exists(), f"worker {pid} outlived the supervisor"
        log = log_path.read_text()
        assert "all workers stopped" in log
        assert log.count("stopped: calls finished, upstream connections closed") == 2
        assert "Traceback" not in log
    finally:
        for trans in held:
            trans.close()
        if sidecar is not None:
            sidecar.stop()
        central.stop()
