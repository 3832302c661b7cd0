"""Message bodies of the column-statistics events (UPDATE/DELETE_TBL_COL_STAT_EVENT,
UPDATE/DELETE_PART_COL_STAT_EVENT).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hms_cache_proxy.store.events import tjson
from hms_cache_proxy.store.events.message_base import PARTITION_OBJ_JSON, MessageBuilderBase


class StatsMessages(MessageBuilderBase):
    """The bodies of the four column-statistics events."""

    # -- column statistics: JSONUpdateTableColumnStatMessage, JSONDeleteTableColumnStatMessage,
    #    JSONUpdatePartitionColumnStatMessage, JSONDeletePartitionColumnStatMessage

    def update_table_column_stats(
        self,
        stats: Any,
        table: Any,
        parameters: Mapping[str, str] | None,
        write_id: int = -1,
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "writeId": write_id,
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": stats.statsDesc.dbName,
            "colStatsJson": tjson.dumps(stats),
            "parameters": None if parameters is None else dict(parameters),
            "tableObjJson": self.table_json(table),
        }
        return self._extra(body, valid_write_ids)

    def delete_table_column_stats(
        self, db_name: str, col_name: str | None, valid_write_ids: str | None = None
    ) -> dict[str, Any]:
        """Hive's message names only the database and column (None: all of them were deleted);
        the table is the row's TBL_NAME."""
        body = {
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": db_name,
            "colName": col_name,
        }
        return self._extra(body, valid_write_ids)

    def update_partition_column_stats(
        self,
        stats: Any,
        part_vals: Sequence[str],
        parameters: Mapping[str, str] | None,
        table: Any,
        write_id: int = -1,
        valid_write_ids: str | None = None,
        partition: Any | None = None,
    ) -> dict[str, Any]:
        """``partition``: the partition after the change (our ``partitionObjJson``)."""
        body = {
            "writeId": write_id,
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": stats.statsDesc.dbName,
            "colStatsJson": tjson.dumps(stats),
            "parameters": None if parameters is None else dict(parameters),
            "partVals": list(part_vals),
            "tableObjJson": self.table_json(table),
        }
        partition_json = None if partition is None else self.partition_json(partition)
        return self._extra(body, valid_write_ids, **{PARTITION_OBJ_JSON: partition_json})

    def delete_partition_column_stats(
        self,
        db_name: str,
        col_name: str | None,
        part_name: str,
        part_values: Sequence[str],
        valid_write_ids: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "timestamp": self.now(),
            "server": self.server,
            "servicePrincipal": self.service_principal,
            "database": db_name,
            "colName": col_name,
            "partName": part_name,
            "partValues": list(part_values),
        }
        return self._extra(body, valid_write_ids)
