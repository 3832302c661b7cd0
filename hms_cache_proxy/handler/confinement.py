"""Which locations a call may create, and whose data a drop or truncate may delete.

The rules (docs/security.md, "Filesystem confinement"):

- Files are only ever touched inside the roots (the warehouse, the external warehouse and
  ``filesystem_roots``), through ``ConfinedFS``; a root itself is never deleted or emptied.
- A location whose data this service deletes (a managed table, an external one with
  ``external.table.purge``, their partitions, a database) must lie inside the roots; an
  external table's or partition's location outside them is kept as metadata only (never made,
  listed, emptied or deleted) or refused, as ``external_locations_outside_roots`` says.
- A table whose data may be deleted lies strictly below its own database's directory, and no
  other database's directory is nearer to it (the default database's directory is the
  warehouse root, so every database's directory is below it; in the external warehouse a
  database's directory is ``<db>.db``, the default database's is the root). Any table or
  partition lying in another database's directory (other than a root) is refused. So deleting
  one database's data never reaches into another's, which is what the per-database
  allow-lists separate.
- Deletion re-checks the rules against the current metadata, so rows written before these
  rules (or by a stock metastore) are dropped as metadata but their data is kept and logged.
"""

from __future__ import annotations

import logging

from hms_cache_proxy import warehouse
from hms_cache_proxy.confined_fs import is_below, is_within, local_path
from hms_cache_proxy.handler.base import DEFAULT_CATALOG, HandlerBase, ThriftError
from hms_cache_proxy.idl import hms

log = logging.getLogger(__name__)

DatabaseKey = tuple[str, str]

ROOTS_HINT = "or have the operator add its directory to filesystem_roots"
DEFAULT_DATABASE = "default"


class FileRules(HandlerBase):
    """Location checks shared by the table, partition and database handlers."""

    # -- what exists -----------------------------------------------------------------------------

    def database_dirs(self) -> list[tuple[DatabaseKey, str]]:
        """Every database's local directories (location, managed location and its directory in
        the external warehouse), read from the metastore database (one query; a cache could
        miss another instance's new database)."""
        out: list[tuple[DatabaseKey, str]] = []
        for cat, name, location, managed in self.store.database_locations():
            for uri in (location, managed, self.external_database_dir(cat, name)):
                path = local_path(uri)
                if path is not None:
                    out.append(((cat, name), path))
        return out

    def external_database_dir(self, cat: str, db: str) -> str | None:
        """Warehouse.getDefaultExternalDatabasePath: where Hive 4 puts a database's external
        tables, ``<external warehouse>/<db>.db`` (the external warehouse itself for
        ``default``). Counted as the database's directory, so no other database's data may be
        placed there. None without an external warehouse, and outside the default catalog
        (the path carries no catalog, so two catalogs' databases would share it)."""
        root = self.settings.external_warehouse_uri()
        if root is None or cat != DEFAULT_CATALOG:
            return None
        root = self.location(root) or root
        return root if db == DEFAULT_DATABASE else warehouse.join(root, f"{db}.db")

    @staticmethod
    def _nearest_databases(
        path: str, dirs: list[tuple[DatabaseKey, str]]
    ) -> tuple[str | None, set[DatabaseKey]]:
        """The innermost database directory holding ``path`` (or equal to it), and whose it is
        (more than one database when several share it)."""
        best: str | None = None
        owners: set[DatabaseKey] = set()
        for key, d in dirs:
            if not is_within(path, d):
                continue
            if best is None or len(d) > len(best):
                best, owners = d, {key}
            elif d == best:
                owners.add(key)
        return best, owners

    # -- problems (None: fine) -------------------------------------------------------------------

    def _outside(self, uri: str) -> str:
        return (
            f"{uri} is outside the directories this metastore may change "
            f"({self.files.roots.describe()}); choose a location below one of them, {ROOTS_HINT}"
        )

    def _owned_table_problem(self, cat: str, db: str, path: str) -> str | None:
        """Why a table whose data may be deleted may not live at ``path`` (None: it may)."""
        dirs = self.database_dirs()
        own = sorted({d for key, d in dirs if key == (cat, db)})
        nearest, owners = self._nearest_databases(path, dirs)
        if nearest is None or (cat, db) not in owners:
            if nearest is not None and self.files.roots.root_of(nearest) != nearest:
                other = sorted(f"{c}.{n}" for c, n in owners)[0]
                return f"lies inside database {other}'s directory {nearest}"
            return f"does not lie below its database's directory ({', '.join(own) or 'none'})"
        if len(owners) > 1:
            return f"lies in {nearest}, the directory of more than one database"
        if path == nearest:
            return "is its database's directory itself"
        for key, d in dirs:
            if key != (cat, db) and is_below(d, path):
                return f"holds database {key[0]}.{key[1]}'s directory {d}"
        return None

    def _foreign_problem(
        self, cat: str, db: str, path: str, dirs: list[tuple[DatabaseKey, str]] | None = None
    ) -> str | None:
        """Why a table or partition of ``db`` may not live at ``path``: inside another
        database's directory (other than a root)."""
        if dirs is None:
            dirs = self.database_dirs()
        nearest, owners = self._nearest_databases(path, dirs)
        if nearest is None or (cat, db) in owners or self.files.roots.is_root(nearest):
            return None
        other = sorted(f"{c}.{n}" for c, n in owners)[0]
        return f"lies inside database {other}'s directory {nearest}"

    def _database_dir_problem(self, cat: str, db: str, path: str) -> str | None:
        """Why database ``db`` may not have (or delete) the directory ``path``."""
        if self.files.roots.root_of(path) is None:
            return None  # reported as outside the roots by the caller
        if self.files.roots.is_root(path):
            return "is a filesystem root of this metastore"
        for key, d in self.database_dirs():
            if key == (cat, db):
                continue
            if is_within(d, path):
                return f"holds database {key[0]}.{key[1]}'s directory {d}"
            if is_below(path, d) and not self.files.roots.is_root(d):
                return f"lies inside database {key[0]}.{key[1]}'s directory {d}"
        return None

    def _others_data_problem(self, path: str, mine: tuple[str, ...]) -> str | None:
        """Another table's or partition's data at, around or inside ``path`` (any database);
        ``mine`` is (catalog, database[, table]) of the object being deleted."""
        ancestors = [path]
        while ancestors[-1] != "/":
            ancestors.append(ancestors[-1].rsplit("/", 1)[0] or "/")
        exact = [f"file:{p}" for p in ancestors]
        below = f"file:{path.rstrip('/')}/"
        for cat, db, table, location in self.store.tables_using_locations(exact, below):
            if (cat, db, table)[: len(mine)] != mine:
                return f"holds or lies in the data of table {cat}.{db}.{table} ({location})"
        return None

    # -- checks before a location is stored ------------------------------------------------------

    def check_table_location(
        self,
        cat: str,
        db: str,
        what: str,
        uri: str | None,
        *,
        deletable: bool,
        exc: ThriftError,
    ) -> bool:
        """Refuse (``exc``) a table location the rules do not allow; True when this service may
        make and list its directory, False when it is kept as metadata only."""
        path = local_path(uri)
        if path is None:
            return False  # another filesystem: never touched here
        if self.files.roots.root_of(path) is None:
            return self._outside_roots(what, uri or "", deletable=deletable, exc=exc)
        problem = (
            self._owned_table_problem(cat, db, path)
            if deletable
            else self._foreign_problem(cat, db, path)
        )
        if self.files.roots.is_root(path):
            problem = "is a filesystem root of this metastore"
        if problem is not None:
            rule = (
                "; the data of a managed table (or one with external.table.purge) must lie "
                "below its own database's directory"
                if deletable
                else ""
            )
            raise exc(message=f"{what} location {uri} {problem}{rule}")
        return True

    def check_partition_location(
        self,
        table: hms.Table,
        uri: str | None,
        *,
        deletable: bool,
        exc: ThriftError,
        dirs: list[tuple[DatabaseKey, str]] | None = None,
    ) -> bool:
        """Like check_table_location for a partition of ``table``: inside the roots (or
        metadata only for external tables), never inside another database's directory.
        ``dirs`` (from database_dirs) lets a caller inside a store transaction check without
        reading the store again."""
        path = local_path(uri)
        if path is None:
            return False
        what = f"partition of {table.dbName}.{table.tableName}:"
        if self.files.roots.root_of(path) is None:
            return self._outside_roots(what, uri or "", deletable=deletable, exc=exc)
        problem = self._foreign_problem(table.catName or "hive", table.dbName, path, dirs)
        if self.files.roots.is_root(path):
            problem = "is a filesystem root of this metastore"
        if problem is not None:
            raise exc(message=f"{what} location {uri} {problem}")
        return True

    def check_database_location(self, cat: str, db: str, uri: str | None) -> bool:
        """A database's (or catalog's) directory: inside the roots, not a root, not nested in
        or holding another database's directory. MetaException otherwise."""
        path = local_path(uri)
        if path is None:
            return False
        if self.files.roots.root_of(path) is None:
            raise hms.MetaException(message=f"database {db} location {self._outside(uri or '')}")
        problem = self._database_dir_problem(cat, db, path)
        if problem is not None:
            raise hms.MetaException(message=f"database {db} location {uri} {problem}")
        return True

    def _outside_roots(self, what: str, uri: str, *, deletable: bool, exc: ThriftError) -> bool:
        if deletable or self.settings.external_locations_outside_roots == "refuse":
            setting = "" if deletable else " (external_locations_outside_roots: refuse)"
            raise exc(message=f"{what} location {self._outside(uri)}{setting}")
        log.info("%s location %s is outside the roots: kept as metadata only", what, uri)
        return False

    # -- checks before data is deleted -----------------------------------------------------------

    def table_dir_to_delete(
        self, cat: str, db: str, name: str, uri: str | None, *, others: bool = True
    ) -> str | None:
        """The table's directory when its data may be deleted now, else None (logged).
        ``others`` false skips looking for other tables' data there (a partition drop deletes
        only below the table's directory, which is the table's own)."""
        path = local_path(uri)
        if path is None:
            return None
        problem: str | None
        if self.files.roots.root_of(path) is None:
            problem = "is outside the roots"
        else:
            try:
                problem = self._owned_table_problem(cat, db, path)
                if problem is None and others:
                    problem = self._others_data_problem(path, (cat, db, name))
            except Exception as exc:  # noqa: BLE001 - the metadata is dropped: keep the data
                problem = f"could not be checked ({exc})"
        if problem is not None:
            log.warning("keeping the data of %s.%s.%s: %s %s", cat, db, name, uri, problem)
            return None
        return uri

    @staticmethod
    def below_table_dir(table_dir: str | None, uri: str | None) -> bool:
        """Whether a local location lies strictly below the table's directory."""
        path, base = local_path(uri), local_path(table_dir)
        return path is not None and base is not None and is_below(path, base)

    def partition_dir_to_delete(self, table_dir: str | None, uri: str | None) -> str | None:
        """A partition's directory when it lies strictly below its table's deletable
        directory ``table_dir``; else None (logged): data elsewhere is kept."""
        if local_path(uri) is None:
            return None
        if not self.below_table_dir(table_dir, uri):
            log.warning("keeping partition data at %s: not below its table's directory", uri)
            return None
        return uri

    def database_dir_to_delete(self, cat: str, db: str, uri: str | None) -> str | None:
        path = local_path(uri)
        if path is None:
            return None
        if self.files.roots.root_of(path) is None:
            problem: str | None = "is outside the roots"
        else:
            try:
                problem = self._database_dir_problem(cat, db, path)
                if problem is None:
                    problem = self._others_data_problem(path, (cat, db))
            except Exception as exc:  # noqa: BLE001 - the metadata is dropped: keep the data
                problem = f"could not be checked ({exc})"
        if problem is not None:
            log.warning("keeping the directory of database %s.%s: %s %s", cat, db, uri, problem)
            return None
        return uri

    def delete_quietly(self, uri: str | None) -> None:
        """Delete a checked location; a failure is logged (the metadata change stands)."""
        if not uri:
            return
        try:
            self.files.delete(uri)
        except OSError as exc:
            log.warning("could not delete %s: %s", uri, exc)

    def move_back(self, moved: list[tuple[str, str]]) -> None:
        """Undo the directory moves (source, destination) of a write whose metadata did not
        commit, newest first; one that cannot be undone is logged and the others still go."""
        for src, dst in reversed(moved):
            try:
                self.files.rename(dst, src)
            except OSError as undo:
                log.error("could not move %s back to %s: %s", dst, src, undo)
