"""Table reads: get_table*, get_table_objects_by_name*, the name listings, get_table_meta,
get_fields* and get_schema* (Hive 4.0's HMSHandler around the store).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hms_cache_proxy.handler.base import normalize
from hms_cache_proxy.handler.confinement import FileRules
from hms_cache_proxy.handler.encoded import wrap
from hms_cache_proxy.handler.names import filter_names
from hms_cache_proxy.handler.table_rules import METASTORE_SCHEMA_SERDES, TABLE_TYPES, internal_error
from hms_cache_proxy.idl import hms


class TableReadHandlers(FileRules):
    """Reading tables, their names and their columns."""

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
            raise internal_error("get_table_objects_by_name", exc) from None

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
