"""Fixtures shared by the whole suite.

The suite runs against real parts: a PostgreSQL server started for the session
(``tests/support/postgres.py``) and SQLite files in each test's tmp_path.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

# The repository root, so that ``hms_cache_proxy`` and ``tests.support`` import without the
# package being installed.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.postgres import PostgresServer, PostgresUnavailable  # noqa: E402


def _interrupt_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so session teardown still stops the server."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def _handler(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, _handler)


# -- PostgreSQL ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session; fails (never skips) if it cannot start."""
    _interrupt_on_sigterm()
    try:
        server = PostgresServer.start()
    except PostgresUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """SQLAlchemy URL of a fresh, empty PostgreSQL database, dropped after the test."""
    url = pg_server.new_database()
    yield url
    pg_server.drop_database(url.rsplit("/", 1)[1])


# -- SQLite --------------------------------------------------------------------------------------


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """SQLAlchemy URL of a SQLite file (not yet created) in the test's tmp_path."""
    return f"sqlite:///{tmp_path / 'metastore.db'}"


# -- the service ---------------------------------------------------------------------------------


# `database_url` and `pg_template` (tests/support/pg_template.py): every service test runs on
# SQLite and on PostgreSQL, the PostgreSQL side a clone of a template holding Hive's schema
# (0.06 s instead of 0.7 s per test).
pytest_plugins = ["tests.support.pg_template"]


@pytest.fixture
def service(database_url: str, tmp_path: Path) -> Iterator[object]:
    """The service in this process, on a free port, over a fresh database."""
    from tests.support.server import running_service

    with running_service(database_url, tmp_path / "warehouse") as svc:
        yield svc


@pytest.fixture
def connect(service: object) -> Iterator[object]:
    """Opens Apache Thrift clients (a different implementation from the server's)."""
    from tests.support.apache_thrift import apache_client

    transports = []

    def _connect(**kwargs: object) -> object:
        client, transport = apache_client("127.0.0.1", service.port, **kwargs)  # type: ignore[attr-defined]
        transports.append(transport)
        return client

    yield _connect
    for t in transports:
        t.close()


@pytest.fixture
def client(connect: object) -> object:
    return connect()  # type: ignore[operator]


@pytest.fixture(scope="session")
def T() -> object:
    """Apache-generated Thrift types (ttypes) for building requests."""
    from tests.support.apache_thrift import load_apache_modules

    return load_apache_modules().ttypes


# -- the stock Java metastore --------------------------------------------------------------------


def _on_ci() -> bool:
    """CI=true (or any value but empty/0/false/no): prerequisites must be there."""
    import os

    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def stock_hms_prerequisites() -> None:
    """Skips when the stock Hive Metastore (PySpark's jars, Java, a JDBC driver) cannot run
    here; under CI (where they are installed) a missing part fails the test instead."""
    from hms_cache_proxy.bench.stock_hms import StockUnavailable, check_prerequisites

    try:
        check_prerequisites()
    except StockUnavailable as exc:
        if _on_ci():
            pytest.fail(f"CI is set, so the stock metastore must run here: {exc}", pytrace=False)
        pytest.skip(f"stock Hive Metastore unavailable: {exc}")
