"""Catalog and database calls: what Hive 4.0's HMSHandler does around the store."""

from __future__ import annotations

import logging
import time

from hms_cache_proxy import warehouse
from hms_cache_proxy.confined_fs import local_path
from hms_cache_proxy.handler.base import DEFAULT_CATALOG, normalize
from hms_cache_proxy.handler.names import filter_names
from hms_cache_proxy.handler.table_drops import TableDropHandlers
from hms_cache_proxy.handler.validate import validate_name
from hms_cache_proxy.idl import hms

log = logging.getLogger(__name__)


def database_ref(cat: str, name: str | None) -> str:
    """How Hive 4 names a missing database: ``database hive.x``."""
    return f"database {cat}.{name}"


class DatabaseHandlers(TableDropHandlers):
    # -- catalogs --------------------------------------------------------------------------------

    def create_catalog(self, catalog: hms.CreateCatalogRequest) -> None:
        cat = catalog.catalog if catalog is not None else None
        if cat is None or not cat.name:
            raise hms.InvalidObjectException(message="Catalog name must be set")
        validate_name(cat.name, "catalog")
        name = normalize(cat.name)
        if not cat.locationUri:
            raise hms.InvalidObjectException(message="You must specify a path for the catalog")
        location = self.location(cat.locationUri)
        if local_path(location) is not None and not self.files.inside(location):
            raise hms.InvalidObjectException(
                message=f"catalog {name} location {self._outside(location or '')}"
            )
        created = self.store.create_catalog(
            hms.Catalog(
                name=name,
                description=cat.description,
                locationUri=location,
                createTime=int(time.time()),
            )
        )
        try:
            if self.files.inside(created.locationUri):
                self.files.mkdirs(created.locationUri)
        except OSError as exc:
            log.warning("catalog %s created but not its directory: %s", name, exc)

    def get_catalog(self, catName: hms.GetCatalogRequest) -> hms.GetCatalogResponse:
        return hms.GetCatalogResponse(catalog=self.store.get_catalog(self.catalog(catName.name)))

    def get_catalogs(self) -> hms.GetCatalogsResponse:
        return hms.GetCatalogsResponse(names=self.store.get_catalogs())

    def alter_catalog(self, rqst: hms.AlterCatalogRequest) -> None:
        if rqst.newCat is None:
            raise hms.InvalidOperationException(message="The new catalog must be set")
        self.store.alter_catalog(self.catalog(rqst.name), rqst.newCat)

    def drop_catalog(self, catName: hms.DropCatalogRequest) -> None:
        self.store.drop_catalog(self.catalog(catName.name))

    # -- create ----------------------------------------------------------------------------------

    def create_database(self, database: hms.Database) -> None:
        """HMSHandler.create_database (Hive 4.0): existence first, then the name, the catalog,
        locations (getDnsPath; default ``<catalog root>/<name>.db``), directories, the row."""
        if database is None or database.name is None:
            raise hms.MetaException(message="Database name cannot be null.")
        cat = self.catalog(database.catalogName)
        name = normalize(database.name)
        try:
            self.store.get_database(cat, name)
        except hms.NoSuchObjectException:
            pass
        else:
            raise hms.AlreadyExistsException(message=f"Database {database.name} already exists")
        validate_name(database.name, "database")
        db = hms.Database(**database.__dict__)
        db.name, db.catalogName = name, cat
        db.locationUri = self.location(database.locationUri) or self._default_db_location(cat, name)
        db.managedLocationUri = self.location(database.managedLocationUri) or None
        db.parameters = dict(database.parameters or {})
        if db.ownerName is None:
            db.ownerName = self.current_user()  # type: ignore[attr-defined]  # SessionHandlers
        if db.ownerType is None:
            db.ownerType = hms.PrincipalType.USER
        db.createTime = int(time.time())
        made: list[str] = []
        writable = [
            uri
            for uri in (db.managedLocationUri, db.locationUri)
            if uri and self.check_database_location(cat, name, uri)
        ]
        for uri in writable:
            try:
                if self.files.mkdirs(uri):
                    made.append(uri)
            except OSError as exc:
                log.warning("could not create %s: %s", uri, exc)
                for path in made:
                    self.delete_quietly(path)
                raise hms.MetaException(
                    message=f"Unable to create database path {uri}, failed to create database "
                    f"{name}"
                ) from None
        try:
            self.store.create_database(db)
        except Exception as exc:
            for path in made:
                self.delete_quietly(path)
            if isinstance(exc, hms.AlreadyExistsException):
                raise hms.AlreadyExistsException(
                    message=f"Database {database.name} already exists"
                ) from None
            if isinstance(exc, hms.NoSuchObjectException):
                raise hms.InvalidObjectException(message=f"No such catalog {cat}") from None
            raise

    def _default_db_location(self, cat: str, name: str) -> str:
        """Warehouse.determineDatabasePath: ``<root>/<name>.db``, the root being the warehouse
        for the default catalog and the catalog's location for the others."""
        if cat == DEFAULT_CATALOG:
            root = self.location(self.settings.warehouse_uri()) or ""
        else:
            try:
                root = self.store.get_catalog(cat).locationUri or ""
            except hms.NoSuchObjectException:
                raise hms.InvalidObjectException(message=f"No such catalog {cat}") from None
        return warehouse.join(root, f"{name}.db")

    def create_database_req(self, createDatabaseRequest: hms.CreateDatabaseRequest) -> None:
        r = createDatabaseRequest
        self.create_database(
            hms.Database(
                name=r.databaseName,
                description=r.description,
                locationUri=r.locationUri,
                parameters=r.parameters,
                privileges=r.privileges,
                ownerName=r.ownerName,
                ownerType=r.ownerType,
                catalogName=r.catalogName,
                createTime=r.createTime,
                managedLocationUri=r.managedLocationUri,
                type=hms.DatabaseType.REMOTE if r.type == "REMOTE" else hms.DatabaseType.NATIVE,
                connector_name=r.dataConnectorName,
            )
        )

    # -- read ------------------------------------------------------------------------------------

    def _get_database(self, cat: str, db: str) -> hms.Database:
        try:
            return self.store.get_database(cat, db)
        except hms.NoSuchObjectException:
            raise hms.NoSuchObjectException(message=database_ref(cat, db)) from None

    def get_database(self, name: str) -> hms.Database:
        cat, db = self.require_db(name)
        return self._get_database(cat, db)

    def get_database_req(self, request: hms.GetDatabaseRequest) -> hms.Database:
        if request is None or request.name is None:
            raise hms.MetaException(message="Database name cannot be null.")
        cat, db = self.require_db(request.name)
        if request.catalogName:
            cat = self.catalog(request.catalogName)
        return self._get_database(cat, db)

    def get_databases(self, pattern: str | None) -> list[str]:
        """Names matching Hive's pattern (``*`` any run, ``.`` one character, ``|`` between
        alternatives, case-insensitive); None or ``*`` lists every database."""
        if pattern is None:
            return self.get_all_databases()
        cat, pat = self.split_db(pattern)
        names = self.store.get_databases(cat, None)
        if pat is None or pat.strip() == "*":
            return sorted(names)
        return filter_names(names, pat)

    def get_all_databases(self) -> list[str]:
        return sorted(self.store.get_databases(DEFAULT_CATALOG, None))

    # -- alter -----------------------------------------------------------------------------------

    def alter_database(self, dbname: str, db: hms.Database) -> None:
        """Hive 4.0: the database must exist; parameters are replaced whole, the owner name too
        (None clears it), the owner type when set, description and locations when not blank."""
        cat, name = self.require_db(dbname)
        if db is None:
            raise hms.MetaException(message="The new database definition must be set")
        new = hms.Database(**db.__dict__)
        new.locationUri = (
            self.location(db.locationUri.strip())
            if db.locationUri and (db.locationUri.strip())
            else None
        )
        new.managedLocationUri = (
            self.location(db.managedLocationUri.strip())
            if (db.managedLocationUri and db.managedLocationUri.strip())
            else None
        )
        self._check_new_locations(cat, name, new)
        try:
            self.store.alter_database(cat, name, new)
        except hms.NoSuchObjectException:
            raise hms.NoSuchObjectException(message=database_ref(cat, name)) from None

    def _check_new_locations(self, cat: str, name: str, new: hms.Database) -> None:
        """A database's directory moved by alter_database must satisfy the confinement rules
        (its current ones stay allowed)."""
        try:
            old = self.store.get_database(cat, name)
        except hms.NoSuchObjectException:
            return  # the alter reports it
        for uri in (new.locationUri, new.managedLocationUri):
            if uri and uri not in (old.locationUri, old.managedLocationUri):
                self.check_database_location(cat, name, uri)

    # -- drop ------------------------------------------------------------------------------------

    def drop_database(self, name: str, deleteData: bool, cascade: bool) -> None:
        cat, db = self.require_db(name)
        self._drop_database(cat, db, delete_data=deleteData, cascade=cascade, ignore_unknown=False)

    def drop_database_req(self, req: hms.DropDatabaseRequest) -> None:
        cat, db = self.require_db(req.name)
        if req.catalogName:
            cat = self.catalog(req.catalogName)
        self._drop_database(
            cat,
            db,
            delete_data=bool(req.deleteData),
            cascade=bool(req.cascade),
            ignore_unknown=bool(req.ignoreUnknownDb),
        )

    def _drop_database(
        self, cat: str, db: str, *, delete_data: bool, cascade: bool, ignore_unknown: bool
    ) -> None:
        """HMSHandler.drop_database_core: ``default`` is refused first; without cascade a
        database with tables or functions is refused; with it its functions (DROP_FUNCTION
        events), then its tables (DROP_TABLE events, data of managed tables deleted with
        ``deleteData``) go before the database (DROP_DATABASE); then its directory."""
        if cat == DEFAULT_CATALOG and db == "default":
            raise hms.MetaException(message="Can not drop default database in catalog hive")
        try:
            database = self.store.get_database(cat, db)
        except hms.NoSuchObjectException:
            if ignore_unknown:
                return
            raise hms.NoSuchObjectException(message=database_ref(cat, db)) from None
        if cascade:
            for func in self.store.get_functions(cat, db, None):
                try:
                    self.store.drop_function(cat, db, func)
                except hms.NoSuchObjectException:
                    pass  # dropped meanwhile
            for table_name in self.store.get_table_names(cat, db):
                try:
                    self._drop_table(cat, db, table_name, delete_data=delete_data, env=None)
                except hms.NoSuchObjectException:
                    pass  # dropped meanwhile
        try:
            dropped = self.store.drop_database(cat, db, cascade=cascade)
        except hms.NoSuchObjectException:
            if ignore_unknown:
                return
            raise hms.NoSuchObjectException(message=database_ref(cat, db)) from None
        if delete_data:
            for uri in (dropped.locationUri or database.locationUri, dropped.managedLocationUri):
                self.delete_quietly(self.database_dir_to_delete(cat, db, uri))
            self._remove_external_dir(cat, db)

    def _remove_external_dir(self, cat: str, db: str) -> None:
        """The database's directory in the external warehouse goes only when it holds nothing
        at all: what is left there is external tables' data this service must keep."""
        uri = self.database_dir_to_delete(cat, db, self.external_database_dir(cat, db))
        if uri is not None and self.files.inside(uri):
            self.files.remove_empty_dir(uri)
