"""SqlStore: the database path, one mixin per object family over one Database."""

from __future__ import annotations

from hms_cache_proxy.store.sql.databases import DatabasesMixin
from hms_cache_proxy.store.sql.functions import FunctionsMixin
from hms_cache_proxy.store.sql.notifications import NotificationsMixin
from hms_cache_proxy.store.sql.partitions import PartitionsMixin
from hms_cache_proxy.store.sql.stats import StatsMixin


class SqlStore(
    DatabasesMixin,
    StatsMixin,
    FunctionsMixin,
    NotificationsMixin,
    PartitionsMixin,  # after its subclasses (StatsMixin, NotificationsMixin): a consistent MRO
):
    """Every store call answered from the metastore database."""
