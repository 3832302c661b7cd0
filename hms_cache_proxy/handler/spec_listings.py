"""Hive 4's spec-style listings: get_partitions_pspec, get_part_specs_by_filter,
get_partitions_with_specs (partition specs with projections) and get_tables_ext.

They read through the same store calls as get_partitions* and get_tables (so the cache answers
where it may) and reshape the answer as Hive's HMSHandler does (handler/partition_specs.py).
"""

from __future__ import annotations

from hms_cache_proxy.handler.names import filter_names
from hms_cache_proxy.handler.partition_add import PartitionAddHandlers
from hms_cache_proxy.handler.partition_specs import (
    check_projection,
    composing_spec,
    grouped_specs,
    grouping_enabled,
    project,
)
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.syntax_tree import FilterError

ACCESS_TYPE = 1
PROCESSOR_CAPABILITIES = 2
RAW_METADATA = "MANAGERAWMETADATA"


def _max(n: int | None) -> int:
    return -1 if n is None else int(n)


class SpecListingHandlers(PartitionAddHandlers):
    def get_partitions_pspec(
        self, db_name: str, tbl_name: str, max_parts: int | None
    ) -> list[hms.PartitionSpec]:
        cat, db, tbl = self._names(db_name, tbl_name)
        table = self.store.get_table(cat, db, tbl)
        parts = self.store.get_partitions(cat, db, tbl, _max(max_parts))
        return self._old_style_specs(table, parts)

    def get_part_specs_by_filter(
        self, db_name: str, tbl_name: str, filter: str | None, max_parts: int | None
    ) -> list[hms.PartitionSpec]:
        cat, db, tbl = self._names(db_name, tbl_name)
        table = self.store.get_table(cat, db, tbl)
        try:
            self._parse_filter(filter)
            parts = self.store.get_partitions_by_filter(cat, db, tbl, filter or "", _max(max_parts))
        except FilterError as exc:
            raise hms.MetaException(message=str(exc)) from None
        return self._old_style_specs(table, parts)

    @staticmethod
    def _old_style_specs(table: hms.Table, parts: list[hms.Partition]) -> list[hms.PartitionSpec]:
        """Grouped only when the table's parameters turn grouping on; else one list spec."""
        if grouping_enabled(table):
            return grouped_specs(table, parts)
        return [composing_spec(table, parts)]

    def get_partitions_with_specs(
        self, request: hms.GetPartitionsRequest
    ) -> hms.GetPartitionsResponse:
        r = request
        cat, db, tbl = self._names(r.dbName, r.tblName, r.catName)
        check_projection(r.projectionSpec)
        try:
            table = self.store.get_table(cat, db, tbl)
            parts = self._filtered_parts(cat, db, tbl, r.filterSpec, r.validWriteIdList)
        except hms.NoSuchObjectException as exc:  # the call declares MetaException only
            raise hms.MetaException(message=exc.message) from None
        specs = grouped_specs(table, project(parts, r.projectionSpec))
        return hms.GetPartitionsResponse(partitionSpec=specs)

    def _filtered_parts(
        self,
        cat: str,
        db: str,
        tbl: str,
        spec: hms.GetPartitionsFilterSpec | None,
        snapshot: str | None,
    ) -> list[hms.Partition]:
        """ObjectStore.getPartitionSpecsByFilterAndProjection's filter modes: partition names,
        a (partial) value list, or filter expressions that must all hold."""
        if spec is None or spec.filterMode is None:
            return self.store.get_partitions(cat, db, tbl, -1, valid_write_id_list=snapshot)
        mode = spec.filterMode
        filters = list(spec.filters or [])
        if not filters:
            raise hms.MetaException(message="Invalid filter expressions in the filter spec")
        if mode == hms.PartitionFilterMode.BY_NAMES:
            return self.store.get_partitions_by_names(
                cat, db, tbl, filters, valid_write_id_list=snapshot
            )
        if mode == hms.PartitionFilterMode.BY_VALUES:
            return self.store.get_partitions_ps(
                cat, db, tbl, filters, -1, valid_write_id_list=snapshot
            )
        if mode == hms.PartitionFilterMode.BY_EXPR:
            text = " and ".join(f"({f})" for f in filters)
            try:
                self._parse_filter(text)
                return self.store.get_partitions_by_filter(
                    cat, db, tbl, text, -1, valid_write_id_list=snapshot
                )
            except FilterError as exc:
                raise hms.MetaException(message=str(exc)) from None
        raise hms.MetaException(message=f"Unsupported filter mode {mode}")

    def _parse_filter(self, text: str | None) -> None:
        parse(
            text,
            max_length=self.settings.partition_filter_max_length,
            max_terms=self.settings.partition_filter_max_terms,
        )

    def get_tables_ext(self, req: hms.GetTablesExtRequest) -> list[hms.ExtendedTableInfo]:
        """Hive answers only processors that name capabilities (and not MANAGERAWMETADATA);
        without the metadata transformer (docs/compatibility.md) a table needs none."""
        capabilities = list(req.processorCapabilities or [])
        if not capabilities or RAW_METADATA in capabilities:
            return []
        cat = self.catalog(req.catalog)
        _, db = self.split_db(req.database)
        if not db:
            return []
        try:
            names = self.store.get_table_names(cat, db, None, None)
        except hms.NoSuchObjectException:
            return []
        if req.tableNamePattern is not None:
            names = filter_names(names, req.tableNamePattern)
        limit = _max(req.limit)
        if limit >= 0:
            names = names[:limit]
        if not names:
            return []
        mask = int(req.requestedFields or 0)
        out = []
        for table in self.store.get_tables_by_names(cat, db, names):
            info = hms.ExtendedTableInfo(tblName=table.tableName)
            if mask & ACCESS_TYPE:
                info.accessType = table.accessType if table.accessType is not None else 0
            if mask & PROCESSOR_CAPABILITIES:
                info.requiredReadCapabilities = table.requiredReadCapabilities
                info.requiredWriteCapabilities = table.requiredWriteCapabilities
            out.append(info)
        return out
