"""Table calls: what Hive 4.0's HMSHandler and HiveAlterHandler do around the store.

Hive's rules, in Hive's order, with Hive's messages; deliberate deviations are listed in
docs/compatibility.md. Filesystem effects (directories made, moved, emptied, deleted; quick
statistics listed) apply to local ``file:`` locations inside the roots only, as
handler/confinement.py allows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from thriftpy2.thrift import TApplicationException

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.base import env_props, normalize
from hms_cache_proxy.handler.confinement import FileRules
from hms_cache_proxy.handler.encoded import wrap
from hms_cache_proxy.handler.names import filter_names
from hms_cache_proxy.handler.validate import (
    check_columns,
    incompatible_columns,
    validate_name,
)
from hms_cache_proxy.idl import hms

log = logging.getLogger(__name__)

DDL_TIME = "transient_lastDdlTime"
EXTERNAL = "EXTERNAL"
EXTERNAL_TABLE_PURGE = "external.table.purge"
CASCADE = "CASCADE"
VIRTUAL_VIEW = "VIRTUAL_VIEW"
MANAGED_TABLE = "MANAGED_TABLE"
EXTERNAL_TABLE = "EXTERNAL_TABLE"
TABLE_TYPES = ("MANAGED_TABLE", "EXTERNAL_TABLE", "VIRTUAL_VIEW", "MATERIALIZED_VIEW")
DISALLOW_INCOMPATIBLE = "hive.metastore.disallow.incompatible.col.type.changes"
DO_NOT_POPULATE_QUICK_STATS = "DO_NOT_POPULATE_QUICK_STATS"

# metastore.serdes.using.metastore.for.schema: serdes whose schema is the stored columns.
# Hive 4.0's list plus DynamicSerDe, which Hive 2.3 also lists.
METASTORE_SCHEMA_SERDES = frozenset(
    {
        "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
        "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe",
        "org.apache.hadoop.hive.serde2.columnar.ColumnarSerDe",
        "org.apache.hadoop.hive.serde2.dynamic_type.DynamicSerDe",
        "org.apache.hadoop.hive.serde2.MetadataTypedColumnsetSerDe",
        "org.apache.hadoop.hive.serde2.columnar.LazyBinaryColumnarSerDe",
        "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
        "org.apache.hadoop.hive.serde2.lazybinary.LazyBinarySerDe",
        "org.apache.hadoop.hive.serde2.OpenCSVSerde",
    }
)


def is_external(table: hms.Table) -> bool:
    """MetaStoreUtils.isExternalTable: the EXTERNAL parameter, "true" in any case."""
    return str((table.parameters or {}).get(EXTERNAL, "")).strip().lower() == "true"


def is_view(table: hms.Table) -> bool:
    return table.tableType == VIRTUAL_VIEW


def data_deletable(table: hms.Table) -> bool:
    """checkTableDataShouldBeDeleted: managed tables, and external ones with purge on."""
    purge = str((table.parameters or {}).get(EXTERNAL_TABLE_PURGE, "")).lower() == "true"
    return not is_external(table) or purge


def normalize_table_type(table: hms.Table) -> None:
    """ObjectStore.convertToMTable: MANAGED_TABLE with EXTERNAL=true becomes EXTERNAL_TABLE and
    EXTERNAL_TABLE without it MANAGED_TABLE; other types (and None) are kept."""
    if table.tableType == MANAGED_TABLE and is_external(table):
        table.tableType = EXTERNAL_TABLE
    elif table.tableType == EXTERNAL_TABLE and not is_external(table):
        table.tableType = MANAGED_TABLE


def expected_parameter(
    props: dict[str, str], key: str | None = None, value: str | None = None
) -> tuple[str, str] | None:
    """The (key, value) an alter must find stored before it changes anything, or None.

    Hive 4 reads it from the EnvironmentContext (expected_parameter_key/value, what Iceberg's
    lock-free commit sends); alter_table_req's own fields, when set, replace those entries one
    by one. Hive checks only when both are given.
    """
    key = key if key is not None else props.get(hms.EXPECTED_PARAMETER_KEY)
    value = value if value is not None else props.get(hms.EXPECTED_PARAMETER_VALUE)
    return (key, value) if key is not None and value is not None else None


def copy_table(t: hms.Table) -> hms.Table:
    new = hms.Table(**t.__dict__)
    new.parameters = dict(t.parameters or {})
    if t.sd is not None:
        new.sd = hms.StorageDescriptor(**t.sd.__dict__)
    return new


def lower_columns(table: hms.Table) -> None:
    """ObjectStore lower-cases column names, partition-key names and sort-column names (and
    stores an unset numBuckets as Java's 0)."""
    if table.sd is not None:
        if table.sd.numBuckets is None:
            table.sd.numBuckets = 0
        table.sd.cols = [_lower_field(c) for c in table.sd.cols or []]
        if table.sd.sortCols is not None:
            table.sd.sortCols = [
                hms.Order(col=normalize(o.col), order=o.order) for o in table.sd.sortCols
            ]
    if table.partitionKeys is not None:
        table.partitionKeys = [_lower_field(c) for c in table.partitionKeys]


def _lower_field(c: hms.FieldSchema) -> hms.FieldSchema:
    name = c.name.lower() if c.name else c.name
    return hms.FieldSchema(name=name, type=c.type, comment=c.comment)


def _internal_error(method: str, exc: Exception) -> TApplicationException:
    """What Java's processor answers for an exception the IDL method does not declare."""
    detail = getattr(exc, "message", None) or str(exc)
    return TApplicationException(
        TApplicationException.INTERNAL_ERROR, f"Internal error processing {method}: {detail}"
    )


class TableHandlers(FileRules):
    # -- reads -----------------------------------------------------------------------------------

    def get_table(self, dbname: str, tbl_name: str) -> hms.Table:
        cat, db = self.require_db(dbname)
        return self.store.get_table(cat, db, self.require_name(tbl_name), encoded=True)

    def get_table_req(self, req: hms.GetTableRequest) -> hms.GetTableResult:
        cat, db = self.require_db(req.dbName)
        if req.catName:
            cat = self.catalog(req.catName)
        table = self.store.get_table(
            cat,
            db,
            self.require_name(req.tblName),
            valid_write_id_list=req.validWriteIdList,
            encoded=True,
        )
        return wrap(hms.GetTableResult, "table", table)

    def get_table_objects_by_name(self, dbname: str, tbl_names: list[str]) -> list[hms.Table]:
        # The IDL declares no exception here: Java's processor answers INTERNAL_ERROR.
        try:
            return self._table_objects(None, dbname, tbl_names, None)
        except (hms.MetaException, hms.InvalidOperationException, hms.UnknownDBException) as exc:
            raise _internal_error("get_table_objects_by_name", exc) from None

    def get_table_objects_by_name_req(self, req: hms.GetTablesRequest) -> hms.GetTablesResult:
        if (
            req.projectionSpec is not None
            and (
                req.projectionSpec.includeParamKeyPattern
                or req.projectionSpec.excludeParamKeyPattern
            )
            and not req.projectionSpec.fieldList
        ):
            raise hms.InvalidOperationException(
                message="Include and Exclude Param key are not supported."
            )
        tables = self._table_objects(req.catName, req.dbName, req.tblNames, req.tablesPattern)
        return hms.GetTablesResult(tables=tables)

    def _table_objects(
        self,
        cat_name: str | None,
        dbname: str | None,
        tbl_names: Sequence[str] | None,
        pattern: str | None,
    ) -> list[hms.Table]:
        """HMSHandler.getTableObjectsInternal: existing tables among the names (missing ones
        skipped, duplicates collapsed case-insensitively)."""
        if not dbname:
            raise hms.UnknownDBException(message="DB name is null or empty")
        cat, db = self.split_db(dbname)
        if cat_name:
            cat = self.catalog(cat_name)
        if not db:
            raise hms.UnknownDBException(message="DB name is null or empty")
        if tbl_names is None:
            raise hms.InvalidOperationException(message=f"{dbname} cannot find null tables")
        names = [n for n in (normalize(t) for t in tbl_names) if n]
        if pattern is not None:
            names = filter_names(names, pattern)
        try:
            return self.store.get_tables_by_names(cat, db, names)
        except hms.NoSuchObjectException:
            raise hms.UnknownDBException(message=f"Could not find database {cat}.{db}") from None

    def get_tables(self, db_name: str, pattern: str | None) -> list[str]:
        return self._table_names(db_name, pattern, None)

    def get_tables_by_type(self, db_name: str, pattern: str | None, tableType: str) -> list[str]:
        if tableType not in TABLE_TYPES:
            raise hms.MetaException(
                message="java.lang.IllegalArgumentException: No enum constant "
                f"org.apache.hadoop.hive.metastore.TableType.{tableType}"
            )
        return self._table_names(db_name, pattern, tableType)

    def get_all_tables(self, db_name: str) -> list[str]:
        return self._table_names(db_name, None, None)

    def _table_names(self, db_name: str, pattern: str | None, table_type: str | None) -> list[str]:
        cat, db = self.split_db(db_name)
        if not db:
            return []
        try:
            names = self.store.get_table_names(cat, db, None, table_type)
        except hms.NoSuchObjectException:
            return []  # Hive answers an unknown database with no tables
        return names if pattern is None else filter_names(names, pattern)

    def get_table_meta(
        self, db_patterns: str | None, tbl_patterns: str | None, tbl_types: list[str] | None
    ) -> list[hms.TableMeta]:
        cat, db_pat = self.split_db(db_patterns) if db_patterns else ("hive", None)
        metas = self.store.get_table_meta(cat, None, None, tbl_types)
        if db_pat is not None and db_pat.strip() != "*":
            keep = set(filter_names({m.dbName for m in metas}, db_pat))
            metas = [m for m in metas if m.dbName in keep]
        if tbl_patterns is not None and tbl_patterns.strip() != "*":
            keep = set(filter_names({m.tableName for m in metas}, tbl_patterns))
            metas = [m for m in metas if m.tableName in keep]
        return metas

    def get_fields(self, db_name: str, table_name: str) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, None, with_keys=False)

    def get_fields_with_environment_context(
        self, db_name: str, table_name: str, environment_context: Any
    ) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, None, with_keys=False)

    def get_fields_req(self, req: hms.GetFieldsRequest) -> hms.GetFieldsResponse:
        fields = self._fields(
            req.dbName, req.tblName, req.catName, with_keys=False, snapshot=req.validWriteIdList
        )
        return hms.GetFieldsResponse(fields=fields)

    def get_schema(self, db_name: str, table_name: str) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, None, with_keys=True)

    def get_schema_with_environment_context(
        self, db_name: str, table_name: str, environment_context: Any
    ) -> list[hms.FieldSchema]:
        return self._fields(db_name, table_name, None, with_keys=True)

    def get_schema_req(self, req: hms.GetSchemaRequest) -> hms.GetSchemaResponse:
        fields = self._fields(
            req.dbName, req.tblName, req.catName, with_keys=True, snapshot=req.validWriteIdList
        )
        return hms.GetSchemaResponse(fields=fields)

    def _fields(
        self,
        db_name: str,
        table_name: str,
        cat_name: str | None,
        *,
        with_keys: bool,
        snapshot: str | None = None,
    ) -> list[hms.FieldSchema]:
        """HMSHandler.get_fields / get_schema: ``t.col`` names table ``t``; a missing table (or
        database) is UnknownTableException; serdes outside the metastore-schema list need the
        storage schema reader, which Hive 4's default cannot read."""
        cat, db = self.require_db(db_name)
        if cat_name:
            cat = self.catalog(cat_name)
        name = normalize((table_name or "").split(".")[0]) or ""
        try:
            table = self.store.get_table(cat, db, name, valid_write_id_list=snapshot)
        except hms.NoSuchObjectException as exc:
            raise hms.UnknownTableException(message=exc.message) from None
        sd = table.sd
        lib = sd.serdeInfo.serializationLib if sd is not None and sd.serdeInfo else None
        if lib is not None and lib not in METASTORE_SCHEMA_SERDES:
            raise hms.MetaException(
                message="java.lang.UnsupportedOperationException: Storage schema reading not "
                "supported"
            )
        fields = list(sd.cols or []) if sd is not None else []
        if with_keys:
            fields.extend(table.partitionKeys or [])
        return fields

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

    # -- drop ------------------------------------------------------------------------------------

    def drop_table(self, dbname: str, name: str, deleteData: bool) -> None:
        cat, db = self.require_db(dbname)
        self._drop_table(cat, db, self.require_name(name), delete_data=deleteData, env=None)

    def drop_table_with_environment_context(
        self,
        dbname: str,
        name: str,
        deleteData: bool,
        environment_context: hms.EnvironmentContext | None,
    ) -> None:
        cat, db = self.require_db(dbname)
        self._drop_table(
            cat, db, self.require_name(name), delete_data=deleteData, env=environment_context
        )

    def _drop_table(
        self,
        cat: str,
        db: str,
        name: str,
        *,
        delete_data: bool,
        env: Any,
    ) -> None:
        """Drop the table (one DROP_TABLE event); with ``deleteData``, the data of a managed
        table (or an external one with external.table.purge=true) goes too: its directory,
        partitions below it included, when the confinement rules allow (handler/confinement.py).
        Partition directories outside the table's directory are kept (Hive deletes them too)."""
        table, _part_locations = self.store.drop_table(cat, db, name)
        if not delete_data or not data_deletable(table):
            return
        location = table.sd.location if table.sd is not None else None
        target = self.table_dir_to_delete(cat, db, name, location)
        self.delete_quietly(target)

    # -- alter -----------------------------------------------------------------------------------

    def alter_table(self, dbname: str, tbl_name: str, new_tbl: hms.Table) -> None:
        self._alter_table(None, dbname, tbl_name, new_tbl, None)

    def alter_table_with_environment_context(
        self,
        dbname: str,
        tbl_name: str,
        new_tbl: hms.Table,
        environment_context: hms.EnvironmentContext | None,
    ) -> None:
        self._alter_table(None, dbname, tbl_name, new_tbl, environment_context)

    def alter_table_with_cascade(
        self, dbname: str, tbl_name: str, new_tbl: hms.Table, cascade: bool
    ) -> None:
        env = hms.EnvironmentContext(properties={CASCADE: "true"}) if cascade else None
        self._alter_table(None, dbname, tbl_name, new_tbl, env)

    def alter_table_req(self, req: hms.AlterTableRequest) -> hms.AlterTableResponse:
        self._alter_table(
            req.catName,
            req.dbName,
            req.tableName,
            req.table,
            req.environmentContext,
            write_id=req.writeId,
            valid_write_id_list=req.validWriteIdList,
            expected=(req.expectedParameterKey, req.expectedParameterValue),
        )
        return hms.AlterTableResponse()

    def _alter_table(
        self,
        cat_name: str | None,
        dbname: str,
        tbl_name: str,
        new_tbl: hms.Table | None,
        env: hms.EnvironmentContext | None,
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        expected: tuple[str | None, str | None] = (None, None),
    ) -> None:
        """HMSHandler.alter_table_core + HiveAlterHandler.alterTable (Hive 4.0).

        Every failure is an InvalidOperationException or a MetaException (all the IDL
        declares). A managed table renamed from ``<old db location>/<old name>`` moves to
        ``<new db location>/<new name>`` (the directory is moved before the metadata commits
        and moved back if the commit fails), with its partitions' locations below it.
        """
        if new_tbl is None:
            raise hms.InvalidOperationException(message="New table is null")
        cat, db = self.require_db(dbname)
        if cat_name:
            cat = self.catalog(cat_name)
        name = self.require_name(tbl_name)
        props = env_props(env)
        new = copy_table(new_tbl)
        if new.parameters.get(DDL_TIME) is None:
            new.parameters[DDL_TIME] = str(int(time.time()))
        if new.sd is not None and new.sd.location:
            new.sd.location = self.location(new.sd.location)
        new_cat = self.catalog(new.catName) if new.catName else cat
        try:
            old_db = self.store.get_database(cat, db)
        except hms.NoSuchObjectException:
            raise hms.InvalidOperationException(
                message=f"{cat}.{db}.{name} table not found"
            ) from None
        new_name = normalize(new.tableName) if new.tableName is not None else name
        new_db = normalize(new.dbName) if new.dbName is not None else db
        validate_name(new_name, "table", hms.InvalidOperationException)
        check_columns(new, hms.InvalidOperationException, keys=False)
        if new_cat != cat:
            raise hms.InvalidOperationException(
                message=f"Tables cannot be moved between catalogs, old catalog{cat}, new catalog "
                f"{new_cat}"
            )
        renamed = (new_db, new_name) != (db, name)
        target_db = old_db
        if renamed and new_db != db:
            try:
                target_db = self.store.get_database(cat, new_db)
            except hms.NoSuchObjectException:
                target_db = None
        raw_keys = [k.name for k in new.partitionKeys or []]
        new.tableName, new.dbName, new.catName = new_name, new_db, cat
        lower_columns(new)
        normalize_table_type(new)
        self._check_new_location(cat, db, name, new)
        disallow = self.conf_flag(DISALLOW_INCOMPATIBLE, True)
        moves: list[tuple[str, str]] = []
        moved: list[tuple[str, str]] = []  # (src, dst) directories moved by this call

        def prepare(
            before: hms.Table, after: hms.Table, exists: Callable[[str, str], bool]
        ) -> hms.Table:
            moves.clear()
            if renamed and exists(new_db, new_name):
                raise hms.InvalidOperationException(
                    message=f"new table {new_db}.{new_name} already exists"
                )
            if target_db is None:
                raise hms.InvalidOperationException(
                    message=f"Unable to change partition or table. Object database {cat}.{new_db} "
                    "does not exist. Check metastore logs for detailed stack."
                )
            if disallow and not is_view(before):
                bad = incompatible_columns(
                    before.sd.cols if before.sd else [], new_tbl.sd.cols if new_tbl.sd else []
                )
                if bad:
                    raise hms.InvalidOperationException(
                        message="The following columns have types incompatible with the "
                        "existing columns in their respective positions :\n" + ",".join(bad)
                    )
            if not is_view(before) and [k.name for k in before.partitionKeys or []] != raw_keys:
                raise hms.InvalidOperationException(message="partition keys can not be changed.")
            if renamed:
                self._rename_location(before, after, old_db, target_db, name, moves, moved)
            elif not before.partitionKeys and basic_stats.require_cal_stats(
                None, None, is_view=is_view(after), env=props, table_level=True
            ):
                basic_stats.update_table_stats(
                    after.parameters,
                    after.sd.location if after.sd else None,
                    props,
                    self.list_location,
                    partitioned=False,
                    new_dir=False,
                    force=True,
                )
            return after

        try:
            self.store.alter_table(
                cat,
                db,
                name,
                new,
                cascade=props.get(CASCADE) == "true",
                write_id=write_id if write_id is not None and write_id > 0 else None,
                valid_write_id_list=valid_write_id_list,
                prepare=prepare,
                relocate=moves,
                expected=expected_parameter(props, *expected),
            )
        except Exception as exc:
            for src, dst in reversed(moved):
                try:
                    self.files.rename(dst, src)
                except OSError as undo:
                    log.error("could not move %s back to %s: %s", dst, src, undo)
            if isinstance(exc, hms.NoSuchObjectException):
                raise hms.InvalidOperationException(
                    message=f"{cat}.{db}.{name} table not found"
                ) from None
            if isinstance(exc, (hms.InvalidObjectException, hms.AlreadyExistsException)):
                raise hms.InvalidOperationException(
                    message="Unable to change partition or table. Check metastore logs for "
                    "detailed stack." + (exc.message or "")
                ) from None
            raise

    def _check_new_location(self, cat: str, db: str, name: str, new: hms.Table) -> None:
        """An altered table moved to another location must satisfy the confinement rules
        there (the location it has stays allowed: rows from before the rules keep working)."""
        location = new.sd.location if new.sd is not None else None
        if not location or is_view(new):
            return
        try:
            old = self.store.get_table(cat, db, name)
        except hms.NoSuchObjectException:
            return  # the alter reports it
        if old.sd is not None and old.sd.location == location:
            return
        self.check_table_location(
            cat,
            new.dbName or db,
            f"table {new.dbName}.{new.tableName}:",
            location,
            deletable=data_deletable(new),
            exc=hms.InvalidOperationException,
        )

    def _rename_location(
        self,
        before: hms.Table,
        after: hms.Table,
        old_db: hms.Database,
        new_db: hms.Database,
        old_name: str,
        moves: list[tuple[str, str]],
        moved: list[tuple[str, str]],
    ) -> None:
        """HiveAlterHandler's rename data move, for managed tables whose location is
        ``<old db location>/<old name>`` and is kept by the new definition."""
        src = before.sd.location if before.sd is not None else None
        if (
            is_view(before)
            or is_external(before)
            or not src
            or after.sd is None
            or (after.sd.location and after.sd.location != src)
        ):
            return
        relative = warehouse.relativize(old_db.locationUri or "", src)
        if relative.lower() not in (old_name, old_name + "/"):
            after.sd.location = src  # created at a location of its own: it stays there
            return
        if not warehouse.is_local(src):
            after.sd.location = src  # cannot move data on other filesystems: leave it
            return
        dest = warehouse.join(
            warehouse.with_filesystem_of(new_db.locationUri or "", src), after.tableName
        )
        if not (self.files.inside(src) and self.files.inside(dest)):
            after.sd.location = src  # outside the roots: never moved, it stays
            return
        after.sd.location = dest
        if moved and moved[-1] == (src, dest):  # a retried transaction: already moved
            moves.append((src, dest))
            return
        if self.files.exists(dest):
            raise hms.InvalidOperationException(
                message=f"New location for this table {after.catName}.{after.dbName}."
                f"{after.tableName} already exists : {dest}"
            )
        try:
            if self.files.rename(src, dest):
                moved.append((src, dest))
                moves.append((src, dest))
        except OSError as exc:
            raise hms.InvalidOperationException(
                message=f"Alter Table operation for {before.dbName}.{before.tableName} failed to "
                f"move data due to: '{exc}' See hive log file for details."
            ) from None

    # -- truncate --------------------------------------------------------------------------------

    def truncate_table(self, dbName: str, tableName: str, partNames: list[str] | None) -> None:
        self._truncate(dbName, tableName, partNames, None, None)

    def truncate_table_req(self, req: hms.TruncateTableRequest) -> hms.TruncateTableResponse:
        self._truncate(req.dbName, req.tableName, req.partNames, req.writeId, req.validWriteIdList)
        return hms.TruncateTableResponse()

    def _truncate(
        self,
        db_name: str,
        table_name: str,
        part_names: list[str] | None,
        write_id: int | None,
        valid_write_id_list: str | None,
    ) -> None:
        """HMSHandler.truncateTableInternal: empty the table's (or the named partitions')
        directories, then reset their basic statistics: ALTER_TABLE or one ALTER_PARTITION per
        partition, with isTruncateOp. The store reads what it rewrites inside its own write
        transaction, under the table's row lock (never from the cache: a lagging copy would
        overwrite writes made elsewhere). truncate_table declares only MetaException."""
        cat, db = self.require_db(db_name)
        name = self.require_name(table_name)

        def empty(table_location: str | None, partition_locations: list[str | None] | None) -> None:
            # Every target is checked (_truncate_target refuses) before any is emptied.
            table_ok = (
                self.table_dir_to_delete(cat, db, name, table_location)
                if warehouse.is_local(table_location)
                else None
            )
            if partition_locations is None:
                targets = [self._truncate_target(db, name, table_location, table_ok)]
            else:
                targets = [
                    self._truncate_target(db, name, loc, table_ok, partition=True)
                    for loc in partition_locations
                ]
            for target in targets:
                self._empty_directory(target)

        try:
            self.store.truncate_table(
                cat,
                db,
                name,
                part_names,
                empty=empty,
                reset=basic_stats.reset_for_truncate,
                write_id=write_id,
                valid_write_id_list=valid_write_id_list,
            )
        except (hms.NoSuchObjectException, hms.InvalidOperationException) as exc:
            raise hms.MetaException(message=exc.message) from None

    def _truncate_target(
        self,
        db: str,
        name: str,
        location: str | None,
        table_ok: str | None,
        *,
        partition: bool = False,
    ) -> str | None:
        """The directory truncate may empty: the table's own (``table_ok``: its directory when
        a drop could delete it, else None), or a partition's strictly below that. Anything else
        is refused (MetaException) before any directory is emptied; other filesystems are left
        alone (None)."""
        if not warehouse.is_local(location):
            return None
        if table_ok is None:
            target = None
        elif not partition:
            target = table_ok
        else:
            target = self.partition_dir_to_delete(table_ok, location)
        if target is None:
            raise hms.MetaException(
                message=f"Cannot truncate {db}.{name}: {location} may not be emptied by this "
                "metastore (it must lie below the table's database directory, inside "
                f"{self.files.roots.describe()}, with no other table's data there; the log "
                "says which rule failed; docs/security.md)"
            )
        return target

    def _empty_directory(self, uri: str | None) -> None:
        """Delete what a truncated table or partition holds, keeping the directory itself.
        A missing directory has nothing to delete; a file or symlink in its place is refused."""
        if uri is None or not self.files.exists(uri):
            return
        if not self.files.is_dir(uri):
            raise hms.MetaException(message=f"Cannot truncate {uri}: it is not a directory")
        try:
            self.files.empty(uri)
        except OSError as exc:
            raise hms.MetaException(message=f"Cannot truncate {uri}: {exc}") from None
