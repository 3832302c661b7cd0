"""Column statistics as rows of TAB_COL_STATS / PART_COL_STATS and back (no SQL here).

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
columns.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal as PyDecimal
from decimal import InvalidOperation
from typing import Any

from hms_cache_proxy.idl import hms

DEFAULT_ENGINE = "hive"

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
