"""Table creation: create_table*, with its constraints, location and quick statistics (Hive 4.0's
HMSHandler.create_table_core around the store).
"""

from __future__ import annotations

import time
from typing import Any

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.base import env_props, normalize
from hms_cache_proxy.handler.confinement import FileRules
from hms_cache_proxy.handler.table_rules import (
    DDL_TIME,
    copy_table,
    data_deletable,
    is_external,
    is_view,
    lower_columns,
    normalize_table_type,
)
from hms_cache_proxy.handler.validate import check_columns, validate_name
from hms_cache_proxy.idl import hms


class TableCreateHandlers(FileRules):
    """Creating tables."""

    # -- create ----------------------------------------------------------------------------------

    def create_table(self, tbl: hms.Table) -> None:
        self._create_table(tbl, None)

    def create_table_with_environment_context(
        self, tbl: hms.Table, environment_context: hms.EnvironmentContext | None
    ) -> None:
        self._create_table(tbl, environment_context)

    def create_table_with_constraints(
        self,
        tbl: hms.Table,
        primaryKeys: list[Any] | None = None,
        foreignKeys: list[Any] | None = None,
        uniqueConstraints: list[Any] | None = None,
        notNullConstraints: list[Any] | None = None,
        defaultConstraints: list[Any] | None = None,
        checkConstraints: list[Any] | None = None,
    ) -> None:
        constraints = hms.SQLAllTableConstraints(
            primaryKeys=primaryKeys,
            foreignKeys=foreignKeys,
            uniqueConstraints=uniqueConstraints,
            notNullConstraints=notNullConstraints,
            defaultConstraints=defaultConstraints,
            checkConstraints=checkConstraints,
        )
        self._create_table(tbl, None, constraints)

    def create_table_req(self, request: hms.CreateTableRequest) -> None:
        constraints = hms.SQLAllTableConstraints(
            primaryKeys=request.primaryKeys,
            foreignKeys=request.foreignKeys,
            uniqueConstraints=request.uniqueConstraints,
            notNullConstraints=request.notNullConstraints,
            defaultConstraints=request.defaultConstraints,
            checkConstraints=request.checkConstraints,
        )
        self._create_table(request.table, request.envContext, constraints)

    @staticmethod
    def _own_constraints(
        constraints: hms.SQLAllTableConstraints | None, cat: str, db: str, name: str
    ) -> hms.SQLAllTableConstraints | None:
        """Constraints created with a table belong to it: unset names are filled in, another
        table's name is refused (a foreign key may reference another table)."""
        if constraints is None:
            return None
        fields = ("table_db", "table_name")
        if not any(getattr(constraints, f) for f in constraints.__dict__):
            return None
        out = hms.SQLAllTableConstraints()
        for field, items in constraints.__dict__.items():
            kept = []
            for c in items or []:
                c = type(c)(**c.__dict__)
                own = ("fktable_db", "fktable_name") if field == "foreignKeys" else fields
                for attr, value in zip(own, (db, name), strict=True):
                    given = normalize(getattr(c, attr))
                    if not given:
                        setattr(c, attr, value)
                    elif given != value:
                        raise hms.InvalidObjectException(
                            message=f"a constraint of table {cat}.{db}.{name} names table "
                            f"{getattr(c, own[0])}.{getattr(c, own[1])}; constraints created "
                            "with a table must be its own"
                        )
                kept.append(c)
            setattr(out, field, kept)
        return out

    def _create_table(
        self,
        tbl: hms.Table | None,
        env: hms.EnvironmentContext | None,
        constraints: hms.SQLAllTableConstraints | None = None,
    ) -> None:
        """HMSHandler.create_table_core (Hive 4.0, without the MetastoreDefaultTransformer)."""
        if tbl is None:
            raise hms.MetaException(message="The table must be set")
        if tbl.dbName is None:
            raise hms.MetaException(message="Null database name is not allowed")
        validate_name(tbl.tableName, "table")
        props = env_props(env)
        table = copy_table(tbl)
        cat, db = self.require_db(table.dbName)
        if table.catName:
            cat = self.catalog(table.catName)
        name = normalize(table.tableName) or ""
        try:
            database = self.store.get_database(cat, db)
        except hms.NoSuchObjectException:
            raise hms.InvalidObjectException(message=f"database {cat}.{db}") from None
        table.colStats = None  # Hive stores these after the create; not kept here
        table.id = None
        check_columns(table)
        if table.sd.serdeInfo is None:
            raise hms.MetaException(message="Invalid SerDeInfo object")
        qualified = f"{cat}.{tbl.dbName}.{tbl.tableName}"
        table.tableName, table.dbName, table.catName = name, db, cat
        lower_columns(table)
        owned = self._own_constraints(constraints, cat, db, name)
        made_dir = False
        if not is_view(table):
            if not table.sd.location:
                table.sd.location = self._default_table_location(cat, database, name, table)
            else:
                table.sd.location = self.location(table.sd.location)
                if warehouse.is_root(table.sd.location):
                    raise hms.InvalidObjectException(
                        message=f"{tbl.tableName} location must not be root path"
                    )
            writable = self.check_table_location(
                cat,
                db,
                f"table {db}.{name}:",
                table.sd.location,
                deletable=data_deletable(table),
                exc=hms.InvalidObjectException,
            )
            try:
                made_dir = writable and self.files.mkdirs(table.sd.location)
            except OSError:
                raise hms.MetaException(
                    message=f"{table.sd.location} is not a directory or unable to create one"
                ) from None
            if props.get(basic_stats.DO_NOT_UPDATE_STATS) != basic_stats.TRUE:
                basic_stats.update_table_stats(
                    table.parameters,
                    table.sd.location,
                    props,
                    self.list_location,
                    partitioned=bool(table.partitionKeys),
                    new_dir=made_dir,
                    force=False,
                )
        now = int(time.time())
        table.createTime = now
        if table.parameters.get(DDL_TIME) is None:
            table.parameters[DDL_TIME] = str(now)
        if table.ownerType is None:
            table.ownerType = hms.PrincipalType.USER
        normalize_table_type(table)
        try:
            if owned is None:
                self.store.create_table(table)
            else:
                self.store.create_table(table, constraints=owned)
        except Exception as exc:
            if made_dir:
                self.delete_quietly(table.sd.location)
            if isinstance(exc, hms.AlreadyExistsException):
                raise hms.AlreadyExistsException(
                    message=f"Table {qualified} already exists"
                ) from None
            if isinstance(exc, hms.NoSuchObjectException):
                raise hms.InvalidObjectException(message=f"database {cat}.{db}") from None
            raise

    def _default_table_location(
        self, cat: str, database: hms.Database, name: str, table: hms.Table
    ) -> str:
        """``<database location>/<encodeTableName(name)>`` (a managed table of a database with a
        managed location goes below that one). With an external warehouse, an external table
        of a database located in the warehouse goes below the database's directory there, as
        Hive 4's Warehouse.getDefaultTablePath places it."""
        root = database.locationUri or ""
        if database.managedLocationUri and not is_external(table):
            root = database.managedLocationUri
        elif is_external(table) and self._in_warehouse(root):
            root = self.external_database_dir(cat, database.name or "") or root
        return self.location(warehouse.join(root, warehouse.encode_table_name(name))) or ""

    def _in_warehouse(self, uri: str) -> bool:
        """Whether a database location is the warehouse root or lies below it."""
        base = self.location(self.settings.warehouse_uri()) or ""
        here = self.location(uri) or ""
        return bool(here) and (here == base or here.startswith(base.rstrip("/") + "/"))
