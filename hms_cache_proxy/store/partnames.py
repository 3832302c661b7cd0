"""Partition names as Hive writes them (``PARTITIONS.PART_NAME``) and reads them back.

A partition name is ``k1=v1/k2=v2``: each key (lower-cased) and value escaped with Hive's
path escaping, empty or missing values written as ``__HIVE_DEFAULT_PARTITION__``. Names are
what get_partition_names returns, what get_partition_by_name / drop_partition_by_name take, and
the unique key of ``PARTITIONS``, so a stock metastore sharing the database must produce and
parse exactly the same strings. Facts, all from apache/hive (Hive 4.0; Hive 2.3 is identical):

- Escaped characters: U+0000..U+001F, ``"  #  %  '  *  /  :  =  ?  \\  U+007F  {  [  ]  ^``,
  each as ``%XX`` with two upper-case hex digits (``String.format("%1$02X")``). Nothing else,
  in particular not non-ASCII text, spaces, ``<``, ``>`` or ``|`` (those only on Windows).
  [standalone-metastore/metastore-common/.../metastore/utils/FileUtils.java, charToEscape,
  escapePathName]
- Unescaping turns ``%`` followed by two characters that Java's ``Integer.parseInt(s, 16)``
  accepts into that char (so ``%+A`` and ``%-0`` decode too), and leaves every other ``%``
  as it is. [FileUtils.unescapePathName]
- ``makePartName`` lower-cases the key names and writes the default partition name for an
  empty or null value; a key/value count mismatch (or no keys) is a MetaException
  ``Invalid partition key & values; keys [a, b, ], values [x, ]``.
  [FileUtils.makePartName, Warehouse.makePartName(List<FieldSchema>, List<String>, String)]
- Reading a name back (``Warehouse.makeSpecFromName``) splits on ``/``, keeps the components
  that match ``([^/]+)=([^/]+)`` (greedy, so ``a=b=c`` is key ``a=b``, value ``c``), silently
  skips the others, unescapes both sides, and lets a repeated key overwrite the earlier value in
  place (a LinkedHashMap). An empty name is ``Partition name is invalid.``.
  [Warehouse.makeSpecFromName]
- get_partition_by_name maps a name to values by looking each table key up by its exact name
  (extra components are ignored); a missing key is ``incomplete partition name - missing k``.
  [HMSHandler.getPartValsFromName]
- Checks on the values of a new partition: the list must be non-empty and hold no null, its
  length must equal the number of keys, and each value must fully match
  ``metastore.partition.name.whitelist.pattern`` when that is set (unset by default).
  [HMSHandler.validatePartition / AddPartitionsHandler, MetaStoreServerUtils
  .validatePartitionNameCharacters]. Hive applies no other character check: an empty value is
  accepted (stored as ``''``, named as the default partition).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "MAX_PART_KEY_VAL_LENGTH",
    "MAX_PART_NAME_LENGTH",
    "PartitionNameError",
    "escape_path_name",
    "make_part_name",
    "parse_part_name",
    "unescape_path_name",
    "validate_values",
    "values_from_name",
]

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
"""What FileUtils.escapePathName writes for an empty or null value (hard-coded, not the
configurable ``hive.exec.default.partition.name``)."""

MAX_PART_KEY_VAL_LENGTH = 256
"""``PARTITION_KEY_VALS.PART_KEY_VAL`` is ``varchar(256)`` in Hive 4.0.0's schema."""

MAX_PART_NAME_LENGTH = 767
"""``PARTITIONS.PART_NAME`` is ``varchar(767)`` in Hive 4.0.0's schema."""

_ESCAPED = frozenset(
    [chr(c) for c in range(0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "[", "]", "^"]
)
# str.translate table: every escaped character to its %XX form.
_ESCAPE_TABLE = {ord(c): f"%{ord(c):02X}" for c in _ESCAPED}
_NEEDS_ESCAPE = re.compile("[" + re.escape("".join(sorted(_ESCAPED))) + "]")

# Warehouse.pat: the whole component must be key=value, both non-empty, no '/'.
_COMPONENT = re.compile(r"([^/]+)=([^/]+)", re.DOTALL)


class PartitionNameError(ValueError):
    """A partition name or value list that Hive's metastore would reject."""


def escape_path_name(value: str | None, default: str | None = None) -> str:
    """Escape one key or value for a partition name, as FileUtils.escapePathName does.

    ``None`` or ``""`` become ``default``, or ``__HIVE_DEFAULT_PARTITION__`` without one.
    """
    if not value:
        return DEFAULT_PARTITION_NAME if default is None else default
    if _NEEDS_ESCAPE.search(value) is None:
        return value
    return value.translate(_ESCAPE_TABLE)


def _java_hex_digit(ch: str) -> int:
    """Character.digit(ch, 16): Unicode decimal digits, and Latin/fullwidth a-f in either case."""
    if "0" <= ch <= "9":
        return ord(ch) - 48
    low = ch.lower()
    if "a" <= low <= "f":
        return ord(low) - 87
    if "\uff21" <= ch <= "\uff26":  # fullwidth A-F
        return ord(ch) - 0xFF21 + 10
    if "\uff41" <= ch <= "\uff46":  # fullwidth a-f
        return ord(ch) - 0xFF41 + 10
    if ch.isdecimal():
        return unicodedata.decimal(ch, -1)
    return -1


def _java_parse_hex2(text: str) -> int:
    """Integer.parseInt(text, 16) for a two-character string; -1 where Java would throw."""
    first, second = text[0], text[1]
    if first in "+-":
        digit = _java_hex_digit(second)
        if digit < 0:
            return -1
        return -digit if first == "-" else digit
    high, low = _java_hex_digit(first), _java_hex_digit(second)
    if high < 0 or low < 0:
        return -1
    return high * 16 + low


def unescape_path_name(name: str) -> str:
    """Undo escape_path_name exactly as FileUtils.unescapePathName does, quirks included.

    A ``%`` decodes only when two more characters follow and Java's base-16 parse of them is
    non-negative; otherwise the ``%`` is kept literally (so ``100%`` survives unchanged).
    """
    if "%" not in name:
        return name
    out: list[str] = []
    i = 0
    n = len(name)
    while i < n:
        c = name[i]
        if c == "%" and i + 2 < n:
            code = _java_parse_hex2(name[i + 1 : i + 3])
            if code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _java_list(items: Sequence[object]) -> str:
    """How Hive's error messages list keys and values: every item followed by ', '."""
    return "".join(f"{item}, " for item in items)


def make_part_name(
    keys: Sequence[str], values: Sequence[str | None], default: str | None = None
) -> str:
    """The PART_NAME Hive writes for these partition keys and values (FileUtils.makePartName).

    Keys are lower-cased; empty or ``None`` values become the default partition name.
    """
    if len(keys) != len(values) or not keys:
        raise PartitionNameError(
            f"Invalid partition key & values; keys [{_java_list(keys)}], "
            f"values [{_java_list(values)}]"
        )
    return "/".join(
        escape_path_name(key.lower(), default) + "=" + escape_path_name(value, default)
        for key, value in zip(keys, values, strict=True)
    )


def parse_part_name(name: str) -> list[tuple[str, str]]:
    """The (key, value) pairs of a partition name, unescaped (Warehouse.makeSpecFromName).

    Components that are not ``key=value`` are skipped, as Hive skips them; a key that appears
    twice keeps its first position and its last value.
    """
    if not name:
        raise PartitionNameError(f"Partition name is invalid. {name}")
    spec: dict[str, str] = {}
    for component in name.split("/"):
        if not component:
            continue
        match = _COMPONENT.fullmatch(component)
        if match is None:
            continue
        spec[unescape_path_name(match.group(1))] = unescape_path_name(match.group(2))
    return list(spec.items())


def values_from_name(name: str, keys: Sequence[str], *, strict: bool = False) -> list[str]:
    """The partition values a name denotes, in the order of the table's ``keys``.

    Hive looks every key up by its exact name and ignores extra components; ``strict=True``
    additionally requires the name to hold exactly ``keys``, in order (what the name of a
    partition of this table always looks like).
    """
    pairs = parse_part_name(name)
    spec = dict(pairs)
    values: list[str] = []
    for key in keys:
        value = spec.get(key)
        if value is None:
            raise PartitionNameError(
                f"incomplete partition name - missing {key} "
                f"(name {name!r}, table partition keys {list(keys)})"
            )
        values.append(value)
    if strict and [k for k, _ in pairs] != list(keys):
        raise PartitionNameError(
            f"partition name {name!r} has keys {[k for k, _ in pairs]}, "
            f"expected exactly {list(keys)}"
        )
    return values


def validate_values(
    keys: Sequence[str],
    values: Sequence[str | None] | None,
    whitelist_pattern: str | re.Pattern[str] | None = None,
) -> None:
    """Raise PartitionNameError for partition values a Hive 4 metastore would not store.

    Checks, in Hive's words where Hive has them: values present and non-null, one per key, each
    fully matching ``metastore.partition.name.whitelist.pattern`` if it is configured; and the
    column sizes of Hive's schema (PART_KEY_VAL 256, PART_NAME 767 characters), which a
    PostgreSQL-backed Hive enforces through the database and SQLite would silently ignore.
    """
    if not values:
        raise PartitionNameError("The partition values cannot be null or empty.")
    checked: list[str] = []
    for value in values:
        if value is None:
            raise PartitionNameError("Partition value cannot be null.")
        checked.append(value)
    if whitelist_pattern:
        pattern = (
            whitelist_pattern
            if isinstance(whitelist_pattern, re.Pattern)
            else re.compile(whitelist_pattern)
        )
        for value in checked:
            if pattern.fullmatch(value) is None:
                raise PartitionNameError(
                    f"Partition value '{value}' contains a character not matched by whitelist "
                    f"pattern '{pattern.pattern}'.  (configure with "
                    "metastore.partition.name.whitelist.pattern)"
                )
    name = make_part_name(keys, checked)  # raises on a count mismatch, with Hive's message
    for key, value in zip(keys, checked, strict=True):
        if len(value) > MAX_PART_KEY_VAL_LENGTH:
            raise PartitionNameError(
                f"Partition value for key {key} is {len(value)} characters long; Hive's "
                f"PARTITION_KEY_VALS.PART_KEY_VAL holds at most {MAX_PART_KEY_VAL_LENGTH}"
            )
    if len(name) > MAX_PART_NAME_LENGTH:
        raise PartitionNameError(
            f"Partition name {name[:80]!r}... is {len(name)} characters long; Hive's "
            f"PARTITIONS.PART_NAME holds at most {MAX_PART_NAME_LENGTH}"
        )
