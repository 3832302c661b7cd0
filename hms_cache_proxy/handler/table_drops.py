"""Table drops: drop_table*, with the table's data when Hive would delete it and the
confinement rules allow (handler/confinement.py).
"""

from __future__ import annotations

from typing import Any

from hms_cache_proxy.handler.confinement import FileRules
from hms_cache_proxy.handler.table_rules import data_deletable
from hms_cache_proxy.idl import hms


class TableDropHandlers(FileRules):
    """Dropping tables (a database drop with cascade uses ``_drop_table`` too)."""

    # -- drop ------------------------------------------------------------------------------------

    def drop_table(self, dbname: str, name: str, deleteData: bool) -> None:
        cat, db = self.require_db(dbname)
        self._drop_table(cat, db, self.require_name(name), delete_data=deleteData, env=None)

    def drop_table_with_environment_context(
        self,
        dbname: str,
        name: str,
        deleteData: bool,
        environment_context: hms.EnvironmentContext | None,
    ) -> None:
        cat, db = self.require_db(dbname)
        self._drop_table(
            cat, db, self.require_name(name), delete_data=deleteData, env=environment_context
        )

    def _drop_table(
        self,
        cat: str,
        db: str,
        name: str,
        *,
        delete_data: bool,
        env: Any,
    ) -> None:
        """Drop the table (one DROP_TABLE event); with ``deleteData``, the data of a managed
        table (or an external one with external.table.purge=true) goes too: its directory,
        partitions below it included, when the confinement rules allow (handler/confinement.py).
        Partition directories outside the table's directory are kept (Hive deletes them too)."""
        table, _part_locations = self.store.drop_table(cat, db, name)
        if not delete_data or not data_deletable(table):
            return
        location = table.sd.location if table.sd is not None else None
        target = self.table_dir_to_delete(cat, db, name, location)
        self.delete_quietly(target)
