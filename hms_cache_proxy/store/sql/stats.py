"""Column statistics: TAB_COL_STATS and PART_COL_STATS, their state flags, and aggregation.

Rows, as Hive 4.0 writes them
-----------------------------
One row per (table or partition, column, ENGINE); CS_ID comes from the DataNucleus sequences of
MTableColumnStatistics / MPartitionColumnStatistics. The row repeats CAT_NAME, DB_NAME,
TABLE_NAME (and PARTITION_NAME) and the column's COLUMN_TYPE. On write the union member that is
set decides the columns used (StatObjectConverter.convertToM*ColumnStatistics):

==========  ==========================================================================
member      columns
==========  ==========================================================================
boolean     NUM_TRUES, NUM_FALSES, NUM_NULLS (bitVectors are not stored)
long        LONG_LOW/HIGH_VALUE, NUM_NULLS, NUM_DISTINCTS, BIT_VECTOR, HISTOGRAM
double      DOUBLE_LOW/HIGH_VALUE, NUM_NULLS, NUM_DISTINCTS, BIT_VECTOR, HISTOGRAM
decimal     BIG_DECIMAL_LOW/HIGH_VALUE as ``new BigDecimal(new BigInteger(unscaled), scale)
            .toString()`` (DecimalUtils.createJdoDecimalString: "12.50", "1E+3", "1E-8"),
            read back with ``new BigDecimal(text)`` (scale from the text, unscaled as
            BigInteger.toByteArray(): minimal big-endian two's complement); NUM_NULLS,
            NUM_DISTINCTS, BIT_VECTOR, HISTOGRAM
string      MAX_COL_LEN, AVG_COL_LEN, NUM_NULLS, NUM_DISTINCTS, BIT_VECTOR
binary      MAX_COL_LEN, AVG_COL_LEN, NUM_NULLS (bitVectors are not stored)
date        LONG_LOW/HIGH_VALUE = daysSinceEpoch, NUM_NULLS, NUM_DISTINCTS, BIT_VECTOR, HISTOGRAM
timestamp   LONG_LOW/HIGH_VALUE = secondsSinceEpoch, and the same as date
==========  ==========================================================================

On read the lower-cased COLUMN_TYPE decides the member (StatObjectConverter
.get*ColumnStatisticsObj): boolean; string, varchar*, char*; binary; tinyint, smallint, int,
bigint; float, double; decimal*; date; timestamp. For any other type Hive leaves the union empty
(which a Java client cannot even deserialize); here the member is then inferred from the filled
columns. Bit vectors and histograms are returned only when ``stats_fetch_bitvector`` /
``stats_fetch_kll`` are set (Hive's metastore.stats.fetch.bitvector / .kll, both false by
default); they are always stored.

Upserts follow ObjectStore.setFieldsIntoOldStats / DirectSqlUpdateStat: an existing row keeps
every value the new statistics leave unset (None), COLUMN_TYPE is not rewritten, LAST_ANALYZED
and ENGINE always are. The handler stamps LAST_ANALYZED with the current time, as Hive's
normalizeColStatsInput does.

State flags (StatsSetupConst)
-----------------------------
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
import json
import math
import struct
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal as PyDecimal
from decimal import InvalidOperation
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import partnames
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.sql import ids as idseq
from hms_cache_proxy.store.sql import schema as s
from hms_cache_proxy.store.sql.batch import chunks, fetch_in, group
from hms_cache_proxy.store.sql.common import TxnWrite, is_transactional, now, table_ref
from hms_cache_proxy.store.sql.partitions import PartitionsMixin, TableKeys
from hms_cache_proxy.store.txn.snapshots import ValidReaderWriteIdList

DEFAULT_ENGINE = "hive"
COLUMN_STATS_ACCURATE = "COLUMN_STATS_ACCURATE"
BASIC_STATS = "BASIC_STATS"
COLUMN_STATS = "COLUMN_STATS"

_TCS, _PCS, _P, _T = s.TAB_COL_STATS, s.PART_COL_STATS, s.PARTITIONS, s.TBLS

VALUE_COLUMNS = (
    "LONG_LOW_VALUE",
    "LONG_HIGH_VALUE",
    "DOUBLE_LOW_VALUE",
    "DOUBLE_HIGH_VALUE",
    "BIG_DECIMAL_LOW_VALUE",
    "BIG_DECIMAL_HIGH_VALUE",
    "NUM_NULLS",
    "NUM_DISTINCTS",
    "BIT_VECTOR",
    "AVG_COL_LEN",
    "MAX_COL_LEN",
    "NUM_TRUES",
    "NUM_FALSES",
    "HISTOGRAM",
)
"""The columns that hold statistics (the rest name the owner and the column)."""

SKETCH_COLUMNS = frozenset({"BIT_VECTOR", "HISTOGRAM"})

# Union members of ColumnStatisticsData, in IDL order.
BOOLEAN, LONG, DOUBLE, STRING, BINARY, DECIMAL, DATE, TIMESTAMP = (
    "booleanStats",
    "longStats",
    "doubleStats",
    "stringStats",
    "binaryStats",
    "decimalStats",
    "dateStats",
    "timestampStats",
)
MEMBERS = (BOOLEAN, LONG, DOUBLE, STRING, BINARY, DECIMAL, DATE, TIMESTAMP)
_LONG_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})


# ==============================================================================================
# COLUMN_STATS_ACCURATE (StatsSetupConst)
# ==============================================================================================


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


def is_acid(params: Mapping[str, str] | None) -> bool:
    """TxnUtils.isAcidTable: transactional and not insert-only."""
    props = str((params or {}).get("transactional_properties", "")).lower()
    return is_transactional(params) and props != "insert_only"


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
    same = (old_val or None) is not None and (new_val or None) is not None
    if same and old_val.lower() == new_val.lower() and not are_basic_stats_up_to_date(new):
        return None
    return (
        f"Cannot change stats state for a transactional table {full_name} without providing "
        f"the transactional write state for verification (new write ID {wid}, valid write IDs "
        f"{valid_write_id_list}; current state {old_val}; new state {new_val}"
    )


# ==============================================================================================
# Thrift objects <-> rows
# ==============================================================================================


def decimal_to_text(value: hms.Decimal) -> str:
    """DecimalUtils.createJdoDecimalString: BigDecimal(BigInteger(unscaled), scale).toString()."""
    raw = bytes(value.unscaled or b"")
    if not raw:
        raise hms.InvalidObjectException(message="Invalid decimal: the unscaled value is empty")
    unscaled = int.from_bytes(raw, "big", signed=True)
    digits = tuple(int(c) for c in str(abs(unscaled)))
    # Python's Decimal and Java's BigDecimal print by the same (to-scientific-string) rule.
    return str(PyDecimal((1 if unscaled < 0 else 0, digits, -int(value.scale or 0))))


def decimal_from_text(text: str) -> hms.Decimal:
    """DecimalUtils.createThriftDecimal: scale from the text, unscaled as BigInteger bytes."""
    try:
        d = PyDecimal(text.strip())
    except InvalidOperation:
        raise hms.MetaException(message=f"Invalid decimal statistics value {text!r}") from None
    if not d.is_finite():
        raise hms.MetaException(message=f"Invalid decimal statistics value {text!r}")
    sign, digits, exponent = d.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    return hms.Decimal(scale=-int(exponent), unscaled=_java_bytes(unscaled))


def _java_bytes(n: int) -> bytes:
    """BigInteger.toByteArray: minimal big-endian two's complement, at least one byte."""
    bits = n.bit_length() if n >= 0 else (~n).bit_length()
    return n.to_bytes(bits // 8 + 1, "big", signed=True)


def decimal_value(d: hms.Decimal) -> PyDecimal:
    raw = bytes(d.unscaled or b"\x00")
    return PyDecimal(int.from_bytes(raw, "big", signed=True)).scaleb(-int(d.scale or 0))


def java_double_string(x: float) -> str:
    """Java's Double.toString (shortest digits; E notation outside [1e-3, 1e7))."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digits, exp = PyDecimal(repr(x)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exp)  # position of the decimal point after the first digit run
    prefix = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        whole = text[:point].ljust(point, "0")
        frac = text[point:] or "0"
        return f"{prefix}{whole}.{frac}"
    mantissa = text[0] + "." + (text[1:] or "0")
    return f"{prefix}{mantissa}E{point - 1}"


def data_member(data: hms.ColumnStatisticsData | None) -> str | None:
    """The union member that is set, or None."""
    if data is None:
        return None
    for name in MEMBERS:
        if getattr(data, name, None) is not None:
            return name
    return None


def member_for_type(col_type: str | None) -> str | None:
    """The member Hive reads a row of this column type as (None for other types)."""
    t = (col_type or "").strip().lower()
    if t == "boolean":
        return BOOLEAN
    if t == "string" or t.startswith("varchar") or t.startswith("char"):
        return STRING
    if t == "binary":
        return BINARY
    if t in _LONG_TYPES:
        return LONG
    if t in ("double", "float"):
        return DOUBLE
    if t.startswith("decimal"):
        return DECIMAL
    if t == "date":
        return DATE
    if t == "timestamp":
        return TIMESTAMP
    return None


def row_values(obj: hms.ColumnStatisticsObj) -> dict[str, Any]:
    """The statistics columns an object sets (unset values left out)."""
    member = data_member(obj.statsData)
    if member is None:
        raise hms.InvalidObjectException(
            message=f"Invalid column stats object: no statistics for column {obj.colName}"
        )
    d = getattr(obj.statsData, member)
    v: dict[str, Any] = {"NUM_NULLS": d.numNulls}
    if member == BOOLEAN:
        v.update(NUM_TRUES=d.numTrues, NUM_FALSES=d.numFalses)
    elif member in (STRING, BINARY):
        v.update(MAX_COL_LEN=d.maxColLen, AVG_COL_LEN=d.avgColLen)
        if member == STRING:
            v.update(NUM_DISTINCTS=d.numDVs, BIT_VECTOR=d.bitVectors)
    else:
        v.update(NUM_DISTINCTS=d.numDVs, BIT_VECTOR=d.bitVectors, HISTOGRAM=d.histogram)
        low, high = d.lowValue, d.highValue
        if member == LONG:
            v.update(LONG_LOW_VALUE=low, LONG_HIGH_VALUE=high)
        elif member == DOUBLE:
            v.update(DOUBLE_LOW_VALUE=low, DOUBLE_HIGH_VALUE=high)
        elif member == DECIMAL:
            v.update(
                BIG_DECIMAL_LOW_VALUE=None if low is None else decimal_to_text(low),
                BIG_DECIMAL_HIGH_VALUE=None if high is None else decimal_to_text(high),
            )
        elif member == DATE:
            v.update(
                LONG_LOW_VALUE=None if low is None else low.daysSinceEpoch,
                LONG_HIGH_VALUE=None if high is None else high.daysSinceEpoch,
            )
        else:
            v.update(
                LONG_LOW_VALUE=None if low is None else low.secondsSinceEpoch,
                LONG_HIGH_VALUE=None if high is None else high.secondsSinceEpoch,
            )
    return {k: (bytes(x) if k in SKETCH_COLUMNS else x) for k, x in v.items() if x is not None}


def _infer_member(row: Any) -> str:
    if row.NUM_TRUES is not None or row.NUM_FALSES is not None:
        return BOOLEAN
    if row.BIG_DECIMAL_LOW_VALUE is not None or row.BIG_DECIMAL_HIGH_VALUE is not None:
        return DECIMAL
    if row.DOUBLE_LOW_VALUE is not None or row.DOUBLE_HIGH_VALUE is not None:
        return DOUBLE
    if row.LONG_LOW_VALUE is not None or row.LONG_HIGH_VALUE is not None:
        return LONG
    if row.MAX_COL_LEN is not None or row.AVG_COL_LEN is not None:
        return STRING if row.NUM_DISTINCTS is not None else BINARY
    return LONG


def _blob(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def stats_obj_from_row(
    row: Any, *, bit_vectors: bool = False, histograms: bool = False
) -> hms.ColumnStatisticsObj:
    """A ColumnStatisticsObj of a TAB_COL_STATS / PART_COL_STATS row, typed by COLUMN_TYPE."""
    member = member_for_type(row.COLUMN_TYPE) or _infer_member(row)
    nulls = row.NUM_NULLS or 0
    ndv = row.NUM_DISTINCTS or 0
    bv = _blob(row.BIT_VECTOR) if bit_vectors else None
    hist = _blob(row.HISTOGRAM) if histograms else None
    data = hms.ColumnStatisticsData()
    if member == BOOLEAN:
        data.booleanStats = hms.BooleanColumnStatsData(
            numTrues=row.NUM_TRUES or 0, numFalses=row.NUM_FALSES or 0, numNulls=nulls
        )
    elif member == STRING:
        data.stringStats = hms.StringColumnStatsData(
            maxColLen=row.MAX_COL_LEN or 0,
            avgColLen=float(row.AVG_COL_LEN or 0.0),
            numNulls=nulls,
            numDVs=ndv,
            bitVectors=bv,
        )
    elif member == BINARY:
        data.binaryStats = hms.BinaryColumnStatsData(
            maxColLen=row.MAX_COL_LEN or 0, avgColLen=float(row.AVG_COL_LEN or 0.0), numNulls=nulls
        )
    elif member == DOUBLE:
        data.doubleStats = hms.DoubleColumnStatsData(
            lowValue=None if row.DOUBLE_LOW_VALUE is None else float(row.DOUBLE_LOW_VALUE),
            highValue=None if row.DOUBLE_HIGH_VALUE is None else float(row.DOUBLE_HIGH_VALUE),
            numNulls=nulls,
            numDVs=ndv,
            bitVectors=bv,
            histogram=hist,
        )
    elif member == DECIMAL:
        low, high = row.BIG_DECIMAL_LOW_VALUE, row.BIG_DECIMAL_HIGH_VALUE
        data.decimalStats = hms.DecimalColumnStatsData(
            lowValue=None if low is None else decimal_from_text(low),
            highValue=None if high is None else decimal_from_text(high),
            numNulls=nulls,
            numDVs=ndv,
            bitVectors=bv,
            histogram=hist,
        )
    else:
        low, high = row.LONG_LOW_VALUE, row.LONG_HIGH_VALUE
        if member == LONG:
            data.longStats = hms.LongColumnStatsData(
                lowValue=low,
                highValue=high,
                numNulls=nulls,
                numDVs=ndv,
                bitVectors=bv,
                histogram=hist,
            )
        elif member == DATE:
            data.dateStats = hms.DateColumnStatsData(
                lowValue=None if low is None else hms.Date(daysSinceEpoch=low),
                highValue=None if high is None else hms.Date(daysSinceEpoch=high),
                numNulls=nulls,
                numDVs=ndv,
                bitVectors=bv,
                histogram=hist,
            )
        else:
            data.timestampStats = hms.TimestampColumnStatsData(
                lowValue=None if low is None else hms.Timestamp(secondsSinceEpoch=low),
                highValue=None if high is None else hms.Timestamp(secondsSinceEpoch=high),
                numNulls=nulls,
                numDVs=ndv,
                bitVectors=bv,
                histogram=hist,
            )
    # colType is required on the wire: a row without one (never written by Hive) reads as "".
    return hms.ColumnStatisticsObj(
        colName=row.COLUMN_NAME, colType=row.COLUMN_TYPE or "", statsData=data
    )


# ==============================================================================================
# Merging and aggregation (pure)
# ==============================================================================================


def column_statistics(
    cat: str,
    db: str,
    tbl: str,
    rows: Sequence[Any],
    flags: Mapping[str, bool],
    compliant: bool | None,
    engine: str,
    part_name: str | None = None,
) -> hms.ColumnStatistics:
    """Statistics rows of one table or partition (in answer order) as Thrift's
    ColumnStatistics: the database path and the cache build answers alike through here."""
    desc = hms.ColumnStatisticsDesc(
        isTblLevel=part_name is None,
        dbName=db,
        tableName=tbl,
        partName=part_name,
        lastAnalyzed=min(r.LAST_ANALYZED for r in rows),
        catName=cat,
    )
    return hms.ColumnStatistics(
        statsDesc=desc,
        statsObj=[stats_obj_from_row(r, **flags) for r in rows],
        isStatsCompliant=compliant,
        engine=engine,
    )


def compliant_by_partition(
    stats: Iterable[hms.ColumnStatistics],
) -> dict[str, list[hms.ColumnStatisticsObj]]:
    """Partition name -> statistics, leaving out those not valid for the snapshot asked
    (what get_partitions_statistics_req answers)."""
    return {cs.statsDesc.partName: cs.statsObj for cs in stats if cs.isStatsCompliant is not False}


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


# ==============================================================================================
# The store
# ==============================================================================================


def _missing_table(cat: str, db: str, tbl: str) -> hms.NoSuchObjectException:
    """ObjectStore.ensureGetMTable's words."""
    return hms.NoSuchObjectException(
        message=f"Specified catalog.database.table does not exist : {table_ref(cat, db, tbl)}"
    )


class _Target:
    """One owner (table or partition) of statistics being written in this call."""

    __slots__ = ("owner_id", "name", "objs", "params", "write_id", "analyzed", "clear")

    def __init__(
        self,
        owner_id: int,
        name: str | None,
        objs: list[hms.ColumnStatisticsObj],
        params: dict[str, str],
        write_id: int | None,
        analyzed: int,
    ) -> None:
        self.owner_id = owner_id
        self.name = name
        self.objs = objs
        self.params = params
        self.write_id = write_id
        self.analyzed = analyzed
        self.clear: set[str] = set()
        """Columns whose stored bit vector and histogram no longer apply (merged)."""


class StatsMixin(PartitionsMixin):
    """Column statistics of tables and partitions (see the module docstring for the rules)."""

    stats_fetch_bitvector: bool = False
    """metastore.stats.fetch.bitvector: return bit vectors on reads."""
    stats_fetch_kll: bool = False
    """metastore.stats.fetch.kll: return histograms on reads."""
    txn_stats_enabled: bool = True
    """hive.txn.stats.enabled: keep accurate statistics for transactional tables."""
    stats_ndv_tuner: float = 0.0
    """metastore.stats.ndv.tuner (0.0: largest partition NDV, 1.0: their sum)."""
    stats_ndv_density_function: bool = False
    """metastore.stats.ndv.densityfunction."""

    # -- helpers ---------------------------------------------------------------------------------

    def _stats_table_row(
        self, conn: Connection, cat: str, db: str, tbl: str, *, lock: bool = False
    ) -> Any:
        """TBL_ID, WRITE_ID of a table, or Hive's ensureGetMTable NoSuchObjectException."""
        d = s.DBS
        stmt = (
            select(_T.c.TBL_ID, _T.c.WRITE_ID)
            .select_from(_T.join(d, d.c.DB_ID == _T.c.DB_ID))
            .where(d.c.CTLG_NAME == cat, d.c.NAME == db, _T.c.TBL_NAME == tbl)
        )
        if lock:
            stmt = stmt.with_for_update(of=_T)
        row = conn.execute(stmt).first()
        if row is None:
            raise _missing_table(cat, db, tbl)
        return row

    def _table_params(self, conn: Connection, tbl_id: int) -> dict[str, str]:
        p = s.TABLE_PARAMS.c
        rows = conn.execute(select(p.PARAM_KEY, p.PARAM_VALUE).where(p.TBL_ID == tbl_id))
        return {r[0]: r[1] if r[1] is not None else "" for r in rows}

    def _partition_rows(
        self, conn: Connection, tbl_id: int, names: Sequence[str], *, lock: bool = False
    ) -> dict[str, Any]:
        """PART_ID, PART_NAME, WRITE_ID of the named partitions, by name."""

        def build(cond: Any) -> Any:
            stmt = select(_P.c.PART_ID, _P.c.PART_NAME, _P.c.WRITE_ID).where(
                _P.c.TBL_ID == tbl_id, cond
            )
            return stmt.with_for_update() if lock else stmt

        rows = fetch_in(conn, _P.c.PART_NAME, sorted(set(names)), build)
        return {r.PART_NAME: r for r in rows}

    def _partition_params(
        self, conn: Connection, part_ids: Sequence[int]
    ) -> dict[int, dict[str, str]]:
        p = s.PARTITION_PARAMS.c
        rows = fetch_in(
            conn,
            p.PART_ID,
            part_ids,
            lambda cond: select(p.PART_ID, p.PARAM_KEY, p.PARAM_VALUE).where(cond),
        )
        out: dict[int, dict[str, str]] = {pid: {} for pid in part_ids}
        for r in rows:
            out.setdefault(r.PART_ID, {})[r.PARAM_KEY] = (
                r.PARAM_VALUE if r.PARAM_VALUE is not None else ""
            )
        return out

    def fetch_flags(
        self, bit_vectors: bool | None = None, histograms: bool | None = None
    ) -> dict[str, bool]:
        """Whether answers carry bit vectors and histograms: the settings unless the call says."""
        return {
            "bit_vectors": self.stats_fetch_bitvector if bit_vectors is None else bit_vectors,
            "histograms": self.stats_fetch_kll if histograms is None else histograms,
        }

    # -- writes ----------------------------------------------------------------------------------

    @writes_events
    def update_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats: hms.ColumnStatistics,
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        merge: bool = False,
    ) -> None:
        """Store a table's column statistics (upsert per column) and their state flag.

        ``merge`` (set_aggr_stats_for with needMerge): merge into the stored statistics the
        columns whose stored statistics are accurate, drop the others.

        On a transactional table a ``write_id`` must belong to an open txn (``_txn_write``);
        without ``valid_write_id_list`` the writer's own snapshot stands in for it. The
        UPDATE_TBL_COL_STAT_EVENT carries the table and the statistics of the columns written
        as stored afterwards (read back), and the table's new parameters.
        """
        engine = stats.engine or DEFAULT_ENGINE
        objs = list(stats.statsObj or [])
        analyzed = _analyzed(stats)

        def run(conn: Connection) -> None:
            row = self._stats_table_row(conn, cat, db, tbl, lock=True)
            table = self._load_table_by_id(conn, row.TBL_ID)
            params = dict(table.parameters or {})
            tw = self._txn_write(conn, db, tbl, params, write_id, valid_write_id_list)
            snapshot = tw.valid_write_ids
            _validate_table_cols(table, [o.colName for o in objs])
            target = _Target(row.TBL_ID, None, objs, params, row.WRITE_ID, analyzed)
            old = self._existing(
                conn, _TCS, "TBL_ID", [row.TBL_ID], engine, [o.colName for o in objs]
            )
            if merge:
                old_objs = {k[1]: stats_obj_from_row(r) for k, r in old.items()}
                txn = is_transactional(params)
                if (
                    txn
                    and old_objs
                    and snapshot is not None
                    and not (
                        self.txn_stats_enabled
                        and stats_valid_for_query(params, row.WRITE_ID, snapshot, False)
                    )
                ):
                    self._invalidate_table(conn, cat, db, tbl, table, tw)
                    return
                _prepare_merge(target, old_objs)
                if not target.objs:
                    return
            names = [o.colName for o in target.objs]
            new_params = dict(params)
            set_column_stats_state(new_params, names)
            new_write_id = None
            if is_transactional(params):
                if not self.txn_stats_enabled:
                    new_params.pop(COLUMN_STATS_ACCURATE, None)
                else:
                    error = verify_stats_change(
                        f"{db}.{tbl}", params, new_params, tw.write_id, snapshot
                    )
                    if error is not None:
                        raise hms.MetaException(message=error)
                    if not stats_valid_for_query(params, row.WRITE_ID, snapshot, True):
                        new_params.pop(COLUMN_STATS_ACCURATE, None)
                    new_write_id = tw.write_id
            owner = {"CAT_NAME": cat, "DB_NAME": db, "TABLE_NAME": tbl}
            self._write_rows(
                conn, _TCS, idseq.TABLE_COLUMN_STATS, "TBL_ID", [target], old, owner, engine
            )
            _set_param(conn, s.TABLE_PARAMS, "TBL_ID", row.TBL_ID, params, new_params)
            if new_write_id is not None:
                conn.execute(
                    update(_T).where(_T.c.TBL_ID == row.TBL_ID).values(WRITE_ID=new_write_id)
                )
            stored = self._load_table_by_id(conn, row.TBL_ID)
            rows = self._existing(conn, _TCS, "TBL_ID", [row.TBL_ID], engine, names)
            desc = hms.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName=tbl, catName=cat)
            written = _stored_statistics(desc, rows, row.TBL_ID, names, engine)
            body = self.messages.update_table_column_stats(
                written,
                stored,
                stored.parameters,
                write_id=tw.event_write_id,
                valid_write_ids=snapshot,
            )
            self._emit(conn, [NewEvent(msg.UPDATE_TBL_COL_STAT_EVENT, body, cat, db, tbl)])

        self.db.transaction(run)

    def _invalidate_table(
        self, conn: Connection, cat: str, db: str, tbl: str, table: hms.Table, tw: TxnWrite
    ) -> None:
        """Stored transactional statistics the writer cannot merge into: mark them all stale
        (``table`` is the table as read before; the event carries it and the table after)."""
        params = dict(table.parameters or {})
        params.pop(COLUMN_STATS_ACCURATE, None)
        _set_param(conn, s.TABLE_PARAMS, "TBL_ID", table.id, table.parameters or {}, params)
        if tw.write_id is not None:
            conn.execute(update(_T).where(_T.c.TBL_ID == table.id).values(WRITE_ID=tw.write_id))
        stored = self._load_table_by_id(conn, table.id)
        body = self.messages.alter_table(
            table,
            stored,
            write_id=tw.event_write_id,
            valid_write_ids=tw.valid_write_ids,
            partitions_changed=False,
        )
        self._emit(conn, [NewEvent(msg.ALTER_TABLE, body, cat, db, tbl)])

    @writes_events
    def update_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        stats_list: Sequence[hms.ColumnStatistics],
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        merge: bool = False,
    ) -> None:
        """Store column statistics of one or many partitions of a table in one transaction.

        Each ColumnStatistics names its partition in ``statsDesc.partName``; several for the
        same partition are merged (as set_aggr_stats_for does). One UPDATE_PART_COL_STAT_EVENT
        per partition, carrying the statistics of the columns written and the partition (our
        ``partitionObjJson``) as stored afterwards, and the partition's new parameters. Write
        ids as in ``update_table_column_statistics``.
        """
        by_part: dict[str, hms.ColumnStatistics] = {}
        for cs in stats_list:
            name = cs.statsDesc.partName if cs.statsDesc is not None else None
            if not name:
                raise hms.InvalidInputException(message="The partition name must be set")
            prior = by_part.get(name)
            by_part[name] = cs if prior is None else _merge_statistics(cs, prior)
        if not by_part:
            return

        def run(conn: Connection) -> None:
            try:
                tk = self._table_keys(conn, cat, db, tbl, lock=True)
            except hms.NoSuchObjectException:
                raise hms.InvalidObjectException(
                    message=f"{table_ref(cat, db, tbl)} table not found"
                ) from None
            table = self._load_table_by_id(conn, tk.tbl_id)
            tw = self._txn_write(conn, db, tbl, table.parameters, write_id, valid_write_id_list)
            snapshot = tw.valid_write_ids
            parts = self._partition_rows(conn, tk.tbl_id, list(by_part), lock=True)
            missing = [n for n in by_part if n not in parts]
            if missing:
                raise hms.NoSuchObjectException(
                    message=f"Partition {missing[0]} for which stats is gathered doesn't exist."
                )
            part_ids = [parts[n].PART_ID for n in by_part]
            params = self._partition_params(conn, part_ids)
            engines = {n: cs.engine or DEFAULT_ENGINE for n, cs in by_part.items()}
            all_cols = sorted({o.colName for cs in by_part.values() for o in cs.statsObj or []})
            old: dict[tuple[int, str, str], Any] = {}
            for engine in sorted(set(engines.values())):
                ids_for = [parts[n].PART_ID for n in by_part if engines[n] == engine]
                old.update(
                    {
                        (pid, col, engine): r
                        for (pid, col), r in self._existing(
                            conn, _PCS, "PART_ID", ids_for, engine, all_cols
                        ).items()
                    }
                )
            acid = is_acid(table.parameters)
            targets: list[_Target] = []
            invalid: list[_Target] = []
            for name, cs in by_part.items():
                prow = parts[name]
                target = _Target(
                    prow.PART_ID,
                    name,
                    list(cs.statsObj or []),
                    params.get(prow.PART_ID, {}),
                    prow.WRITE_ID,
                    _analyzed(cs),
                )
                if merge:
                    eng = engines[name]
                    old_objs = {
                        k[1]: stats_obj_from_row(r)
                        for k, r in old.items()
                        if k[0] == prow.PART_ID and k[2] == eng
                    }
                    if (
                        old_objs
                        and snapshot is not None
                        and not (
                            self.txn_stats_enabled
                            and stats_valid_for_query(target.params, prow.WRITE_ID, snapshot, False)
                        )
                    ):
                        invalid.append(target)
                        continue
                    _prepare_merge(target, old_objs)
                    if not target.objs:
                        continue
                targets.append(target)
            self._partition_flags(conn, table, targets, tw.write_id, snapshot, acid)
            for engine in sorted({engines[t.name] for t in targets}):
                group_ = [t for t in targets if engines[t.name] == engine]
                old_e = {(k[0], k[1]): r for k, r in old.items() if k[2] == engine}
                self._write_rows(
                    conn,
                    _PCS,
                    idseq.PARTITION_COLUMN_STATS,
                    "PART_ID",
                    group_,
                    old_e,
                    {"CAT_NAME": cat, "DB_NAME": db, "TABLE_NAME": tbl},
                    engine,
                    partition_names=True,
                )
            events = []
            values = {t.name: partnames.values_from_name(t.name, tk.key_names) for t in targets}
            stored = {
                tuple(p.values): p
                for p in self._load_partitions(conn, tk, [t.owner_id for t in targets])
            }
            rows: dict[tuple[int, str], Any] = {}
            for engine in sorted({engines[t.name] for t in targets}):
                rows.update(
                    self._existing(
                        conn,
                        _PCS,
                        "PART_ID",
                        [t.owner_id for t in targets if engines[t.name] == engine],
                        engine,
                        all_cols,
                    )
                )
            for t in targets:
                part = stored[tuple(values[t.name])]
                desc = hms.ColumnStatisticsDesc(
                    isTblLevel=False, dbName=db, tableName=tbl, partName=t.name, catName=cat
                )
                cols = [o.colName for o in t.objs]
                written = _stored_statistics(desc, rows, t.owner_id, cols, engines[t.name])
                body = self.messages.update_partition_column_stats(
                    written,
                    values[t.name],
                    part.parameters,
                    table,
                    write_id=tw.event_write_id,
                    valid_write_ids=snapshot,
                    partition=part,
                )
                events.append(NewEvent(msg.UPDATE_PART_COL_STAT_EVENT, body, cat, db, tbl))
            events.extend(self._invalidate_partitions(conn, tk, table, invalid, tw))
            self._emit(conn, events)

        self.db.transaction(run)

    def _partition_flags(
        self,
        conn: Connection,
        table: hms.Table,
        targets: Sequence[_Target],
        write_id: int | None,
        valid_write_id_list: str | None,
        acid: bool,
    ) -> dict[int, dict[str, str]]:
        """Update COLUMN_STATS_ACCURATE (and WRITE_ID) of the partitions; their new params."""
        inserts, updates, deletes, result = [], [], [], {}
        for t in targets:
            names = [o.colName for o in t.objs]
            old_flag = t.params.get(COLUMN_STATS_ACCURATE)
            new = dict(t.params)
            if old_flag is None:
                new[COLUMN_STATS_ACCURATE] = "TRUE"
                set_column_stats_state(new, names)
                inserts.append({"pid": t.owner_id, "val": new[COLUMN_STATS_ACCURATE]})
            else:
                set_column_stats_state(new, names)
                if acid:
                    error = verify_stats_change(
                        f"{table.dbName}.{table.tableName}",
                        {COLUMN_STATS_ACCURATE: old_flag},
                        {COLUMN_STATS_ACCURATE: new[COLUMN_STATS_ACCURATE]},
                        write_id,
                        valid_write_id_list,
                    )
                    if error is not None:
                        raise hms.MetaException(message=error)
                if acid and not (
                    self.txn_stats_enabled
                    and stats_valid_for_query(
                        {COLUMN_STATS_ACCURATE: old_flag}, t.write_id, valid_write_id_list, True
                    )
                ):
                    new.pop(COLUMN_STATS_ACCURATE, None)
                    deletes.append({"pid": t.owner_id})
                else:
                    updates.append({"pid": t.owner_id, "val": new[COLUMN_STATS_ACCURATE]})
            result[t.owner_id] = new
        pp = s.PARTITION_PARAMS
        key_cond = pp.c.PARAM_KEY == COLUMN_STATS_ACCURATE
        if inserts:
            conn.execute(
                insert(pp).values(
                    PART_ID=bindparam("pid"),
                    PARAM_KEY=COLUMN_STATS_ACCURATE,
                    PARAM_VALUE=bindparam("val"),
                ),
                inserts,
            )
        if updates:
            conn.execute(
                update(pp)
                .where(pp.c.PART_ID == bindparam("pid"), key_cond)
                .values(PARAM_VALUE=bindparam("val")),
                updates,
            )
        if deletes:
            conn.execute(delete(pp).where(pp.c.PART_ID == bindparam("pid"), key_cond), deletes)
        if acid and write_id is not None and write_id > 0:
            for part in chunks([t.owner_id for t in targets]):
                conn.execute(update(_P).where(_P.c.PART_ID.in_(part)).values(WRITE_ID=write_id))
        return result

    def _invalidate_partitions(
        self,
        conn: Connection,
        tk: TableKeys,
        table: hms.Table,
        targets: Sequence[_Target],
        tw: TxnWrite,
    ) -> list[NewEvent]:
        """Partitions whose stored statistics the writer cannot merge into: mark them stale."""
        if not targets:
            return []
        ids = [t.owner_id for t in targets]
        found = {tuple(p.values): p for p in self._load_partitions(conn, tk, ids)}
        pp = s.PARTITION_PARAMS
        for part in chunks(ids):
            conn.execute(
                delete(pp).where(pp.c.PART_ID.in_(part), pp.c.PARAM_KEY == COLUMN_STATS_ACCURATE)
            )
            if tw.write_id is not None:
                conn.execute(update(_P).where(_P.c.PART_ID.in_(part)).values(WRITE_ID=tw.write_id))
        events = []
        for new in self._load_partitions(conn, tk, ids):
            body = self.messages.alter_partition(
                table,
                found[tuple(new.values)],
                new,
                write_id=tw.event_write_id,
                valid_write_ids=tw.valid_write_ids,
            )
            events.append(NewEvent(msg.ALTER_PARTITION, body, tk.cat, tk.db, tk.name))
        return events

    def _existing(
        self,
        conn: Connection,
        table: Any,
        owner_col: str,
        owner_ids: Sequence[int],
        engine: str,
        col_names: Sequence[str],
    ) -> dict[tuple[int, str], Any]:
        """Stored rows of these owners, engine and columns, by (owner id, column)."""
        if not owner_ids or not col_names:
            return {}
        owner = table.c[owner_col]
        out: dict[tuple[int, str], Any] = {}
        for cols in chunks(sorted(set(col_names))):
            rows = fetch_in(
                conn,
                owner,
                owner_ids,
                lambda cond, cols=cols: select(table).where(
                    cond, table.c.ENGINE == engine, table.c.COLUMN_NAME.in_(list(cols))
                ),
            )
            for r in rows:
                out.setdefault((r._mapping[owner_col], r.COLUMN_NAME), r)
        return out

    def _write_rows(
        self,
        conn: Connection,
        table: Any,
        seq: idseq.IdSequence,
        owner_col: str,
        targets: Sequence[_Target],
        old: Mapping[tuple[int, str], Any],
        names: Mapping[str, str],
        engine: str,
        *,
        partition_names: bool = False,
    ) -> None:
        """Insert new rows and update existing ones: two executemany statements at most.

        An existing row keeps what the new statistics leave unset (setFieldsIntoOldStats);
        COLUMN_TYPE is not rewritten.
        """
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        for t in targets:
            owner = dict(names)
            if partition_names:
                owner["PARTITION_NAME"] = t.name
            seen: set[str] = set()
            for obj in t.objs:
                if obj.colName in seen:
                    continue  # one row per column: the first object wins
                seen.add(obj.colName)
                values = row_values(obj)
                prior = old.get((t.owner_id, obj.colName))
                if prior is None:
                    row = {c: values.get(c) for c in VALUE_COLUMNS}
                    row["NUM_NULLS"] = row["NUM_NULLS"] or 0
                    row.update(owner)
                    row.update(
                        {
                            owner_col: t.owner_id,
                            "COLUMN_NAME": obj.colName,
                            "COLUMN_TYPE": obj.colType,
                            "ENGINE": engine,
                            "LAST_ANALYZED": t.analyzed,
                        }
                    )
                    inserts.append(row)
                    continue
                merged = {c: prior._mapping[c] for c in VALUE_COLUMNS}
                merged.update(values)
                if obj.colName in t.clear:
                    for c in SKETCH_COLUMNS:
                        merged[c] = None
                row = {f"v_{c}": v for c, v in merged.items()}
                row.update({f"v_{k}": v for k, v in owner.items()})
                row.update(v_ENGINE=engine, v_LAST_ANALYZED=t.analyzed, v_CS_ID=prior.CS_ID)
                updates.append(row)
        if inserts:
            cs_ids = self.ids.allocate(conn, seq, len(inserts))
            for row, cs_id in zip(inserts, cs_ids, strict=True):
                row["CS_ID"] = cs_id
            conn.execute(insert(table), inserts)
        if updates:
            keys = [k[2:] for k in updates[0] if k != "v_CS_ID"]
            conn.execute(
                update(table)
                .where(table.c.CS_ID == bindparam("v_CS_ID"))
                .values({k: bindparam(f"v_{k}") for k in keys}),
                updates,
            )

    # -- reads -----------------------------------------------------------------------------------

    def get_table_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
        bit_vectors: bool | None = None,
        histograms: bool | None = None,
    ) -> hms.ColumnStatistics | None:
        """The table's statistics of these columns (requested order), None when it has none.

        With ``valid_write_id_list`` the answer's isStatsCompliant says whether the statistics
        are valid for that snapshot (ObjectStore.getTableColumnStatistics).
        """
        flags = self.fetch_flags(bit_vectors, histograms)
        cols = list(dict.fromkeys(col_names or []))
        with self.db.read() as conn:
            row = self._stats_table_row(conn, cat, db, tbl)
            if not cols:
                return None
            found = self._existing(
                conn, _TCS, "TBL_ID", [row.TBL_ID], engine or DEFAULT_ENGINE, cols
            )
            if not found:
                return None
            compliant = None
            if valid_write_id_list is not None:
                params = self._table_params(conn, row.TBL_ID)
                compliant = not is_transactional(params) or (
                    self.txn_stats_enabled
                    and stats_valid_for_query(params, row.WRITE_ID, valid_write_id_list, False)
                )
        rows = [found[(row.TBL_ID, c)] for c in cols if (row.TBL_ID, c) in found]
        return column_statistics(cat, db, tbl, rows, flags, compliant, engine or DEFAULT_ENGINE)

    def partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
        bit_vectors: bool | None = None,
        histograms: bool | None = None,
    ) -> list[hms.ColumnStatistics]:
        """One ColumnStatistics per partition that has any of the columns, by partition name.

        With ``valid_write_id_list`` each carries isStatsCompliant (ObjectStore
        .getPartitionColumnStatistics).
        """
        flags = self.fetch_flags(bit_vectors, histograms)
        with self.db.read() as conn:
            row = self._stats_table_row(conn, cat, db, tbl)
            grouped, part_rows = self._partition_stat_rows(
                conn, row.TBL_ID, part_names, col_names, engine or DEFAULT_ENGINE
            )
            compliance: dict[str, bool] = {}
            if valid_write_id_list is not None and grouped:
                if not self.txn_stats_enabled:
                    compliance = {n: False for n in grouped}
                else:
                    params = self._partition_params(conn, [part_rows[n].PART_ID for n in grouped])
                    compliance = {
                        n: stats_valid_for_query(
                            params.get(part_rows[n].PART_ID, {}),
                            part_rows[n].WRITE_ID,
                            valid_write_id_list,
                            False,
                        )
                        for n in grouped
                    }
        cols = list(dict.fromkeys(col_names))
        eng = engine or DEFAULT_ENGINE
        out = []
        for name in sorted(grouped):
            rows = {r.COLUMN_NAME: r for r in grouped[name]}
            ordered = [rows[c] for c in cols if c in rows]
            out.append(
                column_statistics(cat, db, tbl, ordered, flags, compliance.get(name), eng, name)
            )
        return out

    def get_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
    ) -> dict[str, list[hms.ColumnStatisticsObj]]:
        """Partition name -> statistics valid for ``valid_write_id_list``."""
        return compliant_by_partition(
            self.partition_column_statistics(
                cat, db, tbl, part_names, col_names, engine, valid_write_id_list=valid_write_id_list
            )
        )

    def _partition_stat_rows(
        self,
        conn: Connection,
        tbl_id: int,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str,
    ) -> tuple[dict[str, list[Any]], dict[str, Any]]:
        """PART_COL_STATS rows of the named partitions and columns, grouped by partition name,
        and the partitions' (PART_ID, PART_NAME, WRITE_ID) rows."""
        names = sorted(set(part_names or []))
        cols = sorted(set(col_names or []))
        if not names or not cols:
            return {}, {}
        rows: list[Any] = []
        for col_chunk in chunks(cols):
            rows.extend(
                fetch_in(
                    conn,
                    _P.c.PART_NAME,
                    names,
                    lambda cond, cc=col_chunk: (
                        select(
                            _PCS, _P.c.PART_NAME.label("P_NAME"), _P.c.WRITE_ID.label("P_WRITE_ID")
                        )
                        .select_from(_PCS.join(_P, _P.c.PART_ID == _PCS.c.PART_ID))
                        .where(
                            _P.c.TBL_ID == tbl_id,
                            cond,
                            _PCS.c.ENGINE == engine,
                            _PCS.c.COLUMN_NAME.in_(list(cc)),
                        )
                    ),
                )
            )
        grouped = group(rows, lambda r: r.P_NAME)
        parts = {r.P_NAME: _PartRow(r.PART_ID, r.P_NAME, r.P_WRITE_ID) for r in rows}
        return grouped, parts

    def get_aggr_stats_for(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_names: Sequence[str],
        col_names: Sequence[str],
        engine: str = DEFAULT_ENGINE,
        *,
        valid_write_id_list: str | None = None,
    ) -> hms.AggrStats:
        """Statistics of the columns aggregated over the partitions (module docstring).

        Where Hive answers null (a transactional snapshot the stored statistics are not valid
        for, or no partitions with a snapshot) the answer is empty with partsFound 0.
        """
        names = list(dict.fromkeys(part_names or []))
        cols = list(dict.fromkeys(col_names or []))
        with self.db.read() as conn:
            row = self._stats_table_row(conn, cat, db, tbl)
            if not names or not cols:
                return hms.AggrStats(colStats=[], partsFound=0)
            if valid_write_id_list is not None:
                params = self._table_params(conn, row.TBL_ID)
                if is_transactional(params) and not self.txn_stats_enabled:
                    return hms.AggrStats(colStats=[], partsFound=0)
                parts = self._partition_rows(conn, row.TBL_ID, names)
                pparams = self._partition_params(conn, [p.PART_ID for p in parts.values()])
                for p in parts.values():
                    if not stats_valid_for_query(
                        pparams.get(p.PART_ID, {}), p.WRITE_ID, valid_write_id_list, False
                    ):
                        return hms.AggrStats(colStats=[], partsFound=0)
            grouped, _ = self._partition_stat_rows(
                conn, row.TBL_ID, names, cols, engine or DEFAULT_ENGINE
            )
        stats = {name: [stats_obj_from_row(r) for r in rows] for name, rows in grouped.items()}
        return aggregate_partition_stats(
            names,
            cols,
            stats,
            ndv_tuner=self.stats_ndv_tuner,
            use_density_function=self.stats_ndv_density_function,
        )

    # -- deletes ---------------------------------------------------------------------------------

    @writes_events
    def delete_table_column_statistics(
        self, cat: str, db: str, tbl: str, col_name: str | None, engine: str | None = None
    ) -> None:
        """Delete a column's (or, with None, every column's) table statistics of ``engine``
        (None: every engine). A named column without statistics is NoSuchObjectException."""

        def run(conn: Connection) -> None:
            try:
                row = self._stats_table_row(conn, cat, db, tbl, lock=True)
            except hms.NoSuchObjectException:
                raise hms.NoSuchObjectException(
                    message=f"Table {table_ref(cat, db, tbl)}  for which stats deletion is "
                    "requested doesn't exist"
                ) from None
            if is_transactional(self._table_params(conn, row.TBL_ID)):
                raise hms.MetaException(
                    message="Cannot delete stats via this API for a transactional table"
                )
            cond = [_TCS.c.TBL_ID == row.TBL_ID]
            if col_name is not None:
                cond.append(_TCS.c.COLUMN_NAME == col_name)
            if engine is not None:
                cond.append(_TCS.c.ENGINE == engine)
            deleted = conn.execute(delete(_TCS).where(*cond)).rowcount
            if col_name is not None and not deleted:
                raise hms.NoSuchObjectException(
                    message=f"Column stats doesn't exist for db={db} table={tbl} col={col_name}"
                )
            body = self.messages.delete_table_column_stats(db, col_name)
            self._emit(conn, [NewEvent(msg.DELETE_TBL_COL_STAT_EVENT, body, cat, db, tbl)])

        self.db.transaction(run)

    @writes_events
    def delete_partition_column_statistics(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_name: str,
        col_name: str | None,
        engine: str | None = None,
    ) -> None:
        """Delete a partition's statistics of one column (None: all columns) and ``engine``."""

        def run(conn: Connection) -> None:
            try:
                tk = self._table_keys(conn, cat, db, tbl, lock=True)
            except hms.NoSuchObjectException:
                raise hms.InvalidObjectException(message=f"{db}.{tbl} table not found") from None
            try:
                values = partnames.values_from_name(part_name, tk.key_names)
            except partnames.PartitionNameError as exc:
                raise hms.InvalidObjectException(message=str(exc).split(" (name")[0]) from None
            if is_transactional(self._table_params(conn, tk.tbl_id)):
                raise hms.MetaException(
                    message="Cannot delete stats via this API for a transactional table"
                )
            name = partnames.make_part_name(tk.key_names, values)
            prow = self._partition_rows(conn, tk.tbl_id, [name]).get(name)
            if prow is None:
                raise hms.NoSuchObjectException(
                    message=f"Partition {part_name} for which stats deletion is requested "
                    "doesn't exist"
                )
            cond = [_PCS.c.PART_ID == prow.PART_ID]
            if col_name is not None:
                cond.append(_PCS.c.COLUMN_NAME == col_name)
            if engine is not None:
                cond.append(_PCS.c.ENGINE == engine)
            deleted = conn.execute(delete(_PCS).where(*cond)).rowcount
            if col_name is not None and not deleted:
                raise hms.NoSuchObjectException(
                    message=f"Column stats doesn't exist for table={table_ref(cat, db, tbl)} "
                    f"partition={part_name} col={col_name}"
                )
            body = self.messages.delete_partition_column_stats(db, col_name, part_name, values)
            self._emit(conn, [NewEvent(msg.DELETE_PART_COL_STAT_EVENT, body, cat, db, tbl)])

        self.db.transaction(run)


class _PartRow:
    __slots__ = ("PART_ID", "PART_NAME", "WRITE_ID")

    def __init__(self, part_id: int, name: str, write_id: int | None) -> None:
        self.PART_ID, self.PART_NAME, self.WRITE_ID = part_id, name, write_id


# -- small helpers ---------------------------------------------------------------------------------


def _analyzed(stats: hms.ColumnStatistics) -> int:
    desc = stats.statsDesc
    return desc.lastAnalyzed if desc is not None and desc.lastAnalyzed is not None else now()


def _stored_statistics(
    desc: hms.ColumnStatisticsDesc,
    rows: Mapping[tuple[int, str], Any],
    owner_id: int,
    col_names: Sequence[str],
    engine: str,
) -> hms.ColumnStatistics:
    """The statistics of ``col_names`` as stored (rows of ``_existing``), in that order, bit
    vectors and histograms included: what an event of their write carries."""
    found = [rows[(owner_id, c)] for c in dict.fromkeys(col_names) if (owner_id, c) in rows]
    desc.lastAnalyzed = min((r.LAST_ANALYZED for r in found), default=now())
    return hms.ColumnStatistics(
        statsDesc=desc,
        statsObj=[stats_obj_from_row(r, bit_vectors=True, histograms=True) for r in found],
        engine=engine,
    )


def _validate_table_cols(table: hms.Table, col_names: Sequence[str]) -> None:
    """ObjectStore.validateTableCols: every column must be one of the table's."""
    have = {(c.name or "").lower() for c in (table.sd.cols if table.sd is not None else []) or []}
    for name in col_names:
        if (name or "").lower() not in have:
            raise hms.MetaException(
                message=f"Column {name} doesn't exist in table {table.tableName} in database "
                f"{table.dbName}"
            )


def _prepare_merge(target: _Target, old: Mapping[str, hms.ColumnStatisticsObj]) -> None:
    """getMergableCols + mergeColStats: keep the columns the flag lists, merged with the old."""
    kept = []
    for obj in target.objs:
        if not can_column_stats_merge(target.params, obj.colName):
            continue
        prior = old.get(obj.colName)
        if prior is not None and data_member(prior.statsData) == data_member(obj.statsData):
            obj = merge_stats_obj(obj, prior)
            target.clear.add(obj.colName)
        kept.append(obj)
    target.objs = kept


def _merge_statistics(new: hms.ColumnStatistics, old: hms.ColumnStatistics) -> hms.ColumnStatistics:
    """MetaStoreServerUtils.mergeColStats of two statistics of the same partition."""
    prior = {o.colName: o for o in old.statsObj or []}
    objs = []
    for obj in new.statsObj or []:
        other = prior.get(obj.colName)
        if other is not None and data_member(other.statsData) == data_member(obj.statsData):
            obj = merge_stats_obj(obj, other)
        objs.append(obj)
    return hms.ColumnStatistics(
        statsDesc=new.statsDesc,
        statsObj=objs,
        isStatsCompliant=new.isStatsCompliant,
        engine=new.engine,
    )


def _set_param(
    conn: Connection,
    table: Any,
    owner_col: str,
    owner_id: int,
    old: Mapping[str, str],
    new: Mapping[str, str],
) -> None:
    """Write the COLUMN_STATS_ACCURATE row of one owner as it changed from ``old`` to ``new``."""
    key = COLUMN_STATS_ACCURATE
    where = (table.c[owner_col] == owner_id, table.c.PARAM_KEY == key)
    if key not in new:
        if key in old:
            conn.execute(delete(table).where(*where))
    elif key not in old:
        conn.execute(
            insert(table).values({owner_col: owner_id, "PARAM_KEY": key, "PARAM_VALUE": new[key]})
        )
    elif old[key] != new[key]:
        conn.execute(update(table).where(*where).values(PARAM_VALUE=new[key]))
