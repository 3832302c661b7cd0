"""What every group of handler methods shares: the store, settings and name handling."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, overload

from hms_cache_proxy import warehouse
from hms_cache_proxy.config import Settings
from hms_cache_proxy.confined_fs import ConfinedFS, Roots
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.api import HandlerStore

DEFAULT_CATALOG = "hive"

# Hive 3+ clients put the catalog into old-style calls' database names: "@cat#db".
CATALOG_MARKER = "@"
CATALOG_SEPARATOR = "#"
EMPTY_DB_MARKER = "!"

ThriftError = Callable[..., Exception]
"""A Thrift exception class (MetaException, InvalidObjectException, ...): called with message=."""


@overload
def normalize(name: str) -> str: ...
@overload
def normalize(name: None) -> None: ...
@overload
def normalize(name: str | None) -> str | None: ...
def normalize(name: str | None) -> str | None:
    """Hive's normalizeIdentifier: database and table names are trimmed and lower-cased."""
    return name.strip().lower() if name is not None else None


def env_props(env: hms.EnvironmentContext | None) -> dict[str, str]:
    """The properties of an EnvironmentContext (empty when there is none)."""
    return dict(env.properties or {}) if env is not None and env.properties else {}


def alter_as_requested(alter: Callable[..., None], req: Any, new: Any, **more: Any) -> None:
    """Run ``alter`` (a table's or partitions') with what an AlterTableRequest or an
    AlterPartitionsRequest names: catalog, database and table, the new object(s) ``new``, the
    environment context, and the writer's write id and snapshot."""
    alter(
        req.catName,
        req.dbName,
        req.tableName,
        new,
        req.environmentContext,
        write_id=req.writeId,
        valid_write_id_list=req.validWriteIdList,
        **more,
    )


class HandlerBase:
    """Base of every handler mixin."""

    def __init__(self, store: HandlerStore, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.started_at = int(time.time())
        self._default_fs = warehouse.default_fs(settings.warehouse_uri())
        # Every file operation goes through this: nothing outside the roots is ever touched.
        self.files = ConfinedFS(Roots(settings.filesystem_root_uris()))

    # -- names -----------------------------------------------------------------------------------

    def catalog(self, cat_name: str | None) -> str:
        return normalize(cat_name) or DEFAULT_CATALOG

    def split_db(self, db_name: str | None) -> tuple[str, str | None]:
        """(catalog, database) of an old-style call's database argument (parseDbName)."""
        if db_name is None:
            return DEFAULT_CATALOG, None
        if db_name.startswith(CATALOG_MARKER):
            if db_name.endswith(CATALOG_SEPARATOR):
                return self.catalog(db_name[1:-1]), None
            if db_name.endswith(EMPTY_DB_MARKER) and db_name[:-1].endswith(CATALOG_SEPARATOR):
                return self.catalog(db_name[1:-2]), ""
            cat, sep, db = db_name[1:].partition(CATALOG_SEPARATOR)
            if not sep or not cat:
                raise hms.MetaException(
                    message=f"{db_name} is prepended with the catalog marker but does not "
                    "appear to have a catalog name in it"
                )
            return self.catalog(cat), normalize(db)
        return DEFAULT_CATALOG, normalize(db_name)

    def require_db(self, db_name: str | None) -> tuple[str, str]:
        cat, db = self.split_db(db_name)
        if not db:
            raise hms.MetaException(message="Database name cannot be null.")
        return cat, db

    @staticmethod
    def require_name(name: str | None, what: str = "table") -> str:
        n = normalize(name)
        if not n:
            raise hms.MetaException(message=f"The {what} name must not be empty")
        return n

    # -- per-connection configuration and the warehouse -----------------------------------------

    def conf(self, key: str, default: str | None = None) -> str | None:
        """A setMetaConf value of this connection (SessionHandlers), else its default."""
        get = getattr(self, "getMetaConf", None)
        if get is None:
            return default
        try:
            return get(key)
        except hms.MetaException:
            return default

    def conf_flag(self, key: str, default: bool) -> bool:
        value = self.conf(key, None)
        if value is None:
            return default
        return value.strip().lower() == "true"

    def location(self, uri: str | None) -> str | None:
        """Warehouse.getDnsPath of a client's location (None and "" stay as they are)."""
        if not uri:
            return uri
        try:
            return warehouse.normalize_location(uri, self._default_fs)
        except warehouse.RelativePathError as exc:
            raise hms.MetaException(message=str(exc)) from None

    def list_location(self, uri: str | None) -> tuple[int, int] | None:
        """(files, bytes) below a location for the quick statistics; None if not listable
        (another filesystem, or a local location outside the roots: never looked at)."""
        if not self.files.inside(uri):
            return None
        try:
            return self.files.stats(uri)
        except OSError:
            return None
