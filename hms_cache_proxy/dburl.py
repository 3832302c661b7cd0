"""Database URLs as users write them, turned into the SQLAlchemy URL this service connects with.

SQLAlchemy picks a default driver for a bare ``postgresql://`` URL, and that default changed
(psycopg2 in 2.0, psycopg 3 in 2.1), so the same README URL worked or ended in a
``ModuleNotFoundError`` depending on what pip installed. Here the driver is chosen explicitly:
the one this package installs (psycopg2) unless the user names another that works.
"""

from __future__ import annotations

import importlib.util
import re

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

# The driver `pip install hms-cache-proxy` brings (psycopg2-binary).
POSTGRES_DEFAULT = "postgresql+psycopg2"

FORMS = (
    "postgresql://USER:PASSWORD@HOST:PORT/DB (also postgres://, postgresql+psycopg2://, or "
    "postgresql+psycopg:// with psycopg 3 installed) or sqlite:///PATH"
)

_POSTGRES_DRIVERS = {
    # driver as written -> (SQLAlchemy drivername, module that must be importable, pip name)
    "": (POSTGRES_DEFAULT, "psycopg2", "psycopg2-binary"),
    "psycopg2": (POSTGRES_DEFAULT, "psycopg2", "psycopg2-binary"),
    "psycopg": ("postgresql+psycopg", "psycopg", "'psycopg[binary]'"),
}
_SQLITE_DRIVERS = {"": "sqlite", "pysqlite": "sqlite+pysqlite"}

# scheme://user:password@ in text that may not parse as a URL.
_CREDENTIALS = re.compile(r"(//[^/:@\s]*):[^@/\s]*@")


class UnsupportedDatabaseURL(ValueError):
    """A URL this service cannot connect with; the message is one line saying what works."""


def resolve(url: str | URL) -> URL:
    """The SQLAlchemy URL to connect with: an explicit, installed driver for PostgreSQL."""
    parsed = _parse(url)
    backend, _, driver = parsed.drivername.partition("+")
    if backend in ("postgresql", "postgres"):
        known = _POSTGRES_DRIVERS.get(driver)
        if known is None:
            raise UnsupportedDatabaseURL(
                f"unsupported PostgreSQL driver {driver!r} in database URL {masked(parsed)}: "
                f"use {FORMS}"
            )
        drivername, module, pip_name = known
        if importlib.util.find_spec(module) is None:
            raise UnsupportedDatabaseURL(
                f"database URL {masked(parsed)} needs the Python module {module}, which is not "
                f"installed: `pip install {pip_name}`, or write postgresql://... (psycopg2, "
                "installed with hms-cache-proxy)"
            )
        return parsed.set(drivername=drivername)
    if backend == "sqlite":
        if driver not in _SQLITE_DRIVERS:
            raise UnsupportedDatabaseURL(
                f"unsupported SQLite driver {driver!r} in database URL {masked(parsed)}: "
                f"use {FORMS}"
            )
        return parsed.set(drivername=_SQLITE_DRIVERS[driver])
    raise UnsupportedDatabaseURL(
        f"unsupported database URL {masked(parsed)}: hms-cache-proxy serves a Hive 4.0 schema "
        f"on PostgreSQL or SQLite only; use {FORMS}"
    )


def masked(url: str | URL) -> str:
    """The URL with its password hidden, also one given as a query field (?password=...)."""
    try:
        parsed = url if isinstance(url, URL) else make_url(url)
    except ArgumentError:
        return _CREDENTIALS.sub(r"\1:***@", str(url))
    secret_keys = [k for k in parsed.query if "password" in k.lower()]
    if secret_keys:
        parsed = parsed.update_query_dict({k: "***" for k in secret_keys})
    return parsed.render_as_string(hide_password=True)


def _parse(url: str | URL) -> URL:
    if isinstance(url, URL):
        return url
    try:
        return make_url(url)
    except ArgumentError:
        # Not echoed: where it does not parse, a password in it cannot be told apart.
        raise UnsupportedDatabaseURL(
            f"the database URL is not a URL (no scheme://): use {FORMS}"
        ) from None
