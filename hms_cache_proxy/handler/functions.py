"""Function calls: HMSHandler's validation and messages around the store.

Function and database names are stored in lower case (Hive 4 normalises them; Hive 2.3 kept
the function name as sent and could not find it again). The server sets createTime. Errors a
client sees echo the names as it sent them, as Hive's do.
"""

from __future__ import annotations

import time

from hms_cache_proxy.handler.base import HandlerBase, normalize
from hms_cache_proxy.handler.names import filter_names
from hms_cache_proxy.handler.validate import validate_name
from hms_cache_proxy.idl import hms


def _validate_function(func: hms.Function | None) -> None:
    """HMSHandler.validateFunctionInfo, in Hive's order and words."""
    if func is None:
        raise hms.MetaException(message="Function cannot be null.")
    if func.functionName is None:
        raise hms.MetaException(message="Function name cannot be null.")
    if func.dbName is None:
        raise hms.MetaException(message="Database name in Function cannot be null.")
    validate_name(func.functionName, "function")
    if func.className is None:
        raise hms.InvalidObjectException(message="Function class name cannot be null")
    if func.ownerType is None:
        raise hms.MetaException(message="Function owner type cannot be null.")
    if func.functionType is None:
        raise hms.MetaException(message="Function type cannot be null.")


class FunctionHandlers(HandlerBase):
    def _function_db(self, func: hms.Function) -> tuple[str, str]:
        """(catalog, database) of a Function: its catName, or the ``@cat#db`` form, or hive."""
        cat, db = self.require_db(func.dbName)
        if func.catName:
            cat = self.catalog(func.catName)
        return cat, db

    def create_function(self, func: hms.Function) -> None:
        _validate_function(func)
        cat, db = self._function_db(func)
        stored = hms.Function(
            functionName=normalize(func.functionName),
            dbName=db,
            className=func.className,
            ownerName=func.ownerName,
            ownerType=func.ownerType,
            createTime=int(time.time()),
            functionType=func.functionType,
            resourceUris=list(func.resourceUris or []),
            catName=cat,
        )
        self.store.create_function(stored)

    def drop_function(self, dbName: str, funcName: str) -> None:
        if funcName is None:
            raise hms.MetaException(message="Function name cannot be null.")
        cat, db = self.split_db(dbName)
        if db is None:
            raise hms.MetaException(message="Database name cannot be null.")
        try:
            self.store.drop_function(cat, db, normalize(funcName))
        except hms.NoSuchObjectException:
            raise hms.NoSuchObjectException(message=f"Function {funcName} does not exist") from None

    def alter_function(self, dbName: str, funcName: str, newFunc: hms.Function) -> None:
        if dbName is None or funcName is None:
            raise hms.MetaException(message="Database and function name cannot be null.")
        try:
            _validate_function(newFunc)
        except hms.InvalidObjectException as exc:
            # alter_function declares no InvalidObjectException: Hive rethrows it as this.
            raise hms.MetaException(message=exc.message) from None
        cat, db = self.split_db(dbName)
        if db is None:
            raise hms.MetaException(message="Database and function name cannot be null.")
        new_cat, new_db = self._function_db(newFunc)
        changed = hms.Function(
            functionName=normalize(newFunc.functionName),
            dbName=new_db,
            className=newFunc.className,
            ownerName=newFunc.ownerName,
            ownerType=newFunc.ownerType,
            createTime=newFunc.createTime,
            functionType=newFunc.functionType,
            resourceUris=list(newFunc.resourceUris or []),
            catName=new_cat,
        )
        try:
            self.store.alter_function(cat, db, normalize(funcName), changed)
        except hms.InvalidObjectException as exc:
            raise hms.MetaException(message=exc.message) from None

    def get_functions(self, dbName: str, pattern: str | None) -> list[str]:
        """Names in the database matching Hive's pattern (None: all), sorted; [] for an
        unknown database."""
        cat, db = self.split_db(dbName)
        if db is None:
            return []
        names = self.store.get_functions(cat, db, None)
        return names if pattern is None else filter_names(names, pattern)

    def get_function(self, dbName: str, funcName: str) -> hms.Function:
        if dbName is None or funcName is None:
            raise hms.MetaException(message="Database and function name cannot be null.")
        cat, db = self.split_db(dbName)
        try:
            if db is None:
                raise hms.NoSuchObjectException()
            return self.store.get_function(cat, db, normalize(funcName))
        except hms.NoSuchObjectException:
            raise hms.NoSuchObjectException(
                message=f"Function {dbName}.{funcName} does not exist"
            ) from None

    def get_all_functions(self) -> hms.GetAllFunctionsResponse:
        # Hive reads the 'hive' catalog only: all the built-in-style UDFs live there.
        return hms.GetAllFunctionsResponse(functions=self.store.get_all_functions("hive"))
