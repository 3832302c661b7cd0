"""The HTTP endpoint (/metrics, /healthz, /readyz, /config, /admin) and `hms-cache-proxy status`,
against the running service: real Thrift calls through Apache's client, real HTTP requests to a
free port, SQLite and PostgreSQL databases (one dropped or locked to make health fail)."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import logging
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from hms_cache_proxy.observability import status
from hms_cache_proxy.observability.health import DatabaseHealth
from hms_cache_proxy.observability.http import MAX_BODY_BYTES
from tests.support.apache_thrift import apache_client
from tests.support.metastore import table
from tests.support.server import ROOT, ServerProcess, free_port, running_service

TOKEN = "obs-test-token-" + secrets.token_hex(8)
AUTH = {"Authorization": f"Bearer {TOKEN}"}


# -- helpers -------------------------------------------------------------------------------------


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    base: str,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def samples(base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    reply = request(base, "GET", "/metrics")
    assert reply.status == 200
    out = {}
    for family in text_string_to_metric_families(reply.body.decode()):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(found: dict[Any, float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def eventually(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Retry ``check`` until it stops raising AssertionError (values change asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.fixture
def obs(database_url: str, tmp_path: Path) -> Iterator[Any]:
    """The service with its HTTP endpoint on a free port and an admin token (SQLite and PG).

    Without the cache: these tests drive Readiness by hand and expect the no-cache admin
    target (the cache's own refresh/flush and prewarm are tested in test_cache_*.py)."""
    with running_service(
        database_url,
        tmp_path / "warehouse",
        metrics_port=0,
        admin_token=TOKEN,
        cache_enabled=False,
    ) as svc:
        yield svc


@pytest.fixture
def thrift(obs: Any) -> Iterator[Any]:
    client, transport = apache_client("127.0.0.1", obs.port)
    yield client
    transport.close()


@pytest.fixture
def pg_clone(pg_server: Any, pg_template: str) -> Iterator[tuple[Any, str]]:
    """A PostgreSQL database with Hive's schema that the test may drop or lock."""
    name = f"obs{secrets.token_hex(5)}"
    pg_server.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
    yield pg_server, name
    pg_server.drop_database(name)


# -- /metrics ------------------------------------------------------------------------------------


def test_metrics_count_and_time_thrift_calls_by_method_and_outcome(obs, thrift, T):
    base = obs.metrics_url
    before = samples(base)
    for _ in range(3):
        assert "default" in thrift.get_all_databases()
    thrift.create_database(T.Database(name="obsdb"))
    thrift.create_table(table(T, "obsdb", "t1", ["id:bigint"], ["ds:string"]))
    thrift.get_table("obsdb", "t1")
    with pytest.raises(T.NoSuchObjectException):
        thrift.get_table("obsdb", "missing")

    def counted() -> dict[Any, float]:
        after = samples(base)

        def delta(name: str, **labels: str) -> float:
            return value(after, name, **labels) - value(before, name, **labels)

        assert delta("hms_requests_total", method="get_all_databases", outcome="ok") == 3
        assert delta("hms_requests_total", method="get_table", outcome="ok") == 1
        assert delta("hms_requests_total", method="create_table", outcome="ok") == 1
        assert delta("hms_requests_total", method="get_table", outcome="NoSuchObjectException") == 1
        assert delta("hms_request_seconds_count", method="get_all_databases") == 3
        assert delta("hms_request_seconds_count", method="get_table") == 2
        assert delta("hms_request_seconds_sum", method="get_table") > 0
        return after

    after = eventually(counted)
    assert value(after, "hms_thrift_connections") >= 1  # this test's client is connected
    assert value(after, "hms_build_info", version="0.1.0") == 1
    # process and platform collectors on the same registry
    assert value(after, "process_cpu_seconds_total") > 0
    assert any(name == "python_info" for name, _ in after)


def test_metrics_show_the_database_pool_in_use_and_its_limit(obs):
    """A connection held (as a call holds one while it runs) shows as one more in use. The
    service's own threads (the floor primer at start) hold one now and then, so the pair of
    samples, before and while held, is taken again until no such read fell between them."""
    engine = "shared" if obs.database.dialect == "sqlite" else "read"
    assert value(samples(obs.metrics_url), "hms_database_pool_limit", engine=engine) >= 5 * 8

    def one_more() -> None:
        before = value(samples(obs.metrics_url), "hms_database_pool_in_use", engine=engine)
        with obs.database.read_engine.connect():  # what a call does while it runs
            during = value(samples(obs.metrics_url), "hms_database_pool_in_use", engine=engine)
        assert during == before + 1

    eventually(one_more)


def test_metrics_content_type_and_gzip(obs):
    plain = request(obs.metrics_url, "GET", "/metrics")
    assert plain.status == 200
    assert plain.headers["content-type"].startswith("text/plain; version=0.0.4")
    zipped = request(obs.metrics_url, "GET", "/metrics", headers={"Accept-Encoding": "gzip"})
    assert zipped.status == 200 and zipped.headers["content-encoding"] == "gzip"
    assert b"hms_requests_total" in gzip.decompress(zipped.body)
    openmetrics = request(
        obs.metrics_url, "GET", "/metrics", headers={"Accept": "application/openmetrics-text"}
    )
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.body.rstrip().endswith(b"# EOF")


def test_database_errors_are_counted(obs):
    before = samples(obs.metrics_url)
    with pytest.raises(DBAPIError), obs.database.read() as conn:
        conn.exec_driver_sql("SELECT * FROM no_such_table_here")
    after = samples(obs.metrics_url)
    kinds = {
        dict(labels)["kind"]
        for (name, labels), v in after.items()
        if name == "hms_database_errors_total" and v > value(before, name, **dict(labels))
    }
    assert kinds == {"ProgrammingError"} or kinds == {"OperationalError"}


# -- /healthz and /readyz ------------------------------------------------------------------------


def test_healthz_and_readyz_when_serving(obs):
    health = request(obs.metrics_url, "GET", "/healthz")
    assert health.status == 200
    body = health.json()
    assert body["status"] == "ok" and body["thrift"] == "serving" and body["database"] == "ok"
    assert health.headers["content-type"] == "application/json"
    ready = request(obs.metrics_url, "GET", "/readyz")
    assert ready.status == 200
    assert ready.json() == {
        "ready": True,
        "serving": True,
        "schema_checked": True,
        "stopping": False,
        "reason": None,
        "degraded": [],
        "prewarm": {
            "state": "not_started",
            "running": False,
            "finished": False,
            "tables_done": 0,
            "tables_total": 0,
            "partitions_loaded": 0,
        },
    }
    head = request(obs.metrics_url, "HEAD", "/healthz")
    assert head.status == 200 and head.body == b"" and int(head.headers["content-length"]) > 0


def test_readyz_follows_the_readiness_object(obs):
    r = obs.readiness
    r.mark_not_ready("prewarm running")
    r.prewarm_started(10)
    r.table_loaded(partitions=40)
    r.table_loaded(partitions=2)
    r.add_tables(1)
    reply = request(obs.metrics_url, "GET", "/readyz")
    assert reply.status == 503
    body = reply.json()
    assert body["ready"] is False and body["serving"] is True
    assert body["reason"] == "prewarm running"
    assert body["prewarm"] == {
        "state": "running",
        "running": True,
        "finished": False,
        "tables_done": 2,
        "tables_total": 11,
        "partitions_loaded": 42,
    }
    found = samples(obs.metrics_url)
    assert value(found, "hms_prewarm_tables_done") == 2
    assert value(found, "hms_prewarm_tables_total") == 11
    r.prewarm_finished()
    r.mark_ready()
    reply = request(obs.metrics_url, "GET", "/readyz")
    assert reply.status == 200
    assert reply.json()["prewarm"]["state"] == "finished"
    # health does not depend on readiness: a prewarming instance is alive
    assert request(obs.metrics_url, "GET", "/healthz").status == 200


def test_healthz_and_readyz_503_when_thrift_stops_serving(database_url, tmp_path):
    with running_service(database_url, tmp_path / "wh", metrics_port=0) as svc:
        assert request(svc.metrics_url, "GET", "/healthz").status == 200
        svc.server.stop(0)  # the accept loop ends; the HTTP endpoint stays up

        def down() -> None:
            reply = request(svc.metrics_url, "GET", "/healthz")
            assert reply.status == 503
            assert reply.json()["thrift"] == "not serving"
            assert "Thrift server is not serving" in reply.json()["reason"]

        eventually(down)
        ready = request(svc.metrics_url, "GET", "/readyz")
        assert ready.status == 503 and ready.json()["reason"] == "Thrift server is not serving"


@pytest.mark.postgres
def test_healthz_503_when_the_database_is_dropped_and_200_when_it_returns(
    pg_clone, pg_template, tmp_path
):
    server, name = pg_clone
    with running_service(
        server.url_for(name),
        tmp_path / "wh",
        metrics_port=0,
        health_cache_seconds=0.1,
        health_timeout_seconds=2.0,
        database_timeout_seconds=5.0,
    ) as svc:
        base = svc.metrics_url
        assert request(base, "GET", "/healthz").status == 200
        errors_before = sum(
            v for (n, _), v in samples(base).items() if n == "hms_database_errors_total"
        )
        server.drop_database(name)

        def down() -> dict[str, Any]:
            reply = request(base, "GET", "/healthz")
            assert reply.status == 503
            return reply.json()

        body = eventually(down)
        assert body["status"] == "unavailable" and body["database"] == "error"
        assert body["thrift"] == "serving"
        assert body["reason"].startswith("database: OperationalError")
        errors_after = sum(
            v for (n, _), v in samples(base).items() if n == "hms_database_errors_total"
        )
        assert errors_after > errors_before
        # liveness and readiness are separate: Thrift still serves (calls fail fast)
        assert request(base, "GET", "/readyz").status == 200

        server.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
        eventually(lambda: _assert_status(base, "/healthz", 200))


def _assert_status(base: str, path: str, expected: int) -> None:
    assert request(base, "GET", path).status == expected


@pytest.mark.postgres
def test_healthz_503_within_the_timeout_when_the_database_hangs(pg_clone, tmp_path):
    server, name = pg_clone
    with running_service(
        server.url_for(name),
        tmp_path / "wh",
        metrics_port=0,
        health_cache_seconds=0.1,
        health_timeout_seconds=0.5,
        database_timeout_seconds=10.0,
    ) as svc:
        base = svc.metrics_url
        assert request(base, "GET", "/healthz").status == 200
        blocker = server.connect(name)
        try:
            with blocker.cursor() as cur:  # the probe's single-row read now waits
                cur.execute('LOCK TABLE "NOTIFICATION_SEQUENCE" IN ACCESS EXCLUSIVE MODE')
            time.sleep(0.2)  # let the cached healthy result expire
            started = time.monotonic()
            reply = request(base, "GET", "/healthz")
            took = time.monotonic() - started
            assert reply.status == 503
            assert reply.json()["reason"] == "database did not answer within 0.5s"
            assert took < 2.0
            # probes do not pile up behind the stuck query: still answered within the timeout
            for _ in range(3):
                started = time.monotonic()
                assert request(base, "GET", "/healthz").status == 503
                assert time.monotonic() - started < 2.0
        finally:
            blocker.rollback()
            blocker.close()
        eventually(lambda: _assert_status(base, "/healthz", 200))


def test_database_health_is_cached_and_bounded():
    """The probe runs at most once per cache period, and a hung one costs one thread."""
    calls = []
    release = threading.Event()

    def probe() -> None:
        calls.append(time.monotonic())
        if len(calls) >= 2:
            release.wait(10)

    health = DatabaseHealth(probe, timeout_seconds=0.2, cache_seconds=0.3)
    assert health.check().ok and health.check().ok and len(calls) == 1
    time.sleep(0.35)
    first = health.check()  # second probe hangs
    assert not first.ok and "within 0.2s" in (first.reason or "")
    time.sleep(0.35)
    assert not health.check().ok
    assert len(calls) == 2  # the hung probe was waited on again, not started anew
    release.set()
    time.sleep(0.35)
    eventually(lambda: _assert_ok(health))


def _assert_ok(health: DatabaseHealth) -> None:
    assert health.check().ok


def test_database_health_masks_secrets():
    def probe() -> None:
        raise RuntimeError("could not connect with password hunter2\nsecond line")

    result = DatabaseHealth(probe, secrets=["hunter2"]).check()
    assert result.reason == "database: RuntimeError: could not connect with password ********"


# -- /config -------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_config_needs_the_token_and_shows_no_secret(pg_clone, tmp_path, caplog):
    server, name = pg_clone
    password = "db-pass-" + secrets.token_hex(6)
    # trust authentication ignores the password, so the URL works and still carries one
    url = make_url(server.url_for(name)).set(password=password).render_as_string(False)
    caplog.set_level(logging.DEBUG)
    with running_service(url, tmp_path / "wh", metrics_port=0, admin_token=TOKEN) as svc:
        base = svc.metrics_url
        assert request(base, "GET", "/healthz").status == 200
        missing = request(base, "GET", "/config")
        assert missing.status == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = request(base, "GET", "/config", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401
        basic = request(base, "GET", "/config", headers={"Authorization": f"Basic {TOKEN}"})
        assert basic.status == 401
        ok = request(base, "GET", "/config", headers=AUTH)
        assert ok.status == 200
        text = ok.body.decode()
        assert TOKEN not in text and password not in text
        config = ok.json()
        assert config["admin_token"] == "********"
        assert config["database_url"].endswith(f"@127.0.0.1:{server.port}/{name}")
        assert ":***@" in config["database_url"]
        assert config["metrics_port"] == 0 and config["port"] == 0
    assert TOKEN not in caplog.text and password not in caplog.text


def test_config_and_admin_are_off_without_a_token(sqlite_url, tmp_path):
    with running_service(sqlite_url, tmp_path / "wh", metrics_port=0) as svc:
        for method, path in (("GET", "/config"), ("POST", "/admin/refresh?db=x")):
            reply = request(svc.metrics_url, method, path, headers=AUTH)
            assert reply.status == 403
            assert "no admin_token is configured" in reply.json()["error"]


# -- /admin --------------------------------------------------------------------------------------


def test_admin_endpoints_need_the_token(obs, caplog):
    caplog.set_level(logging.DEBUG)
    base = obs.metrics_url
    body = json.dumps({"db": "Sales"}).encode()
    json_headers = {"Content-Type": "application/json"}
    for path in ("/admin/refresh", "/admin/flush"):
        assert request(base, "POST", path, body, json_headers).status == 401
        wrong = {**json_headers, "Authorization": "Bearer " + TOKEN[:-1] + "x"}
        reply = request(base, "POST", path, body, wrong)
        assert reply.status == 401 and reply.json() == {"error": "invalid admin token"}
    reply = request(base, "POST", "/admin/refresh", body, {**json_headers, **AUTH})
    assert reply.status == 200
    assert reply.json() == {"refreshed": {"db": "sales"}, "note": "no cache"}
    scope = {"db": "sales", "table": "Orders", "partition": "ds=2024-01-01"}
    reply = request(
        base, "POST", "/admin/flush", json.dumps(scope).encode(), {**json_headers, **AUTH}
    )
    assert reply.status == 200
    assert reply.json() == {
        "flushed": {"db": "sales", "table": "orders", "partition": "ds=2024-01-01"},
        "note": "no cache",
    }
    # the scope as a query string, or as a form body
    reply = request(base, "POST", "/admin/refresh?db=sales&table=orders", b"", AUTH)
    assert reply.status == 200
    assert reply.json()["refreshed"] == {"db": "sales", "table": "orders"}
    form = {"Content-Type": "application/x-www-form-urlencoded", **AUTH}
    reply = request(base, "POST", "/admin/flush", b"db=sales&table=t", form)
    assert reply.json()["flushed"] == {"db": "sales", "table": "t"}
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(
    ("body", "content_type", "status", "message"),
    [
        (b"{}", "application/json", 400, "db is required"),
        (b'{"db": ""}', "application/json", 400, "db must be a non-empty string"),
        (b'{"db": 5}', "application/json", 400, "db must be a non-empty string"),
        (b'{"db": "a", "partition": "p=1"}', "application/json", 400, "partition needs table"),
        (b'{"db": "a", "tabel": "t"}', "application/json", 400, "unknown field(s) ['tabel']"),
        (b'["a"]', "application/json", 400, "must be an object"),
        (b'{"db": ', "application/json", 400, "invalid JSON body"),
        (b"db=a&db=b", "application/x-www-form-urlencoded", 400, "given more than once"),
        (b"<db>a</db>", "application/xml", 415, "unsupported Content-Type"),
    ],
)
def test_admin_rejects_invalid_bodies(obs, body, content_type, status, message):
    reply = request(
        obs.metrics_url, "POST", "/admin/refresh", body, {"Content-Type": content_type, **AUTH}
    )
    assert reply.status == status
    assert message in reply.json()["error"]


def test_a_bare_admin_post_says_which_fields_it_takes(obs):
    for path in ("/admin/refresh", "/admin/flush"):
        reply = request(obs.metrics_url, "POST", path, b"", AUTH)
        assert reply.status == 400
        error = reply.json()["error"]
        assert error.startswith("db is required")
        assert "table (optional)" in error and "partition (optional, with table)" in error
        assert f"{path}?db=sales&table=orders" in error and "docs/operations.md" in error


def test_admin_refuses_oversize_bodies(obs):
    big = json.dumps({"db": "x" * (MAX_BODY_BYTES + 1)}).encode()
    reply = request(
        obs.metrics_url,
        "POST",
        "/admin/refresh",
        big,
        {"Content-Type": "application/json", **AUTH},
    )
    assert reply.status == 413
    assert f"larger than {MAX_BODY_BYTES} bytes" in reply.json()["error"]
    huge = b"x" * (512 * 1024)  # well past the limit: answered 413, the rest swallowed
    reply = request(obs.metrics_url, "POST", "/admin/flush", huge, AUTH)
    assert reply.status == 413
    # chunked bodies are refused (the length must be known before reading)
    conn = http.client.HTTPConnection("127.0.0.1", obs.metrics_port, timeout=10)
    try:
        conn.request("POST", "/admin/flush", body=iter([b'{"db":', b'"x"}']), headers=AUTH)
        resp = conn.getresponse()
        assert resp.status == 411
    finally:
        conn.close()
    # the endpoint still serves
    assert request(obs.metrics_url, "GET", "/healthz").status == 200


# -- routing -------------------------------------------------------------------------------------


def test_unknown_paths_404_and_other_methods_405(obs):
    base = obs.metrics_url
    reply = request(base, "GET", "/nope")
    assert reply.status == 404 and reply.json() == {"error": "no such endpoint: /nope"}
    assert request(base, "DELETE", "/nope").status == 404
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        reply = request(base, method, "/metrics", b"")
        assert reply.status == 405, method
        assert reply.headers["allow"] == "GET, HEAD"
    reply = request(base, "GET", "/admin/refresh", headers=AUTH)
    assert reply.status == 405 and reply.headers["allow"] == "POST"
    assert request(base, "BREW", "/healthz").status == 405
    assert request(base, "GET", "/healthz?verbose=1").status == 200


def test_a_taken_metrics_port_stops_the_start(sqlite_url, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        expected = rf"cannot listen for HTTP \(metrics\) on 127\.0\.0\.1:{port}"
        settings = {"metrics_port": port, "metrics_host": "127.0.0.1"}
        with (
            pytest.raises(OSError, match=expected),
            running_service(sqlite_url, tmp_path / "wh", **settings),
        ):
            pass


def test_a_taken_thrift_port_stops_serve_with_the_address(sqlite_url, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "hms_cache_proxy", "serve", "--database-url", sqlite_url]
            + ["--host", "127.0.0.1", "--port", str(port), "--metrics-port", "-1"]
            + ["--warehouse-dir", str(tmp_path / "wh")],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    assert proc.returncode == 2
    assert f"cannot listen for Thrift on 127.0.0.1:{port}: Address already in use" in proc.stderr


# -- hms-cache-proxy status ------------------------------------------------------------------------


def test_status_summarises_a_running_instance(obs, thrift):
    for _ in range(4):
        thrift.get_all_databases()
    out = io.StringIO()
    assert status.run(obs.metrics_url, out=out) == status.EXIT_OK
    text = out.getvalue()
    assert text.startswith(f"hms-cache-proxy 0.1.0 at {obs.metrics_url}\n")
    assert "\nup:         yes (Thrift serving, database answered in " in text
    assert "\nready:      yes (prewarm not started: 0/0 tables, 0 partitions)" in text
    assert re.search(r"\nthrift:     \d+ connections; [\d,]+ calls", text)
    assert "\ncache:      " in text and "\nevents:     position " in text
    assert "\nhit rate:   " in text and "\ntop misses: " in text

    # not ready: exit status 1 and the reason
    obs.readiness.mark_not_ready("prewarm running")
    out = io.StringIO()
    assert status.run(obs.metrics_url, out=out) == status.EXIT_NOT_READY
    assert "ready:      NO (prewarm running;" in out.getvalue()


def test_status_command_line(obs, thrift):
    thrift.get_all_databases()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hms_cache_proxy",
            "status",
            "--url",
            obs.metrics_url.removeprefix("http://"),
            "--interval",
            "0.2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "up:         yes" in proc.stdout and "ready:      yes" in proc.stdout
    assert re.search(r"rate:       [\d,.]+ calls/s over 0\.\d s", proc.stdout)


def test_status_into_a_closed_pipe_exits_quietly(obs):
    """`hms-cache-proxy status --interval 2 | head -5` once ended in a BrokenPipeError."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the report is written
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "hms_cache_proxy",
                "status",
                "--url",
                obs.metrics_url,
                "--interval",
                "0.2",
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            cwd=ROOT,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141  # what a shell reports for a command SIGPIPE ended
    assert proc.stderr == ""


def test_status_of_nothing_is_exit_2(capsys):
    assert status.run(f"http://127.0.0.1:{free_port()}", timeout=2) == status.EXIT_UNREACHABLE
    assert "cannot reach" in capsys.readouterr().err


def test_status_hit_rate_and_top_miss_reasons():
    text = "\n".join(
        [
            'hms_build_info{version="9.9"} 1',
            'hms_requests_total{method="get_table",outcome="ok"} 90',
            'hms_requests_total{method="get_table",outcome="NoSuchObjectException"} 10',
            "hms_thrift_connections 3",
            "hms_cache_bytes 1572864",
            "hms_cache_tables 12",
            "hms_cache_partitions 3400",
            "hms_cache_event_position 777",
            "hms_cache_lag_events 2",
            "hms_cache_lag_seconds 0.25",
            'hms_cache_hits_total{method="get_table"} 60',
            'hms_cache_hits_total{method="get_partitions"} 15',
            'hms_cache_misses_total{method="get_table",reason="not_cached"} 10',
            'hms_cache_misses_total{method="get_partitions",reason="not_cached"} 5',
            'hms_cache_misses_total{method="get_table",reason="uncommitted"} 7',
            'hms_cache_misses_total{method="get_table",reason="behind"} 3',
            'hms_cache_misses_total{method="get_table",reason="evicted"} 0',
            'hms_database_errors_total{kind="OperationalError"} 4',
            "",
        ]
    )
    ready = {
        "prewarm": {
            "state": "running",
            "tables_done": 3,
            "tables_total": 12,
            "partitions_loaded": 900,
        },
        "reason": "prewarm running",
    }
    report = status.Report(
        "http://x:9090",
        200,
        {"status": "ok", "database_seconds": 0.0021},
        503,
        ready,
        status.Scrape.parse(text, 0.0),
    )
    assert status.format_report(report).splitlines() == [
        "hms-cache-proxy 9.9 at http://x:9090",
        "up:         yes (Thrift serving, database answered in 2.1 ms)",
        "ready:      NO (prewarm running; prewarm running: 3/12 tables, 900 partitions)",
        "thrift:     3 connections; 100 calls (90 ok, 10 answered with an exception)",
        "cache:      1.5 MiB in 12 tables, 3,400 partitions",
        "events:     position 777; lag 2 events (0.25 s)",
        "hit rate:   75.0% (75 hits, 25 misses)",
        "top misses: not_cached 15, uncommitted 7, behind 3",
        "database:   4 driver errors",
    ]


def test_status_upstream_line_says_how_the_upstream_is_followed():
    scrape = status.Scrape.parse('hms_build_info{version="9.9"} 1\n', 0.0)

    def upstream_line(upstream: dict) -> str:
        report = status.Report(
            "http://x", 200, {}, 200, {"upstream_cache": upstream}, scrape, 100.0
        )
        return next(x for x in status.format_report(report).splitlines() if "upstream:" in x)

    log = {"state": "following", "reason": "at event 7", "recent_applied": [[6, 95.0], [7, 97.5]]}
    assert upstream_line({"by_time": False, "notification_log": log}) == (
        "upstream:   log following (at event 7); last applied event 7, 2.5 s ago"
    )
    log = {"state": "starting", "reason": "no answer yet", "recent_applied": []}
    assert upstream_line({"by_time": False, "notification_log": log}) == (
        "upstream:   log starting (no answer yet); no event applied yet"
    )
    assert upstream_line({"by_time": True, "ttl_seconds": 30}) == (
        "upstream:   caching by time (30 s), no log"
    )


# -- the serve command ---------------------------------------------------------------------------


def test_serve_process_exposes_the_endpoint(sqlite_url, tmp_path):
    server = ServerProcess(
        sqlite_url, tmp_path / "wh", tmp_path / "server.log", "--metrics-port", "0"
    )
    try:
        found = None
        deadline = time.monotonic() + 30
        while found is None and time.monotonic() < deadline:
            found = re.search(r"metrics on (http://\S+)/metrics", server.log_path.read_text())
            time.sleep(0.05)
        assert found, server.log_path.read_text()
        base = found.group(1)
        assert request(base, "GET", "/healthz").status == 200
        assert request(base, "GET", "/readyz").status == 200
    finally:
        server.stop()
