"""Checks Hive's server applies to names and definitions before storing them.

All rules are Hive 4.0's (standalone-metastore ``MetaStoreUtils.validateName``,
``MetaStoreServerUtils.validateTblColumns`` / ``validateSkewedColNamesSubsetCol``,
``ColumnType.getTypeName`` / ``areColTypesCompatible``), with Hive's messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hms_cache_proxy.handler.base import ThriftError
from hms_cache_proxy.idl import hms

# MetaStoreUtils.specialCharactersInTableNames (Hive 4.0), allowed in database and table names
# because metastore.support.special.characters.tablename defaults to true. Catalog, function
# and type names are validated without them.
SPECIAL_CHARACTERS = " \"%&'()*+,-./:;<=>?[]_|{}$^!~#@`"

# Java's \w is ASCII unless UNICODE_CHARACTER_CLASS is set.
_STRICT_NAME = re.compile(r"[A-Za-z0-9_]+")
_SPECIAL_NAME = re.compile("[A-Za-z0-9_" + re.escape(SPECIAL_CHARACTERS) + "]+")

# What each kind of name is called in Hive's "... is not a valid <what> name" messages, and
# whether the special characters are allowed for it.
_NAME_RULES: dict[str, tuple[str, bool]] = {
    "database": ("database", True),
    "table": ("object", True),
    "catalog": ("catalog", False),
    "function": ("object", False),
    "object": ("object", False),
}


def is_valid_name(name: str | None, *, special_characters: bool) -> bool:
    """MetaStoreUtils.validateName: the whole name from ``[\\w<specials>]``."""
    if not name:
        return False
    pattern = _SPECIAL_NAME if special_characters else _STRICT_NAME
    return pattern.fullmatch(name) is not None


def validate_name(
    name: str | None, what: str = "object", exc: ThriftError = hms.InvalidObjectException
) -> None:
    """Raise ``exc`` (InvalidObjectException) ``"<name> is not a valid <what> name"``.

    ``what`` is ``database``, ``table``, ``catalog``, ``function`` or ``object``.
    """
    label, special = _NAME_RULES.get(what, ("object", False))
    if not is_valid_name(name, special_characters=special):
        shown = "null" if name is None else name
        raise exc(message=f"{shown} is not a valid {label} name")


# -- column types ----------------------------------------------------------------------------

TYPE_FROM_DESERIALIZER = "<derived from deserializer>"

# ColumnType.AllTypes (Hive 4.0): the first token of a column type must be one of these.
ALL_TYPES = frozenset(
    {
        "void", "boolean", "tinyint", "smallint", "int", "bigint", "float", "double",
        "string", "char", "varchar", "date", "datetime", "timestamp", "decimal", "binary",
        "interval_year_month", "interval_day_time", "timestamp with time zone",
        "array", "map", "struct", "uniontype",
        "columns", "columns.types", "column.name.delimiter",
    }
)  # fmt: skip

PRIMITIVE_TYPES = frozenset(
    {
        "void", "boolean", "tinyint", "smallint", "int", "bigint", "float", "double",
        "string", "varchar", "char", "date", "datetime", "timestamp", "interval_year_month",
        "interval_day_time", "decimal", "binary", "timestamp with time zone",
    }
)  # fmt: skip
STRING_TYPES = frozenset({"string", "varchar", "char"})
DATETIME_TYPES = frozenset({"date", "datetime", "timestamp", "timestamp with time zone"})
NUMERIC_CAST_ORDER = {
    "tinyint": 1, "smallint": 2, "int": 3, "bigint": 4, "decimal": 5, "float": 6, "double": 7
}  # fmt: skip
_TYPE_ALIASES = {"integer": "int", "numeric": "decimal"}


def _is_type_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def is_valid_column_type(type_string: str | None) -> bool:
    """MetaStoreServerUtils.validateColumnType: only the first token is checked.

    A token is a maximal run of letters/digits/underscores or of other characters; the first
    one must be one of ALL_TYPES, exactly (lower case). So ``array<foo>`` passes, ``INT`` and
    ``Strin`` do not. (An empty type, where Java throws, is reported as invalid.)
    """
    if type_string is None or type_string == "":
        return False
    if type_string == TYPE_FROM_DESERIALIZER:
        return True
    first_class = _is_type_char(type_string[0])
    end = 1
    while end < len(type_string) and _is_type_char(type_string[end]) == first_class:
        end += 1
    return type_string[:end] in ALL_TYPES


def column_type_error(cols: Sequence[hms.FieldSchema] | None) -> str | None:
    """validateTblColumns: ``"type: <t>"`` for the first invalid column type, else None."""
    for col in cols or []:
        if not is_valid_column_type(col.type):
            return f"type: {col.type}"
    return None


def check_columns(
    table: hms.Table, exc: ThriftError = hms.InvalidObjectException, *, keys: bool = True
) -> None:
    """Hive's checks of a table definition's columns, partition keys and skew columns.

    ``sd`` and ``sd.cols`` are required (Hive fails on them with a NullPointerException,
    reported as a MetaException); messages are ``Invalid column type: <t>``, ``Invalid
    partition column type: <t>`` and ``Invalid skew column [<names>]``.
    """
    sd = table.sd
    if sd is None:
        raise hms.MetaException(message="The table's storage descriptor (sd) must be set")
    if sd.cols is None:
        raise hms.MetaException(message="The table's columns (sd.cols) must be set")
    error = column_type_error(sd.cols)
    if error is not None:
        raise exc(message=f"Invalid column {error}")
    seen: set[str] = set()
    for col in sd.cols:
        lowered = (col.name or "").lower()
        if lowered in seen:
            # Hive fails in the database (a duplicate COLUMNS_V2 key) with a MetaException
            raise hms.MetaException(
                message=f"Duplicate column name {col.name} in {table.tableName}"
            )
        seen.add(lowered)
    if keys and table.partitionKeys is not None:
        error = column_type_error(table.partitionKeys)
        if error is not None:
            raise exc(message=f"Invalid partition column {error}")
    skewed = sd.skewedInfo.skewedColNames if sd.skewedInfo is not None else None
    if skewed:
        names = {c.name for c in sd.cols}
        missing = [c for c in skewed if c not in names]
        if missing:
            raise exc(message=f"Invalid skew column [{', '.join(missing)}]")


# -- column type changes ---------------------------------------------------------------------


def type_name(type_string: str | None) -> str | None:
    """ColumnType.getTypeName: the lower-cased first ``\\W``-delimited word, aliases resolved
    (``varchar(10)`` -> ``varchar``, ``integer`` -> ``int``, ``array<int>`` -> ``array``)."""
    if type_string is None:
        return None
    proto = re.split(r"[^A-Za-z0-9_]", type_string.lower(), maxsplit=1)[0]
    return _TYPE_ALIASES.get(proto, proto)


def are_col_types_compatible(old: str, new: str) -> bool:
    """ColumnType.areColTypesCompatible(from, to) on type names (Hive 4.0)."""
    if old == new:
        return True
    if old in PRIMITIVE_TYPES and new in PRIMITIVE_TYPES:
        if old in STRING_TYPES and new in STRING_TYPES:
            return True
        if old in NUMERIC_CAST_ORDER and new in NUMERIC_CAST_ORDER:
            return NUMERIC_CAST_ORDER[old] < NUMERIC_CAST_ORDER[new]
        if old == "void":
            return True
        if old in DATETIME_TYPES and new in STRING_TYPES:
            return True
        if old in NUMERIC_CAST_ORDER and new in STRING_TYPES:
            return True
    return False


def incompatible_columns(
    old_cols: Sequence[hms.FieldSchema] | None, new_cols: Sequence[hms.FieldSchema] | None
) -> list[str]:
    """Names of the new columns whose type cannot replace the old one at the same position."""
    old_cols, new_cols = old_cols or [], new_cols or []
    return [
        new.name
        for old, new in zip(old_cols, new_cols, strict=False)
        if not are_col_types_compatible(type_name(old.type) or "", type_name(new.type) or "")
    ]
