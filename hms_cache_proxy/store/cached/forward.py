"""``ForwardingStore``: every call of the contract that the caching and the direct store both
pass to the SQL store unchanged, typed with store/forwarding.py's ``Forwarded``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hms_cache_proxy.store import api
from hms_cache_proxy.store.forwarding import Forwarded


class ForwardingStore:
    """A store in front of ``sql``: the calls it does not answer itself go to ``sql`` through
    ``_forward`` (subclasses wrap the ones that must be followed by a cache catch-up)."""

    def __init__(self, sql: api.DatabaseStore) -> None:
        self.sql = sql

    def _forward(self, name: str) -> Callable[..., Any]:
        return getattr(self.sql, name)

    create_catalog = Forwarded(api.Metadata.create_catalog)
    alter_catalog = Forwarded(api.Metadata.alter_catalog)
    drop_catalog = Forwarded(api.Metadata.drop_catalog)
    get_catalog = Forwarded(api.Metadata.get_catalog)
    get_catalogs = Forwarded(api.Metadata.get_catalogs)
    create_database = Forwarded(api.Metadata.create_database)
    alter_database = Forwarded(api.Metadata.alter_database)
    drop_database = Forwarded(api.Metadata.drop_database)
    database_locations = Forwarded(api.Metadata.database_locations)
    create_table = Forwarded(api.Metadata.create_table)
    alter_table = Forwarded(api.Metadata.alter_table)
    drop_table = Forwarded(api.Metadata.drop_table)
    truncate_table = Forwarded(api.Metadata.truncate_table)
    get_table_names = Forwarded(api.Metadata.get_table_names)
    get_table_meta = Forwarded(api.Metadata.get_table_meta)
    tables_using_locations = Forwarded(api.Metadata.tables_using_locations)
    add_partitions = Forwarded(api.Metadata.add_partitions)
    alter_partitions = Forwarded(api.Metadata.alter_partitions)
    rename_partition = Forwarded(api.Metadata.rename_partition)
    drop_partitions = Forwarded(api.Metadata.drop_partitions)
    exchange_partitions = Forwarded(api.Metadata.exchange_partitions)
    update_table_column_statistics = Forwarded(api.Metadata.update_table_column_statistics)
    update_partition_column_statistics = Forwarded(api.Metadata.update_partition_column_statistics)
    delete_table_column_statistics = Forwarded(api.Metadata.delete_table_column_statistics)
    delete_partition_column_statistics = Forwarded(api.Metadata.delete_partition_column_statistics)
    get_foreign_keys = Forwarded(api.Metadata.get_foreign_keys)
    add_constraints = Forwarded(api.Metadata.add_constraints)
    drop_constraint = Forwarded(api.Metadata.drop_constraint)
    create_function = Forwarded(api.Metadata.create_function)
    alter_function = Forwarded(api.Metadata.alter_function)
    drop_function = Forwarded(api.Metadata.drop_function)
    get_function = Forwarded(api.Metadata.get_function)
    get_functions = Forwarded(api.Metadata.get_functions)
    get_all_functions = Forwarded(api.Metadata.get_all_functions)
    grant_privileges = Forwarded(api.Metadata.grant_privileges)
    revoke_privileges = Forwarded(api.Metadata.revoke_privileges)
    refresh_privileges = Forwarded(api.Metadata.refresh_privileges)
    list_privileges = Forwarded(api.Metadata.list_privileges)
    get_privilege_set = Forwarded(api.Metadata.get_privilege_set)
    partition_privilege_sets = Forwarded(api.Metadata.partition_privilege_sets)
    create_role = Forwarded(api.Metadata.create_role)
    drop_role = Forwarded(api.Metadata.drop_role)
    get_role_names = Forwarded(api.Metadata.get_role_names)
    grant_role = Forwarded(api.Metadata.grant_role)
    revoke_role = Forwarded(api.Metadata.revoke_role)
    list_roles = Forwarded(api.Metadata.list_roles)
    get_principals_in_role = Forwarded(api.Metadata.get_principals_in_role)
    get_role_grants_for_principal = Forwarded(api.Metadata.get_role_grants_for_principal)
    create_scheduled_query = Forwarded(api.Metadata.create_scheduled_query)
    alter_scheduled_query = Forwarded(api.Metadata.alter_scheduled_query)
    drop_scheduled_query = Forwarded(api.Metadata.drop_scheduled_query)
    get_scheduled_query = Forwarded(api.Metadata.get_scheduled_query)
    poll_scheduled_query = Forwarded(api.Metadata.poll_scheduled_query)
    scheduled_query_progress = Forwarded(api.Metadata.scheduled_query_progress)
    add_runtime_stat = Forwarded(api.Metadata.add_runtime_stat)
    get_runtime_stats = Forwarded(api.Metadata.get_runtime_stats)

    # the notification log
    current_notification_event_id = Forwarded(api.Events.current_notification_event_id)
    next_notifications = Forwarded(api.Events.next_notifications)
    notification_events_count = Forwarded(api.Events.notification_events_count)
    metastore_db_uuid = Forwarded(api.Events.metastore_db_uuid)
    fire_insert_events = Forwarded(api.Events.fire_insert_events)
    add_write_notifications = Forwarded(api.Events.add_write_notifications)
    write_event_info = Forwarded(api.Events.write_event_info)
    repl_commit_txn = Forwarded(api.Events.repl_commit_txn)
    mark_partition_for_event = Forwarded(api.Events.mark_partition_for_event)
    is_partition_marked_for_event = Forwarded(api.Events.is_partition_marked_for_event)
