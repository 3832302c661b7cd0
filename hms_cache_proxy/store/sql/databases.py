"""Catalogs and databases (CTLGS, DBS, DATABASE_PARAMS)."""

from __future__ import annotations

import copy
from typing import Any

from sqlalchemy import Connection, and_, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import group
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.patterns import filter_names
from hms_cache_proxy.store.repl_props import (
    REPL_TARGET_LAST_ID,
    has_repl,
    repl_last_id_moved,
    without_repl,
)
from hms_cache_proxy.store.sql.sql_base import (
    DEFAULT_CATALOG,
    SqlPart,
    now,
    principal_name,
    principal_type,
)
from hms_cache_proxy.store.sql.storage import insert_rows, param_rows

DATABASE_TYPES = {"NATIVE": 1, "REMOTE": 2}
DATABASE_TYPE_NAMES = {v: k for k, v in DATABASE_TYPES.items()}


_PG_DATABASE_NAMES = 'SELECT "NAME" FROM "DBS" WHERE "CTLG_NAME" = %(cat)s ORDER BY "NAME"'
"""The names of a catalog's databases (get_databases, get_all_databases) on PostgreSQL."""


def _alter_database_event(
    messages: msg.MessageBuilder, before: hms.Database, after: hms.Database
) -> dict[str, Any] | None:
    """ALTER_DATABASE as Hive's AlterDatabaseEvent writes it: replication properties left out
    of both objects, and no event when nothing else changed (REPL DUMP's and LOAD's
    bookkeeping alters). When either side held such properties the message says so
    (``replPropertiesLeftOut``): a cache must not take its objects for the stored ones, and
    answers that database from the database from then on. Hence one deviation: the alter that
    gives a database its first replication property does write the event, or caches would keep
    answering it as it was."""
    shown_before, shown_after = copy.copy(before), copy.copy(after)
    shown_before.parameters = without_repl(before.parameters)
    shown_after.parameters = without_repl(after.parameters)
    marked = not has_repl(before.parameters) and has_repl(after.parameters)
    if shown_before == shown_after and not marked:
        return None
    left_out = has_repl(before.parameters) or has_repl(after.parameters)
    return messages.alter_database(shown_before, shown_after, repl_left_out=left_out)


class Databases(SqlPart):
    # -- catalogs --------------------------------------------------------------------------------

    @writes_events
    def create_catalog(self, catalog: hms.Catalog) -> hms.Catalog:
        name = catalog.name

        def run(conn: Connection) -> hms.Catalog:
            if self._catalog_row(conn, name) is not None:
                raise hms.AlreadyExistsException(message=f"Catalog {name} already exists")
            (cat_id,) = self.ids.allocate(conn, idseq.CATALOG)
            created = hms.Catalog(
                name=name,
                description=catalog.description,
                locationUri=catalog.locationUri,
                createTime=catalog.createTime or now(),
            )
            conn.execute(
                insert(schema.CTLGS).values(
                    CTLG_ID=cat_id,
                    NAME=name,
                    DESC=created.description,
                    LOCATION_URI=created.locationUri,
                    CREATE_TIME=created.createTime,
                )
            )
            created = _catalog(self._catalog_row(conn, name))  # as stored
            self._emit(
                conn, [NewEvent(msg.CREATE_CATALOG, self.messages.create_catalog(created), name)]
            )
            return created

        return self.db.transaction(run)

    def get_catalog(self, name: str) -> hms.Catalog:
        with self.db.read() as conn:
            row = self._catalog_row(conn, name)
        if row is None:
            raise hms.NoSuchObjectException(message=f"No catalog {name}")
        return _catalog(row)

    def get_catalogs(self) -> list[str]:
        with self.db.read() as conn:
            return [
                r[0]
                for r in conn.execute(select(schema.CTLGS.c.NAME).order_by(schema.CTLGS.c.NAME))
            ]

    @writes_events
    def alter_catalog(self, name: str, catalog: hms.Catalog) -> None:
        def run(conn: Connection) -> None:
            row = self._catalog_row(conn, name, lock=True)
            if row is None:
                raise hms.NoSuchObjectException(message=f"No catalog {name}")
            if catalog.name and catalog.name.lower() != name:
                raise hms.InvalidOperationException(message="Cannot change the name of a catalog")
            before = _catalog(row)
            after = hms.Catalog(
                name=name,
                description=catalog.description
                if catalog.description is not None
                else before.description,
                locationUri=catalog.locationUri or before.locationUri,
                createTime=before.createTime,
            )
            conn.execute(
                update(schema.CTLGS)
                .where(schema.CTLGS.c.NAME == name)
                .values(DESC=after.description, LOCATION_URI=after.locationUri)
            )
            after = _catalog(self._catalog_row(conn, name))  # as stored
            self._emit(
                conn,
                [NewEvent(msg.ALTER_CATALOG, self.messages.alter_catalog(before, after), name)],
            )

        self.db.transaction(run)

    @writes_events
    def drop_catalog(self, name: str) -> None:
        def run(conn: Connection) -> None:
            row = self._catalog_row(conn, name, lock=True)
            if row is None:
                raise hms.NoSuchObjectException(message=f"No catalog {name}")
            if name == DEFAULT_CATALOG:
                raise hms.MetaException(message="Can not drop hive catalog")
            dbs = conn.execute(
                select(schema.DBS.c.NAME).where(schema.DBS.c.CTLG_NAME == name)
            ).all()
            if dbs:
                raise hms.InvalidOperationException(
                    message=f"Cannot drop a catalog with databases in it ({name}): "
                    + ", ".join(sorted(r[0] for r in dbs))
                )
            conn.execute(delete(schema.CTLGS).where(schema.CTLGS.c.NAME == name))
            self._emit(
                conn, [NewEvent(msg.DROP_CATALOG, self.messages.drop_catalog(_catalog(row)), name)]
            )

        self.db.transaction(run)

    def _catalog_row(self, conn: Connection, name: str, *, lock: bool = False) -> Any:
        stmt = select(schema.CTLGS).where(schema.CTLGS.c.NAME == name)
        if lock:
            stmt = stmt.with_for_update()
        return conn.execute(stmt).first()

    def _require_catalog(self, conn: Connection, name: str) -> Any:
        row = self._catalog_row(conn, name)
        if row is None:
            raise hms.NoSuchObjectException(message=f"No catalog {name}")
        return row

    # -- databases -------------------------------------------------------------------------------

    def default_database_location(self, conn: Connection, cat: str, name: str) -> str:
        """Where Hive puts a database that names no location: ``<catalog root>/<name>.db``."""
        if cat == DEFAULT_CATALOG:
            root = self.warehouse_uri
        else:
            root = (self._require_catalog(conn, cat).LOCATION_URI or self.warehouse_uri).rstrip("/")
        return f"{root}/{name}.db"

    @writes_events
    def create_database(self, database: hms.Database) -> hms.Database:
        cat = database.catalogName or DEFAULT_CATALOG

        def run(conn: Connection) -> hms.Database:
            self._require_catalog(conn, cat)
            exists = conn.execute(
                select(schema.DBS.c.DB_ID).where(
                    and_(schema.DBS.c.CTLG_NAME == cat, schema.DBS.c.NAME == database.name)
                )
            ).first()
            if exists is not None:
                raise hms.AlreadyExistsException(message=f"Database {database.name} already exists")
            created = hms.Database(
                name=database.name,
                description=database.description,
                locationUri=database.locationUri
                or self.default_database_location(conn, cat, database.name),
                parameters=dict(database.parameters or {}),
                ownerName=database.ownerName,
                ownerType=database.ownerType,
                catalogName=cat,
                createTime=database.createTime or now(),
                managedLocationUri=database.managedLocationUri,
                type=database.type or DATABASE_TYPES["NATIVE"],
                connector_name=database.connector_name,
                remote_dbname=database.remote_dbname,
            )
            (db_id,) = self.ids.allocate(conn, idseq.DATABASE)
            conn.execute(insert(schema.DBS).values(DB_ID=db_id, **_db_values(created)))
            insert_rows(
                conn, schema.DATABASE_PARAMS, param_rows("DB_ID", db_id, created.parameters)
            )
            created = self._load_database(conn, cat, database.name)  # as stored
            self._emit(
                conn,
                [
                    NewEvent(
                        msg.CREATE_DATABASE,
                        self.messages.create_database(created),
                        cat,
                        created.name,
                    )
                ],
            )
            return created

        return self.db.transaction(run)

    def get_database(self, cat: str, name: str) -> hms.Database:
        with self.db.read() as conn:
            row = self._db_row(conn, cat, name)
            params = _db_params(conn, [row.DB_ID])
        return _database(row, params.get(row.DB_ID, {}))

    def _load_database(self, conn: Connection, cat: str, name: str) -> hms.Database:
        """The database as ``get_database`` reads it, inside a write transaction."""
        row = self._db_row(conn, cat, name)
        return _database(row, _db_params(conn, [row.DB_ID]).get(row.DB_ID, {}))

    def database_locations(self) -> list[tuple[str, str, str | None, str | None]]:
        """(catalog, name, location, managed location) of every database, in one query read
        from the database itself (not a cache): the file-confinement checks need all of them."""
        d = schema.DBS.c
        with self.db.read() as conn:
            rows = conn.execute(
                select(d.CTLG_NAME, d.NAME, d.DB_LOCATION_URI, d.DB_MANAGED_LOCATION_URI)
            ).all()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def get_databases(self, cat: str, pattern: str | None = None) -> list[str]:
        if self.db.dialect == "postgresql":
            # One statement, in autocommit (no BEGIN and ROLLBACK around it), as plain SQL
            # (nothing to build, compile or key per call): the listing clients call most.
            with self.db.single_statement() as conn:
                result = conn.exec_driver_sql(_PG_DATABASE_NAMES, {"cat": cat})
                try:
                    names = [r[0] for r in result.cursor.fetchall()]
                finally:
                    result.close()
        else:
            with self.db.read() as conn:
                names = [
                    r[0]
                    for r in conn.execute(
                        select(schema.DBS.c.NAME)
                        .where(schema.DBS.c.CTLG_NAME == cat)
                        .order_by(schema.DBS.c.NAME)
                    )
                ]
        return filter_names(names, pattern)

    @writes_events
    def alter_database(self, cat: str, name: str, database: hms.Database) -> None:
        def run(conn: Connection) -> None:
            row = self._db_row(conn, cat, name, lock=True)
            before = _database(row, _db_params(conn, [row.DB_ID]).get(row.DB_ID, {}))
            params = dict(database.parameters or {})
            if repl_last_id_moved(before.parameters, params):
                params[REPL_TARGET_LAST_ID] = str(self.events.current_event_id(conn))
            # ObjectStore.alterDatabase (Hive 4.0): parameters and owner name replaced (None
            # clears them), owner type when set, description and locations when not blank.
            after = hms.Database(
                name=before.name,
                description=database.description
                if database.description and database.description.strip()
                else before.description,
                locationUri=database.locationUri
                if database.locationUri and database.locationUri.strip()
                else before.locationUri,
                parameters=params,
                ownerName=database.ownerName,
                ownerType=database.ownerType
                if database.ownerType is not None
                else before.ownerType,
                catalogName=cat,
                createTime=before.createTime,
                managedLocationUri=database.managedLocationUri
                if database.managedLocationUri and database.managedLocationUri.strip()
                else before.managedLocationUri,
                type=before.type,
                connector_name=before.connector_name,
                remote_dbname=before.remote_dbname,
            )
            values = _db_values(after)
            del values["NAME"], values["CTLG_NAME"], values["CREATE_TIME"]
            conn.execute(update(schema.DBS).where(schema.DBS.c.DB_ID == row.DB_ID).values(**values))
            conn.execute(
                delete(schema.DATABASE_PARAMS).where(schema.DATABASE_PARAMS.c.DB_ID == row.DB_ID)
            )
            insert_rows(
                conn, schema.DATABASE_PARAMS, param_rows("DB_ID", row.DB_ID, after.parameters)
            )
            after = self._load_database(conn, cat, name)  # as stored
            event = _alter_database_event(self.messages, before, after)
            if event is not None:
                self._emit(conn, [NewEvent(msg.ALTER_DATABASE, event, cat, name)])

        self.db.transaction(run)

    @writes_events
    def drop_database(self, cat: str, name: str, *, cascade: bool) -> hms.Database:
        """Drop a database (and with ``cascade`` its functions; tables are dropped by the caller
        first, one by one, as Hive does). Returns the dropped database."""
        if name == "default" and cat == DEFAULT_CATALOG:
            raise hms.MetaException(message="Can not drop default database in catalog hive")

        def run(conn: Connection) -> hms.Database:
            row = self._db_row(conn, cat, name, lock=True)
            database = _database(row, _db_params(conn, [row.DB_ID]).get(row.DB_ID, {}))
            tables = conn.execute(
                select(schema.TBLS.c.TBL_NAME).where(schema.TBLS.c.DB_ID == row.DB_ID).limit(1)
            ).first()
            if tables is not None:
                raise hms.InvalidOperationException(
                    message=f"Database {name} is not empty. One or more tables exist."
                )
            funcs = conn.execute(
                select(schema.FUNCS.c.FUNC_ID).where(schema.FUNCS.c.DB_ID == row.DB_ID)
            ).all()
            if funcs and not cascade:
                raise hms.InvalidOperationException(
                    message=f"Database {name} is not empty. One or more functions exist."
                )
            func_ids = [r[0] for r in funcs]
            if func_ids:
                conn.execute(delete(schema.FUNC_RU).where(schema.FUNC_RU.c.FUNC_ID.in_(func_ids)))
                conn.execute(delete(schema.FUNCS).where(schema.FUNCS.c.FUNC_ID.in_(func_ids)))
            conn.execute(delete(schema.DB_PRIVS).where(schema.DB_PRIVS.c.DB_ID == row.DB_ID))
            conn.execute(
                delete(schema.DATABASE_PARAMS).where(schema.DATABASE_PARAMS.c.DB_ID == row.DB_ID)
            )
            conn.execute(delete(schema.DBS).where(schema.DBS.c.DB_ID == row.DB_ID))
            self._emit(
                conn,
                [NewEvent(msg.DROP_DATABASE, self.messages.drop_database(database), cat, name)],
            )
            return database

        return self.db.transaction(run)


def _db_values(d: hms.Database) -> dict[str, Any]:
    return {
        "NAME": d.name,
        "DESC": d.description,
        "DB_LOCATION_URI": d.locationUri,
        "OWNER_NAME": d.ownerName,
        "OWNER_TYPE": principal_name(d.ownerType),
        "CTLG_NAME": d.catalogName,
        "CREATE_TIME": d.createTime,
        "DB_MANAGED_LOCATION_URI": d.managedLocationUri,
        "TYPE": DATABASE_TYPE_NAMES.get(d.type or 1, "NATIVE"),
        "DATACONNECTOR_NAME": d.connector_name,
        "REMOTE_DBNAME": d.remote_dbname,
    }


def _db_params(conn: Connection, db_ids: list[int]) -> dict[int, dict[str, str]]:
    p = schema.DATABASE_PARAMS.c
    rows = conn.execute(select(p.DB_ID, p.PARAM_KEY, p.PARAM_VALUE).where(p.DB_ID.in_(db_ids)))
    return {
        db_id: {r.PARAM_KEY: r.PARAM_VALUE or "" for r in rs}
        for db_id, rs in group(rows, lambda r: r.DB_ID).items()
    }


def _database(row: Any, params: dict[str, str]) -> hms.Database:
    return hms.Database(
        name=row.NAME,
        description=row.DESC,
        locationUri=row.DB_LOCATION_URI,
        parameters=dict(params),
        ownerName=row.OWNER_NAME,
        ownerType=principal_type(row.OWNER_TYPE),
        catalogName=row.CTLG_NAME,
        createTime=row.CREATE_TIME,
        managedLocationUri=row.DB_MANAGED_LOCATION_URI,
        type=DATABASE_TYPES.get((row.TYPE or "NATIVE").upper(), 1),
        connector_name=row.DATACONNECTOR_NAME,
        remote_dbname=row.REMOTE_DBNAME,
    )


def _catalog(row: Any) -> hms.Catalog:
    return hms.Catalog(
        name=row.NAME,
        description=row.DESC,
        locationUri=row.LOCATION_URI,
        createTime=row.CREATE_TIME,
    )
