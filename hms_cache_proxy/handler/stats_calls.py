"""Column-statistics calls: what HMSHandler does around the store.

Hive's normalizeColStatsInput runs before every write: catalog, database, table, column names
and column types are lower-cased, the partition name's keys are lower-cased (values keep their
case and escaping: lowerCaseConvertPartName) and lastAnalyzed becomes the current time. Reads
lower-case the names the same way; engine defaults to "hive" where an old client sends none.
Answers Hive gives as a Java null (no statistics for get_table_column_statistics and
get_partition_column_statistics) reach the client as Thrift's "unknown result", as from Hive.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Sequence
from typing import overload

from hms_cache_proxy.handler.base import HandlerBase, normalize
from hms_cache_proxy.idl import hms

DEFAULT_ENGINE = "hive"

# Warehouse.makeEscSpecFromName: each component must be key=value (greedy key), no '/'.
_COMPONENT = re.compile(r"([^/]+)=([^/]+)", re.DOTALL)


@overload
def lower_case_part_name(name: str) -> str: ...
@overload
def lower_case_part_name(name: None) -> None: ...
def lower_case_part_name(name: str | None) -> str | None:
    """HMSHandler.lowerCaseConvertPartName: keys lower-cased, values left as they are."""
    if name is None:
        return None
    if not name:
        raise hms.MetaException(message=f"Partition name is invalid. {name}")
    spec: dict[str, str] = {}
    for component in name.split("/"):
        match = _COMPONENT.fullmatch(component) if component else None
        if match is not None:
            spec[match.group(1)] = match.group(2)
    return "/".join(f"{k.lower()}={v}" for k, v in spec.items())


class StatsHandlers(HandlerBase):
    # -- names -----------------------------------------------------------------------------------

    def _stats_names(
        self, cat_name: str | None, db_name: str | None, tbl_name: str | None
    ) -> tuple[str, str, str]:
        cat, db = self.require_db(db_name)
        if cat_name:
            cat = self.catalog(cat_name)
        return cat, db, self.require_name(tbl_name)

    def _normalize_stats(self, stats: hms.ColumnStatistics | None) -> hms.ColumnStatistics:
        """A normalised copy of ``stats`` (normalizeColStatsInput); the caller's is untouched."""
        if stats is None or stats.statsDesc is None:
            raise hms.InvalidObjectException(message="Invalid column stats object")
        out = copy.deepcopy(stats)
        desc = out.statsDesc
        desc.catName, desc.dbName, desc.tableName = self._stats_names(
            desc.catName, desc.dbName, desc.tableName
        )
        desc.partName = lower_case_part_name(desc.partName)
        desc.lastAnalyzed = int(time.time())
        for obj in out.statsObj or []:
            if obj is None or not obj.colName or obj.statsData is None:
                raise hms.InvalidObjectException(message="Invalid column stats object")
            obj.colName = obj.colName.lower()
            obj.colType = (obj.colType or "").lower()
        return out

    @staticmethod
    def _single(req: hms.SetPartitionsStatsRequest | None) -> hms.ColumnStatistics:
        """The one ColumnStatistics of an update_*_column_statistics_req request."""
        if req is None or len(req.colStats or []) != 1:
            raise hms.InvalidInputException(message="Only one stats object expected")
        if req.needMerge:
            raise hms.InvalidInputException(
                message="Merge is not supported for non-aggregate stats"
            )
        stats = copy.copy(req.colStats[0])
        if stats is not None and req.engine:
            stats.engine = req.engine
        return stats

    @staticmethod
    def _write_id(write_id: int | None) -> int | None:
        return write_id if write_id is not None and write_id > 0 else None

    # -- writes ----------------------------------------------------------------------------------

    def update_table_column_statistics(self, stats_obj: hms.ColumnStatistics) -> bool:
        self._update_table(stats_obj, None, None)
        return True

    def update_table_column_statistics_req(
        self, req: hms.SetPartitionsStatsRequest
    ) -> hms.SetPartitionsStatsResponse:
        self._update_table(self._single(req), req.writeId, req.validWriteIdList)
        return hms.SetPartitionsStatsResponse(result=True)

    def update_partition_column_statistics(self, stats_obj: hms.ColumnStatistics) -> bool:
        self._update_partitions([stats_obj], None, None)
        return True

    def update_partition_column_statistics_req(
        self, req: hms.SetPartitionsStatsRequest
    ) -> hms.SetPartitionsStatsResponse:
        self._update_partitions([self._single(req)], req.writeId, req.validWriteIdList)
        return hms.SetPartitionsStatsResponse(result=True)

    def set_aggr_stats_for(self, request: hms.SetPartitionsStatsRequest) -> bool:
        """Table or partition statistics, replaced or (needMerge) merged into the stored ones."""
        if request is None or not request.colStats:
            return True
        stats = list(request.colStats)
        if request.engine:
            stats = [copy.copy(cs) for cs in stats]
            for cs in stats:
                if cs is not None and not cs.engine:
                    cs.engine = request.engine
        first = stats[0]
        if first is None or first.statsDesc is None:
            raise hms.InvalidObjectException(message="Invalid column stats object")
        merge = bool(request.needMerge)
        if first.statsDesc.isTblLevel:
            if len(stats) != 1:
                raise hms.MetaException(
                    message="Expecting only 1 ColumnStatistics for table's column stats, "
                    f"but find {len(stats)}"
                )
            self._update_table(first, request.writeId, request.validWriteIdList, merge=merge)
        else:
            self._update_partitions(stats, request.writeId, request.validWriteIdList, merge=merge)
        return True

    def _update_table(
        self,
        stats: hms.ColumnStatistics | None,
        write_id: int | None,
        valid_write_id_list: str | None,
        *,
        merge: bool = False,
    ) -> None:
        cs = self._normalize_stats(stats)
        desc = cs.statsDesc
        self.store.update_table_column_statistics(
            desc.catName,
            desc.dbName,
            desc.tableName,
            cs,
            write_id=self._write_id(write_id),
            valid_write_id_list=valid_write_id_list,
            merge=merge,
        )

    def _update_partitions(
        self,
        stats_list: Sequence[hms.ColumnStatistics | None],
        write_id: int | None,
        valid_write_id_list: str | None,
        *,
        merge: bool = False,
    ) -> None:
        normalized = [self._normalize_stats(cs) for cs in stats_list]
        first = normalized[0].statsDesc
        for cs in normalized:
            d = cs.statsDesc
            if d.partName is None:
                raise hms.MetaException(message="Partition name is invalid. null")
            if (d.catName, d.dbName, d.tableName) != (first.catName, first.dbName, first.tableName):
                raise hms.InvalidInputException(
                    message="All the column statistics must be of partitions of one table"
                )
        self.store.update_partition_column_statistics(
            first.catName,
            first.dbName,
            first.tableName,
            normalized,
            write_id=self._write_id(write_id),
            valid_write_id_list=valid_write_id_list,
            merge=merge,
        )

    # -- reads -----------------------------------------------------------------------------------

    def get_table_column_statistics(
        self, db_name: str, tbl_name: str, col_name: str
    ) -> hms.ColumnStatistics | None:
        cat, db, tbl = self._stats_names(None, db_name, tbl_name)
        col = self.require_name(col_name, "column")
        return self.store.get_table_column_statistics(cat, db, tbl, [col], DEFAULT_ENGINE)

    def get_partition_column_statistics(
        self, db_name: str, tbl_name: str, part_name: str, col_name: str
    ) -> hms.ColumnStatistics | None:
        cat, db, tbl = self._stats_names(None, db_name, tbl_name)
        col = self.require_name(col_name, "column")
        name = lower_case_part_name(part_name) or ""
        found = self.store.partition_column_statistics(cat, db, tbl, [name], [col], DEFAULT_ENGINE)
        if not found:
            return None
        if len(found) != 1:
            raise hms.MetaException(
                message=f"{len(found)} statistics for single column and partition"
            )
        return found[0]

    def get_table_statistics_req(self, request: hms.TableStatsRequest) -> hms.TableStatsResult:
        cat, db, tbl = self._stats_names(request.catName, request.dbName, request.tblName)
        cols = [c.lower() for c in request.colNames or [] if c is not None]
        cs = self.store.get_table_column_statistics(
            cat,
            db,
            tbl,
            cols,
            request.engine or DEFAULT_ENGINE,
            valid_write_id_list=request.validWriteIdList,
        )
        # Hive answers statistics not valid for the snapshot with nothing.
        if cs is None or cs.isStatsCompliant is False:
            return hms.TableStatsResult(tableStats=[])
        return hms.TableStatsResult(tableStats=list(cs.statsObj or []))

    def get_partitions_statistics_req(
        self, request: hms.PartitionsStatsRequest
    ) -> hms.PartitionsStatsResult:
        cat, db, tbl = self._stats_names(request.catName, request.dbName, request.tblName)
        cols = [c.lower() for c in request.colNames or [] if c is not None]
        parts = [lower_case_part_name(p) for p in request.partNames or [] if p]
        stats = self.store.get_partition_column_statistics(
            cat,
            db,
            tbl,
            parts,
            cols,
            request.engine or DEFAULT_ENGINE,
            valid_write_id_list=request.validWriteIdList,
        )
        return hms.PartitionsStatsResult(partStats=stats)

    def get_aggr_stats_for(self, request: hms.PartitionsStatsRequest) -> hms.AggrStats:
        cat, db, tbl = self._stats_names(request.catName, request.dbName, request.tblName)
        cols = [c.lower() for c in request.colNames or [] if c is not None]
        parts = [lower_case_part_name(p) for p in request.partNames or [] if p]
        return self.store.get_aggr_stats_for(
            cat,
            db,
            tbl,
            parts,
            cols,
            request.engine or DEFAULT_ENGINE,
            valid_write_id_list=request.validWriteIdList,
        )

    # -- deletes ---------------------------------------------------------------------------------

    def delete_table_column_statistics(
        self, db_name: str, tbl_name: str, col_name: str | None, engine: str | None = None
    ) -> bool:
        cat, db, tbl = self._stats_names(None, db_name, tbl_name)
        self.store.delete_table_column_statistics(cat, db, tbl, normalize(col_name), engine)
        return True

    def delete_partition_column_statistics(
        self,
        db_name: str,
        tbl_name: str,
        part_name: str,
        col_name: str | None,
        engine: str | None = None,
    ) -> bool:
        cat, db, tbl = self._stats_names(None, db_name, tbl_name)
        name = lower_case_part_name(part_name)
        if name is None:
            raise hms.MetaException(message="Partition name is invalid. null")
        self.store.delete_partition_column_statistics(
            cat, db, tbl, name, normalize(col_name), engine
        )
        return True
