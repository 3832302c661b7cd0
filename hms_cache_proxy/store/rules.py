"""Hive's names and rules that the handler and the store both apply, defined once here so the
handler needs no module of the SQL store or the transaction service (pure: no I/O, no SQL)."""

from __future__ import annotations

from collections.abc import Mapping

ADMIN_ROLE = "admin"
PUBLIC_ROLE = "public"
"""The two roles every metastore has: ``public`` held by every user without a ROLE_MAP row,
``admin`` created at init-db; neither can be created or dropped through the API."""

PARTITION_LEVEL_PRIVILEGE = "PARTITION_LEVEL_PRIVILEGE"


def partition_level(params: Mapping[str, str] | None) -> bool:
    """Whether a table's partitions carry their own privileges (Hive's table parameter)."""
    return str((params or {}).get(PARTITION_LEVEL_PRIVILEGE, "")).upper() == "TRUE"


MISSING_PARTITIONS = "Some partitions to drop are missing"
"""drop_partitions' NoSuchObjectException when a named partition is absent (HMSHandler)."""

COMPACTION_REFUSED = "c"
"""COMPACTION_QUEUE.CQ_STATE of a compaction the metastore refused (CompactionState.REFUSED)."""
