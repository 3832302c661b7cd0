"""Table truncation: truncate_table*, HMSHandler.truncateTableInternal (directories emptied
within the confinement rules, basic statistics reset).
"""

from __future__ import annotations

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.confinement import FileRules
from hms_cache_proxy.idl import hms


class TableTruncateHandlers(FileRules):
    """Truncating tables and partitions."""

    # -- truncate --------------------------------------------------------------------------------

    def truncate_table(self, dbName: str, tableName: str, partNames: list[str] | None) -> None:
        self._truncate(dbName, tableName, partNames, None, None)

    def truncate_table_req(self, req: hms.TruncateTableRequest) -> hms.TruncateTableResponse:
        self._truncate(req.dbName, req.tableName, req.partNames, req.writeId, req.validWriteIdList)
        return hms.TruncateTableResponse()

    def _truncate(
        self,
        db_name: str,
        table_name: str,
        part_names: list[str] | None,
        write_id: int | None,
        valid_write_id_list: str | None,
    ) -> None:
        """HMSHandler.truncateTableInternal: empty the table's (or the named partitions')
        directories, then reset their basic statistics: ALTER_TABLE or one ALTER_PARTITION per
        partition, with isTruncateOp. The store reads what it rewrites inside its own write
        transaction, under the table's row lock (never from the cache: a lagging copy would
        overwrite writes made elsewhere). truncate_table declares only MetaException."""
        cat, db = self.require_db(db_name)
        name = self.require_name(table_name)

        def empty(table_location: str | None, partition_locations: list[str | None] | None) -> None:
            self._empty_truncated(cat, db, name, table_location, partition_locations)

        try:
            self.store.truncate_table(
                cat,
                db,
                name,
                part_names,
                empty=empty,
                reset=basic_stats.reset_for_truncate,
                write_id=write_id,
                valid_write_id_list=valid_write_id_list,
            )
        except (hms.NoSuchObjectException, hms.InvalidOperationException) as exc:
            raise hms.MetaException(message=exc.message) from None

    def _empty_truncated(
        self,
        cat: str,
        db: str,
        name: str,
        table_location: str | None,
        partition_locations: list[str | None] | None,
    ) -> None:
        """In the store's transaction: empty the table's directory (``partition_locations``
        None) or the partitions' directories."""
        # Every target is checked (_truncate_target refuses) before any is emptied.
        table_ok = (
            self.table_dir_to_delete(cat, db, name, table_location)
            if warehouse.is_local(table_location)
            else None
        )
        if partition_locations is None:
            targets = [self._truncate_target(db, name, table_location, table_ok)]
        else:
            targets = [
                self._truncate_target(db, name, loc, table_ok, partition=True)
                for loc in partition_locations
            ]
        for target in targets:
            self._empty_directory(target)

    def _truncate_target(
        self,
        db: str,
        name: str,
        location: str | None,
        table_ok: str | None,
        *,
        partition: bool = False,
    ) -> str | None:
        """The directory truncate may empty: the table's own (``table_ok``: its directory when
        a drop could delete it, else None), or a partition's strictly below that. Anything else
        is refused (MetaException) before any directory is emptied; other filesystems are left
        alone (None)."""
        if not warehouse.is_local(location):
            return None
        if table_ok is None:
            target = None
        elif not partition:
            target = table_ok
        else:
            target = self.partition_dir_to_delete(table_ok, location)
        if target is None:
            raise hms.MetaException(
                message=f"Cannot truncate {db}.{name}: {location} may not be emptied by this "
                "metastore (it must lie below the table's database directory, inside "
                f"{self.files.roots.describe()}, with no other table's data there; the log "
                "says which rule failed; docs/security.md)"
            )
        return target

    def _empty_directory(self, uri: str | None) -> None:
        """Delete what a truncated table or partition holds, keeping the directory itself.
        A missing directory has nothing to delete; a file or symlink in its place is refused."""
        if uri is None or not self.files.exists(uri):
            return
        if not self.files.is_dir(uri):
            raise hms.MetaException(message=f"Cannot truncate {uri}: it is not a directory")
        try:
            self.files.empty(uri)
        except OSError as exc:
            raise hms.MetaException(message=f"Cannot truncate {uri}: {exc}") from None
