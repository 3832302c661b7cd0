"""The database path only (``cache_enabled: false``): the store the handler talks to when
there is no cache. Reads take the same keyword arguments as CachedStore's (the request's
``valid_write_id_list``, ``encoded``) and ignore the snapshot: the database answers every one.
``encoded`` lets a whole table's partitions go out as bytes built from the rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hms_cache_proxy.store import api
from hms_cache_proxy.store.cached.forward import ForwardingStore
from hms_cache_proxy.store.cached.prewarm import _collection_paused
from hms_cache_proxy.store.forwarding import Forwarded


class DirectStore(ForwardingStore):
    """Every call straight to the SQL store."""

    def __init__(self, sql: api.DatabaseStore) -> None:
        super().__init__(sql)
        self.txn = sql.txn

    get_database = Forwarded(api.Metadata.get_database)
    get_databases = Forwarded(api.Metadata.get_databases)
    get_tables_by_names = Forwarded(api.Metadata.get_tables_by_names)
    get_table_column_statistics = Forwarded(api.Metadata.get_table_column_statistics)
    partition_column_statistics = Forwarded(api.Metadata.partition_column_statistics)
    get_partition_column_statistics = Forwarded(api.Metadata.get_partition_column_statistics)
    get_aggr_stats_for = Forwarded(api.Metadata.get_aggr_stats_for)

    def flush_all(self) -> int:
        return 0

    def notification_event_id(self) -> int:
        return self.sql.current_notification_event_id()

    def get_table_constraints(self, cat: str, db: str, name: str, **_: Any) -> Any:
        return self.sql.get_table_constraints(cat, db, name)

    def get_table(self, cat: str, db: str, name: str, **_: Any) -> Any:
        return self.sql.get_table(cat, db, name)

    def get_partition(self, cat: str, db: str, tbl: str, values: Sequence[str], **_: Any) -> Any:
        return self.sql.get_partition(cat, db, tbl, values)

    def get_partition_by_name(self, cat: str, db: str, tbl: str, name: str, **_: Any) -> Any:
        return self.sql.get_partition_by_name(cat, db, tbl, name)

    def get_partitions(
        self, cat: str, db: str, tbl: str, max_parts: int = -1, *, encoded: bool = False, **_: Any
    ) -> Any:
        return partitions_from_database(self.sql, cat, db, tbl, max_parts, encoded)

    def get_partitions_by_names(
        self, cat: str, db: str, tbl: str, names: Sequence[str], **_: Any
    ) -> Any:
        return self.sql.get_partitions_by_names(cat, db, tbl, names)

    def get_partitions_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = -1, **_: Any
    ) -> Any:
        return self.sql.get_partitions_by_filter(cat, db, tbl, filter_text, max_parts)

    def count_partitions_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, **_: Any
    ) -> int:
        return self.sql.count_partitions_by_filter(cat, db, tbl, filter_text)

    def get_partition_names_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = -1, **_: Any
    ) -> list[str]:
        return self.sql.get_partition_names_by_filter(cat, db, tbl, filter_text, max_parts)

    def get_partitions_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = -1,
        **_: Any,
    ) -> Any:
        return self.sql.get_partitions_ps(cat, db, tbl, partial, max_parts)

    def get_partition_names_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = -1,
        **_: Any,
    ) -> list[str]:
        return self.sql.get_partition_names_ps(cat, db, tbl, partial, max_parts)

    def get_partition_names(
        self, cat: str, db: str, tbl: str, max_parts: int = -1, **_: Any
    ) -> list[str]:
        return self.sql.get_partition_names(cat, db, tbl, max_parts)

    def partition_values(self, cat: str, db: str, tbl: str, **_: Any) -> Any:
        return self.sql.partition_values(cat, db, tbl)

    def partition_count(self, cat: str, db: str, tbl: str, **_: Any) -> int:
        return self.sql.partition_count(cat, db, tbl)


def partitions_from_database(
    sql: api.DatabaseStore, cat: str, db: str, tbl: str, max_parts: int, encoded: bool
) -> Any:
    """get_partitions on the database path: a whole table as bytes built from the rows (no
    objects) when the caller can send bytes, else the partitions as objects."""
    if encoded and max_parts < 0:
        # Rows by the ten thousand, none of them garbage: no cyclic collections meanwhile.
        with _collection_paused():
            return sql.all_partitions_encoded(cat, db, tbl)
    return sql.get_partitions(cat, db, tbl, max_parts)
