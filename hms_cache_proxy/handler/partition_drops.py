"""Partition drops: drop_partition*, drop_partitions_req (HMSHandler.drop_partition_common and
deleteParentRecursive, confined to the roots).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler.java_text import java_list
from hms_cache_proxy.handler.partition_add import PartitionAddHandlers, part_name
from hms_cache_proxy.handler.partition_reads import unknown_method
from hms_cache_proxy.handler.table_rules import data_deletable
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.rules import MISSING_PARTITIONS


class PartitionDropHandlers(PartitionAddHandlers):
    """Dropping partitions, and their directories with ``deleteData``."""

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
            raise unknown_method("drop_partitions_req")
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
