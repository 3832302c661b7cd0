"""The Thrift handler: one method per ThriftHiveMetastore call."""

from __future__ import annotations

from hms_cache_proxy.handler.compaction import CompactionHandlers
from hms_cache_proxy.handler.constraints import ConstraintHandlers
from hms_cache_proxy.handler.databases import DatabaseHandlers
from hms_cache_proxy.handler.functions import FunctionHandlers
from hms_cache_proxy.handler.materializations import MaterializationHandlers
from hms_cache_proxy.handler.notifications import NotificationHandlers
from hms_cache_proxy.handler.partition_helpers import PartitionHelperHandlers
from hms_cache_proxy.handler.partitions import PartitionHandlers
from hms_cache_proxy.handler.privileges import PrivilegeHandlers
from hms_cache_proxy.handler.roles import RoleHandlers
from hms_cache_proxy.handler.runtime_stats import RuntimeStatsHandlers
from hms_cache_proxy.handler.scheduled_queries import ScheduledQueryHandlers
from hms_cache_proxy.handler.session import SessionHandlers
from hms_cache_proxy.handler.spec_listings import SpecListingHandlers
from hms_cache_proxy.handler.stats_calls import StatsHandlers
from hms_cache_proxy.handler.table_filter import TableFilterHandlers
from hms_cache_proxy.handler.tables import TableHandlers
from hms_cache_proxy.handler.txn import TxnHandlers
from hms_cache_proxy.handler.write_notes import WriteNotificationHandlers


class Handler(
    SessionHandlers,
    TableHandlers,
    DatabaseHandlers,
    PartitionHandlers,
    StatsHandlers,
    FunctionHandlers,
    NotificationHandlers,
    TxnHandlers,
    ConstraintHandlers,
    WriteNotificationHandlers,
    # issue 15: roles and privileges
    RoleHandlers,
    PrivilegeHandlers,
    CompactionHandlers,
    PartitionHelperHandlers,
    TableFilterHandlers,
    # issue 15: spec-style listings
    SpecListingHandlers,
    ScheduledQueryHandlers,
    RuntimeStatsHandlers,
    MaterializationHandlers,
):
    """Every call the service answers; methods the IDL declares but no mixin defines are
    answered by the processor with a clear "not implemented" error."""


__all__ = ["Handler"]
