"""The store's contract: every call the handler makes on a store, as typing Protocols.

One file shows the whole surface. Three stores implement it: the SQL store (``SqlStore``, the
database path), the caching store (``CachedStore``, reads from the cache where its rules allow)
and the direct store (``DirectStore``, the database path when there is no cache). The handler is
typed against ``HandlerStore``; the two stores in front of the database take a ``DatabaseStore``.
mypy checks all of them (tests/unit/test_types.py).

The groups follow the concerns: ``Metadata`` (catalogs, databases, tables, partitions,
statistics, constraints, functions, privileges, roles, scheduled queries, runtime statistics),
``Events`` (the notification log and what writes to it outside a metadata write),
``Transactions`` (the transaction service: transactions, write ids, locks, compactions) and the
table reads, which come in two forms: ``TableReads`` takes the request's snapshot
(``valid_write_id_list``) and may answer with encoded bytes (``encoded``), for the handler;
``DatabaseTableReads`` is the database's form, which needs neither.

Thrift types (``hms.*``) come from an IDL loaded at run time, so the checker sees them as Any:
what it checks is that every call names a method that exists with those parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from hms_cache_proxy.idl import hms
from hms_cache_proxy.thrift_bytes import Encoded

AlterTablePrepare = Callable[[hms.Table, hms.Table, Callable[[str, str], bool]], hms.Table | None]
"""alter_table's ``prepare(before, new_table, exists)``: Hive's alter rules run inside the
write with the locked table as stored; ``exists(db, name)`` says whether a table of that name
exists in the catalog (in the same transaction). Returns the table to store (None: new_table)."""


class Metadata(Protocol):
    """Metadata calls that read and write the same way on every store."""

    # -- catalogs and databases ----------------------------------------------------------------

    def create_catalog(self, catalog: hms.Catalog) -> hms.Catalog: ...
    def alter_catalog(self, name: str, catalog: hms.Catalog) -> None: ...
    def drop_catalog(self, name: str) -> None: ...
    def get_catalog(self, name: str) -> hms.Catalog: ...
    def get_catalogs(self) -> list[str]: ...
    def create_database(self, database: hms.Database) -> hms.Database: ...
    def alter_database(self, cat: str, name: str, database: hms.Database) -> None: ...
    def drop_database(self, cat: str, name: str, *, cascade: bool) -> hms.Database: ...
    def get_database(self, cat: str, name: str) -> hms.Database: ...
    def get_databases(self, cat: str, pattern: str | None = ...) -> list[str]: ...
    def database_locations(self) -> list[tuple[str, str, str | None, str | None]]: ...

    # -- tables ----------------------------------------------------------------------------------

    def create_table(
        self,
        table: hms.Table,
        *,
        valid_write_id_list: str | None = ...,
        constraints: hms.SQLAllTableConstraints | None = ...,
    ) -> hms.Table: ...
    def alter_table(
        self,
        cat: str,
        db: str,
        name: str,
        new_table: hms.Table,
        *,
        cascade: bool = ...,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        is_truncate: bool = ...,
        prepare: AlterTablePrepare | None = ...,
        relocate: Sequence[tuple[str, str]] = ...,
        expected: tuple[str, str] | None = ...,
    ) -> tuple[hms.Table, hms.Table]: ...
    def drop_table(
        self, cat: str, db: str, name: str, *, check: Any = ...
    ) -> tuple[hms.Table, list[str]]: ...
    def truncate_table(
        self,
        cat: str,
        db: str,
        name: str,
        part_names: Sequence[str] | None,
        *,
        empty: Callable[[str | None, list[str | None] | None], None],
        reset: Callable[[dict[str, str]], None],
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
    ) -> None: ...
    def get_tables_by_names(self, cat: str, db: str, names: Sequence[str]) -> list[hms.Table]: ...
    def get_table_names(
        self, cat: str, db: str, pattern: str | None = ..., table_type: str | None = ...
    ) -> list[str]: ...
    def get_table_meta(
        self,
        cat: str,
        db_pattern: str | None,
        tbl_pattern: str | None,
        types: Sequence[str] | None,
    ) -> list[hms.TableMeta]: ...
    def tables_using_locations(
        self, exact: Sequence[str], below: str
    ) -> list[tuple[str, str, str, str]]: ...

    # -- partitions ------------------------------------------------------------------------------

    def add_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        parts: Sequence[hms.Partition],
        *,
        if_not_exists: bool = ...,
        valid_write_id_list: str | None = ...,
        write_id: int | None = ...,
        prepare: Callable[
            [hms.Table, Callable[[Sequence[str]], set[str]]], list[tuple[str, hms.Partition]]
        ]
        | None = ...,
    ) -> list[hms.Partition]: ...
    def alter_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        new_parts: Sequence[hms.Partition],
        *,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        prepare: Callable[[hms.Partition, hms.Partition], None] | None = ...,
        is_truncate: bool = ...,
    ) -> list[tuple[hms.Partition, hms.Partition]]: ...
    def rename_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        old_values: Sequence[str],
        new_part: hms.Partition,
        *,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None = ...,
        valid_write_id_list: str | None = ...,
    ) -> tuple[hms.Partition, hms.Partition]: ...
    def drop_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        if_exists: bool = ...,
        check: Callable[[hms.Table, list[hms.Partition]], None] | None = ...,
    ) -> tuple[hms.Table, list[hms.Partition]]: ...
    def exchange_partitions(
        self,
        cat: str,
        source_db: str,
        source_tbl: str,
        dest_db: str,
        dest_tbl: str,
        spec: Mapping[str, str],
        *,
        prepare: Callable[[hms.Table, hms.Table, list[tuple[hms.Partition, hms.Partition]]], None]
        | None = ...,
    ) -> list[hms.Partition]: ...

    # -- column statistics -----------------------------------------------------------------------

    def get_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
        bit_vectors: bool | None = ...,
        histograms: bool | None = ...,
    ) -> hms.ColumnStatistics | None: ...
    def partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
        bit_vectors: bool | None = ...,
        histograms: bool | None = ...,
    ) -> list[hms.ColumnStatistics]: ...
    def get_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> dict[str, list[hms.ColumnStatisticsObj]]: ...
    def get_aggr_stats_for(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> hms.AggrStats: ...
    def update_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats: hms.ColumnStatistics,
        *,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        merge: bool = ...,
    ) -> None: ...
    def update_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats_list: Sequence[hms.ColumnStatistics],
        *,
        write_id: int | None = ...,
        valid_write_id_list: str | None = ...,
        merge: bool = ...,
    ) -> None: ...
    def delete_table_column_statistics(
        self, cat: str, db: str, tbl: str, col_name: str | None, engine: str | None = ...
    ) -> None: ...
    def delete_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_name: str,
        col_name: str | None,
        engine: str | None = ...,
    ) -> None: ...

    # -- constraints -----------------------------------------------------------------------------

    def get_table_constraints(
        self, cat: str, db: str, name: str, *, valid_write_id_list: str | None = ...
    ) -> hms.SQLAllTableConstraints: ...
    def get_foreign_keys(
        self, cat: str, parent: tuple[str, str] | None, child: tuple[str, str] | None
    ) -> list[hms.SQLForeignKey]: ...
    def add_constraints(self, cat: str, constraints: hms.SQLAllTableConstraints) -> None: ...
    def drop_constraint(self, cat: str, db: str, name: str, constraint: str) -> None: ...

    # -- functions -------------------------------------------------------------------------------

    def create_function(self, func: hms.Function) -> hms.Function: ...
    def alter_function(
        self, cat: str, db: str, name: str, new_func: hms.Function
    ) -> hms.Function: ...
    def drop_function(self, cat: str, db: str, name: str) -> hms.Function: ...
    def get_function(self, cat: str, db: str, name: str) -> hms.Function: ...
    def get_functions(self, cat: str, db: str, pattern: str | None = ...) -> list[str]: ...
    def get_all_functions(self, cat: str = ...) -> list[hms.Function]: ...

    # -- privileges and roles --------------------------------------------------------------------

    def grant_privileges(self, privileges: Sequence[hms.HiveObjectPrivilege]) -> None: ...
    def revoke_privileges(
        self, privileges: Sequence[hms.HiveObjectPrivilege], grant_option: bool
    ) -> None: ...
    def refresh_privileges(
        self,
        ref: hms.HiveObjectRef,
        authorizer: str | None,
        grants: Sequence[hms.HiveObjectPrivilege],
    ) -> None: ...
    def list_privileges(
        self, principal: str | None, ptype: int | None, ref: hms.HiveObjectRef | None
    ) -> list[hms.HiveObjectPrivilege]: ...
    def get_privilege_set(
        self, ref: hms.HiveObjectRef, user: str | None, groups: Sequence[str] | None
    ) -> hms.PrincipalPrivilegeSet: ...
    def partition_privilege_sets(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_values: Iterable[Sequence[str]],
        user: str | None,
        groups: Sequence[str] | None,
    ) -> list[hms.PrincipalPrivilegeSet]: ...
    def create_role(self, name: str, owner: str | None) -> None: ...
    def drop_role(self, name: str) -> None: ...
    def get_role_names(self) -> list[str]: ...
    def grant_role(
        self,
        role: str,
        principal: str,
        ptype: int,
        grantor: str | None,
        grantor_type: int | None,
        grant_option: bool,
    ) -> None: ...
    def revoke_role(self, role: str, principal: str, ptype: int, grant_option: bool) -> None: ...
    def list_roles(self, principal: str, ptype: int) -> list[hms.Role]: ...
    def get_principals_in_role(self, role: str) -> list[hms.RolePrincipalGrant]: ...
    def get_role_grants_for_principal(
        self, principal: str, ptype: int
    ) -> list[hms.RolePrincipalGrant]: ...

    # -- scheduled queries and runtime statistics ------------------------------------------------

    def create_scheduled_query(self, query: hms.ScheduledQuery) -> None: ...
    def alter_scheduled_query(self, query: hms.ScheduledQuery) -> None: ...
    def drop_scheduled_query(self, key: hms.ScheduledQueryKey) -> None: ...
    def get_scheduled_query(self, key: hms.ScheduledQueryKey) -> hms.ScheduledQuery: ...
    def poll_scheduled_query(self, namespace: str) -> hms.ScheduledQueryPollResponse: ...
    def scheduled_query_progress(self, info: hms.ScheduledQueryProgressInfo) -> None: ...
    def add_runtime_stat(self, weight: int, payload: bytes) -> None: ...
    def get_runtime_stats(self, max_weight: int, max_create_time: int) -> list[hms.RuntimeStat]: ...


class TableReads(Protocol):
    """Table and partition reads as the handler makes them: with the request's snapshot
    (``valid_write_id_list``), and ``encoded`` where the answer may go out as Thrift bytes
    (thrift_bytes.Encoded) instead of objects."""

    def get_table(
        self,
        cat: str,
        db: str,
        name: str,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any: ...
    def get_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        values: Sequence[str],
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any: ...
    def get_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any: ...
    def get_partitions_by_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any: ...
    def get_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any: ...
    def get_partitions_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
        encoded: bool = ...,
    ) -> Any: ...
    def count_partitions_by_filter(
        self,
        cat: str,
        db: str,
        tbl: str,
        filter_text: str,
        *,
        valid_write_id_list: str | None = ...,
    ) -> int: ...
    def get_partition_names(
        self,
        cat: str,
        db: str,
        tbl: str,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> list[str]: ...
    def get_partition_names_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        partial: Sequence[str] | None,
        max_parts: int = ...,
        *,
        valid_write_id_list: str | None = ...,
    ) -> list[str]: ...
    def partition_values(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = ...
    ) -> tuple[list[hms.FieldSchema], list[tuple[str, list[str]]]]: ...
    def partition_count(
        self, cat: str, db: str, tbl: str, *, valid_write_id_list: str | None = ...
    ) -> int: ...


class DatabaseTableReads(Protocol):
    """The same reads on the database: always current, so no snapshot; objects only."""

    def get_table(self, cat: str, db: str, name: str) -> hms.Table: ...
    def get_partition(
        self, cat: str, db: str, tbl: str, values: Sequence[str]
    ) -> hms.Partition: ...
    def get_partition_by_name(self, cat: str, db: str, tbl: str, name: str) -> hms.Partition: ...
    def get_partitions(
        self, cat: str, db: str, tbl: str, max_parts: int = ...
    ) -> list[hms.Partition]: ...
    def get_partitions_by_names(
        self, cat: str, db: str, tbl: str, names: Sequence[str]
    ) -> list[hms.Partition]: ...
    def get_partitions_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = ...
    ) -> list[hms.Partition]: ...
    def get_partitions_ps(
        self, cat: str, db: str, tbl: str, partial: Sequence[str] | None, max_parts: int = ...
    ) -> list[hms.Partition]: ...
    def count_partitions_by_filter(self, cat: str, db: str, tbl: str, filter_text: str) -> int: ...
    def get_partition_names(
        self, cat: str, db: str, tbl: str, max_parts: int = ...
    ) -> list[str]: ...
    def get_partition_names_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = ...
    ) -> list[str]: ...
    def get_partition_names_ps(
        self, cat: str, db: str, tbl: str, partial: Sequence[str] | None, max_parts: int = ...
    ) -> list[str]: ...
    def partition_values(
        self, cat: str, db: str, tbl: str
    ) -> tuple[list[hms.FieldSchema], list[tuple[str, list[str]]]]: ...
    def partition_count(self, cat: str, db: str, tbl: str) -> int: ...


class Events(Protocol):
    """The notification log: reading it, and the writes whose only effect is an event or a
    mark beside the log (insert events, write notifications, partition event marks)."""

    def current_notification_event_id(self) -> int: ...
    def next_notifications(
        self, last_event: int, max_events: int | None, skip_types: Sequence[str] = ...
    ) -> list[hms.NotificationEvent]: ...
    def notification_events_count(
        self,
        from_event: int,
        db_name: str,
        cat_name: str | None = ...,
        to_event: int | None = ...,
        limit: int | None = ...,
        table_names: Sequence[str] | None = ...,
    ) -> int: ...
    def metastore_db_uuid(self) -> str: ...
    def fire_insert_events(
        self,
        cat: str,
        db: str,
        tbl: str,
        inserts: Sequence[tuple[list[str] | None, hms.InsertEventRequestData]],
    ) -> list[int]: ...
    def add_write_notifications(
        self, cat: str, db: str, tbl: str, requests: Sequence[hms.WriteNotificationLogRequest]
    ) -> None: ...
    def write_event_info(
        self, txn_id: int, db: str | None, tbl: str | None
    ) -> list[hms.WriteEventInfo]: ...
    def repl_commit_txn(
        self, cat: str, policy: str, src_txn: int, infos: Sequence[hms.WriteEventInfo]
    ) -> None: ...
    def mark_partition_for_event(
        self, cat: str, db: str, table: str, partition: str, event_type: int
    ) -> None: ...
    def is_partition_marked_for_event(
        self, cat: str, db: str, table: str, partition: str, event_type: int
    ) -> bool: ...


class Transactions(Protocol):
    """The transaction service (``store.txn``): Hive's TxnHandler calls."""

    # -- transactions ----------------------------------------------------------------------------

    def open_txns(
        self,
        num_txns: int,
        user: str,
        host: str,
        agent_info: str | None = ...,
        txn_type: int = ...,
    ) -> list[int]: ...
    def commit_txn(
        self, txn_id: int, key_value: Any | None = ..., excl_write_enabled: bool = ...
    ) -> None: ...
    def abort_txn(self, txn_id: int, error_code: int | None = ...) -> None: ...
    def abort_txns(self, txn_ids: Sequence[int], error_code: int | None = ...) -> int: ...
    def get_open_txns(self, exclude_types: Iterable[int] = ...) -> Any: ...
    def get_open_txns_info(self) -> Any: ...
    def heartbeat(self, lock_id: int | None, txn_id: int | None) -> None: ...
    def heartbeat_txn_range(self, low: int, high: int) -> tuple[set[int], set[int]]: ...
    def latest_txn_in_conflict(self, txn_id: int) -> int: ...
    def add_dynamic_partitions(
        self,
        txn_id: int,
        write_id: int,
        db: str,
        table: str,
        partition_names: Sequence[str],
        operation_type: int | None,
    ) -> None: ...
    def databases_touched(
        self, txn_ids: Sequence[int] = ..., lock_ids: Sequence[int] = ...
    ) -> set[str]:
        """The databases the transactions and locks name: handler/access.py lets a client
        commit, abort or unlock them only when it may use every one."""
        ...

    # -- write ids -------------------------------------------------------------------------------

    def allocate_table_write_ids(
        self, db: str, table: str, txn_ids: Sequence[int]
    ) -> list[tuple[int, int]]: ...
    def get_valid_write_ids(
        self,
        full_table_names: Sequence[str],
        valid_txn_list: str | None = ...,
        write_id: int | None = ...,
    ) -> list[Any]: ...
    def max_allocated_write_id(self, db: str, table: str) -> int: ...
    def seed_write_id(self, db: str, table: str, seed: int) -> None: ...

    # -- replayed transactions (REPL LOAD on a target) ------------------------------------------

    def repl_open_txns(
        self, policy: str, src_ids: Sequence[int], user: str, host: str, agent_info: str | None
    ) -> list[int]: ...
    def repl_allocate_write_ids(
        self, db: str, table: str, policy: str, src_pairs: Sequence[tuple[int, int]]
    ) -> list[tuple[int, int]]: ...
    def repl_table_write_id_state(
        self, valid_write_ids: str, db: str, table: str, part_names: Sequence[str] = ...
    ) -> None: ...
    def repl_abort_txn(self, policy: str, src_txn: int) -> None: ...
    def load_open_txn(self, user: str, host: str, agent_info: str | None) -> int: ...
    def load_commit_txn(self, txn_id: int) -> None: ...
    def load_abort_txn(self, txn_id: int) -> None: ...

    # -- locks -----------------------------------------------------------------------------------

    def lock(self, rqst: Any) -> Any: ...
    def check_lock(self, ext_id: int) -> Any: ...
    def unlock(self, ext_id: int) -> None: ...
    def show_locks(
        self,
        db: str | None = ...,
        table: str | None = ...,
        partition: str | None = ...,
        txn_id: int | None = ...,
    ) -> list[Any]: ...

    # -- compactions and materialized views ------------------------------------------------------

    def compact(self, rqst: Any) -> hms.CompactionResponse: ...
    def show_compact(self, rqst: Any) -> hms.ShowCompactResponse: ...
    def abort_compactions(self, ids: Sequence[int]) -> hms.AbortCompactResponse: ...
    def latest_committed_compactions(
        self, db: str, table: str, partitions: Sequence[str] | None, after_id: int | None
    ) -> list[hms.CompactionInfoStruct]: ...
    def find_next_compact(
        self, worker_id: str | None, worker_version: str | None, pool: str | None
    ) -> hms.CompactionInfoStruct | None: ...
    def find_columns_with_stats(self, ci: Any) -> list[str]: ...
    def update_compactor_state(self, ci: Any, txn_id: int) -> None: ...
    def set_hadoop_jobid(self, job_id: str | None, cq_id: int) -> None: ...
    def mark_compacted(self, ci: Any) -> None: ...
    def mark_cleaned(self, ci: Any) -> None: ...
    def mark_failed(self, ci: Any, state: str = ...) -> None: ...
    def materialization_invalidation_info(
        self, tables_used: list[str], view_txn_list: str | None, valid_txn_list: str | None
    ) -> hms.Materialization | None: ...
    def update_transaction_statistics(
        self, table_id: int, inserted: int, updated: int, deleted: int
    ) -> None: ...


class DatabaseStore(Metadata, DatabaseTableReads, Events, Protocol):
    """The SQL store, as the caching and direct stores use it."""

    @property
    def txn(self) -> Transactions: ...

    # The statistics settings and flags the caching store answers statistics reads with.
    @property
    def txn_stats_enabled(self) -> bool: ...
    @property
    def stats_ndv_tuner(self) -> float: ...
    @property
    def stats_ndv_density_function(self) -> bool: ...
    def fetch_flags(
        self, bit_vectors: bool | None = ..., histograms: bool | None = ...
    ) -> dict[str, bool]: ...

    def all_partitions_encoded(self, cat: str, db: str, tbl: str) -> Encoded:
        """get_partitions of a whole table, encoded straight from the rows."""
        ...


class HandlerStore(Metadata, TableReads, Events, Protocol):
    """What the handler talks to: the caching store, or the direct store without a cache."""

    @property
    def txn(self) -> Transactions: ...

    def flush_all(self) -> int:
        """Empty the cache (flushCache); the number of entries dropped."""
        ...
