"""get_table_names_by_filter: a database's table names whose owner, last access time or
parameters match a filter in Hive's table-filter language (store/table_filter.py).

The tables are read through the store (the cache where it holds them) and filtered here; the
names come back in name order, at most ``max_tables`` of them (negative: all), as Hive's
ObjectStore.listTableNamesByFilter answers. An unknown database has no tables.
"""

from __future__ import annotations

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.syntax_tree import FilterError
from hms_cache_proxy.store.table_filter import compile_table_filter


class TableFilterHandlers(HandlerBase):
    def get_table_names_by_filter(
        self, dbname: str | None, filter: str | None, max_tables: int | None
    ) -> list[str]:
        cat, db = self.split_db(dbname)
        if not db:
            raise hms.UnknownDBException(message="DB name is null or empty")
        if filter is None:
            raise hms.InvalidOperationException(message="None cannot apply null filter")
        try:
            node = parse(
                filter,
                max_length=self.settings.partition_filter_max_length,
                max_terms=self.settings.partition_filter_max_terms,
            )
            test = compile_table_filter(node)
        except FilterError as exc:
            raise hms.MetaException(message=f"Error parsing table filter: {exc}") from None
        try:
            names = self.store.get_table_names(cat, db, None, None)
            tables = self.store.get_tables_by_names(cat, db, names)
        except hms.NoSuchObjectException:
            return []
        matched = sorted(t.tableName for t in tables if test(t))
        limit = -1 if max_tables is None else int(max_tables)
        return matched if limit < 0 else matched[:limit]
