"""SqlStore: the database path, one object per family (databases, tables, partitions, ...)
over one set of collaborators, put together here and exposed as the store contract."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hms_cache_proxy.store import api
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.messages import MessageBuilder
from hms_cache_proxy.store.forwarding import Forwarded, bind_owners
from hms_cache_proxy.store.sql import encoded_reads
from hms_cache_proxy.store.sql.constraints import Constraints
from hms_cache_proxy.store.sql.databases import Databases
from hms_cache_proxy.store.sql.functions import Functions
from hms_cache_proxy.store.sql.notifications import Notifications
from hms_cache_proxy.store.sql.partition_alters import PartitionAlters
from hms_cache_proxy.store.sql.partition_events import PartitionEvents
from hms_cache_proxy.store.sql.partition_reads import PartitionReads
from hms_cache_proxy.store.sql.partition_writes import PartitionWrites
from hms_cache_proxy.store.sql.privileges import Privileges
from hms_cache_proxy.store.sql.repl_commit import ReplCommits
from hms_cache_proxy.store.sql.roles import Roles
from hms_cache_proxy.store.sql.runtime_stats import RuntimeStats
from hms_cache_proxy.store.sql.scheduled_queries import ScheduledQueries
from hms_cache_proxy.store.sql.sql_base import SqlPart, SqlShared
from hms_cache_proxy.store.sql.stats_reads import ColumnStatsReads
from hms_cache_proxy.store.sql.stats_writes import ColumnStatsWrites
from hms_cache_proxy.store.sql.table_alters import TableAlters
from hms_cache_proxy.store.sql.tables import Tables
from hms_cache_proxy.store.sql.write_notes import WriteNotes
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.thrift_bytes import Encoded


class SqlStore:
    """Every store call answered from the metastore database (its transaction service is
    ``txn``). Each call of the contract names the family method that answers it."""

    def __init__(
        self,
        db: Database,
        txn: TxnService,
        *,
        events: EventLog,
        messages: MessageBuilder,
        warehouse_uri: str,
    ) -> None:
        """``txn`` is made beside the store over the same database, ``events`` and
        ``messages`` (app.py): a commit's events and a write's share one notification log."""
        shared = SqlShared(db, txn, events=events, messages=messages, warehouse_uri=warehouse_uri)
        self.db = shared.db
        self.ids = shared.ids
        self.events = shared.events
        self.messages = shared.messages
        self.warehouse_uri = shared.warehouse_uri
        self.txn = txn
        self.databases = Databases(shared)
        self.constraints = Constraints(shared)
        self.tables = Tables(shared, self.constraints)
        self.table_alters = TableAlters(shared, self.tables)
        self.partition_reads = PartitionReads(shared)
        self.partition_writes = PartitionWrites(shared, self.partition_reads, self.tables)
        self.partition_alters = PartitionAlters(
            shared, self.partition_reads, self.tables, self.table_alters
        )
        self.stats_reads = ColumnStatsReads(shared)
        self.stats_writes = ColumnStatsWrites(
            shared, self.stats_reads, self.partition_reads, self.tables
        )
        self.functions = Functions(shared)
        self.notifications = Notifications(shared, self.partition_reads, self.tables)
        self.write_notes = WriteNotes(shared, self.partition_reads, self.tables)
        self.repl_commits = ReplCommits(shared, self.write_notes, self.tables, self.partition_reads)
        self.roles = Roles(shared)
        self.privileges = Privileges(shared)
        self.partition_events = PartitionEvents(shared)
        self.scheduled_queries = ScheduledQueries(shared)
        self.runtime_stats = RuntimeStats(shared)
        self._methods = bind_owners(SqlStore, self.parts())

    def parts(self) -> list[SqlPart]:
        """The families, in the order they are made (a family is made after those it uses)."""
        return [value for value in vars(self).values() if isinstance(value, SqlPart)]

    def _forward(self, name: str) -> Callable[..., Any]:
        return self._methods[name]

    # -- the statistics settings and flags (the caching store answers statistics reads too) --

    @property
    def txn_stats_enabled(self) -> bool:
        return self.stats_reads.txn_stats_enabled

    @property
    def stats_ndv_tuner(self) -> float:
        return self.stats_reads.stats_ndv_tuner

    @property
    def stats_ndv_density_function(self) -> bool:
        return self.stats_reads.stats_ndv_density_function

    def fetch_flags(
        self, bit_vectors: bool | None = None, histograms: bool | None = None
    ) -> dict[str, bool]:
        return self.stats_reads.fetch_flags(bit_vectors, histograms)

    def all_partitions_encoded(self, cat: str, db: str, tbl: str) -> Encoded:
        """get_partitions of a whole table as bytes built from the rows (encoded_reads.py)."""
        return encoded_reads.all_partitions_encoded(self.db, self.partition_reads, cat, db, tbl)

    # -- self.databases: catalogs and databases
    create_catalog = Forwarded(Databases.create_catalog)
    alter_catalog = Forwarded(Databases.alter_catalog)
    drop_catalog = Forwarded(Databases.drop_catalog)
    get_catalog = Forwarded(Databases.get_catalog)
    get_catalogs = Forwarded(Databases.get_catalogs)
    create_database = Forwarded(Databases.create_database)
    alter_database = Forwarded(Databases.alter_database)
    drop_database = Forwarded(Databases.drop_database)
    get_database = Forwarded(Databases.get_database)
    get_databases = Forwarded(Databases.get_databases)
    database_locations = Forwarded(Databases.database_locations)

    # -- self.constraints: constraints
    get_table_constraints = Forwarded(Constraints.get_table_constraints)
    get_foreign_keys = Forwarded(Constraints.get_foreign_keys)
    add_constraints = Forwarded(Constraints.add_constraints)
    drop_constraint = Forwarded(Constraints.drop_constraint)

    # -- self.tables: tables
    create_table = Forwarded(Tables.create_table)
    drop_table = Forwarded(Tables.drop_table)
    get_tables_by_names = Forwarded(Tables.get_tables_by_names)
    get_table_names = Forwarded(Tables.get_table_names)
    get_table_meta = Forwarded(Tables.get_table_meta)
    tables_using_locations = Forwarded(Tables.tables_using_locations)
    get_table = Forwarded(Tables.get_table)

    # -- self.table_alters: table alters
    alter_table = Forwarded(TableAlters.alter_table)

    # -- self.partition_alters: changes to existing partitions (truncate_table resets them)
    truncate_table = Forwarded(PartitionAlters.truncate_table)
    alter_partitions = Forwarded(PartitionAlters.alter_partitions)
    rename_partition = Forwarded(PartitionAlters.rename_partition)

    # -- self.partition_writes: partitions added, dropped, exchanged
    add_partitions = Forwarded(PartitionWrites.add_partitions)
    drop_partitions = Forwarded(PartitionWrites.drop_partitions)
    exchange_partitions = Forwarded(PartitionWrites.exchange_partitions)

    # -- self.partition_reads: partition reads
    get_partition = Forwarded(PartitionReads.get_partition)
    get_partition_by_name = Forwarded(PartitionReads.get_partition_by_name)
    get_partitions = Forwarded(PartitionReads.get_partitions)
    get_partitions_by_names = Forwarded(PartitionReads.get_partitions_by_names)
    get_partitions_by_filter = Forwarded(PartitionReads.get_partitions_by_filter)
    get_partitions_ps = Forwarded(PartitionReads.get_partitions_ps)
    count_partitions_by_filter = Forwarded(PartitionReads.count_partitions_by_filter)
    get_partition_names = Forwarded(PartitionReads.get_partition_names)
    get_partition_names_by_filter = Forwarded(PartitionReads.get_partition_names_by_filter)
    get_partition_names_ps = Forwarded(PartitionReads.get_partition_names_ps)
    partition_values = Forwarded(PartitionReads.partition_values)
    partition_count = Forwarded(PartitionReads.partition_count)

    # -- self.stats_reads: column statistics: reads
    get_table_column_statistics = Forwarded(ColumnStatsReads.get_table_column_statistics)
    partition_column_statistics = Forwarded(ColumnStatsReads.partition_column_statistics)
    get_partition_column_statistics = Forwarded(ColumnStatsReads.get_partition_column_statistics)
    get_aggr_stats_for = Forwarded(ColumnStatsReads.get_aggr_stats_for)

    # -- self.stats_writes: column statistics: writes
    update_table_column_statistics = Forwarded(ColumnStatsWrites.update_table_column_statistics)
    update_partition_column_statistics = Forwarded(
        ColumnStatsWrites.update_partition_column_statistics
    )
    delete_table_column_statistics = Forwarded(ColumnStatsWrites.delete_table_column_statistics)
    delete_partition_column_statistics = Forwarded(
        ColumnStatsWrites.delete_partition_column_statistics
    )

    # -- self.functions: functions
    create_function = Forwarded(Functions.create_function)
    alter_function = Forwarded(Functions.alter_function)
    drop_function = Forwarded(Functions.drop_function)
    get_function = Forwarded(Functions.get_function)
    get_functions = Forwarded(Functions.get_functions)
    get_all_functions = Forwarded(Functions.get_all_functions)

    # -- self.notifications: the notification log
    current_notification_event_id = Forwarded(Notifications.current_notification_event_id)
    next_notifications = Forwarded(Notifications.next_notifications)
    notification_events_count = Forwarded(Notifications.notification_events_count)
    metastore_db_uuid = Forwarded(Notifications.metastore_db_uuid)
    fire_insert_events = Forwarded(Notifications.fire_insert_events)

    # -- self.write_notes: write notifications
    add_write_notifications = Forwarded(WriteNotes.add_write_notifications)
    write_event_info = Forwarded(WriteNotes.write_event_info)

    # -- self.repl_commits: replayed commits (REPL LOAD on a target)
    repl_commit_txn = Forwarded(ReplCommits.repl_commit_txn)

    # -- self.roles: roles
    create_role = Forwarded(Roles.create_role)
    drop_role = Forwarded(Roles.drop_role)
    get_role_names = Forwarded(Roles.get_role_names)
    grant_role = Forwarded(Roles.grant_role)
    revoke_role = Forwarded(Roles.revoke_role)
    list_roles = Forwarded(Roles.list_roles)
    get_principals_in_role = Forwarded(Roles.get_principals_in_role)
    get_role_grants_for_principal = Forwarded(Roles.get_role_grants_for_principal)

    # -- self.privileges: privileges
    grant_privileges = Forwarded(Privileges.grant_privileges)
    revoke_privileges = Forwarded(Privileges.revoke_privileges)
    refresh_privileges = Forwarded(Privileges.refresh_privileges)
    list_privileges = Forwarded(Privileges.list_privileges)
    get_privilege_set = Forwarded(Privileges.get_privilege_set)
    partition_privilege_sets = Forwarded(Privileges.partition_privilege_sets)

    # -- self.partition_events: partition event marks
    mark_partition_for_event = Forwarded(PartitionEvents.mark_partition_for_event)
    is_partition_marked_for_event = Forwarded(PartitionEvents.is_partition_marked_for_event)

    # -- self.scheduled_queries: scheduled queries
    create_scheduled_query = Forwarded(ScheduledQueries.create_scheduled_query)
    alter_scheduled_query = Forwarded(ScheduledQueries.alter_scheduled_query)
    drop_scheduled_query = Forwarded(ScheduledQueries.drop_scheduled_query)
    get_scheduled_query = Forwarded(ScheduledQueries.get_scheduled_query)
    poll_scheduled_query = Forwarded(ScheduledQueries.poll_scheduled_query)
    scheduled_query_progress = Forwarded(ScheduledQueries.scheduled_query_progress)

    # -- self.runtime_stats: runtime statistics
    add_runtime_stat = Forwarded(RuntimeStats.add_runtime_stat)
    get_runtime_stats = Forwarded(RuntimeStats.get_runtime_stats)


def as_database_store(store: SqlStore) -> api.DatabaseStore:
    """The SQL store as the contract: the line at which mypy checks each family's method (named
    by a ``Forwarded``) against the contract's signature."""
    return store
