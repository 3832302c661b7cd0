"""Partition calls: what Hive 4.0's HMSHandler and HiveAlterHandler do around the store.

Hive's rules, in Hive's order, with Hive's messages; deliberate deviations are listed in
docs/compatibility.md. Directories are made, moved and deleted for local ``file:`` locations
inside the roots only, as handler/confinement.py allows, and quick statistics are listed there
only.
"""

from __future__ import annotations

from hms_cache_proxy.handler.partition_alters import PartitionAlterHandlers
from hms_cache_proxy.handler.partition_exchange import PartitionExchangeHandlers
from hms_cache_proxy.handler.partition_reads import PartitionReadHandlers


class PartitionHandlers(PartitionReadHandlers, PartitionAlterHandlers, PartitionExchangeHandlers):
    """Reading, altering, renaming, dropping and exchanging partitions (adding:
    PartitionAddHandlers, which each of them builds on)."""
