"""Binding a partition filter to a table's keys: the predicate over one partition's values.

Evaluation follows the SQL that Hive 4.0's MetaStoreDirectSql.PartitionFilterGenerator
generates (the path a default server uses), and rejects what would make that path fail and the
JDO fallback (ExpressionTree.getJdoFilterPushdownParam, which allows only string keys) throw:

- Key types (``ColumnType.getTypeName``: lower-cased, up to the first non-word character):
  string/char/varchar compare as strings; tinyint/smallint/int/bigint numerically; date as
  dates; timestamp as timestamps. Any other key type (decimal, boolean, float, ...) is an error.
- A string value on a string key: string comparison (code-point order: PostgreSQL's C collation
  and Derby; a PostgreSQL database with a linguistic collation would order ``<``/``>``
  differently). An integer value on a string key is an error ("Cannot push down filter for
  string column and value class java.lang.Long", then the JDO fallback rejects it too).
- An integer value on an integral key: ``cast(PART_KEY_VAL as decimal(21,0))`` compared with
  the integer, so ``'05' = 5`` (PostgreSQL numeric input: blanks, sign, fraction rounded half
  away from zero, exponent). The default partition (``case when PART_KEY_VAL <>
  '__HIVE_DEFAULT_PARTITION__' ... else null end``) and, here, any value that is not a number
  are NULL. A string value on an integral key is an error, except the default partition name,
  which compares as a string: ``p = '__HIVE_DEFAULT_PARTITION__'`` finds the default partition.
- Date keys: a value that is a date (``2024-01-31``, quoted or not) compares as a date
  (``cast(PART_KEY_VAL as date)``); a partition value ``YYYY-M-D`` optionally followed by a time
  casts to that date; the default partition and unparsable values are NULL. Timestamp keys
  alike (``yyyy-MM-dd HH:mm:ss`` values, any partition value PostgreSQL's cast reads as
  ``YYYY-M-D[ H:M[:S[.f]]]``). Integer values and LIKE on date/timestamp keys are errors.
- LIKE is SQL LIKE with ``ESCAPE '\\'`` (HIVE-22900, Hive 4 direct SQL): ``%`` any sequence,
  ``_`` one character, backslash makes the next character literal; case-sensitive; a pattern
  ending in a lone backslash is an error (PostgreSQL's). Hive 2.3 did not push LIKE to SQL: its
  JDO path passed the value to JDOQL ``values.get(i).matches(v)``, a *Java regular expression*,
  so there ``'2024.*'`` was the wildcard form; Hive 4 reads it literally, and so do we.
- NULL (default partition or unparsable value under a typed comparison) makes a comparison
  unknown: unknown is false at the top, under AND/OR as in SQL, and NOT of unknown is unknown
  (negations are pushed down to the comparisons, so ``NOT p > 5`` is ``p <= 5``).

Known differences from a Hive 4.0 server, in edge cases only: HIVE-27827 (merged for 4.0)
adds ``PART_NAME`` conditions for ``=``/``!=``, which for integral and date keys make ``=`` also
require the partition's value text to equal the literal's (so there ``'05' = 5`` is false) and,
on multi-key tables, let LIKE wildcards in an escaped value wrongly exclude partitions from
``!=``; here comparisons are purely typed, as in Hive 2.3-3.x. Hive on PostgreSQL fails the
whole call (MetaException) when a typed key holds a value its cast cannot read; here that
partition just does not match, so the answer does not depend on evaluation
order or on which candidates a database query narrowed to first.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache, partial
from typing import NamedTuple

from hms_cache_proxy.store.partition_filter.syntax_tree import (
    DEFAULT_PARTITION_NAME,
    And,
    Between,
    Comparison,
    FilterError,
    In,
    Literal,
    MatchAll,
    Node,
    Not,
    Or,
    Predicate,
    flatten,
    strict_date,
    strict_timestamp,
)
from hms_cache_proxy.store.patterns import star_matcher

# -- Binding: types and values ----------------------------------------------------------------

_STRING_TYPES = frozenset({"string", "char", "varchar"})
_INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
# NOT (x OP v)  ==  x INVERT[OP] v, for non-NULL x
_INVERT = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_NON_WORD = re.compile(r"\W", re.ASCII)


def type_name(type_string: str) -> str:
    """ColumnType.getTypeName: ``varchar(10)`` -> ``varchar``, ``integer`` -> ``int``."""
    proto = _NON_WORD.split(type_string.lower(), maxsplit=1)[0]
    return {"integer": "int", "numeric": "decimal"}.get(proto, proto)


def _type_class(type_string: str) -> str | None:
    name = type_name(type_string)
    if name in _STRING_TYPES:
        return "string"
    if name in _INTEGRAL_TYPES:
        return "integral"
    if name == "date":
        return "date"
    if name == "timestamp":
        return "timestamp"
    return None


_NUMERIC = re.compile(
    r"[ \t\n\r\f\v]*([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?[ \t\n\r\f\v]*"
)
_DECIMAL_21_0_LIMIT = 10**21


def _numeric_value_slow(text: str) -> int | None:
    m = _NUMERIC.fullmatch(text)
    if m is None:
        return None
    try:
        number = Decimal(m.group(1) + m.group(2) + (f"e{m.group(3)}" if m.group(3) else ""))
    except InvalidOperation:
        return None
    if number.is_zero() or number.adjusted() < -1:  # |x| < 0.1 rounds to 0
        return 0
    if number.adjusted() > 21:
        return None
    rounded = int(number.to_integral_value(rounding=ROUND_HALF_UP))
    return rounded if -_DECIMAL_21_0_LIMIT < rounded < _DECIMAL_21_0_LIMIT else None


@lru_cache(maxsize=65536)
def _numeric_value(text: str) -> int | None:
    """``cast(text as decimal(21,0))`` as PostgreSQL computes it, or None where it would fail.

    Cached: partition values repeat, and a cache hit is cheaper than even int().
    """
    if text.isdigit() and text.isascii() and len(text) <= 21:
        return int(text)
    return _numeric_value_slow(text)


_DATE_VALUE = re.compile(
    r"\s*([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
    r"(?:[ T]([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{1,9}))?)?)?\s*",
    re.ASCII,
)


@lru_cache(maxsize=65536)
def _timestamp_value(text: str) -> datetime | None:
    """``cast(text as timestamp)`` for the ISO forms PostgreSQL reads, or None."""
    m = _DATE_VALUE.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction = m.groups()
    try:
        value = datetime(
            int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0)
        )
    except ValueError:
        return None
    if fraction:
        nanos = int(fraction.ljust(9, "0"))
        value += timedelta(microseconds=(nanos + 500) // 1000)
    return value


@lru_cache(maxsize=65536)
def _date_value(text: str) -> date | None:
    """``cast(text as date)``: the date part of any value _timestamp_value reads."""
    m = _DATE_VALUE.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, _ = m.groups()
    try:
        if hour is not None:
            datetime(int(year), int(month), int(day), int(hour), int(minute), int(second or 0))
        return date(int(year), int(month), int(day))
    except ValueError:
        return None


class _Leaf(NamedTuple):
    """A comparison resolved against the table: which value, compared how, with what."""

    value_index: int  # which of the partition's values (the key's position)
    semantics: str  # "string", "integral", "date", "timestamp"
    op: str  # = <> < <= > >= LIKE
    operand: object  # str / int / date / datetime, or a LikePattern for LIKE


class LikePattern(NamedTuple):
    shape: str  # "eq", "prefix", "suffix", "contains", "any", "glob"
    arg: str | Callable[[str], bool]  # text; for "glob" a matcher (patterns.star_matcher)


def _compile_like(pattern: str, pos: int) -> LikePattern:
    """SQL LIKE with ESCAPE '\\' (PostgreSQL/Derby semantics), as cheap a test as it allows."""
    segments: list[tuple[str, str]] = []  # ("lit", text) | ("any", "") | ("one", "")
    literal: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 == n:
                raise FilterError(
                    f"LIKE pattern {pattern!r} must not end with escape character",
                    pos,
                    syntax=False,
                )
            literal.append(pattern[i + 1])
            i += 2
            continue
        if c in "%_":
            if literal:
                segments.append(("lit", "".join(literal)))
                literal = []
            segments.append(("any" if c == "%" else "one", ""))
        else:
            literal.append(c)
        i += 1
    if literal:
        segments.append(("lit", "".join(literal)))
    kinds = [kind for kind, _ in segments]
    if "one" not in kinds:
        lits = [text for kind, text in segments if kind == "lit"]
        if not lits:
            return LikePattern("any", "") if segments else LikePattern("eq", "")
        if len(lits) == 1:  # only '%'s around one literal
            j = kinds.index("lit")
            before, after = j > 0, j < len(kinds) - 1
            shape = {
                (False, False): "eq",
                (False, True): "prefix",
                (True, False): "suffix",
                (True, True): "contains",
            }[(before, after)]
            return LikePattern(shape, lits[0])
    parts: list[list[str | None]] = [[]]  # split at '%': runs of characters, None for '_'
    for kind, text in segments:
        if kind == "any":
            parts.append([])
        else:
            parts[-1].extend(text if kind == "lit" else [None])
    return LikePattern("glob", star_matcher(parts, ignore_case=False))


class Binder:
    """Resolves comparisons against one table's partition keys and compiles predicates."""

    def __init__(
        self, key_names: Sequence[str], key_types: Sequence[str], default_partition_name: str
    ) -> None:
        if len(key_names) != len(key_types):
            raise ValueError(f"{len(key_names)} partition key names but {len(key_types)} key types")
        self.key_names = list(key_names)
        self.key_types = list(key_types)
        self.index: dict[str, int] = {}
        for i, name in enumerate(key_names):
            self.index.setdefault(name.lower(), i)
        self.default = default_partition_name
        # Value readers for typed keys: the default partition is NULL whatever it looks like.
        self.readers: dict[str, Callable[[str], object]] = {
            "integral": self._guard(_numeric_value),
            "date": self._guard(_date_value),
            "timestamp": self._guard(_timestamp_value),
        }

    def _guard(self, read: Callable[[str], object]) -> Callable[[str], object]:
        if read(self.default) is None:
            return read
        default = self.default

        def guarded(text: str) -> object:
            return None if text == default else read(text)

        return guarded

    def key_index(self, key: str, pos: int) -> int:
        i = self.index.get(key.lower())
        if i is None:
            if self.key_names:
                keys = "the table's partition keys are " + ", ".join(self.key_names)
            else:
                keys = "the table has no partition keys"
            raise FilterError(
                f"Specified key <{key}> is not a partitioning key for the table ({keys})",
                pos,
                syntax=False,
            )
        return i

    def leaf(self, key: str, op: str, lit: Literal, pos: int) -> _Leaf:
        i = self.key_index(key, pos)
        type_string = self.key_types[i]
        tclass = _type_class(type_string)
        where = f"partition key <{self.key_names[i]}> of type {type_string}"
        if tclass is None:
            raise FilterError(
                f"Filtering is not supported on {where}; Hive filters string, char, varchar, "
                "tinyint, smallint, int, bigint, date and timestamp keys only",
                pos,
                syntax=False,
            )
        if lit.kind == "int":
            if tclass != "integral":
                raise FilterError(
                    f"Cannot compare {where} with the integer {lit.value}; quote the value",
                    lit.pos if lit.pos >= 0 else pos,
                    syntax=False,
                )
            if op == "LIKE":
                raise FilterError(
                    f"LIKE is supported on string keys only, not on {where}", pos, syntax=False
                )
            return _Leaf(i, "integral", op, lit.value)
        text = str(lit.value)
        if tclass == "string" or text == self.default:
            operand: object = _compile_like(text, pos) if op == "LIKE" else text
            return _Leaf(i, "string", op, operand)
        if op == "LIKE":
            raise FilterError(
                f"LIKE is supported on string keys only, not on {where}", pos, syntax=False
            )
        if tclass == "date":
            value: object = strict_date(text)
            expected = "a date (yyyy-MM-dd)"
        elif tclass == "timestamp":
            value = strict_timestamp(text)
            expected = "a timestamp (yyyy-MM-dd HH:mm:ss)"
        else:
            value = None
            expected = "an integer (unquoted)"
        if value is None:
            raise FilterError(
                f"Cannot compare {where} with {text!r}: expected {expected}",
                lit.pos if lit.pos >= 0 else pos,
                syntax=False,
            )
        return _Leaf(i, tclass, op, value)

    # -- predicates

    def compile(self, node: Node, negate: bool) -> Predicate:
        if isinstance(node, Comparison):
            return self.compile_leaf(self.leaf(node.key, node.op, node.value, node.pos), negate)
        if isinstance(node, And):
            parts = [self.compile(item, negate) for item in node.items]
            return _any(parts) if negate else _all(parts)
        if isinstance(node, Or):
            if negate:
                return _all([self.compile(item, negate) for item in node.items])
            return _any(self.compile_disjuncts(node.items))
        if isinstance(node, Not):
            return self.compile(node.item, not negate)
        if isinstance(node, Between):
            return self.compile(_expand_between(node), negate)
        if isinstance(node, In):
            return self.compile_in(node, negate)
        if isinstance(node, MatchAll):
            return _never if negate else _always
        raise TypeError(f"not a filter node: {node!r}")

    def compile_disjuncts(self, items: Sequence[Node]) -> list[Predicate]:
        """Predicates of OR's items, string equalities on one key merged into one set lookup
        (``p = 'a' OR p = 'b' OR ...`` costs one lookup per partition, not one per term)."""
        parts: list[Predicate] = []
        equal: dict[int, set[str]] = {}
        for item in items:
            if isinstance(item, Comparison) and item.op == "=":
                leaf = self.leaf(item.key, item.op, item.value, item.pos)
                if leaf.semantics == "string":
                    equal.setdefault(leaf.value_index, set()).add(leaf.operand)  # type: ignore[arg-type]
                    continue
            parts.append(self.compile(item, False))
        for i, values in equal.items():
            if len(values) == 1:
                (s,) = values
                parts.append(_equals(i, s))
            else:
                parts.append(_member_of(i, frozenset(values)))
        return parts

    def compile_in(self, node: In, negate: bool) -> Predicate:
        leaves = [self.leaf(node.key, "=", value, node.pos) for value in node.values]
        semantics = {leaf.semantics for leaf in leaves}
        if len(semantics) != 1:  # e.g. an integral key compared with 5 and the default name
            return self.compile(_expand_in(node), negate)
        members = frozenset(leaf.operand for leaf in leaves)
        i = leaves[0].value_index
        inside = node.negated == negate  # IN, or NOT (NOT IN)
        if semantics == {"string"}:
            if inside:
                return lambda v: v[i] in members
            return lambda v: v[i] not in members
        read = self.readers[leaves[0].semantics]
        if inside:
            return _memoized(i, lambda text: read(text) in members)  # None is never a member

        def outside(text: str) -> bool:
            x = read(text)
            return x is not None and x not in members

        return _memoized(i, outside)

    def compile_leaf(self, leaf: _Leaf, negate: bool) -> Predicate:
        i = leaf.value_index
        if leaf.op == "LIKE":
            return _like_predicate(i, leaf.operand, negate)  # type: ignore[arg-type]
        op = _INVERT[leaf.op] if negate else leaf.op
        operand = leaf.operand
        if leaf.semantics == "string":
            s = operand
            if op == "=":
                return lambda v: v[i] == s
            if op == "<>":
                return lambda v: v[i] != s
            if op == "<":
                return lambda v: v[i] < s  # type: ignore[operator]
            if op == "<=":
                return lambda v: v[i] <= s  # type: ignore[operator]
            if op == ">":
                return lambda v: v[i] > s  # type: ignore[operator]
            return lambda v: v[i] >= s  # type: ignore[operator]
        read = self.readers[leaf.semantics]
        return _typed_predicate(i, read, op, operand)


def _equals(i: int, s: str) -> Predicate:
    return lambda v: v[i] == s


def _member_of(i: int, members: frozenset[str]) -> Predicate:
    return lambda v: v[i] in members


_MEMO_LIMIT = 1 << 16


def _memoized(i: int, test: Callable[[str], bool]) -> Predicate:
    """A predicate on value ``i`` that remembers its answer per distinct value.

    For tests dearer than a string comparison (casts, regular expressions): partition values
    repeat, and a dict hit costs less than even a cached cast. The memo lives as long as the
    compiled predicate and is cleared past 65,536 distinct values.
    """
    memo: dict[str, bool] = {}

    def leaf(v: Sequence[str]) -> bool:
        text = v[i]
        hit = memo.get(text)
        if hit is None:
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            hit = memo[text] = test(text)
        return hit

    return leaf


_TYPED_TESTS: dict[str, Callable[[object, object], bool]] = {
    "=": lambda x, n: x == n,
    "<>": lambda x, n: x != n,
    "<": lambda x, n: x < n,  # type: ignore[operator]
    "<=": lambda x, n: x <= n,  # type: ignore[operator]
    ">": lambda x, n: x > n,  # type: ignore[operator]
    ">=": lambda x, n: x >= n,  # type: ignore[operator]
}


def _typed_predicate(i: int, read: Callable[[str], object], op: str, n: object) -> Predicate:
    """A comparison of a typed (NULL-able) value; NULL compares false under every operator."""
    compare = _TYPED_TESTS[op]

    def test(text: str) -> bool:
        x = read(text)
        return x is not None and compare(x, n)

    return _memoized(i, test)


def _expand_between(node: Between) -> Node:
    if node.negated:
        return Or(
            (
                Comparison(node.key, "<", node.low, node.pos),
                Comparison(node.key, ">", node.high, node.pos),
            )
        )
    return And(
        (
            Comparison(node.key, ">=", node.low, node.pos),
            Comparison(node.key, "<=", node.high, node.pos),
        )
    )


def _expand_in(node: In) -> Node:
    op = "<>" if node.negated else "="
    leaves = [Comparison(node.key, op, value, node.pos) for value in node.values]
    return flatten(And if node.negated else Or, leaves)


def _like_predicate(i: int, like: LikePattern, negate: bool) -> Predicate:
    arg = like.arg
    if like.shape == "any":
        return _never if negate else _always
    if like.shape == "eq":
        return (lambda v: v[i] != arg) if negate else (lambda v: v[i] == arg)
    test: Callable[[str], bool]
    if not isinstance(arg, str):  # "glob": the matcher is the test
        test = arg
    elif like.shape == "prefix":
        test = lambda text: text.startswith(arg)  # noqa: E731
    elif like.shape == "suffix":
        test = lambda text: text.endswith(arg)  # noqa: E731
    else:  # "contains"
        test = lambda text: arg in text  # noqa: E731
    if negate:
        return _memoized(i, lambda text: not test(text))
    return _memoized(i, test)


def _always(_values: Sequence[str]) -> bool:
    return True


def _never(_values: Sequence[str]) -> bool:
    return False


def _all(parts: list[Predicate]) -> Predicate:
    """Short-circuit AND of predicates, flat for up to four (one call level per part)."""
    parts = [p for p in parts if p is not _always]
    if not parts:
        return _always
    if any(p is _never for p in parts):
        return _never
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        a, b = parts
        return lambda v: a(v) and b(v)
    if len(parts) == 3:
        a, b, c = parts
        return lambda v: a(v) and b(v) and c(v)
    if len(parts) == 4:
        a, b, c, d = parts
        return lambda v: a(v) and b(v) and c(v) and d(v)
    return partial(_all_of, tuple(parts))


def _all_of(parts: tuple[Predicate, ...], v: Sequence[str]) -> bool:
    """AND of many predicates as a loop (a nest of closures would recurse once per part)."""
    return all(p(v) for p in parts)


def _any(parts: list[Predicate]) -> Predicate:
    """Short-circuit OR of predicates, flat for up to four."""
    parts = [p for p in parts if p is not _never]
    if not parts:
        return _never
    if any(p is _always for p in parts):
        return _always
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        a, b = parts
        return lambda v: a(v) or b(v)
    if len(parts) == 3:
        a, b, c = parts
        return lambda v: a(v) or b(v) or c(v)
    if len(parts) == 4:
        a, b, c, d = parts
        return lambda v: a(v) or b(v) or c(v) or d(v)
    return partial(_any_of, tuple(parts))


def _any_of(parts: tuple[Predicate, ...], v: Sequence[str]) -> bool:
    """OR of many predicates as a loop."""
    return any(p(v) for p in parts)


# -- Public API ----------------------------------------------------------------------


def compile_filter(
    node: Node,
    key_names: Sequence[str],
    key_types: Sequence[str],
    *,
    default_partition_name: str = DEFAULT_PARTITION_NAME,
) -> Predicate:
    """A predicate over one partition's values (strings, in key order) with Hive's semantics.

    Raises FilterError for keys the table does not have and comparisons Hive rejects (see the
    module docstring). The predicate is a tree of closures built once; call it per partition.
    Casts and patterns remember their answer per distinct value (bounded), so reuse one
    predicate for all partitions of a call; it is safe to share between threads.
    """
    return Binder(key_names, key_types, default_partition_name).compile(node, False)
