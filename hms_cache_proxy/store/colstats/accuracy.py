"""COLUMN_STATS_ACCURATE (StatsSetupConst): the flag that says which statistics are current.

COLUMN_STATS_ACCURATE is Jackson's compact JSON ``{"BASIC_STATS":"true","COLUMN_STATS":{"a":
"true"}}`` (BASIC_STATS left out when false, COLUMN_STATS when empty, columns sorted); a value
that does not parse counts as "no column stats", and basic stats accurate iff it is "true"
(any case). A table update adds the columns to the table's flag (setColumnStatsState); a
partition update does the same to the partition's flag, where a partition without one gets
``BASIC_STATS`` true as well (DirectSqlUpdateStat.updatePartitionParamTable, Hive 4's batch
path). For a transactional table (``transactional=true``; partitions: full ACID only) the
change needs a write id and write-id list (ObjectStore.verifyStatsChangeCtx, else
MetaException), the flag is removed when the current statistics are not valid for the writer's
snapshot (isCurrentStatsValidForTheQuery), and TBLS/PARTITIONS.WRITE_ID takes the write id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

COLUMN_STATS_ACCURATE = "COLUMN_STATS_ACCURATE"
BASIC_STATS = "BASIC_STATS"
COLUMN_STATS = "COLUMN_STATS"


def _jackson_bool(value: Any) -> bool:
    """Boolean.valueOf(parser.getValueAsString()): "true" in any case, or a JSON true."""
    if value is True:
        return True
    return isinstance(value, str) and value.lower() == "true"


def parse_stats_accurate(text: str | None) -> tuple[bool, dict[str, bool]]:
    """(basic stats accurate, {column: flag}) of a COLUMN_STATS_ACCURATE value."""
    if text is None:
        return False, {}
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and set(body) <= {BASIC_STATS, COLUMN_STATS}:
        cols = body.get(COLUMN_STATS)
        if cols is None or isinstance(cols, dict):
            return _jackson_bool(body.get(BASIC_STATS)), {
                str(k): _jackson_bool(v) for k, v in (cols or {}).items()
            }
    return text.lower() == "true", {}


def format_stats_accurate(basic: bool, columns: Mapping[str, bool]) -> str:
    """The JSON Hive's ObjectWriter writes: compact, BASIC_STATS first, columns sorted."""
    body: dict[str, Any] = {}
    if basic:
        body[BASIC_STATS] = "true"
    if columns:
        # TreeMap<String, ...> orders by UTF-16 code units.
        ordered = sorted(columns, key=lambda c: c.encode("utf-16-be"))
        body[COLUMN_STATS] = {c: "true" if columns[c] else "false" for c in ordered}
    return msg.to_json(body)


def set_column_stats_state(params: dict[str, str], col_names: Iterable[str]) -> None:
    """StatsSetupConst.setColumnStatsState: mark the columns accurate (existing flags kept)."""
    basic, cols = parse_stats_accurate(params.get(COLUMN_STATS_ACCURATE))
    for name in col_names:
        cols.setdefault(name, True)
    params[COLUMN_STATS_ACCURATE] = format_stats_accurate(basic, cols)


def are_basic_stats_up_to_date(params: Mapping[str, str] | None) -> bool:
    if params is None:
        return False
    return parse_stats_accurate(params.get(COLUMN_STATS_ACCURATE))[0]


def can_column_stats_merge(params: Mapping[str, str] | None, col_name: str) -> bool:
    """StatsSetupConst.canColumnStatsMerge: the column is listed in the flag."""
    if params is None:
        return False
    return col_name in parse_stats_accurate(params.get(COLUMN_STATS_ACCURATE))[1]


def _write_id_list(text: str) -> ValidReaderWriteIdList:
    try:
        return ValidReaderWriteIdList.parse(text)
    except ValueError as exc:
        raise hms.MetaException(message=f"Invalid validWriteIdList {text!r}: {exc}") from None


def stats_valid_for_query(
    params: Mapping[str, str] | None,
    stats_write_id: int | None,
    valid_write_id_list: str | None,
    complete_writer: bool,
) -> bool:
    """ObjectStore.isCurrentStatsValidForTheQuery: may this snapshot use (or replace) them?"""
    if stats_write_id is None or stats_write_id < 1:
        return True  # not transactional statistics
    if not complete_writer and not are_basic_stats_up_to_date(params):
        return False
    if valid_write_id_list is not None:
        snapshot = _write_id_list(valid_write_id_list)
        if snapshot.is_write_id_valid(stats_write_id):
            return True
        if complete_writer and snapshot.is_write_id_aborted(stats_write_id):
            return True
    return False


def verify_stats_change(
    full_name: str,
    old: Mapping[str, str] | None,
    new: Mapping[str, str] | None,
    write_id: int | None,
    valid_write_id_list: str | None,
) -> str | None:
    """ObjectStore.verifyStatsChangeCtx for a column-statistics change; None when allowed."""
    wid = -1 if write_id is None else write_id
    if valid_write_id_list is not None and wid > 0:
        return None
    old_val = (old or {}).get(COLUMN_STATS_ACCURATE)
    new_val = (new or {}).get(COLUMN_STATS_ACCURATE)
    if not old_val and not new_val:
        return None
    if (
        old_val
        and new_val
        and old_val.lower() == new_val.lower()
        and not are_basic_stats_up_to_date(new)
    ):
        return None
    return (
        f"Cannot change stats state for a transactional table {full_name} without providing "
        f"the transactional write state for verification (new write ID {wid}, valid write IDs "
        f"{valid_write_id_list}; current state {old_val}; new state {new_val}"
    )
