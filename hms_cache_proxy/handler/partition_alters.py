"""Partition alters: alter_partition(s) and rename_partition, as Hive 4.0's HiveAlterHandler
does around the store (locations checked, a renamed managed partition's directory moved,
quick statistics recomputed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.base import alter_as_requested, env_props
from hms_cache_proxy.handler.confinement import DatabaseKey
from hms_cache_proxy.handler.java_text import java_list
from hms_cache_proxy.handler.partition_add import (
    PartitionAddHandlers,
    copy_partition,
    lowered,
    part_name,
)
from hms_cache_proxy.handler.table_rules import DDL_TIME, data_deletable, is_view
from hms_cache_proxy.idl import hms


class _NeedDatabaseDirs(Exception):
    """Raised inside an alter's transaction (rolling it back) when its location checks need
    the database directories, which are read outside it."""


def _elsewhere(
    below: Callable[[str | None, str | None], bool],
    table_dir: str | None,
    news: Sequence[hms.Partition],
) -> bool:
    """Whether a new partition's location lies outside the table's directory ``table_dir``."""
    return any(
        q.sd is not None and q.sd.location and not below(table_dir, q.sd.location) for q in news
    )


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.strip())
    except (TypeError, ValueError):
        return None


class PartitionAlterHandlers(PartitionAddHandlers):
    """Altering and renaming partitions."""

    # -- alter -----------------------------------------------------------------------------------

    def alter_partition(self, db_name: str, tbl_name: str, new_part: hms.Partition) -> None:
        self._alter(None, db_name, tbl_name, [new_part], None, single=True)

    def alter_partition_with_environment_context(
        self, db_name: str, tbl_name: str, new_part: hms.Partition, environment_context: Any
    ) -> None:
        self._alter(None, db_name, tbl_name, [new_part], environment_context, single=True)

    def alter_partitions(self, db_name: str, tbl_name: str, new_parts: list[hms.Partition]) -> None:
        self._alter(None, db_name, tbl_name, new_parts, None)

    def alter_partitions_with_environment_context(
        self, db_name: str, tbl_name: str, new_parts: list[hms.Partition], environment_context: Any
    ) -> None:
        self._alter(None, db_name, tbl_name, new_parts, environment_context)

    def alter_partitions_req(self, req: hms.AlterPartitionsRequest) -> hms.AlterPartitionsResponse:
        alter_as_requested(self._alter, req, req.partitions)
        return hms.AlterPartitionsResponse()

    def _alter(
        self,
        cat_name: str | None,
        db_name: str,
        tbl_name: str,
        parts: Sequence[hms.Partition] | None,
        env: Any,
        *,
        single: bool = False,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
    ) -> None:
        """HiveAlterHandler.alterPartition(s) (Hive 4.0): the partitions are found by their
        values; parameters, storage descriptor, createTime and lastAccessTime are the client's;
        transient_lastDdlTime is set when absent or 0; quick statistics are recomputed when
        requireCalStats says so. Failures are InvalidOperationException (or MetaException)."""
        cat, db, tbl = self._names(db_name, tbl_name, cat_name)
        if not parts:
            return
        props = env_props(env)
        for p in parts:
            if p is None or p.values is None:
                raise hms.InvalidOperationException(message="Partition values must be set")
        news = []
        for p in parts:
            q = copy_partition(p)
            if q.sd is not None and q.sd.location:
                q.sd.location = self.location(q.sd.location)
            params = dict(q.parameters or {})
            ddl = params.get(DDL_TIME)
            if ddl is None or _int_or_none(ddl) == 0:
                params[DDL_TIME] = str(int(time.time()))
            q.parameters = params
            news.append(lowered(q))
        # The table is read in the store's transaction (handed to ``prepare``), not before it.
        # Database directories are read before that transaction, and only when a changed
        # location has to be checked while some new location lies outside the table's
        # directory (it could lie in another database's directory): the first try finds out,
        # rolls back, and the alter runs again with them.
        dirs: list[tuple[DatabaseKey, str]] | None = None

        def prepare(table: hms.Table, before: hms.Partition, after: hms.Partition) -> None:
            new_loc = after.sd.location if after.sd is not None else None
            checked = bool(new_loc) and new_loc != (
                before.sd.location if before.sd is not None else None
            )
            table_dir = table.sd.location if table.sd is not None else None
            if checked and dirs is None and _elsewhere(self.below_table_dir, table_dir, news):
                raise _NeedDatabaseDirs
            self._prepare_altered(table, data_deletable(table), dirs or [], props, before, after)

        while True:
            try:
                self.store.alter_partitions(
                    cat,
                    db,
                    tbl,
                    news,
                    write_id=write_id if write_id is not None and write_id > 0 else None,
                    valid_write_id_list=valid_write_id_list,
                    prepare=prepare,
                )
                return
            except _NeedDatabaseDirs:
                dirs = self.database_dirs()
            except hms.NoSuchObjectException as exc:
                self._raise_alter_missing(cat, db, tbl, exc, single=single)
            except (hms.InvalidObjectException, hms.AlreadyExistsException) as exc:
                raise hms.InvalidOperationException(message=exc.message) from None

    def _raise_alter_missing(
        self, cat: str, db: str, tbl: str, exc: hms.NoSuchObjectException, *, single: bool
    ) -> NoReturn:
        """An alter's NoSuchObjectException in Hive's words: the table's (or database's)
        absence, else the store's message (a missing partition)."""
        try:
            self.store.get_table(cat, db, tbl)
        except hms.NoSuchObjectException:
            if single:
                raise hms.InvalidOperationException(
                    message="alter is not possible: Unable to alter partition because table or "
                    "database does not exist."
                ) from None
            raise hms.InvalidOperationException(
                message="Alter partition operation failed: InvalidObjectException(message:Unable "
                "to alter partitions because table or database does not exist.)"
            ) from None
        if single:
            raise hms.InvalidOperationException(
                message=f"alter is not possible: {exc.message}"
            ) from None
        raise hms.InvalidOperationException(
            message="Alter partition operation failed: "
            f"NoSuchObjectException(message:{exc.message})"
        ) from None

    def _prepare_altered(
        self,
        table: hms.Table,
        deletable: bool,
        dirs: list[tuple[DatabaseKey, str]],
        props: dict[str, str],
        before: hms.Partition,
        after: hms.Partition,
    ) -> None:
        """In the store's transaction, per altered partition: a new location is checked (its
        table's rules, other databases' directories ``dirs``); quick statistics are recomputed
        when requireCalStats says so."""
        new_loc = after.sd.location if after.sd is not None else None
        if new_loc and new_loc != (before.sd.location if before.sd is not None else None):
            self.check_partition_location(
                table,
                new_loc,
                deletable=deletable,
                exc=hms.InvalidOperationException,
                dirs=dirs,
            )
        if basic_stats.require_cal_stats(
            before.parameters, after.parameters, is_view=is_view(table), env=props
        ):
            if basic_stats.is_fast_stats_same(before.parameters, after.parameters):
                basic_stats.update_basic_state(props, after.parameters)
            else:
                basic_stats.update_partition_stats(
                    after.parameters,
                    after.sd.location if after.sd is not None else None,
                    props,
                    self.list_location,
                    made_dir=False,
                    force=True,
                    is_create=False,
                    transactional=basic_stats.is_transactional(table.parameters),
                )

    # -- rename ----------------------------------------------------------------------------------

    def rename_partition(
        self, db_name: str, tbl_name: str, part_vals: list[str], new_part: hms.Partition
    ) -> None:
        self._rename(db_name, tbl_name, None, part_vals, new_part, None)

    def rename_partition_req(self, req: hms.RenamePartitionRequest) -> hms.RenamePartitionResponse:
        self._rename(
            req.dbName, req.tableName, req.catName, req.partVals, req.newPart, req.validWriteIdList
        )
        return hms.RenamePartitionResponse()

    def _rename(
        self,
        db_name: str,
        tbl_name: str,
        cat_name: str | None,
        part_vals: list[str],
        new_part: hms.Partition,
        valid_write_id_list: str | None,
    ) -> None:
        """HiveAlterHandler.alterPartition with old values (Hive 4.0): a partition of a table
        that is not EXTERNAL_TABLE moves to ``<table location>/<new name>`` (directory moved
        before the metadata commits, moved back if it fails); an external one keeps its
        location."""
        if not part_vals:
            self._alter(cat_name, db_name, tbl_name, [new_part], None, single=True)
            return
        cat, db, tbl = self._names(db_name, tbl_name, cat_name)
        if new_part is None or new_part.values is None:
            raise hms.InvalidOperationException(message="The new partition must be set")
        self._whitelist(new_part.values)
        new = lowered(copy_partition(new_part))
        params = dict(new.parameters or {})
        ddl = params.get(DDL_TIME)
        if ddl is None or _int_or_none(ddl) == 0:
            params[DDL_TIME] = str(int(time.time()))
        new.parameters = params
        moved: list[tuple[str, str]] = []

        def prepare(table: hms.Table, before: hms.Partition, after: hms.Partition) -> None:
            self._prepare_renamed(moved, table, before, after)

        try:
            self.store.rename_partition(
                cat,
                db,
                tbl,
                part_vals,
                new,
                prepare=prepare,
                valid_write_id_list=valid_write_id_list,
            )
        except Exception as exc:
            self.move_back(moved)
            if isinstance(exc, hms.NoSuchObjectException):
                raise hms.InvalidOperationException(
                    message="Unable to alter partition because table or database does not exist."
                ) from None
            if isinstance(exc, hms.AlreadyExistsException):
                raise hms.InvalidOperationException(
                    message=f"Partition already exists:{db_name}.{tbl_name}."
                    f"{java_list(new_part.values)}"
                ) from None
            if isinstance(exc, hms.InvalidObjectException):
                raise hms.InvalidOperationException(message=exc.message) from None
            raise

    def _prepare_renamed(
        self,
        moved: list[tuple[str, str]],
        table: hms.Table,
        before: hms.Partition,
        after: hms.Partition,
    ) -> None:
        """In the store's transaction: a managed partition's directory moves to
        ``<table location>/<new name>`` (recorded in ``moved`` for the caller to undo); an
        external one, or one outside its table's directory or the roots, keeps its location;
        quick statistics are recomputed when requireCalStats says so."""
        keys = [k.name for k in table.partitionKeys or []]
        if table.tableType != "EXTERNAL_TABLE":
            base = table.sd.location if table.sd is not None else None
            old_loc = before.sd.location if before.sd is not None else None
            movable = bool(
                old_loc
                and base
                and self.files.inside(old_loc)
                and self.below_table_dir(base, old_loc)
            )
            if old_loc and after.sd is not None and not movable:
                # Another filesystem, or outside its table's directory or the roots: the
                # data is never moved from there, the partition keeps its location.
                after.sd.location = old_loc
            elif base and old_loc and after.sd is not None:
                dest = warehouse.join(base, part_name(keys, after.values))
                dest = warehouse.with_filesystem_of(dest, after.sd.location or old_loc)
                if not moved and self.files.exists(old_loc):
                    if dest != old_loc and self.files.exists(dest):
                        raise hms.InvalidOperationException(
                            message=f"New location for this table {table.dbName}."
                            f"{table.tableName} already exists : {dest}"
                        )
                    try:
                        if self.files.rename(old_loc, dest):
                            moved.append((old_loc, dest))
                    except OSError:
                        raise hms.InvalidOperationException(
                            message="Unable to access src or dest location for partition "
                            f"{table.dbName}.{table.tableName} {java_list(after.values)}"
                        ) from None
                after.sd.location = dest
        elif after.sd is not None and before.sd is not None:
            after.sd.location = before.sd.location
        if basic_stats.require_cal_stats(
            before.parameters, after.parameters, is_view=is_view(table), env=None
        ):
            after.parameters = dict(after.parameters or {})
            basic_stats.update_partition_stats(
                after.parameters,
                after.sd.location if after.sd is not None else None,
                None,
                self.list_location,
                made_dir=False,
                force=True,
                is_create=False,
                transactional=basic_stats.is_transactional(table.parameters),
            )
