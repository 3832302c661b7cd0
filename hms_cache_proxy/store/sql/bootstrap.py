"""Creating a metastore database, and checking one before serving from it.

``init_db`` does what Hive's schematool does (create every table of the 4.0.0 schema and insert
its seed rows) and then what Hive's metastore does the first time it starts (point the ``hive``
catalog at the warehouse and create the ``default`` database), so that a database made here
and one made by schematool and opened once by a stock metastore look the same. ``ensure_ready``
is what ``serve`` runs: it accepts a schematool-made 4.0.0 database as it is (finishing its
first start) and refuses any other version with a message that says what to do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import Connection, insert, inspect, select, text, update
from sqlalchemy.exc import IntegrityError

from hms_cache_proxy.store.db import ids, schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.rules import ADMIN_ROLE, PUBLIC_ROLE

SCHEMA_VERSION = "4.0.0"
VERSION_COMMENT = "Hive release version 4.0.0"

HIVE_CATALOG = "hive"
HIVE_CATALOG_COMMENT = "Default catalog for Hive"
DEFAULT_DATABASE = "default"
DEFAULT_DATABASE_COMMENT = "Default Hive database"
# Hive's seed leaves the catalog's location to the metastore's first start.
UNSET_LOCATION = "TBD"
DEFAULT_ROLES = (ADMIN_ROLE, PUBLIC_ROLE)

# Serialises concurrent init-db runs on PostgreSQL (any constant will do; this one spells HMS).
_INIT_LOCK_KEY = 0x484D53


class SchemaError(Exception):
    """The database cannot be served as it is; the message says what was found and what to do."""


@dataclass(frozen=True)
class _State:
    """What a database holds, as far as the schema check is concerned."""

    tables: frozenset[str]  # metastore tables present
    versions: tuple[str, ...]  # VERSION.SCHEMA_VERSION values (normally exactly one)

    @property
    def empty(self) -> bool:
        return not self.tables

    @property
    def missing(self) -> list[str]:
        return sorted(set(schema.metadata.tables) - self.tables)


# -- public ------------------------------------------------------------------------------------


def init_db(db: Database, warehouse_uri: str) -> str:
    """Create and seed the schema on a database without metastore tables; returns a message.

    Everything happens in one transaction (DDL is transactional on PostgreSQL and SQLite), so a
    failure leaves the database as empty as it was. A database that is already initialised is
    left untouched and the message says which version it holds.
    """

    def work(conn: Connection) -> str:
        _lock_for_init(db, conn)
        state = _read_state(conn)
        if not state.empty:
            return _already_initialised(db, state)
        schema.metadata.create_all(conn, checkfirst=False)
        _insert_seed_rows(conn)
        _first_start(db, conn, warehouse_uri, tables_are_new=True)
        return (
            f"Created the Hive {SCHEMA_VERSION} metastore schema in {db.describe()}, "
            f"with catalog {HIVE_CATALOG!r} and database {DEFAULT_DATABASE!r} at {warehouse_uri}."
        )

    return db.transaction(work)


def ensure_ready(db: Database, warehouse_uri: str, auto_create: bool) -> None:
    """Make sure ``db`` can be served: a Hive 4.0.0 schema with its catalog and default database.

    An empty database is initialised when ``auto_create`` is set; a schematool-made 4.0.0
    database gets what a stock metastore adds at its first start. Anything else raises
    ``SchemaError``.
    """
    with db.read() as conn:
        state = _read_state(conn)
    if state.empty:
        if not auto_create:
            # Not a command to copy: the URL shown has its password masked.
            raise SchemaError(
                f"{db.describe()} has no metastore tables. Create them by running "
                "`hms-cache-proxy init-db` with the same settings as this serve (the same "
                "--config, --hive-site, --database-url and HMS_CACHE_PROXY_* variables), or set "
                "database_auto_create: true / HMS_CACHE_PROXY_DATABASE_AUTO_CREATE=true."
            )
        init_db(db, warehouse_uri)
        with db.read() as conn:  # another instance may have initialised it first
            state = _read_state(conn)
    _check_compatible(db, state)
    with db.read() as conn:
        needed = _first_start_needed(conn)
    if not needed:
        return
    try:
        db.transaction(lambda conn: _first_start(db, conn, warehouse_uri, tables_are_new=False))
    except IntegrityError:
        # Another metastore finished the first start at the same moment; fine if it did.
        with db.read() as conn:
            if _first_start_needed(conn):
                raise


# -- state -------------------------------------------------------------------------------------


def _read_state(conn: Connection) -> _State:
    present = frozenset(inspect(conn).get_table_names()) & frozenset(schema.metadata.tables)
    versions: tuple[str, ...] = ()
    if schema.VERSION.name in present:
        rows = conn.execute(
            select(schema.VERSION.c.SCHEMA_VERSION).order_by(schema.VERSION.c.VER_ID)
        )
        versions = tuple(str(v) for v in rows.scalars())
    return _State(present, versions)


def _describe_versions(state: _State) -> str:
    if not state.versions:
        return "no VERSION row"
    if len(state.versions) == 1:
        return f"schema version {state.versions[0]}"
    return "several VERSION rows (" + ", ".join(state.versions) + ")"


def _already_initialised(db: Database, state: _State) -> str:
    if schema.VERSION.name not in state.tables or not state.versions:
        raise SchemaError(
            f"{db.describe()} already has metastore tables but {_describe_versions(state)}"
            f"{'' if schema.VERSION.name in state.tables else ' (no VERSION table)'}; "
            "init-db changes nothing on a database it did not find empty."
        )
    found = _describe_versions(state)
    msg = f"{db.describe()} is already initialised ({found}); nothing was changed."
    if state.versions != (SCHEMA_VERSION,):
        # Not a success: the database still cannot be served.
        raise SchemaError(
            f"{msg} hms-cache-proxy needs schema version {SCHEMA_VERSION}: {_upgrade(db)}."
        )
    return msg


def _upgrade(db: Database) -> str:
    """What to do about a database at another schema version."""
    if db.dialect == "postgresql":
        return "upgrade it with Hive's schematool (`schematool -dbType postgres -upgradeSchema`)"
    # schematool has no SQLite type: a `-dbType sqlite` command would only fail
    return (
        "Hive's schematool does not upgrade SQLite, so serve from a new SQLite file instead "
        f"(serve or init-db creates schema {SCHEMA_VERSION} in it)"
    )


def _check_compatible(db: Database, state: _State) -> None:
    where = db.describe()
    if schema.VERSION.name not in state.tables or not state.versions:
        raise SchemaError(
            f"{where} has metastore tables but {_describe_versions(state)}"
            f"{'' if schema.VERSION.name in state.tables else ' (no VERSION table)'}, so its "
            f"schema version is unknown; hms-cache-proxy needs a Hive {SCHEMA_VERSION} schema. "
            "Finish or repair it with Hive's schematool."
        )
    if state.versions != (SCHEMA_VERSION,):
        raise SchemaError(
            f"{where} holds {_describe_versions(state)}, but hms-cache-proxy needs "
            f"schema version {SCHEMA_VERSION}: {_upgrade(db)}."
        )
    missing = state.missing
    if missing:
        shown = ", ".join(missing[:10]) + (
            f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        )
        raise SchemaError(
            f"{where} says schema version {SCHEMA_VERSION} but lacks tables the service needs: "
            f"{shown}. Repair it with Hive's schematool (`schematool -validate` lists the "
            "differences)."
        )


# -- creation ----------------------------------------------------------------------------------


def _lock_for_init(db: Database, conn: Connection) -> None:
    """Make a second init-db wait for the first, then find its tables.

    On SQLite the write transaction's BEGIN IMMEDIATE already does this.
    """
    if db.dialect == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _INIT_LOCK_KEY})


def _insert_seed_rows(conn: Connection) -> None:
    """The rows Hive's 4.0.0 script inserts, in its order."""
    conn.execute(
        insert(schema.CTLGS).values(
            CTLG_ID=1,
            NAME=HIVE_CATALOG,
            DESC=HIVE_CATALOG_COMMENT,
            LOCATION_URI=UNSET_LOCATION,
            CREATE_TIME=None,
        )
    )
    conn.execute(
        insert(schema.SEQUENCE_TABLE).values(SEQUENCE_NAME=ids.NOTIFICATION_LOG.name, NEXT_VAL=1)
    )
    conn.execute(insert(schema.NOTIFICATION_SEQUENCE).values(NNI_ID=1, NEXT_EVENT_ID=1))
    # Transaction 0, committed: the floor every txn snapshot starts from.
    conn.execute(
        insert(schema.TXNS).values(
            TXN_ID=0, TXN_STATE="c", TXN_STARTED=0, TXN_LAST_HEARTBEAT=0, TXN_USER="", TXN_HOST=""
        )
    )
    conn.execute(insert(schema.TXN_LOCK_TBL).values(TXN_LOCK=1))
    conn.execute(insert(schema.NEXT_LOCK_ID).values(NL_NEXT=1))
    conn.execute(insert(schema.NEXT_COMPACTION_QUEUE_ID).values(NCQ_NEXT=1))
    conn.execute(
        insert(schema.SEQUENCE_TABLE).values(
            SEQUENCE_NAME=ids.TXN_WRITE_NOTIFICATION_LOG.name, NEXT_VAL=1
        )
    )
    conn.execute(
        insert(schema.VERSION).values(
            VER_ID=1, SCHEMA_VERSION=SCHEMA_VERSION, VERSION_COMMENT=VERSION_COMMENT
        )
    )


def _first_start_needed(conn: Connection) -> bool:
    location = conn.execute(
        select(schema.CTLGS.c.LOCATION_URI).where(schema.CTLGS.c.NAME == HIVE_CATALOG)
    ).scalar()
    return (
        location in (None, UNSET_LOCATION)
        or not _default_database_exists(conn)
        or bool(_missing_default_roles(conn))
    )


def _missing_default_roles(conn: Connection) -> list[str]:
    found = set(
        conn.execute(
            select(schema.ROLES.c.ROLE_NAME).where(schema.ROLES.c.ROLE_NAME.in_(DEFAULT_ROLES))
        )
        .scalars()
        .all()
    )
    return [r for r in DEFAULT_ROLES if r not in found]


def _default_database_exists(conn: Connection) -> bool:
    row = conn.execute(
        select(schema.DBS.c.DB_ID).where(
            schema.DBS.c.NAME == DEFAULT_DATABASE, schema.DBS.c.CTLG_NAME == HIVE_CATALOG
        )
    ).first()
    return row is not None


def _first_start(db: Database, conn: Connection, warehouse_uri: str, tables_are_new: bool) -> None:
    """What Hive's HMSHandler does when it first opens a database: catalog location, default db.

    The catalog row is locked first, so two services starting together on one database do not
    both create ``default``.
    """
    now = int(time.time())
    catalog = conn.execute(
        select(schema.CTLGS.c.LOCATION_URI)
        .where(schema.CTLGS.c.NAME == HIVE_CATALOG)
        .with_for_update()
    ).first()
    if catalog is None:
        conn.execute(
            insert(schema.CTLGS).values(
                CTLG_ID=_new_id(db, conn, ids.CATALOG, tables_are_new),
                NAME=HIVE_CATALOG,
                DESC=HIVE_CATALOG_COMMENT,
                LOCATION_URI=warehouse_uri,
                CREATE_TIME=now,
            )
        )
    elif catalog.LOCATION_URI == UNSET_LOCATION:
        conn.execute(
            update(schema.CTLGS)
            .where(schema.CTLGS.c.NAME == HIVE_CATALOG)
            .values(LOCATION_URI=warehouse_uri)
        )
    _create_default_roles(db, conn, now, tables_are_new)
    if not _default_database_exists(conn):
        conn.execute(
            insert(schema.DBS).values(
                DB_ID=_new_id(db, conn, ids.DATABASE, tables_are_new),
                DESC=DEFAULT_DATABASE_COMMENT,
                DB_LOCATION_URI=warehouse_uri,
                NAME=DEFAULT_DATABASE,
                OWNER_NAME="public",
                OWNER_TYPE="ROLE",
                CTLG_NAME=HIVE_CATALOG,
                CREATE_TIME=now,
                TYPE="NATIVE",
            )
        )


def _create_default_roles(db: Database, conn: Connection, now: int, tables_are_new: bool) -> None:
    """HMSHandler.createDefaultRoles: roles ``admin`` and ``public`` (each its own owner), and
    the global privilege ``All`` of ``admin`` with grant option. A stock metastore starting
    later finds them and adds nothing (it skips roles and grants that exist)."""
    missing = _missing_default_roles(conn)
    for name in missing:
        conn.execute(
            insert(schema.ROLES).values(
                ROLE_ID=_new_id(db, conn, ids.ROLE, tables_are_new),
                ROLE_NAME=name,
                OWNER_NAME=name,
                CREATE_TIME=now,
            )
        )
    if ADMIN_ROLE not in missing:
        return
    g = schema.GLOBAL_PRIVS.c
    held = conn.execute(
        select(g.USER_GRANT_ID).where(
            g.PRINCIPAL_NAME == ADMIN_ROLE, g.PRINCIPAL_TYPE == "ROLE", g.USER_PRIV == "All"
        )
    ).first()
    if held is None:
        conn.execute(
            insert(schema.GLOBAL_PRIVS).values(
                USER_GRANT_ID=_new_id(db, conn, ids.GLOBAL_PRIVILEGE, tables_are_new),
                CREATE_TIME=now,
                GRANT_OPTION=1,
                GRANTOR=ADMIN_ROLE,
                GRANTOR_TYPE="ROLE",
                PRINCIPAL_NAME=ADMIN_ROLE,
                PRINCIPAL_TYPE="ROLE",
                USER_PRIV="All",
                AUTHORIZER="SQL",
            )
        )


def _new_id(db: Database, conn: Connection, seq: ids.IdSequence, tables_are_new: bool) -> int:
    if tables_are_new:
        # The tables were created by this very transaction, which a separate connection
        # (IdAllocator's outside a Database.transaction) cannot see yet: reserve under the
        # SEQUENCE_TABLE row lock in this transaction (still never max(id)+1).
        return ids.reserve(conn, seq, 1)
    return IdAllocator(db).allocate(conn, seq)[0]
