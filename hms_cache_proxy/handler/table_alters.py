"""Table alters: alter_table*, as Hive 4.0's HMSHandler.alter_table_core and
HiveAlterHandler.alterTable do around the store (renames move a managed table's directory).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.base import alter_as_requested, env_props, normalize
from hms_cache_proxy.handler.confinement import FileRules
from hms_cache_proxy.handler.table_rules import (
    CASCADE,
    DDL_TIME,
    DISALLOW_INCOMPATIBLE,
    copy_table,
    data_deletable,
    expected_parameter,
    is_external,
    is_view,
    lower_columns,
    normalize_table_type,
)
from hms_cache_proxy.handler.validate import check_columns, incompatible_columns, validate_name
from hms_cache_proxy.idl import hms


class TableAlterHandlers(FileRules):
    """Altering and renaming tables."""

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
        expected = (req.expectedParameterKey, req.expectedParameterValue)
        alter_as_requested(self._alter_table, req, req.table, expected=expected)
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
            self._check_altered_schema(before, new_tbl, raw_keys, disallow)
            if renamed:
                self._rename_location(before, after, old_db, target_db, name, moves, moved)
            elif not before.partitionKeys and basic_stats.require_cal_stats(
                None, None, is_view=is_view(after), env=props, table_level=True
            ):
                self._recompute_table_stats(after, props)
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
            self.move_back(moved)
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

    @staticmethod
    def _check_altered_schema(
        before: hms.Table, new_tbl: hms.Table, raw_keys: list[str], disallow: bool
    ) -> None:
        """HiveAlterHandler's column checks: with ``disallow`` (the default) no column may
        change to an incompatible type; partition keys (``raw_keys``: as the client sent them)
        may not change at all. Views are exempt."""
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

    def _recompute_table_stats(self, after: hms.Table, props: dict[str, str]) -> None:
        """Quick statistics of an unpartitioned table, listed again from its directory."""
        basic_stats.update_table_stats(
            after.parameters,
            after.sd.location if after.sd else None,
            props,
            self.list_location,
            partitioned=False,
            new_dir=False,
            force=True,
        )

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
