"""Partition exchange: exchange_partition(s), HMSHandler.exchange_partitions (Hive 4.0), with the
data moved inside the store's transaction and moved back when it fails.
"""

from __future__ import annotations

import logging
from typing import Any

from hms_cache_proxy.confined_fs import is_within, local_path
from hms_cache_proxy.handler.confinement import DatabaseKey
from hms_cache_proxy.handler.java_text import java_list
from hms_cache_proxy.handler.partition_drops import PartitionDropHandlers
from hms_cache_proxy.handler.table_rules import data_deletable
from hms_cache_proxy.idl import hms

log = logging.getLogger(__name__)


EXCHANGE_NULLS = (  # HMSHandler.exchange_partitions
    "The DB and table name for the source and destination tables, and the partition specs "
    "must not be null."
)


class PartitionExchangeHandlers(PartitionDropHandlers):
    """Moving partitions between tables (the empty parents left behind go as after a drop)."""

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

        def prepare(
            src: hms.Table, dst: hms.Table, pairs: list[tuple[hms.Partition, hms.Partition]]
        ) -> None:
            self._move_exchanged(moved, where, dirs, src, dst, pairs)

        try:
            added = self.store.exchange_partitions(
                s_cat, s_db, s_tbl, d_db, d_tbl, dict(spec), prepare=prepare
            )
        except BaseException:
            self._move_back(moved, where)
            raise
        for old, _ in moved:  # Hive's rename of the prefix directory leaves nothing behind
            self._remove_empty_parents(old, where["source"], where["depth"])
        return added

    def _move_back(self, moved: list[tuple[str, str]], where: dict[str, Any]) -> None:
        """Move back what was moved (a failure, or a retried transaction starting over)."""
        while moved:
            old, new = moved.pop()
            try:
                self.files.rename(new, old)
            except OSError as exc:
                log.error("could not move %s back to %s: %s", new, old, exc)
                continue
            self._remove_empty_parents(new, where["dest"], where["depth"])

    def _move_exchanged(
        self,
        moved: list[tuple[str, str]],
        where: dict[str, Any],
        dirs: list[tuple[DatabaseKey, str]],
        src: hms.Table,
        dst: hms.Table,
        pairs: list[tuple[hms.Partition, hms.Partition]],
    ) -> None:
        """In the store's transaction, after its checks: each partition below the source
        table's directory is renamed to its new location (recorded in ``moved``; ``where``
        keeps the tables' directories for the clean-up) once every partition has passed the
        checks; a retried transaction first moves back what the last attempt moved."""
        self._move_back(moved, where)
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
                new and new != old and self.files.inside(old) and self.below_table_dir(src_dir, old)
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
