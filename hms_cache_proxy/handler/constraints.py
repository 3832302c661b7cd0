"""Constraint calls: create with a table, add_*, drop_constraint, the get_* calls.

Names are normalised as Hive's HMSHandler does (trimmed, lower case); a missing catalog is
the default one. The store checks tables, columns and names inside its transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hms_cache_proxy.handler.base import HandlerBase, normalize
from hms_cache_proxy.idl import hms


def _declared_only(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The add_* calls declare NoSuchObject and Meta only: an InvalidObjectException (missing
    table or column, name taken) is answered as MetaException with the same message."""

    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except hms.InvalidObjectException as exc:
            raise hms.MetaException(message=exc.message) from None

    return call


class ConstraintHandlers(HandlerBase):
    # -- writes ----------------------------------------------------------------------------------

    def _add_constraints(self, field: str, items: list[Any] | None) -> None:
        if not items:
            raise hms.MetaException(message=f"{field} must list at least one constraint column")
        first = items[0]
        cat = self.catalog(getattr(first, "catName", None))
        self.store.add_constraints(cat, hms.SQLAllTableConstraints(**{field: list(items)}))

    @_declared_only
    def add_primary_key(self, req: hms.AddPrimaryKeyRequest) -> None:
        self._add_constraints("primaryKeys", req.primaryKeyCols if req else None)

    @_declared_only
    def add_foreign_key(self, req: hms.AddForeignKeyRequest) -> None:
        self._add_constraints("foreignKeys", req.foreignKeyCols if req else None)

    @_declared_only
    def add_unique_constraint(self, req: hms.AddUniqueConstraintRequest) -> None:
        self._add_constraints("uniqueConstraints", req.uniqueConstraintCols if req else None)

    @_declared_only
    def add_not_null_constraint(self, req: hms.AddNotNullConstraintRequest) -> None:
        self._add_constraints("notNullConstraints", req.notNullConstraintCols if req else None)

    @_declared_only
    def add_default_constraint(self, req: hms.AddDefaultConstraintRequest) -> None:
        self._add_constraints("defaultConstraints", req.defaultConstraintCols if req else None)

    @_declared_only
    def add_check_constraint(self, req: hms.AddCheckConstraintRequest) -> None:
        self._add_constraints("checkConstraints", req.checkConstraintCols if req else None)

    def drop_constraint(self, req: hms.DropConstraintRequest) -> None:
        if req is None:
            raise hms.MetaException(message="the DropConstraintRequest must be set")
        cat, db = self.require_db(req.dbname)
        if req.catName:
            cat = self.catalog(req.catName)
        name = self.require_name(req.tablename)
        constraint = self.require_name(req.constraintname, "constraint")
        self.store.drop_constraint(cat, db, name, constraint)

    # -- reads -----------------------------------------------------------------------------------

    def _constraints_of(
        self,
        cat_name: str | None,
        db_name: str | None,
        tbl_name: str | None,
        snapshot: str | None,
    ) -> Any:
        cat, db = self.require_db(db_name)
        if cat_name:
            cat = self.catalog(cat_name)
        name = self.require_name(tbl_name)
        return self.store.get_table_constraints(cat, db, name, valid_write_id_list=snapshot)

    def get_primary_keys(self, request: hms.PrimaryKeysRequest) -> hms.PrimaryKeysResponse:
        found = self._constraints_of(
            request.catName, request.db_name, request.tbl_name, request.validWriteIdList
        )
        return hms.PrimaryKeysResponse(primaryKeys=found.primaryKeys)

    def get_foreign_keys(self, request: hms.ForeignKeysRequest) -> hms.ForeignKeysResponse:
        """Foreign keys of the foreign (child) table, or referencing the parent table, or
        both; Hive needs at least one of them."""
        cat = self.catalog(request.catName)
        parent = self._table_name(request.parent_db_name, request.parent_tbl_name)
        child = self._table_name(request.foreign_db_name, request.foreign_tbl_name)
        if parent is None and child is None:
            raise hms.MetaException(
                message="get_foreign_keys needs the parent table, the foreign table or both"
            )
        return hms.ForeignKeysResponse(foreignKeys=self.store.get_foreign_keys(cat, parent, child))

    def _table_name(self, db: str | None, table: str | None) -> tuple[str, str] | None:
        if not (db or "").strip() or not (table or "").strip():
            return None
        return self.require_db(db)[1], normalize(table) or ""

    def get_unique_constraints(
        self, request: hms.UniqueConstraintsRequest
    ) -> hms.UniqueConstraintsResponse:
        found = self._constraints_of(
            request.catName, request.db_name, request.tbl_name, request.validWriteIdList
        )
        return hms.UniqueConstraintsResponse(uniqueConstraints=found.uniqueConstraints)

    def get_not_null_constraints(
        self, request: hms.NotNullConstraintsRequest
    ) -> hms.NotNullConstraintsResponse:
        found = self._constraints_of(
            request.catName, request.db_name, request.tbl_name, request.validWriteIdList
        )
        return hms.NotNullConstraintsResponse(notNullConstraints=found.notNullConstraints)

    def get_default_constraints(
        self, request: hms.DefaultConstraintsRequest
    ) -> hms.DefaultConstraintsResponse:
        found = self._constraints_of(
            request.catName, request.db_name, request.tbl_name, request.validWriteIdList
        )
        return hms.DefaultConstraintsResponse(defaultConstraints=found.defaultConstraints)

    def get_check_constraints(
        self, request: hms.CheckConstraintsRequest
    ) -> hms.CheckConstraintsResponse:
        found = self._constraints_of(
            request.catName, request.db_name, request.tbl_name, request.validWriteIdList
        )
        return hms.CheckConstraintsResponse(checkConstraints=found.checkConstraints)

    def get_all_table_constraints(
        self, request: hms.AllTableConstraintsRequest
    ) -> hms.AllTableConstraintsResponse:
        found = self._constraints_of(
            request.catName, request.dbName, request.tblName, request.validWriteIdList
        )
        return hms.AllTableConstraintsResponse(allTableConstraints=found)
