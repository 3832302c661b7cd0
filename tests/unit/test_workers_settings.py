"""`serve --workers N`: refused where workers cannot be kept safe, and each worker's settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hms_cache_proxy.cli import main
from hms_cache_proxy.config import Settings
from hms_cache_proxy.workers import worker_settings


@pytest.fixture(autouse=True)
def _clean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("HMS_CACHE_PROXY_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def test_workers_on_sqlite_are_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--workers", "2", "--database-url", "sqlite:///m.db"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "hms-cache-proxy: 2 workers need PostgreSQL: SQLite has one writer at a time, and each "
        "worker is an instance writing the same file; serve SQLite with one (workers: 1)"
    )


def test_workers_flag_takes_positive_numbers_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--workers", "0"])
    assert stopped.value.code == 2
    assert "--workers" in capsys.readouterr().err


def test_each_worker_gets_the_port_its_own_http_port_and_name() -> None:
    base = Settings(
        database_url="postgresql://u@h/db",
        port=0,
        metrics_port=9090,
        rest_port=8181,
        instance_name="hms-1",
        workers=3,
    )
    second = worker_settings(base, 40000, 1)
    assert (second.port, second.metrics_port, second.instance_name) == (40000, 9091, "hms-1-w1")
    assert not second.rest_enabled  # the REST catalog is worker 0's
    first = worker_settings(base, 40000, 0)
    assert (first.metrics_port, first.rest_port) == (9090, 8181)
    free = worker_settings(base.model_copy(update={"metrics_port": 0}), 40000, 2)
    assert free.metrics_port == 0  # each worker a free port of its own
