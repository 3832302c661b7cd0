"""Table calls: what Hive 4.0's HMSHandler and HiveAlterHandler do around the store.

Hive's rules, in Hive's order, with Hive's messages; deliberate deviations are listed in
docs/compatibility.md. Filesystem effects (directories made, moved, emptied, deleted; quick
statistics listed) apply to local ``file:`` locations inside the roots only, as
handler/confinement.py allows.
"""

from __future__ import annotations

from hms_cache_proxy.handler.table_alters import TableAlterHandlers
from hms_cache_proxy.handler.table_create import TableCreateHandlers
from hms_cache_proxy.handler.table_drops import TableDropHandlers
from hms_cache_proxy.handler.table_reads import TableReadHandlers
from hms_cache_proxy.handler.table_truncate import TableTruncateHandlers


class TableHandlers(
    TableReadHandlers,
    TableCreateHandlers,
    TableDropHandlers,
    TableAlterHandlers,
    TableTruncateHandlers,
):
    """Reading, creating, dropping, altering and truncating tables."""
