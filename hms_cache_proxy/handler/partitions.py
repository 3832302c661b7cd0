"""Partition calls: what Hive 4.0's HMSHandler and HiveAlterHandler do around the store.

Hive's rules, in Hive's order, with Hive's messages; deliberate deviations are listed in
docs/compatibility.md. Directories are made, moved and deleted for local ``file:`` locations
inside the roots only, as handler/confinement.py allows, and quick statistics are listed there
only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from thriftpy2.thrift import TApplicationException

from hms_cache_proxy import warehouse
from hms_cache_proxy.confined_fs import is_within, local_path
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.base import env_props
from hms_cache_proxy.handler.encoded import wrap
from hms_cache_proxy.handler.java_text import java_list
from hms_cache_proxy.handler.partition_add import (
    PartitionAddHandlers,
    copy_partition,
    lowered,
    part_name,
)
from hms_cache_proxy.handler.privileges import partition_level, with_partition_privileges
from hms_cache_proxy.handler.tables import DDL_TIME, data_deletable, is_view
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.partition_filter.binder import compile_filter
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.syntax_tree import FilterError, Node
from hms_cache_proxy.store.rules import MISSING_PARTITIONS

log = logging.getLogger(__name__)

EXCHANGE_NULLS = (  # HMSHandler.exchange_partitions
    "The DB and table name for the source and destination tables, and the partition specs "
    "must not be null."
)


def _max(n: int | None) -> int:
    return -1 if n is None else int(n)


def _unknown_method(name: str) -> TApplicationException:
    """Answer as a server without the method: Hive's clients then prune partitions on the
    client side (HiveMetaStoreClient turns this into IncompatibleMetastoreException)."""
    return TApplicationException(
        TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{name}'"
    )


def _int_or_none(text: str) -> int | None:
    try:
        return int(text.strip())
    except (TypeError, ValueError):
        return None


class PartitionHandlers(PartitionAddHandlers):
    """Reading, altering, renaming and dropping partitions (adding: PartitionAddHandlers)."""

    # -- get -------------------------------------------------------------------------------------

    def get_partition(self, db_name: str, tbl_name: str, part_vals: list[str]) -> hms.Partition:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self._get_partition(cat, db, tbl, part_vals)

    def _get_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_vals: Sequence[str] | None,
        snapshot: str | None = None,
    ) -> hms.Partition:
        part = self.store.get_partition(
            cat, db, tbl, list(part_vals or []), valid_write_id_list=snapshot
        )
        part.values = list(part_vals or [])  # Hive answers with the values as asked
        return part

    def get_partition_req(self, req: hms.GetPartitionRequest) -> hms.GetPartitionResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        return hms.GetPartitionResponse(
            partition=self._get_partition(cat, db, tbl, req.partVals, req.validWriteIdList)
        )

    def get_partition_with_auth(
        self, db_name: str, tbl_name: str, part_vals: list[str], user_name: str, group_names: Any
    ) -> hms.Partition:
        part = self.get_partition(db_name, tbl_name, part_vals)
        return self._with_auth(db_name, tbl_name, [part], user_name, group_names)[0]

    def _partition_level(self, cat: str, db: str, tbl: str) -> bool:
        """Whether the table keeps partition-level privileges; False for a missing table, whose
        error the partition read itself reports as before."""
        try:
            return partition_level(self.store.get_table(cat, db, tbl))
        except hms.NoSuchObjectException:
            return False

    def _with_auth(
        self,
        db_name: str,
        tbl_name: str,
        parts: list[hms.Partition],
        user_name: str | None,
        group_names: Any,
        cat_name: str | None = None,
    ) -> list[hms.Partition]:
        """The partitions with their privilege sets when the table keeps partition-level
        privileges (PARTITION_LEVEL_PRIVILEGE=TRUE), as Hive's ``*_with_auth`` calls fill them."""
        if not parts:
            return parts
        cat, db, tbl = self._names(db_name, tbl_name, cat_name)
        if not self._partition_level(cat, db, tbl):
            return parts
        table = self.store.get_table(cat, db, tbl)
        return with_partition_privileges(self.store, table, parts, user_name, group_names)

    def get_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> hms.Partition:
        """The name is parsed into the table's key values (Warehouse.makeSpecFromName), so
        component order and extra components do not matter, key case does."""
        cat, db, tbl = self._names(db_name, tbl_name)
        table = self.store.get_table(cat, db, tbl)
        values = self._values_from_name(table, part_name, hms.NoSuchObjectException)
        return self._get_partition(cat, db, tbl, values)

    def get_partitions(self, db_name: str, tbl_name: str, max_parts: int) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self.store.get_partitions(cat, db, tbl, _max(max_parts), encoded=True)

    def get_partitions_req(self, req: hms.PartitionsRequest) -> hms.PartitionsResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        parts = self.store.get_partitions(
            cat,
            db,
            tbl,
            _max(req.maxParts),
            valid_write_id_list=req.validWriteIdList,
            encoded=True,
        )
        return wrap(hms.PartitionsResponse, "partitions", parts)

    def get_partitions_with_auth(
        self, db_name: str, tbl_name: str, max_parts: int, user_name: str, group_names: Any
    ) -> list[hms.Partition]:
        """Hive answers this one through JDO, where ``max_parts`` 0 means all."""
        cat, db, tbl = self._names(db_name, tbl_name)
        n = _max(max_parts)
        if not self._partition_level(cat, db, tbl):
            return self.store.get_partitions(cat, db, tbl, -1 if n == 0 else n, encoded=True)
        parts = self.store.get_partitions(cat, db, tbl, -1 if n == 0 else n)
        return self._with_auth(db_name, tbl_name, parts, user_name, group_names)

    def get_partitions_ps(
        self, db_name: str, tbl_name: str, part_vals: list[str], max_parts: int
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self._ps(cat, db, tbl, part_vals, max_parts)

    def _ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_vals: Sequence[str] | None,
        max_parts: int | None,
        snapshot: str | None = None,
        *,
        encoded: bool = True,
    ) -> list[hms.Partition]:
        """Partial specification: leading values, "" for any value of a key; an empty list is
        Warehouse.makePartName's error, as in Hive."""
        if not part_vals:
            self.store.partition_count(cat, db, tbl)  # a missing table is reported first
            raise hms.MetaException(message="Invalid partition key & values; keys [], values []")
        return self.store.get_partitions_ps(
            cat, db, tbl, part_vals, _max(max_parts), valid_write_id_list=snapshot, encoded=encoded
        )

    def get_partitions_ps_with_auth(
        self,
        db_name: str,
        tbl_name: str,
        part_vals: list[str],
        max_parts: int,
        user_name: str,
        group_names: Any,
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        if not self._partition_level(cat, db, tbl):
            return self.get_partitions_ps(db_name, tbl_name, part_vals, max_parts)
        parts = self._ps(cat, db, tbl, part_vals, max_parts, encoded=False)
        return self._with_auth(db_name, tbl_name, parts, user_name, group_names)

    def get_partitions_ps_with_auth_req(
        self, req: hms.GetPartitionsPsWithAuthRequest
    ) -> hms.GetPartitionsPsWithAuthResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        if not self._partition_level(cat, db, tbl):
            parts = self._ps(cat, db, tbl, req.partVals, req.maxParts, req.validWriteIdList)
            return wrap(hms.GetPartitionsPsWithAuthResponse, "partitions", parts)
        parts = self._ps(
            cat, db, tbl, req.partVals, req.maxParts, req.validWriteIdList, encoded=False
        )
        parts = self._with_auth(
            req.dbName, req.tblName, parts, req.userName, req.groupNames, req.catName
        )
        return hms.GetPartitionsPsWithAuthResponse(partitions=parts)

    def get_partition_names(self, db_name: str, tbl_name: str, max_parts: int) -> list[str]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self.store.get_partition_names(cat, db, tbl, _max(max_parts))

    def get_partition_names_ps(
        self, db_name: str, tbl_name: str, part_vals: list[str], max_parts: int
    ) -> list[str]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self._names_ps(cat, db, tbl, part_vals, max_parts)

    def _names_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_vals: Sequence[str] | None,
        max_parts: int | None,
        snapshot: str | None = None,
    ) -> list[str]:
        if not part_vals:
            self.store.partition_count(cat, db, tbl)
            raise hms.MetaException(message="Invalid partition key & values; keys [], values []")
        return self.store.get_partition_names_ps(
            cat, db, tbl, part_vals, _max(max_parts), valid_write_id_list=snapshot
        )

    def get_partition_names_ps_req(
        self, req: hms.GetPartitionNamesPsRequest
    ) -> hms.GetPartitionNamesPsResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        return hms.GetPartitionNamesPsResponse(
            names=self._names_ps(cat, db, tbl, req.partValues, req.maxParts, req.validWriteIdList)
        )

    def get_partitions_by_filter(
        self, db_name: str, tbl_name: str, filter: str, max_parts: int
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        try:
            self._check_filter(filter)
            return self.store.get_partitions_by_filter(
                cat, db, tbl, filter, _max(max_parts), encoded=True
            )
        except FilterError as exc:
            raise hms.MetaException(message=str(exc)) from None

    def get_num_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str) -> int:
        cat, db, tbl = self._names(db_name, tbl_name)
        try:
            self._check_filter(filter)
            return self.store.count_partitions_by_filter(cat, db, tbl, filter)
        except FilterError as exc:
            raise hms.MetaException(message=str(exc)) from None

    def _check_filter(self, text: str | None) -> Node:
        """Parses the filter within the size limits before the store sees it (FilterError)."""
        return parse(
            text,
            max_length=self.settings.partition_filter_max_length,
            max_terms=self.settings.partition_filter_max_terms,
        )

    def get_partitions_by_names(
        self, db_name: str, tbl_name: str, names: list[str]
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self.store.get_partitions_by_names(cat, db, tbl, names or [], encoded=True)

    def get_partitions_by_names_req(
        self, req: hms.GetPartitionsByNamesRequest
    ) -> hms.GetPartitionsByNamesResult:
        cat, db = self.require_db(req.db_name)
        if getattr(req, "catName", None):
            cat = self.catalog(req.catName)
        tbl = self.require_name(req.tbl_name)
        parts = self.store.get_partitions_by_names(
            cat,
            db,
            tbl,
            req.names or [],
            valid_write_id_list=req.validWriteIdList,
            encoded=True,
        )
        return wrap(hms.GetPartitionsByNamesResult, "partitions", parts)

    def get_partition_values(
        self, request: hms.PartitionValuesRequest
    ) -> hms.PartitionValuesResponse:
        r = request
        cat, db, tbl = self._names(r.dbName, r.tblName, r.catName)
        keys, parts = self.store.partition_values(
            cat, db, tbl, valid_write_id_list=r.validWriteIdList
        )
        key_index = {k.name.lower(): i for i, k in enumerate(keys)}
        wanted = [key_index.get((k.name or "").lower()) for k in r.partitionKeys or []]
        if any(i is None for i in wanted) or not wanted:
            raise hms.MetaException(
                message="get_partition_values needs partition keys of the table "
                f"({', '.join(k.name for k in keys)})"
            )
        if r.filter:
            try:
                accept = compile_filter(
                    self._check_filter(r.filter), [k.name for k in keys], [k.type for k in keys]
                )
            except FilterError as exc:
                raise hms.MetaException(message=str(exc)) from None
            parts = [p for p in parts if accept(p[1])]
        rows = [[values[i] for i in wanted] for _, values in parts]  # type: ignore[index]
        if r.applyDistinct is None or r.applyDistinct:
            rows = [list(t) for t in dict.fromkeys(tuple(x) for x in rows)]
        if r.partitionOrder:
            order = [key_index.get((k.name or "").lower()) for k in r.partitionOrder]
            picks = [wanted.index(i) for i in order if i in wanted]
            rows.sort(key=lambda x: [x[j] for j in picks], reverse=r.ascending is False)
        if r.maxParts is not None and r.maxParts >= 0:
            rows = rows[: r.maxParts]
        return hms.PartitionValuesResponse(
            partitionValues=[hms.PartitionValuesRow(row=x) for x in rows]
        )

    # Serialized (Kryo) Hive expressions cannot be evaluated here: answer as a server without
    # these methods, so Hive's clients fall back to listing names and pruning themselves.

    def get_partitions_by_expr(self, req: Any) -> Any:
        raise _unknown_method("get_partitions_by_expr")

    def get_partitions_spec_by_expr(self, req: Any) -> Any:
        raise _unknown_method("get_partitions_spec_by_expr")

    def get_partition_names_req(self, req: Any) -> Any:
        raise _unknown_method("get_partition_names_req")

    def get_num_partitions_by_expr(self, req: Any) -> Any:
        raise _unknown_method("get_num_partitions_by_expr")

    # -- alter -----------------------------------------------------------------------------------

    def alter_partition(self, db_name: str, tbl_name: str, new_part: hms.Partition) -> None:
        self._alter(db_name, tbl_name, None, [new_part], None, single=True)

    def alter_partition_with_environment_context(
        self, db_name: str, tbl_name: str, new_part: hms.Partition, environment_context: Any
    ) -> None:
        self._alter(db_name, tbl_name, None, [new_part], environment_context, single=True)

    def alter_partitions(self, db_name: str, tbl_name: str, new_parts: list[hms.Partition]) -> None:
        self._alter(db_name, tbl_name, None, new_parts, None)

    def alter_partitions_with_environment_context(
        self, db_name: str, tbl_name: str, new_parts: list[hms.Partition], environment_context: Any
    ) -> None:
        self._alter(db_name, tbl_name, None, new_parts, environment_context)

    def alter_partitions_req(self, req: hms.AlterPartitionsRequest) -> hms.AlterPartitionsResponse:
        self._alter(
            req.dbName,
            req.tableName,
            req.catName,
            req.partitions,
            req.environmentContext,
            write_id=req.writeId,
            valid_write_id_list=req.validWriteIdList,
        )
        return hms.AlterPartitionsResponse()

    def _alter(
        self,
        db_name: str,
        tbl_name: str,
        cat_name: str | None,
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
        try:
            table = self.store.get_table(cat, db, tbl)
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

        deletable = data_deletable(table)
        table_dir = table.sd.location if table.sd is not None else None
        # Database directories, read before the store's transaction, when a new location
        # could lie in another database's directory (one outside the table's directory).
        elsewhere = any(
            q.sd is not None
            and q.sd.location
            and not self.below_table_dir(table_dir, q.sd.location)
            for q in news
        )
        dirs = self.database_dirs() if elsewhere else []

        def prepare(before: hms.Partition, after: hms.Partition) -> None:
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
        except hms.NoSuchObjectException as exc:
            if single:
                raise hms.InvalidOperationException(
                    message=f"alter is not possible: {exc.message}"
                ) from None
            raise hms.InvalidOperationException(
                message="Alter partition operation failed: "
                f"NoSuchObjectException(message:{exc.message})"
            ) from None
        except (hms.InvalidObjectException, hms.AlreadyExistsException) as exc:
            raise hms.InvalidOperationException(message=exc.message) from None

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
            self._alter(db_name, tbl_name, cat_name, [new_part], None, single=True)
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
            for src, dst in reversed(moved):
                try:
                    self.files.rename(dst, src)
                except OSError as undo:
                    log.error("could not move %s back to %s: %s", dst, src, undo)
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

    # -- drop ------------------------------------------------------------------------------------

    def drop_partition(
        self, db_name: str, tbl_name: str, part_vals: list[str], deleteData: bool
    ) -> bool:
        return self._drop_by_values(db_name, tbl_name, part_vals, deleteData)

    def drop_partition_with_environment_context(
        self,
        db_name: str,
        tbl_name: str,
        part_vals: list[str],
        deleteData: bool,
        environment_context: Any,
    ) -> bool:
        return self._drop_by_values(db_name, tbl_name, part_vals, deleteData)

    def drop_partition_by_name(
        self, db_name: str, tbl_name: str, part_name: str, deleteData: bool
    ) -> bool:
        cat, db, tbl = self._names(db_name, tbl_name)
        table = self.store.get_table(cat, db, tbl)
        values = self._values_from_name(table, part_name, hms.NoSuchObjectException)
        return self._drop_by_values(db_name, tbl_name, values, deleteData)

    def drop_partition_by_name_with_environment_context(
        self,
        db_name: str,
        tbl_name: str,
        part_name: str,
        deleteData: bool,
        environment_context: Any,
    ) -> bool:
        return self.drop_partition_by_name(db_name, tbl_name, part_name, deleteData)

    def _drop_by_values(
        self, db_name: str, tbl_name: str, part_vals: list[str] | None, delete_data: bool
    ) -> bool:
        """HMSHandler.drop_partition_common: NoSuchObjectException ``partition values=[..]``
        for a missing partition; with ``deleteData`` (managed tables) the directory goes, and
        then parent directories left empty, up to the table's."""
        cat, db, tbl = self._names(db_name, tbl_name)
        keys = self._table_keys(cat, db, tbl)
        name = part_name(keys, list(part_vals or []))
        try:
            self._drop(
                cat, db, tbl, [name], delete_data=delete_data, if_exists=False, depth=len(keys)
            )
        except hms.NoSuchObjectException as exc:
            if exc.message == MISSING_PARTITIONS:
                raise hms.NoSuchObjectException(
                    message=f"partition values={java_list(part_vals)}"
                ) from None
            raise
        return True

    def _table_keys(self, cat: str, db: str, tbl: str) -> list[str]:
        return [k.name for k in self.store.get_table(cat, db, tbl).partitionKeys or []]

    def drop_partitions_req(self, req: hms.DropPartitionsRequest) -> hms.DropPartitionsResult:
        """By names only (missing ones skipped unless ifExists=false: "Some partitions to drop
        are missing"); expressions are Hive-serialized and answered as an unknown method.
        deleteData defaults to false, ifExists and needResult to true."""
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        spec = req.parts
        if spec is not None and spec.exprs is not None:
            raise _unknown_method("drop_partitions_req")
        table = self.store.get_table(cat, db, tbl)
        if spec is None or spec.names is None:
            raise hms.MetaException(message="Partition spec is not set")
        if_exists = req.ifExists if req.ifExists is not None else True
        depth = len(table.partitionKeys or [])
        dropped = self._drop(
            cat,
            db,
            tbl,
            spec.names,
            delete_data=bool(req.deleteData),
            if_exists=if_exists,
            depth=depth,
        )
        need = req.needResult if req.needResult is not None else True
        return hms.DropPartitionsResult(partitions=dropped if need else None)

    def _drop(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        delete_data: bool,
        if_exists: bool,
        depth: int,
    ) -> list[hms.Partition]:
        table, dropped = self.store.drop_partitions(cat, db, tbl, names, if_exists=if_exists)
        if delete_data and data_deletable(table):
            table_dir = self.table_dir_to_delete(
                cat, db, tbl, table.sd.location if table.sd is not None else None, others=False
            )
            for p in dropped:
                location = p.sd.location if p.sd is not None else None
                target = self.partition_dir_to_delete(table_dir, location) if table_dir else None
                if target:
                    self.delete_quietly(target)
                    self._remove_empty_parents(target, table_dir or "", depth - 1)
        return dropped

    def _remove_empty_parents(self, location: str, table_dir: str, depth: int) -> None:
        """HMSHandler.deleteParentRecursive, confined: up to ``depth`` parents of a dropped
        partition (``ds=x`` after its last ``hr=`` partition), strictly below the table's
        directory, each only when it holds nothing at all (rmdir: dot-files count)."""
        parent = warehouse.parent_of(location)
        while depth > 0 and parent and self.below_table_dir(table_dir, parent):
            if not self.files.remove_empty_dir(parent):
                return
            parent = warehouse.parent_of(parent)
            depth -= 1

    # -- exchange --------------------------------------------------------------------------------

    def exchange_partition(
        self,
        partitionSpecs: dict[str, str],
        source_db: str,
        source_table_name: str,
        dest_db: str,
        dest_table_name: str,
    ) -> hms.Partition:
        """Hive 4.0 answers an empty Partition, whatever was moved."""
        self._exchange(partitionSpecs, source_db, source_table_name, dest_db, dest_table_name)
        return hms.Partition()

    def exchange_partitions(
        self,
        partitionSpecs: dict[str, str],
        source_db: str,
        source_table_name: str,
        dest_db: str,
        dest_table_name: str,
    ) -> list[hms.Partition]:
        return self._exchange(
            partitionSpecs, source_db, source_table_name, dest_db, dest_table_name
        )

    def _exchange(
        self,
        spec: dict[str, str] | None,
        source_db: str | None,
        source_tbl: str | None,
        dest_db: str | None,
        dest_tbl: str | None,
    ) -> list[hms.Partition]:
        """HMSHandler.exchange_partitions (Hive 4.0): the source table's partitions that the
        spec names move to the destination table (``ALTER TABLE dest EXCHANGE PARTITION (..)
        WITH TABLE source``); the checks and the metadata are the store's, in one transaction.

        Data: each moved partition whose directory lies below the source table's directory
        (inside the roots) is renamed to ``<destination location>/<name>`` inside that same
        transaction, after the checks and before the rows change; if the rename or anything
        after it fails, the directories are moved back and nothing is committed. Hive renames
        the spec's prefix directory as a whole; one rename per partition moves the same files
        and also works when the destination already holds other partitions under that prefix.
        A partition stored elsewhere (its own location, another filesystem, outside the
        roots) keeps its location: its data is never touched, and stays where the metadata
        points. A destination outside the roots is refused (MetaException)."""
        if spec is None or source_db is None or dest_db is None:
            raise hms.MetaException(message=EXCHANGE_NULLS)
        s_cat, s_db = self.split_db(source_db)
        d_cat, d_db = self.split_db(dest_db)
        if not s_db or not d_db or not source_tbl or not dest_tbl:
            raise hms.MetaException(message=EXCHANGE_NULLS)
        if s_cat != d_cat:
            raise hms.MetaException(message="You cannot move a partition across catalogs")
        s_tbl, d_tbl = self.require_name(source_tbl), self.require_name(dest_tbl)
        dirs = self.database_dirs()
        moved: list[tuple[str, str]] = []
        where: dict[str, Any] = {}

        def undo() -> None:
            """Move back what was moved (a failure, or a retried transaction starting over)."""
            while moved:
                old, new = moved.pop()
                try:
                    self.files.rename(new, old)
                except OSError as exc:
                    log.error("could not move %s back to %s: %s", new, old, exc)
                    continue
                self._remove_empty_parents(new, where["dest"], where["depth"])

        def prepare(
            src: hms.Table, dst: hms.Table, pairs: list[tuple[hms.Partition, hms.Partition]]
        ) -> None:
            undo()
            src_dir = src.sd.location if src.sd is not None else None
            where.update(
                source=src_dir,
                dest=dst.sd.location if dst.sd is not None else None,
                depth=len(src.partitionKeys or []) - 1,
            )
            plan: list[tuple[str, str]] = []
            for before, after in pairs:
                old = before.sd.location if before.sd is not None else None
                if after.sd is None or not old:
                    continue
                new = after.sd.location
                if not (
                    new
                    and new != old
                    and self.files.inside(old)
                    and self.below_table_dir(src_dir, old)
                ):
                    after.sd.location = old  # never moved from there: the data stays put
                    continue
                what = f"partition {java_list(before.values)} of {src.dbName}.{src.tableName}"
                if not self.files.inside(new):
                    raise hms.MetaException(
                        message=f"Unable to move the data of {what} to {new}: it is outside "
                        f"the directories this metastore may change ({self.files.roots.describe()})"
                    )
                self.check_partition_location(
                    dst, new, deletable=data_deletable(dst), exc=hms.MetaException, dirs=dirs
                )
                if self.files.exists(new):
                    raise hms.MetaException(
                        message=f"Unable to move the data of {what}: {new} already exists"
                    )
                plan.append((old, new))
            olds = [local_path(old) or old for old, _ in plan]
            for i, a in enumerate(olds):
                if any(j != i and is_within(a, b) for j, b in enumerate(olds)):
                    raise hms.MetaException(
                        message=f"Unable to move {plan[i][0]}: it lies in the directory of "
                        "another partition being exchanged"
                    )
            for old, new in plan:
                try:
                    if self.files.rename(old, new):
                        moved.append((old, new))
                except OSError as exc:
                    raise hms.MetaException(
                        message=f"Unable to move partition data from {old} to {new}: {exc}"
                    ) from None

        try:
            added = self.store.exchange_partitions(
                s_cat, s_db, s_tbl, d_db, d_tbl, dict(spec), prepare=prepare
            )
        except BaseException:
            undo()
            raise
        for old, _ in moved:  # Hive's rename of the prefix directory leaves nothing behind
            self._remove_empty_parents(old, where["source"], where["depth"])
        return added
