"""Database URLs: the driver chosen for each spelling, refusals, and masking."""

from __future__ import annotations

import importlib.util

import pytest

from hms_cache_proxy import dburl


@pytest.mark.parametrize(
    ("written", "connects_with"),
    [
        # whatever SQLAlchemy 2.x makes of a bare postgresql:// (psycopg2 in 2.0, psycopg 3 in
        # 2.1), the package's own driver is used
        ("postgresql://hive:secret@db:5432/metastore", "postgresql+psycopg2"),
        ("postgres://hive:secret@db/metastore", "postgresql+psycopg2"),
        ("postgresql+psycopg2://hive@db/metastore", "postgresql+psycopg2"),
        ("sqlite:///hms-cache-proxy.db", "sqlite"),
        ("sqlite+pysqlite:///x.db", "sqlite+pysqlite"),
    ],
)
def test_each_spelling_gets_an_installed_driver(written: str, connects_with: str) -> None:
    url = dburl.resolve(written)
    assert url.drivername == connects_with
    assert url.render_as_string(hide_password=False).split("://", 1)[1] == written.split("://")[1]


def test_an_explicit_psycopg3_url_is_kept_when_psycopg_is_installed() -> None:
    pytest.importorskip("psycopg")
    assert dburl.resolve("postgresql+psycopg://h/db").drivername == "postgresql+psycopg"


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("mysql://u:pw-1@h/db", "PostgreSQL or SQLite only"),
        ("postgresql+asyncpg://u:pw-1@h/db", "unsupported PostgreSQL driver 'asyncpg'"),
        ("oracle://u:pw-1@h/db", "PostgreSQL or SQLite only"),
        ("sqlite+aiosqlite:///x.db", "unsupported SQLite driver"),
        ("not a url :pw-1@", "is not a URL"),
    ],
)
def test_other_urls_are_one_line_naming_the_forms_that_work(written: str, says: str) -> None:
    with pytest.raises(dburl.UnsupportedDatabaseURL) as info:
        dburl.resolve(written)
    message = str(info.value)
    assert says in message and dburl.FORMS in message
    assert "\n" not in message and "pw-1" not in message


def test_masked_hides_the_password_and_password_fields() -> None:
    shown = dburl.masked("postgresql://hive:s3cret@db/m?sslpassword=k3y&sslmode=require")
    assert "s3cret" not in shown and "k3y" not in shown
    assert shown.startswith("postgresql://hive:***@db/m?") and "sslmode=require" in shown


def test_a_driver_that_is_not_installed_is_one_line_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """psycopg 3 is optional: a URL that names it on a host without it says how to get it (the
    test extra installs it, so its absence is simulated)."""
    real_find_spec = importlib.util.find_spec

    def without_psycopg(name: str, *args: object) -> object:
        return None if name == "psycopg" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_psycopg)
    with pytest.raises(dburl.UnsupportedDatabaseURL) as info:
        dburl.resolve("postgresql+psycopg://hive:pw-1@db/metastore")
    message = str(info.value)
    assert "needs the Python module psycopg, which is not installed" in message
    assert "pip install" in message and "postgresql://" in message
    assert "\n" not in message and "pw-1" not in message
    # the package's own driver is unaffected
    assert dburl.resolve("postgresql://hive@db/metastore").drivername == "postgresql+psycopg2"
