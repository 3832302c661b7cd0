"""Installing the transaction calls' server-side functions (``plpgsql.py``) on PostgreSQL.

They live in a schema of this project's own, never among Hive's tables, with a table that
records each installed version and a digest of its text. ``init-db`` and ``serve`` install
them: under a transaction-scoped advisory lock (concurrent starts wait for each other), and
only when this version's row is missing or its digest differs (a restart changes nothing, and
a role without CREATE can use functions an administrator installed). A database that refuses
the CREATE (no privilege, a read-only standby, ...) leaves them out: the calls then take the
statements of ``pgsql.py``, and the reason is logged.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.txn import plpgsql

log = logging.getLogger(__name__)

_INSTALL_LOCK_KEY = 0x484D5346  # "HMSF"
VERSIONS_TABLE = f"{plpgsql.SCHEMA}.function_versions"
DIGEST = hashlib.sha256("\n".join(plpgsql.FUNCTIONS).encode()).hexdigest()


@dataclass(frozen=True)
class Installed:
    """Whether this version's functions can be called, and if not why."""

    usable: bool
    reason: str = ""


def install(db: Database) -> Installed:
    """Create or upgrade this version's functions in ``db`` (PostgreSQL only)."""
    if db.dialect != "postgresql":
        return Installed(False, f"{db.dialect} has no server-side functions")
    try:
        # As one ordinary write transaction: on the pool calls use, so installing leaves no
        # connection of its own behind (an idle instance holds one connection, issue 22).
        if db.transaction(_install_txn):
            return Installed(True, "already installed")
    except DBAPIError as exc:
        reason = _first_line(exc)
        log.warning(
            "transaction functions not installed in %s (%s): open_txns and commit_txn use "
            "several statements per call instead",
            plpgsql.SCHEMA,
            reason,
        )
        return Installed(False, reason)
    log.info(
        "transaction functions version %d installed in schema %s", plpgsql.VERSION, plpgsql.SCHEMA
    )
    return Installed(True, "installed")


def _install_txn(conn: Connection) -> bool:
    """Under the install lock: True if this version is already there, else create it."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _INSTALL_LOCK_KEY})
    if _current(conn):
        return True
    _create(conn)
    return False


def _current(conn: Connection) -> bool:
    """This version's row holds this text's digest and every function exists."""
    if conn.execute(text("SELECT to_regclass(:t)"), {"t": VERSIONS_TABLE}).scalar() is None:
        return False
    digest = conn.execute(
        text(f"SELECT digest FROM {VERSIONS_TABLE} WHERE version = :v"), {"v": plpgsql.VERSION}
    ).scalar()
    if digest != DIGEST:
        return False
    return all(
        conn.execute(text("SELECT to_regprocedure(:f)"), {"f": sig}).scalar() is not None
        for sig in plpgsql.FUNCTION_SIGNATURES
    )


def _create(conn: Connection) -> None:
    conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {plpgsql.SCHEMA}"))
    conn.execute(
        text(
            f"CREATE TABLE IF NOT EXISTS {VERSIONS_TABLE} (version integer PRIMARY KEY, "
            "digest text NOT NULL, installed timestamptz NOT NULL DEFAULT now())"
        )
    )
    for sql in plpgsql.FUNCTIONS:
        conn.exec_driver_sql(sql)
    conn.execute(
        text(
            f"INSERT INTO {VERSIONS_TABLE} (version, digest) VALUES (:v, :d) "
            "ON CONFLICT (version) DO UPDATE SET digest = EXCLUDED.digest, installed = now()"
        ),
        {"v": plpgsql.VERSION, "d": DIGEST},
    )


def _first_line(exc: DBAPIError) -> str:
    orig = getattr(exc, "orig", None)
    return str(orig if orig is not None else exc).strip().splitlines()[0]
