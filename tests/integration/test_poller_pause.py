"""``POST /admin/poller/pause?seconds=N``: the consistency checker's poller stall. It needs the
admin token, refuses a bad or missing duration and an instance without cache, and while the
stall lasts the poll lock is held (no catch-up can apply anything) until it ends by itself."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hms_cache_proxy.observability import metrics
from tests.support.server import running_service

TOKEN = "pause-token"


def _post(base: str, path: str, token: str | None = TOKEN) -> tuple[int, dict[str, Any]]:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("POST", path, body=b"", headers=headers)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


@pytest.fixture
def svc(sqlite_url: str, tmp_path: Path) -> Any:
    with running_service(
        sqlite_url, tmp_path / "wh", admin_token=TOKEN, metrics_port=0, cache_listen=False
    ) as service:
        yield service


def test_pause_holds_the_poller_and_reports_its_position(svc: Any) -> None:
    status, body = _post(svc.metrics_url, "/admin/poller/pause?seconds=2")
    assert status == 200, body
    assert body["held"] is True and body["paused_seconds"] == 2.0
    assert body["position"] == svc.cache.poller.position
    # Held: a catch-up (what every write and the poller do) cannot run meanwhile.
    lock = svc.cache.poller._poll_lock
    assert not lock.acquire(blocking=False)
    assert lock.acquire(timeout=30)  # and it ends by itself
    lock.release()


def test_the_last_poll_time_stands_still_while_paused(svc: Any) -> None:
    """hms_cache_last_poll_timestamp_seconds is what an alert on a stuck poller watches."""

    def last_poll() -> float:
        return metrics.REGISTRY.get_sample_value("hms_cache_last_poll_timestamp_seconds") or 0.0

    assert svc.cache.poller.catch_up() >= 0
    started = last_poll()
    assert abs(started - time.time()) < 60
    status, body = _post(svc.metrics_url, "/admin/poller/pause?seconds=3")
    assert status == 200 and body["held"] is True
    paused_at = last_poll()
    time.sleep(2 * svc.settings.cache_poll_interval_seconds)  # two polls' worth, none ran
    assert last_poll() == paused_at
    deadline = time.monotonic() + 30
    while last_poll() == paused_at and time.monotonic() < deadline:
        time.sleep(0.1)
    assert last_poll() > paused_at  # polling again once the pause ended


@pytest.mark.parametrize(
    ("path", "token", "status", "message"),
    [
        ("/admin/poller/pause?seconds=1", None, 401, "admin token required"),
        ("/admin/poller/pause?seconds=1", "wrong", 401, "invalid admin token"),
        ("/admin/poller/pause", TOKEN, 400, "seconds must be a number"),
        ("/admin/poller/pause?seconds=abc", TOKEN, 400, "seconds must be a number"),
        ("/admin/poller/pause?seconds=0", TOKEN, 400, "seconds must be in (0, 300]"),
        ("/admin/poller/pause?seconds=301", TOKEN, 400, "seconds must be in (0, 300]"),
        ("/admin/poller/pause?seconds=1&x=2", TOKEN, 400, "unknown field(s) ['x']"),
    ],
)
def test_bad_pause_requests_are_refused_clearly(
    svc: Any, path: str, token: str | None, status: int, message: str
) -> None:
    got, body = _post(svc.metrics_url, path, token)
    assert got == status and message in body["error"], body
    assert svc.cache.poller._poll_lock.acquire(blocking=False)  # nothing was stalled
    svc.cache.poller._poll_lock.release()


def test_an_instance_without_cache_answers_409(sqlite_url: str, tmp_path: Path) -> None:
    with running_service(
        sqlite_url, tmp_path / "wh", admin_token=TOKEN, metrics_port=0, cache_enabled=False
    ) as service:
        status, body = _post(service.metrics_url, "/admin/poller/pause?seconds=1")
    assert status == 409 and "no cache" in body["error"], body
