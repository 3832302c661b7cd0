"""Hive's replication properties of a database (ReplConst and ``bootstrap.dump.state.*``).

REPL DUMP and LOAD keep their state in these parameters (``repl.last.id`` after every replayed
event, ``bootstrap.dump.state.<uuid>`` around a bootstrap dump). Hive's AlterDatabaseEvent
leaves them out of the ALTER_DATABASE message and writes no event when nothing else changed,
so a replica never receives another side's replication state and a load adds to the target's
log only the events it replays. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

REPL_LAST_ID = "repl.last.id"
REPL_TARGET_LAST_ID = "repl.target.last.id"
REPL_RESUME_STARTED = "repl.resume.started"
REPL_INCOMPATIBLE = "repl.incompatible"
BOOTSTRAP_DUMP_STATE_PREFIX = "bootstrap.dump.state."

REPL_PROPERTIES = frozenset(
    {
        "REPL_DATA_LOCATION_CHANGED",
        "true",
        "hive.repl.ckpt.key",
        REPL_LAST_ID,
        "repl.failover.endpoint",
        "repl.target.for",
        REPL_INCOMPATIBLE,
        "repl.background.enable",
        REPL_TARGET_LAST_ID,
        REPL_RESUME_STARTED,
        "repl.source.for",
        "hive.repl.first.inc.pending",
        "hive.repl.is.custom.db.loc",
        "hive.repl.is.custom.db.managedloc",
        BOOTSTRAP_DUMP_STATE_PREFIX,
        "org.apache.hadoop.hive.ql.hooks.EnforceReadOnlyDatabaseHook",
        "repl.metrics.failover.count",
        "repl.metrics.last.failover.type",
        "repl.metrics.failback.count",
        "repl.metrics.last.failback.starttime",
        "repl.metrics.last.failback.endtime",
    }
)
"""Every string constant of Hive's ReplConst (MetaStoreUtils.getReplicationDbProps takes them
all, values such as ``true`` included)."""


def is_repl_property(key: str) -> bool:
    """Whether Hive leaves ``key`` out of database events (quotes ignored, as Hive does)."""
    name = key.replace('"', "")
    return name.startswith(BOOTSTRAP_DUMP_STATE_PREFIX) or name in REPL_PROPERTIES


def without_repl(params: Mapping[str, str] | None) -> dict[str, str]:
    """``params`` less the replication properties."""
    return {k: v for k, v in (params or {}).items() if not is_repl_property(k)}


def has_repl(params: Mapping[str, str] | None) -> bool:
    """Whether ``params`` hold any replication property."""
    return any(is_repl_property(k) for k in params or {})


def repl_last_id_moved(before: Mapping[str, str] | None, after: Mapping[str, str] | None) -> bool:
    """HMSHandler#isReplicationEventIdUpdate: the alter sets a new ``repl.last.id`` (and is not
    part of a resume after failover); Hive then records ``repl.target.last.id``."""
    if not after or (after.get(REPL_RESUME_STARTED) or "").lower() == "true":
        return False
    new = after.get(REPL_LAST_ID)
    old = (before or {}).get(REPL_LAST_ID)
    return new is not None and (old is None or new.lower() != old.lower())
