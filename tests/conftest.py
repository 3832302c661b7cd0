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
