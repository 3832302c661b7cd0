"""SqlStore: the database path, one mixin per object family over one Database."""

from __future__ import annotations

from hms_cache_proxy.store.sql.databases import DatabasesMixin
from hms_cache_proxy.store.sql.functions import FunctionsMixin
from hms_cache_proxy.store.sql.notifications import NotificationsMixin
from hms_cache_proxy.store.sql.partition_events import PartitionEventsMixin
from hms_cache_proxy.store.sql.partitions import PartitionsMixin
from hms_cache_proxy.store.sql.privileges import PrivilegesMixin
from hms_cache_proxy.store.sql.roles import RolesMixin
from hms_cache_proxy.store.sql.runtime_stats import RuntimeStatsMixin
from hms_cache_proxy.store.sql.scheduled_queries import ScheduledQueriesMixin
from hms_cache_proxy.store.sql.stats_writes import StatsMixin
from hms_cache_proxy.store.sql.write_notes import WriteNotesMixin


class SqlStore(
    DatabasesMixin,
    StatsMixin,
    FunctionsMixin,
    NotificationsMixin,
    WriteNotesMixin,
    RolesMixin,
    PrivilegesMixin,
    PartitionEventsMixin,
    ScheduledQueriesMixin,
    RuntimeStatsMixin,
    PartitionsMixin,  # after its subclasses (StatsMixin, NotificationsMixin): a consistent MRO
):
    """Every store call answered from the metastore database (its transaction service is
    ``txn``, made by SqlStoreBase)."""
