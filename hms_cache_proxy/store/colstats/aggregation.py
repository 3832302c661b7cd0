"""Merging and aggregating column statistics, as Hive's default path does (pure logic).

Aggregation (get_aggr_stats_for)
--------------------------------
Computed in Python from the per-partition rows, with the rules of Hive's default path
(MetaStoreDirectSql.aggrColStatsForPartitions → aggrStatsUseDB, LinearExtrapolatePartStatus,
StatObjectConverter.fillColumnStatisticsData; the path Hive takes whenever
metastore.stats.fetch.bitvector is off, its default):

- ``partsFound``: how many of the requested partitions have statistics for every requested
  column (partsFoundForPartitions). Columns with statistics in no requested partition are left
  out; the others come out in the requested order, one per (column, COLUMN_TYPE).
- A column found in every requested partition, or in fewer than two: lowValue the lowest,
  highValue the highest (unset values ignored; decimals compared as numbers), numNulls,
  numTrues and numFalses summed; maxColLen, avgColLen the maxima. NDV: for string the largest
  partition NDV; for long, date, timestamp, double and decimal ``max + (sum - max) * ndv_tuner``
  (metastore.stats.ndv.tuner, default 0.0: the largest partition NDV) or, with
  ``ndv_density_function`` (metastore.stats.ndv.densityfunction, default off),
  ``(high - low) / avg((high_i - low_i) / ndv_i)`` clamped to [max, sum]; for long, date and
  timestamp never more than ``high - low + 1``. binary has no NDV.
- A column found in some partitions (at least two): linearly extrapolated by partition
  position (the order of the requested names, last position ``n - 1``) from the partitions
  holding the smallest and the largest value, per value the column type extrapolates
  (IExtrapolatePartStatus.indexMaps): lowValue towards the smaller end, highValue, numDVs,
  avgColLen and maxColLen towards the larger, in long arithmetic for integral values and via
  doubles (written back through Java's Double.toString) for decimals; sums (numNulls,
  numTrues, numFalses and the NDV sum) are scaled as ``sum / found * requested`` with the
  division first, as Hive's long arithmetic does. E.g. NDVs 5, 8, 50 at positions 0, 1, 2 of
  four requested partitions give 72.
- Bit vectors are never merged: no HyperLogLog or FM-sketch code is here, so the NDV is always
  the estimate above. Hive merges sketches only on its other path (fetch.bitvector on and every
  partition carrying a mergeable sketch). The aggregate carries no bit vectors or histograms.

set_aggr_stats_for with needMerge merges new statistics into the stored ones with the rules of
columnstats/merge/*ColumnStatsMerger (same rules as above, NDV the larger one) for the columns
the COLUMN_STATS_ACCURATE flag lists (MetaStoreServerUtils.getMergableCols); a merged row's bit
vector and histogram are cleared, since they no longer describe the merged data.
"""

from __future__ import annotations

import copy
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal as PyDecimal
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.colstats.stats_rows import (
    BINARY,
    BOOLEAN,
    DATE,
    DECIMAL,
    DOUBLE,
    LONG,
    STRING,
    TIMESTAMP,
    data_member,
    decimal_from_text,
    decimal_value,
    java_double_string,
    member_for_type,
    row_values,
)


def _range_key(member: str, value: Any) -> Any:
    """A comparable form of a low/high value (None stays None)."""
    if value is None:
        return None
    if member == DECIMAL:
        return decimal_value(value)
    if member == DATE:
        return value.daysSinceEpoch
    if member == TIMESTAMP:
        return value.secondsSinceEpoch
    return value


def _java_long(x: float) -> int:
    """Java's (long) cast of a double: toward zero, NaN to 0, saturating."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return (1 << 63) - 1 if x > 0 else -(1 << 63)
    return max(-(1 << 63), min((1 << 63) - 1, int(x)))


def _java_div(a: int, b: int) -> int:
    """Java's long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _min_max(member: str, a: Any, b: Any, pick_max: bool) -> Any:
    """The Mergers' setLowValue/setHighValue: the smaller/larger set value, else the set one."""
    if a is None:
        return b
    if b is None:
        return a
    ka, kb = _range_key(member, a), _range_key(member, b)
    if pick_max:
        return b if kb > ka else a
    return b if kb < ka else a


def _copy_data(data: hms.ColumnStatisticsData) -> hms.ColumnStatisticsData:
    return copy.deepcopy(data)


def merge_stats_obj(
    new: hms.ColumnStatisticsObj, old: hms.ColumnStatisticsObj
) -> hms.ColumnStatisticsObj:
    """ColumnStatsMerger.merge(new, old) without bit vectors: ``new`` updated with ``old``.

    Returns a copy of ``new``; its bit vector and histogram are dropped (they described only
    the new data). Objects of different members cannot merge (ValueError), as in Hive.
    """
    member = data_member(new.statsData)
    if member is None or member != data_member(old.statsData):
        raise ValueError(f"The column types must match: [{member}::{data_member(old.statsData)}]")
    out = hms.ColumnStatisticsObj(
        colName=new.colName, colType=new.colType, statsData=_copy_data(new.statsData)
    )
    a = getattr(out.statsData, member)
    b = getattr(old.statsData, member)
    a.numNulls = (a.numNulls or 0) + (b.numNulls or 0)
    if member == BOOLEAN:
        a.numTrues = (a.numTrues or 0) + (b.numTrues or 0)
        a.numFalses = (a.numFalses or 0) + (b.numFalses or 0)
        a.bitVectors = None
        return out
    if member in (STRING, BINARY):
        a.maxColLen = max(a.maxColLen or 0, b.maxColLen or 0)
        a.avgColLen = max(a.avgColLen or 0.0, b.avgColLen or 0.0)
    else:
        a.lowValue = _min_max(member, a.lowValue, b.lowValue, pick_max=False)
        a.highValue = _min_max(member, a.highValue, b.highValue, pick_max=True)
        a.histogram = None
    if member != BINARY:
        a.numDVs = max(a.numDVs or 0, b.numDVs or 0)
    a.bitVectors = None
    return out


# -- aggregation: Hive's default (direct SQL) path ------------------------------------------------

_LONG_STATS = (
    "LONG_LOW_VALUE",
    "LONG_HIGH_VALUE",
    "NUM_NULLS",
    "NUM_DISTINCTS",
    "AVG_NDV_LONG",
    "SUM_NUM_DISTINCTS",
)
_EXTRAPOLATED: dict[str, tuple[str, ...]] = {
    **{
        t: _LONG_STATS
        for t in ("bigint", "int", "smallint", "tinyint", "date", "timestamp", "long")
    },
    **{
        t: (
            "DOUBLE_LOW_VALUE",
            "DOUBLE_HIGH_VALUE",
            "NUM_NULLS",
            "NUM_DISTINCTS",
            "AVG_NDV_DOUBLE",
            "SUM_NUM_DISTINCTS",
        )
        for t in ("double", "float")
    },
    **{
        t: ("AVG_COL_LEN", "MAX_COL_LEN", "NUM_NULLS", "NUM_DISTINCTS", "SUM_NUM_DISTINCTS")
        for t in ("varchar", "char", "string")
    },
    "boolean": ("NUM_TRUES", "NUM_FALSES", "NUM_NULLS", "SUM_NUM_DISTINCTS"),
    "binary": ("AVG_COL_LEN", "MAX_COL_LEN", "NUM_NULLS", "SUM_NUM_DISTINCTS"),
    "decimal": (
        "BIG_DECIMAL_LOW_VALUE",
        "BIG_DECIMAL_HIGH_VALUE",
        "NUM_NULLS",
        "NUM_DISTINCTS",
        "AVG_NDV_DECIMAL",
        "SUM_NUM_DISTINCTS",
    ),
}
"""IExtrapolatePartStatus.indexMaps: what is extrapolated per (exact, lower-case) column type;
other types (``varchar(10)`` too) get every value but the densities."""
_DEFAULT_EXTRAPOLATED = (
    "LONG_LOW_VALUE",
    "LONG_HIGH_VALUE",
    "DOUBLE_LOW_VALUE",
    "DOUBLE_HIGH_VALUE",
    "BIG_DECIMAL_LOW_VALUE",
    "BIG_DECIMAL_HIGH_VALUE",
    "NUM_NULLS",
    "NUM_DISTINCTS",
    "AVG_COL_LEN",
    "MAX_COL_LEN",
    "NUM_TRUES",
    "NUM_FALSES",
    "SUM_NUM_DISTINCTS",
)
_MIN_STATS = frozenset({"LONG_LOW_VALUE", "DOUBLE_LOW_VALUE", "BIG_DECIMAL_LOW_VALUE"})
_MAX_STATS = frozenset(
    {
        "LONG_HIGH_VALUE",
        "DOUBLE_HIGH_VALUE",
        "BIG_DECIMAL_HIGH_VALUE",
        "NUM_DISTINCTS",
        "AVG_COL_LEN",
        "MAX_COL_LEN",
    }
)
_SUM_STATS = {
    "NUM_NULLS": "NUM_NULLS",
    "NUM_TRUES": "NUM_TRUES",
    "NUM_FALSES": "NUM_FALSES",
    "SUM_NUM_DISTINCTS": "NUM_DISTINCTS",
}
_DENSITIES = {
    "AVG_NDV_LONG": ("LONG_LOW_VALUE", "LONG_HIGH_VALUE"),
    "AVG_NDV_DOUBLE": ("DOUBLE_LOW_VALUE", "DOUBLE_HIGH_VALUE"),
    "AVG_NDV_DECIMAL": ("BIG_DECIMAL_LOW_VALUE", "BIG_DECIMAL_HIGH_VALUE"),
}
_DOUBLE_STATS = frozenset({"DOUBLE_LOW_VALUE", "DOUBLE_HIGH_VALUE", "AVG_COL_LEN"})
_DECIMAL_STATS = frozenset({"BIG_DECIMAL_LOW_VALUE", "BIG_DECIMAL_HIGH_VALUE"})


def _stat_values(obj: hms.ColumnStatisticsObj) -> dict[str, Any]:
    """One partition's statistics as PART_COL_STATS values (decimals as numbers)."""
    values = row_values(obj)
    for c in _DECIMAL_STATS:
        if values.get(c) is not None:
            values[c] = PyDecimal(values[c])
    return values


def _density_terms(values: Sequence[Mapping[str, Any]], stat: str) -> list[float]:
    """``(high - low) / NUM_DISTINCTS`` of each partition that has all three (and NDV > 0)."""
    low_c, high_c = _DENSITIES[stat]
    out = []
    for v in values:
        low, high, ndv = v.get(low_c), v.get(high_c), v.get("NUM_DISTINCTS")
        if low is not None and high is not None and ndv:
            out.append(float(PyDecimal(high) - PyDecimal(low)) / ndv)
    return out


def _sum(values: Iterable[Any]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _plain_row(values: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The aggregate query of aggrStatsUseDB: min/max/sum/avg over the partitions."""
    row: dict[str, Any] = {}
    for c in _MIN_STATS | _MAX_STATS:
        present = [v[c] for v in values if v.get(c) is not None]
        row[c] = (min(present) if c in _MIN_STATS else max(present)) if present else None
    for c, source in _SUM_STATS.items():
        row[c] = _sum(v.get(source) for v in values)
    for c in _DENSITIES:
        terms = _density_terms(values, c)
        row[c] = sum(terms) / len(terms) if terms else None
    return row


def _linear(points: Sequence[tuple[int, Any]], stat: str, last: int) -> Any:
    """LinearExtrapolatePartStatus: the value at the first/last position, extrapolated from
    the partitions holding the smallest and largest values (long arithmetic for longs)."""
    min_ind, vmin = min(points, key=lambda p: p[1])
    max_ind, vmax = max(reversed(points), key=lambda p: p[1])
    if min_ind == max_ind:
        return vmin
    is_max = stat in _MAX_STATS
    if stat in _DECIMAL_STATS or stat in _DOUBLE_STATS:
        lo, hi = float(vmin), float(vmax)
        if is_max:
            if min_ind < max_ind:
                x = lo + (hi - lo) * (last - min_ind) / (max_ind - min_ind)
            else:
                x = lo + (hi - lo) * min_ind / (min_ind - max_ind)
        elif min_ind < max_ind:
            x = hi - (hi - lo) * max_ind / (max_ind - min_ind)
        else:
            x = hi - (hi - lo) * (last - max_ind) / (min_ind - max_ind)
        return PyDecimal(java_double_string(x)) if stat in _DECIMAL_STATS else x
    lo, hi = int(vmin), int(vmax)
    if is_max:
        if min_ind < max_ind:
            return lo + _java_div((hi - lo) * (last - min_ind), max_ind - min_ind)
        return lo + _java_div((hi - lo) * min_ind, min_ind - max_ind)
    if min_ind < max_ind:
        return hi - _java_div((hi - lo) * max_ind, max_ind - min_ind)
    return hi - _java_div((hi - lo) * (last - max_ind), min_ind - max_ind)


def _extrapolated_row(
    entries: Sequence[tuple[int, Mapping[str, Any]]], col_type: str, num_parts: int
) -> dict[str, Any]:
    """aggrStatsUseDB's extrapolation for a column found in some of the partitions."""
    t = col_type.strip().lower()
    stats = _EXTRAPOLATED.get("decimal" if t.startswith("decimal") else t, _DEFAULT_EXTRAPOLATED)
    values = [v for _, v in entries]
    found = len(entries)
    row: dict[str, Any] = dict.fromkeys(
        [*(_MIN_STATS | _MAX_STATS), *_SUM_STATS, *_DENSITIES], None
    )
    for stat in stats:
        if stat in _SUM_STATS:
            total = _sum(v.get(_SUM_STATS[stat]) for v in values)
            # Hive: sum / found * requested, in long arithmetic (division first).
            row[stat] = None if total is None else _java_div(total, found) * num_parts
        elif stat in _DENSITIES:
            terms = _density_terms(values, stat)
            row[stat] = sum(terms) / len(terms) if terms else None
        else:
            points = [(i, v[stat]) for i, v in entries if v.get(stat) is not None]
            row[stat] = _linear(points, stat, num_parts - 1) if points else None
    return row


def _row_member(col_type: str, row: Mapping[str, Any]) -> str:
    member = member_for_type(col_type)
    if member is not None:
        return member
    if row.get("NUM_TRUES") is not None or row.get("NUM_FALSES") is not None:
        return BOOLEAN
    if (
        row.get("BIG_DECIMAL_LOW_VALUE") is not None
        or row.get("BIG_DECIMAL_HIGH_VALUE") is not None
    ):
        return DECIMAL
    if row.get("DOUBLE_LOW_VALUE") is not None or row.get("DOUBLE_HIGH_VALUE") is not None:
        return DOUBLE
    if row.get("MAX_COL_LEN") is not None and row.get("LONG_LOW_VALUE") is None:
        return STRING if row.get("NUM_DISTINCTS") is not None else BINARY
    return LONG


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _estimate_ndv(
    lower: int, higher: int, tuner: float, density: float | None, span: float | None
) -> int:
    """fillColumnStatisticsData's NDV: density estimate clamped to [lower, higher] when asked
    for and possible, else ``lower + (higher - lower) * tuner``."""
    if density is not None and span is not None and density != 0.0:
        return min(max(_java_long(span / density), lower), higher)
    return _java_long(lower + (higher - lower) * tuner)


def _fill(
    col_name: str, col_type: str, row: Mapping[str, Any], tuner: float, use_density: bool
) -> hms.ColumnStatisticsObj:
    """StatObjectConverter.fillColumnStatisticsData (adjusted-NDV form) of one aggregate row."""

    def lng(c: str) -> int:
        return 0 if row.get(c) is None else int(row[c])

    member = _row_member(col_type, row)
    nulls = lng("NUM_NULLS")
    lower, higher = lng("NUM_DISTINCTS"), lng("SUM_NUM_DISTINCTS")
    data = hms.ColumnStatisticsData()
    if member == BOOLEAN:
        data.booleanStats = hms.BooleanColumnStatsData(
            numTrues=lng("NUM_TRUES"), numFalses=lng("NUM_FALSES"), numNulls=nulls
        )
    elif member in (STRING, BINARY):
        cls = hms.StringColumnStatsData if member == STRING else hms.BinaryColumnStatsData
        d = cls(
            maxColLen=lng("MAX_COL_LEN"),
            avgColLen=float(row.get("AVG_COL_LEN") or 0.0),
            numNulls=nulls,
        )
        if member == STRING:
            d.numDVs = lower
        setattr(data, member, d)
    elif member == DOUBLE:
        low, high = row.get("DOUBLE_LOW_VALUE"), row.get("DOUBLE_HIGH_VALUE")
        span = None
        if use_density and low is not None and high is not None:
            span = float(_java_long(float(high)) - _java_long(float(low)))
        data.doubleStats = hms.DoubleColumnStatsData(
            lowValue=None if low is None else float(low),
            highValue=None if high is None else float(high),
            numNulls=nulls,
            numDVs=_estimate_ndv(
                lower, higher, tuner, row.get("AVG_NDV_DOUBLE") if use_density else None, span
            ),
        )
    elif member == DECIMAL:
        low, high = row.get("BIG_DECIMAL_LOW_VALUE"), row.get("BIG_DECIMAL_HIGH_VALUE")
        span = None
        if use_density and low is not None and high is not None:
            span = _float32(float(PyDecimal(high) - PyDecimal(low)))
        data.decimalStats = hms.DecimalColumnStatsData(
            lowValue=None if low is None else decimal_from_text(str(low)),
            highValue=None if high is None else decimal_from_text(str(high)),
            numNulls=nulls,
            numDVs=_estimate_ndv(
                lower, higher, tuner, row.get("AVG_NDV_DECIMAL") if use_density else None, span
            ),
        )
    else:
        low, high = row.get("LONG_LOW_VALUE"), row.get("LONG_HIGH_VALUE")
        span = None
        bound = None
        if low is not None and high is not None:
            bound = int(high) - int(low) + 1
            if use_density:
                span = float(int(high) - int(low))
        ndv = _estimate_ndv(
            lower, higher, tuner, row.get("AVG_NDV_LONG") if use_density else None, span
        )
        if bound is not None:
            ndv = min(ndv, bound)  # no more distinct values than integers in the range
        if member == DATE:
            lo = None if low is None else hms.Date(daysSinceEpoch=int(low))
            hi = None if high is None else hms.Date(daysSinceEpoch=int(high))
            data.dateStats = hms.DateColumnStatsData(
                lowValue=lo, highValue=hi, numNulls=nulls, numDVs=ndv
            )
        elif member == TIMESTAMP:
            lo = None if low is None else hms.Timestamp(secondsSinceEpoch=int(low))
            hi = None if high is None else hms.Timestamp(secondsSinceEpoch=int(high))
            data.timestampStats = hms.TimestampColumnStatsData(
                lowValue=lo, highValue=hi, numNulls=nulls, numDVs=ndv
            )
        else:
            data.longStats = hms.LongColumnStatsData(
                lowValue=None if low is None else int(low),
                highValue=None if high is None else int(high),
                numNulls=nulls,
                numDVs=ndv,
            )
    return hms.ColumnStatisticsObj(colName=col_name, colType=col_type, statsData=data)


def parts_found(
    part_names: Sequence[str],
    col_names: Sequence[str],
    stats: Mapping[str, Sequence[hms.ColumnStatisticsObj]],
) -> int:
    """Partitions (of those requested) with statistics for every requested column."""
    wanted = set(col_names)
    return sum(
        1 for p in dict.fromkeys(part_names) if wanted <= {o.colName for o in stats.get(p, ())}
    )


def aggregate_partition_stats(
    part_names: Sequence[str],
    col_names: Sequence[str],
    stats: Mapping[str, Sequence[hms.ColumnStatisticsObj]],
    *,
    ndv_tuner: float = 0.0,
    use_density_function: bool = False,
) -> hms.AggrStats:
    """AggrStats of ``col_names`` over ``part_names`` from each partition's statistics.

    ``stats`` maps a partition name to its statistics objects (partitions without any may be
    missing). Columns come out in the requested order; a column whose partitions disagree on
    its type yields one object per type, as Hive's GROUP BY COLUMN_NAME, COLUMN_TYPE does.
    """
    names = list(dict.fromkeys(part_names))
    cols = list(dict.fromkeys(col_names))
    if not names or not cols:
        return hms.AggrStats(colStats=[], partsFound=0)
    wanted = set(cols)
    groups: dict[tuple[str, str], list[tuple[int, dict[str, Any]]]] = {}
    for position, part in enumerate(names):
        for obj in stats.get(part, ()):
            if obj.colName in wanted and data_member(obj.statsData) is not None:
                key = (obj.colName, obj.colType)
                groups.setdefault(key, []).append((position, _stat_values(obj)))
    out = []
    for col in cols:
        for (name, col_type), entries in groups.items():
            if name != col:
                continue
            if len(entries) == len(names) or len(entries) < 2:
                row = _plain_row([v for _, v in entries])
            else:
                row = _extrapolated_row(entries, col_type, len(names))
            out.append(_fill(name, col_type, row, ndv_tuner, use_density_function))
    return hms.AggrStats(colStats=out, partsFound=parts_found(names, cols, stats))
