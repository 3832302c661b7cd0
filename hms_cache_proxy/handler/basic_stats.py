"""The quick basic statistics a metastore keeps in table and partition parameters.

Hive's server fills ``numFiles`` and ``totalSize`` from a directory listing when a table or
partition is created or altered, and keeps the ``BASIC_STATS`` flag of ``COLUMN_STATS_ACCURATE``
in step (``StatsSetupConst``, ``MetaStoreServerUtils.updateTableStatsSlow`` /
``updatePartitionStatsFast`` / ``requireCalStats`` / ``isFastStatsSame`` /
``updateBasicState``, Hive 4.0). The rules are pure functions of parameter maps and an
environment context; the directory listing is passed in (``lister``), so this module does no
I/O: a lister that answers None (a location this process cannot list) leaves the stats alone.

The fast statistics are Hive 2.3's pair (numFiles, totalSize); Hive 4 adds
numFilesErasureCoded, which Hive 2.3 clients (Spark) would show as a user table property.
"""

from __future__ import annotations

import json
from collections.abc import Callable, MutableMapping
from typing import Any

NUM_FILES = "numFiles"
TOTAL_SIZE = "totalSize"
NUM_ROWS = "numRows"
RAW_DATA_SIZE = "rawDataSize"
NUM_ERASURE_CODED_FILES = "numFilesErasureCoded"
FAST_STATS = (NUM_FILES, TOTAL_SIZE)
SUPPORTED_STATS = (NUM_FILES, NUM_ROWS, TOTAL_SIZE, RAW_DATA_SIZE, NUM_ERASURE_CODED_FILES)

COLUMN_STATS_ACCURATE = "COLUMN_STATS_ACCURATE"
DO_NOT_UPDATE_STATS = "DO_NOT_UPDATE_STATS"
STATS_GENERATED = "STATS_GENERATED"
TASK = "TASK"
USER = "USER"
TRUE = "true"

Lister = Callable[[str | None], "tuple[int, int] | None"]
"""(files, bytes) below a location, or None when it cannot be listed here."""


def _env(env: dict[str, str] | None, key: str) -> str | None:
    return (env or {}).get(key)


# -- COLUMN_STATS_ACCURATE -------------------------------------------------------------------


def parse_stats_accurate(value: str | None) -> tuple[bool, dict[str, bool]]:
    """StatsSetupConst.parseStatsAcc: (basic stats accurate, {column: accurate})."""
    if value is None:
        return False, {}
    try:
        data = json.loads(value)
        if not isinstance(data, dict):
            raise ValueError(value)
    except ValueError:
        return value.lower() == "true", {}
    basic = str(data.get("BASIC_STATS", "false")).lower() == "true"
    cols_raw = data.get("COLUMN_STATS") or {}
    cols = (
        {str(k): str(v).lower() == "true" for k, v in cols_raw.items()}
        if isinstance(cols_raw, dict)
        else {}
    )
    return basic, cols


def format_stats_accurate(basic: bool, cols: dict[str, bool]) -> str:
    """Jackson's compact JSON of ColumnStatsAccurate: BASIC_STATS only when true, COLUMN_STATS
    only when non-empty, column names sorted, values the strings "true"/"false"."""
    body: dict[str, Any] = {}
    if basic:
        body["BASIC_STATS"] = "true"
    if cols:
        body["COLUMN_STATS"] = {k: "true" if v else "false" for k, v in sorted(cols.items())}
    return json.dumps(body, separators=(",", ":"))


def set_basic_stats_state(params: MutableMapping[str, str], accurate: bool) -> None:
    """StatsSetupConst.setBasicStatsState: "false" removes the whole key (column flags too)."""
    if not accurate:
        params.pop(COLUMN_STATS_ACCURATE, None)
        return
    _, cols = parse_stats_accurate(params.get(COLUMN_STATS_ACCURATE))
    params[COLUMN_STATS_ACCURATE] = format_stats_accurate(True, cols)


def clear_column_stats_state(params: MutableMapping[str, str]) -> None:
    """StatsSetupConst.clearColumnStatsState: keep the basic flag, drop every column flag."""
    basic, _ = parse_stats_accurate(params.get(COLUMN_STATS_ACCURATE))
    params[COLUMN_STATS_ACCURATE] = format_stats_accurate(basic, {})


def update_basic_state(env: dict[str, str] | None, params: MutableMapping[str, str]) -> None:
    """MetaStoreServerUtils.updateBasicState: BASIC_STATS true when the environment says the
    statistics come from a task (STATS_GENERATED=TASK), else the flag (whole key) removed."""
    set_basic_stats_state(params, _env(env, STATS_GENERATED) == TASK)


# -- when to compute --------------------------------------------------------------------------


def contains_all_fast_stats(params: dict[str, str] | None) -> bool:
    return params is not None and all(k in params for k in FAST_STATS)


def _as_long(value: str | None) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def is_fast_stats_same(old: dict[str, str] | None, new: dict[str, str] | None) -> bool:
    """MetaStoreServerUtils.isFastStatsSame: every fast stat present in the old parameters
    and numerically equal in the new ones. (Where Hive would fail parsing a missing or
    non-numeric new value, the stats are treated as different.)"""
    if old is None:
        return False
    for stat in FAST_STATS:
        if stat not in old:
            return False
        a, b = _as_long(old.get(stat)), _as_long((new or {}).get(stat))
        if a is None or b is None or a != b:
            return False
    return True


def require_cal_stats(
    old: dict[str, str] | None,
    new: dict[str, str] | None,
    *,
    is_view: bool,
    env: dict[str, str] | None,
    table_level: bool = False,
) -> bool:
    """MetaStoreServerUtils.requireCalStats(oldPart, newPart, tbl, env).

    ``table_level`` is the call with both partitions null (alter_table)."""
    if _env(env, DO_NOT_UPDATE_STATS) == TRUE:
        return False
    if is_view:
        return False
    if table_level:
        return True
    if new is None or not contains_all_fast_stats(new):
        return True
    if _env(env, STATS_GENERATED) in (TASK, USER):
        return True
    return not is_fast_stats_same(old, new)


def can_update_stats(table_params: dict[str, str] | None, *, is_view: bool) -> bool:
    """HMSHandler.canUpdateStats (autogather is on): not for views, nor for tables whose
    parameters say DO_NOT_UPDATE_STATS=true."""
    if is_view:
        return False
    value = (table_params or {}).get(DO_NOT_UPDATE_STATS)
    return not (value is not None and value.strip().lower() == "true")


# -- computing -------------------------------------------------------------------------------


def populate_quick_stats(params: MutableMapping[str, str], files: int, size: int) -> None:
    params[NUM_FILES] = str(files)
    params[TOTAL_SIZE] = str(size)


def update_table_stats(
    params: MutableMapping[str, str],
    location: str | None,
    env: dict[str, str] | None,
    lister: Lister,
    *,
    partitioned: bool,
    new_dir: bool,
    force: bool,
) -> None:
    """MetaStoreServerUtils.updateTableStatsSlow on a table's parameters (in place).

    A DO_NOT_UPDATE_STATS table parameter is transient: it is removed, and when "true" (any
    case) nothing else happens. Partitioned tables, tables whose directory this call created
    and (without ``force``) tables that already have the fast stats are left alone; otherwise
    numFiles/totalSize come from the listing and BASIC_STATS follows STATS_GENERATED.
    """
    if DO_NOT_UPDATE_STATS in params:
        value = params.pop(DO_NOT_UPDATE_STATS)
        if value is not None and value.strip().lower() == "true":
            return
    if new_dir or partitioned:
        return
    if not force and contains_all_fast_stats(dict(params)):
        return
    listed = lister(location)
    if listed is None:
        return
    populate_quick_stats(params, *listed)
    update_basic_state(env, params)


def update_partition_stats(
    params: MutableMapping[str, str],
    location: str | None,
    env: dict[str, str] | None,
    lister: Lister,
    *,
    made_dir: bool,
    force: bool,
    is_create: bool,
    transactional: bool,
) -> None:
    """MetaStoreServerUtils.updatePartitionStatsFast on a partition's parameters (in place)."""
    if not force and contains_all_fast_stats(dict(params)):
        return
    if not is_create and transactional:
        return
    if made_dir:
        return
    listed = lister(location)
    if listed is None:
        return
    populate_quick_stats(params, *listed)
    update_basic_state(env, params)


def reset_for_truncate(params: MutableMapping[str, str]) -> None:
    """HMSHandler.updateStatsForTruncate: every supported stat present becomes "0", the basic
    stats are accurate, the column stats flags are cleared."""
    for stat in SUPPORTED_STATS:
        if stat in params:
            params[stat] = "0"
    set_basic_stats_state(params, True)
    clear_column_stats_state(params)


def is_transactional(params: dict[str, str] | None) -> bool:
    return str((params or {}).get("transactional", "")).lower() == "true"
