"""Permanent functions (FUNCS, FUNC_RU), as Hive 4.0's ObjectStore stores them.

A FUNCS row holds the function's name (lower case), database, class name, owner (OWNER_TYPE
as the PrincipalType name), create time and FUNC_TYPE (the FunctionType value, 1 = JAVA); its
resources are FUNC_RU rows (RESOURCE_TYPE value, URI) in list order. ``alter_function``
changes only the name, database, owner, class name and type (resources and create time stay),
and Hive writes no notification event for it; create and drop write CREATE_FUNCTION and
DROP_FUNCTION.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import fetch_in, group
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.patterns import filter_names
from hms_cache_proxy.store.sql.sql_base import (
    DEFAULT_CATALOG,
    SqlPart,
    now,
    principal_name,
    principal_type,
)
from hms_cache_proxy.store.sql.storage import insert_rows

_F, _RU, _D = schema.FUNCS, schema.FUNC_RU, schema.DBS

_FUNCTION_COLUMNS = (
    _F.c.FUNC_ID,
    _F.c.FUNC_NAME,
    _F.c.CLASS_NAME,
    _F.c.OWNER_NAME,
    _F.c.OWNER_TYPE,
    _F.c.CREATE_TIME,
    _F.c.FUNC_TYPE,
    _D.c.NAME.label("DB_NAME"),
    _D.c.CTLG_NAME,
)


def _function_select(*conditions: Any) -> Any:
    return (
        select(*_FUNCTION_COLUMNS)
        .select_from(_F.join(_D, _D.c.DB_ID == _F.c.DB_ID))
        .where(*conditions)
    )


class Functions(SqlPart):
    # -- reads -----------------------------------------------------------------------------------

    def get_function(self, cat: str, db: str, name: str) -> hms.Function:
        """The function, or NoSuchObjectException ``Function db.name does not exist``."""
        with self.db.read() as conn:
            found = self._load_functions(
                conn,
                _function_select(_D.c.CTLG_NAME == cat, _D.c.NAME == db, _F.c.FUNC_NAME == name),
            )
        if not found:
            raise hms.NoSuchObjectException(message=f"Function {db}.{name} does not exist")
        return found[0]

    def get_functions(self, cat: str, db: str, pattern: str | None = None) -> list[str]:
        """Names of the database's functions matching ``pattern``, sorted (an unknown database
        has none, as in Hive)."""
        stmt = (
            select(_F.c.FUNC_NAME)
            .select_from(_F.join(_D, _D.c.DB_ID == _F.c.DB_ID))
            .where(_D.c.CTLG_NAME == cat, _D.c.NAME == db)
            .order_by(_F.c.FUNC_NAME)
        )
        with self.db.read() as conn:
            names = [r[0] for r in conn.execute(stmt)]
        return filter_names(names, pattern.strip().lower() if pattern is not None else None)

    def get_all_functions(self, cat: str = DEFAULT_CATALOG) -> list[hms.Function]:
        """Every function of every database of the catalog (Hive asks for catalog ``hive``)."""
        with self.db.read() as conn:
            return self._load_functions(
                conn, _function_select(_D.c.CTLG_NAME == cat).order_by(_D.c.NAME, _F.c.FUNC_NAME)
            )

    def _load_functions(self, conn: Connection, stmt: Any) -> list[hms.Function]:
        """Functions of ``stmt`` with their resources: two queries whatever their number."""
        rows = conn.execute(stmt).all()
        if not rows:
            return []
        resources = fetch_in(
            conn,
            _RU.c.FUNC_ID,
            [r.FUNC_ID for r in rows],
            lambda cond: select(
                _RU.c.FUNC_ID, _RU.c.RESOURCE_TYPE, _RU.c.RESOURCE_URI, _RU.c.INTEGER_IDX
            ).where(cond),
        )
        by_func = group(
            sorted(resources, key=lambda r: (r.FUNC_ID, r.INTEGER_IDX)), lambda r: r.FUNC_ID
        )
        return [_function(r, by_func.get(r.FUNC_ID, [])) for r in rows]

    def _function_row(
        self, conn: Connection, cat: str, db: str, name: str, *, lock: bool = False
    ) -> Any:
        stmt = _function_select(_D.c.CTLG_NAME == cat, _D.c.NAME == db, _F.c.FUNC_NAME == name)
        if lock:
            stmt = stmt.with_for_update(of=_F)
        return conn.execute(stmt).first()

    # -- writes ----------------------------------------------------------------------------------

    @writes_events
    def create_function(self, func: hms.Function) -> hms.Function:
        """Store a function the handler has validated (names normalised); returns it as stored.

        NoSuchObjectException when the database is missing, AlreadyExistsException when the
        function exists; appends CREATE_FUNCTION.
        """
        cat = func.catName or DEFAULT_CATALOG
        db, name = func.dbName, func.functionName

        def run(conn: Connection) -> hms.Function:
            try:
                db_row = self._db_row(conn, cat, db)
            except hms.NoSuchObjectException:
                raise hms.NoSuchObjectException(
                    message=f"The database {db} does not exist"
                ) from None
            if (db_row.TYPE or "NATIVE").upper() == "REMOTE":
                raise hms.MetaException(
                    message="Operation create_function not support for REMOTE database"
                )
            if self._function_row(conn, cat, db, name) is not None:
                raise hms.AlreadyExistsException(message=f"Function {name} already exists")
            stored = hms.Function(
                functionName=name,
                dbName=db,
                className=func.className,
                ownerName=func.ownerName,
                ownerType=func.ownerType,
                createTime=func.createTime if func.createTime is not None else now(),
                functionType=func.functionType,
                resourceUris=[
                    hms.ResourceUri(resourceType=r.resourceType, uri=r.uri)
                    for r in func.resourceUris or []
                ],
                catName=cat,
            )
            (func_id,) = self.ids.allocate(conn, idseq.FUNCTION)
            conn.execute(
                insert(_F).values(FUNC_ID=func_id, DB_ID=db_row.DB_ID, **_func_values(stored))
            )
            insert_rows(conn, _RU, _resource_rows(func_id, stored.resourceUris))
            stored = self._load_functions(conn, _function_select(_F.c.FUNC_ID == func_id))[0]
            self._emit(
                conn,
                [NewEvent(msg.CREATE_FUNCTION, self.messages.create_function(stored), cat, db)],
            )
            return stored

        return self.db.transaction(run)

    @writes_events
    def drop_function(self, cat: str, db: str, name: str) -> hms.Function:
        """Drop a function; returns it. Appends DROP_FUNCTION."""

        def run(conn: Connection) -> hms.Function:
            row = self._function_row(conn, cat, db, name, lock=True)
            if row is None:
                raise hms.NoSuchObjectException(message=f"Function {name} does not exist")
            func = self._load_functions(conn, _function_select(_F.c.FUNC_ID == row.FUNC_ID))[0]
            conn.execute(delete(_RU).where(_RU.c.FUNC_ID == row.FUNC_ID))
            conn.execute(delete(_F).where(_F.c.FUNC_ID == row.FUNC_ID))
            self._emit(
                conn, [NewEvent(msg.DROP_FUNCTION, self.messages.drop_function(func), cat, db)]
            )
            return func

        return self.db.transaction(run)

    def alter_function(self, cat: str, db: str, name: str, new_func: hms.Function) -> hms.Function:
        """Change a function's name, database, owner, class and type (ObjectStore.alterFunction).

        Errors are Hive's: InvalidObjectException for a move between catalogs or a missing new
        database, MetaException ``function x doesn't exist``. No event (Hive writes none).
        """
        new_cat = (new_func.catName or DEFAULT_CATALOG).lower()

        def run(conn: Connection) -> hms.Function:
            if new_cat != cat.lower():
                raise hms.InvalidObjectException(
                    message="You cannot move a function between catalogs"
                )
            try:
                new_db = self._db_row(conn, new_cat, new_func.dbName)
            except hms.NoSuchObjectException:
                raise hms.InvalidObjectException(
                    message=f"Database {new_func.dbName} doesn't exist."
                ) from None
            row = self._function_row(conn, cat, db, name, lock=True)
            if row is None:
                raise hms.MetaException(message=f"function {name} doesn't exist")
            new_name = new_func.functionName
            if (new_db.NAME, new_name) != (db, name) and self._function_row(
                conn, new_cat, new_db.NAME, new_name
            ):
                raise hms.MetaException(message=f"Function {new_db.NAME}.{new_name} already exists")
            values = _func_values(new_func)
            del values["CREATE_TIME"]
            conn.execute(
                update(_F).where(_F.c.FUNC_ID == row.FUNC_ID).values(DB_ID=new_db.DB_ID, **values)
            )
            return self._load_functions(conn, _function_select(_F.c.FUNC_ID == row.FUNC_ID))[0]

        return self.db.transaction(run)


def _func_values(f: hms.Function) -> dict[str, Any]:
    return {
        "FUNC_NAME": f.functionName,
        "CLASS_NAME": f.className,
        "OWNER_NAME": f.ownerName,
        "OWNER_TYPE": principal_name(f.ownerType),
        "CREATE_TIME": f.createTime or 0,
        "FUNC_TYPE": f.functionType if f.functionType is not None else hms.FunctionType.JAVA,
    }


def _resource_rows(func_id: int, uris: Sequence[hms.ResourceUri] | None) -> list[dict[str, Any]]:
    return [
        {
            "FUNC_ID": func_id,
            "RESOURCE_TYPE": r.resourceType if r.resourceType is not None else hms.ResourceType.JAR,
            "RESOURCE_URI": r.uri,
            "INTEGER_IDX": i,
        }
        for i, r in enumerate(uris or [])
    ]


def _function(row: Any, resources: Sequence[Any]) -> hms.Function:
    return hms.Function(
        functionName=row.FUNC_NAME,
        dbName=row.DB_NAME,
        className=row.CLASS_NAME,
        ownerName=row.OWNER_NAME,
        ownerType=principal_type(row.OWNER_TYPE),
        createTime=row.CREATE_TIME,
        functionType=row.FUNC_TYPE,
        resourceUris=[
            hms.ResourceUri(resourceType=r.RESOURCE_TYPE, uri=r.RESOURCE_URI) for r in resources
        ],
        catName=row.CTLG_NAME,
    )
