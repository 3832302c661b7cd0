"""Hive's partition filter language: get_partitions_by_filter and get_num_partitions_by_filter.

Clients send text such as ``dt = "2024-01-01"`` (Spark), ``a > 5 and b like "x%"`` or
``(p) in ("a", "b")``. ``parse`` turns it into a small immutable AST, ``compile_filter`` binds
the AST to a table's partition keys and returns a predicate over one partition's values (nested
closures, built once, called for each of possibly 10,000 cached partitions), and ``pushdown``
extracts the key/value conditions a database query may use to narrow its candidates first.

What Hive accepts and means, and where each fact comes from (apache/hive):

Grammar. Hive 4.0 parses with ANTLR4 ``PartitionFilter.g4`` + ``PartFilterVisitor``
(standalone-metastore/metastore-server/src/main/java/.../metastore/parser/; HIVE-27362 replaced
Hive 2.3/3's ANTLR3 ``Filter.g``). This parser accepts the union of both:

- ``key op value`` and ``value op key`` with op ``= == != <> < <= > >= LIKE``; ``<=>`` parses
  in Hive 4 but is rejected ("Unsupported comparison operator"), and so it is here. ``value
  LIKE key`` is rejected, as Hive does ("Value should be on the RHS for LIKE operator",
  ExpressionTree.LeafNode.generateJDOFilterOverPartitions; direct SQL emits invalid SQL for it).
- ``key [NOT] BETWEEN v1 AND v2``, meaning ``key >= v1 AND key <= v2`` (NOT: ``key < v1 OR
  key > v2``).
- ``(key) [NOT] IN (v, ...)``, meaning an OR of ``=`` (NOT: an AND of ``!=``), and
  ``(struct(k1, k2)) [NOT] IN ([const] struct(v1, v2), ...)``. Hive requires the parentheses
  around the key; ``key IN (...)`` is accepted here too.
- AND binds tighter than OR, both left-associative; parentheses group. Hive has no general NOT;
  a prefix ``NOT`` (binding tighter than AND) and ``key NOT LIKE v`` are accepted here as an
  extension, evaluated with SQL three-valued logic (see below).
- Keywords are case-insensitive (Hive upper-cases the character stream it lexes:
  ``UpperCaseCharStream`` in PartFilterParser, ``ANTLRNoCaseStringStream`` in Hive 2.3); key
  names are ``[A-Za-z0-9_]+`` or back-quoted (`` `date` ``, ```` `` ```` for a back-quote) and
  match the table's keys case-insensitively (``LeafNode.getPartColIndexForFilter``:
  equalsIgnoreCase). Hive 4 reserves DATE, TIMESTAMP, STRUCT and CONST; here they may also name
  a key where no literal can follow, so Spark's ``date = "x"`` (valid in Hive 2.3) works.
- Values: a string in ``'...'`` or ``"..."``, in which a backslash escapes any character but is
  *kept*: Hive only strips the outer quotes (``TrimQuotes`` / ``unquoteString``), so ``'a\\'b'``
  is the value ``a\\'b``. Adjacent strings are joined Hive 4's way (their source text, outer
  quotes stripped only if the first and last characters are the same quote). Integers
  ``-?[0-9]+`` (a Java long). Dates ``2024-01-31`` or ``DATE '2024-01-31'`` and timestamps
  ``2024-01-31 10:00:00`` (one space) or ``TIMESTAMP '...'``, checked strictly
  (``uuuu-MM-dd [HH:mm:ss]``, MetaStoreUtils.convertStringToDate/Timestamp) and then, as in
  Hive 4's visitor, used as strings. There are no decimal, boolean or NULL literals.
- The empty filter matches every partition (ObjectStore: ``filter.isEmpty()`` gives
  ``ExpressionTree.EMPTY_TREE``); a filter of only blanks is a syntax error, as in Hive. Unlike
  Hive 4 (whose ``filter`` rule has no EOF), trailing text after a complete filter is an error.

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
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache, partial
from typing import NamedTuple

from hms_cache_proxy.store.patterns import star_matcher

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "And",
    "Between",
    "Comparison",
    "FilterError",
    "In",
    "KeyCondition",
    "Literal",
    "MatchAll",
    "Node",
    "Not",
    "Or",
    "Predicate",
    "compile_filter",
    "parse",
    "pushdown",
    "to_text",
    "type_name",
]

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"

Predicate = Callable[[Sequence[str]], bool]


class FilterError(ValueError):
    """A filter Hive's metastore would reject; the handler reports it as a MetaException.

    ``position`` is the 0-based character offset of the offending token in the filter text
    (``None`` when there is none), ``message`` says what was wrong or expected.
    """

    def __init__(
        self,
        message: str,
        position: int | None = None,
        text: str | None = None,
        *,
        syntax: bool = True,
    ) -> None:
        self.message = message
        self.position = position
        self.text = text
        self.syntax = syntax
        super().__init__(self._render())

    def _render(self) -> str:
        head = "Error parsing partition filter" if self.syntax else "Invalid partition filter"
        where = "" if self.position is None else f" at position {self.position}"
        source = "" if self.text is None else f" in '{_excerpt(self.text)}'"
        return f"{head}{where}: {self.message}{source}"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_error, (self.message, self.position, self.text, self.syntax))


_EXCERPT_CHARS = 200


def _excerpt(text: str) -> str:
    """The filter as quoted in an error: a long one cut short (it may be a megabyte)."""
    if len(text) <= _EXCERPT_CHARS:
        return text
    return f"{text[:_EXCERPT_CHARS]}... ({len(text):,} characters)"


def _rebuild_error(
    message: str, position: int | None, text: str | None, syntax: bool
) -> FilterError:
    return FilterError(message, position, text, syntax=syntax)


# -- AST -------------------------------------------------------------------------------------
# Positions are kept for error messages and excluded from equality, so trees compare by meaning.


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant: ``kind`` is "string", "int", "date" or "timestamp" (the last two as text)."""

    kind: str
    value: str | int
    pos: int = field(default=-1, compare=False)


@dataclass(frozen=True, slots=True)
class MatchAll:
    """The empty filter."""


@dataclass(frozen=True, slots=True)
class Comparison:
    """``key op value``; op is one of = <> < <= > >= LIKE (``value op key`` is normalised)."""

    key: str
    op: str
    value: Literal
    pos: int = field(default=-1, compare=False)


@dataclass(frozen=True, slots=True)
class Between:
    """``key [NOT] BETWEEN low AND high``."""

    key: str
    low: Literal
    high: Literal
    negated: bool = False
    pos: int = field(default=-1, compare=False)


@dataclass(frozen=True, slots=True)
class In:
    """``(key) [NOT] IN (values)``."""

    key: str
    values: tuple[Literal, ...]
    negated: bool = False
    pos: int = field(default=-1, compare=False)


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction of two or more nodes."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction of two or more nodes."""

    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """Negation (an extension: Hive has only NOT BETWEEN and NOT IN)."""

    item: Node


Node = MatchAll | Comparison | Between | In | And | Or | Not

# -- Lexer -----------------------------------------------------------------------------------

_KEYWORDS = frozenset(
    {"AND", "OR", "NOT", "BETWEEN", "IN", "LIKE", "STRUCT", "CONST", "DATE", "TIMESTAMP"}
)
# Keywords that may also name a key when no literal can follow them.
_SOFT_KEYWORDS = frozenset({"STRUCT", "CONST", "DATE", "TIMESTAMP"})

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\r\n]+)
   |(?P<ts>[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}:[0-9]{2})
   |(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})
   |(?P<word>[A-Za-z0-9_]+)
   |(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
   |(?P<qident>`(?:``|[^`])*`)
   |(?P<op><=>|<=|<>|<|>=|>|==|=|!=)
   |(?P<punct>[(),\-])
    """,
    re.VERBOSE | re.DOTALL,
)


class _Tok(NamedTuple):
    kind: str  # TS DATE INT IDENT KW STRING QIDENT OP ( ) , - EOF
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            ch = text[pos]
            if ch in "'\"":
                raise FilterError(f"unterminated string literal (no closing {ch})", pos, text)
            if ch == "`":
                raise FilterError("unterminated quoted identifier (no closing `)", pos, text)
            raise FilterError(f"unexpected character {ch!r}", pos, text)
        kind = m.lastgroup
        s = m.group()
        if kind == "word":
            if s.isdigit():
                end = m.end()
                if end + 1 < n and text[end] == "." and text[end + 1].isdigit():
                    raise FilterError(
                        "decimal literals are not supported in partition filters "
                        "(Hive's grammar has integers only)",
                        pos,
                        text,
                    )
                kind = "INT"
            elif s.upper() in _KEYWORDS:
                kind = "KW"
            else:
                kind = "IDENT"
        elif kind == "punct":
            kind = s
        elif kind == "ts":
            kind = "TS"
        elif kind == "date":
            kind = "DATE"
        elif kind is not None and kind != "ws":
            kind = kind.upper()
        if kind != "ws":
            tokens.append(_Tok(kind or "?", s, pos))
        pos = m.end()
    tokens.append(_Tok("EOF", "", n))
    return tokens


def _hive_unquote(raw: str) -> str:
    """Hive's TrimQuotes / unquoteString: strip matching outer quotes, keep everything else."""
    if len(raw) > 1 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return raw


_DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TS_TEXT = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})")


def _strict_date(text: str) -> date | None:
    """MetaStoreUtils.convertStringToDate: ``uuuu-MM-dd``, resolved strictly."""
    if _DATE_TEXT.fullmatch(text) is None:
        return None
    try:
        return date(int(text[0:4]), int(text[5:7]), int(text[8:10]))
    except ValueError:
        return None


def _strict_timestamp(text: str) -> datetime | None:
    """MetaStoreUtils.convertStringToTimestamp: ``uuuu-MM-dd HH:mm:ss``, resolved strictly."""
    m = _TS_TEXT.fullmatch(text)
    if m is None:
        return None
    day = _strict_date(m.group(1))
    if day is None:
        return None
    try:
        return datetime(
            day.year, day.month, day.day, int(m.group(2)), int(m.group(3)), int(m.group(4))
        )
    except ValueError:
        return None


_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1

_COMPARISON_OPS = {
    "=": "=",
    "==": "=",
    "!=": "<>",
    "<>": "<>",
    "<": "<",
    "<=": "<=",
    ">": ">",
    ">=": ">=",
}
# literal OP key  ==  key FLIP[OP] literal
_FLIP = {"=": "=", "<>": "<>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# NOT (x OP v)  ==  x INVERT[OP] v, for non-NULL x
_INVERT = {"=": "<>", "<>": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}

# -- Parser ----------------------------------------------------------------------------------


# Parentheses and NOTs nest at most this deep: the parser, the compiler and the pushdown walk
# nesting by recursion, which this bound keeps far from Python's recursion limit (Hive's own
# clients nest a few levels; AND and OR chains are flat lists, not nesting).
MAX_NESTING = 100


class _Parser:
    def __init__(self, text: str, max_terms: int | None = None) -> None:
        self.text = text
        self.max_terms = max_terms
        self.terms = 0
        self.depth = 0
        self.toks = _tokenize(text)
        self.i = 0

    def nest(self, tok: _Tok) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise FilterError(
                f"parentheses and NOT nest more than {MAX_NESTING} deep", tok.pos, syntax=False
            )

    # token helpers

    def peek(self, k: int = 0) -> _Tok:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else self.toks[-1]

    def advance(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def is_kw(self, k: int, word: str) -> bool:
        tok = self.peek(k)
        return tok.kind == "KW" and tok.text.upper() == word

    def error(self, message: str, tok: _Tok | None = None) -> FilterError:
        tok = tok or self.peek()
        found = "end of filter" if tok.kind == "EOF" else f"'{tok.text}'"
        return FilterError(f"{message}, found {found}", tok.pos, self.text)

    def expect(self, kind: str, message: str) -> _Tok:
        if self.peek().kind != kind:
            raise self.error(message)
        return self.advance()

    def is_key(self, k: int) -> bool:
        tok = self.peek(k)
        if tok.kind in ("IDENT", "QIDENT"):
            return True
        if tok.kind == "KW" and tok.text.upper() in _SOFT_KEYWORDS:
            # DATE '...' and TIMESTAMP '...' are literals; elsewhere the word names a key.
            return not (
                tok.text.upper() in ("DATE", "TIMESTAMP") and self.peek(k + 1).kind == "STRING"
            )
        return False

    def is_literal(self, k: int) -> bool:
        tok = self.peek(k)
        if tok.kind in ("STRING", "INT", "-", "DATE", "TS"):
            return True
        return (
            tok.kind == "KW"
            and tok.text.upper() in ("DATE", "TIMESTAMP")
            and self.peek(k + 1).kind == "STRING"
        )

    # grammar

    def parse(self) -> Node:
        node = self.or_expr()
        if self.peek().kind != "EOF":
            raise self.error("expected AND, OR or the end of the filter")
        return node

    def or_expr(self) -> Node:
        items = [self.and_expr()]
        while self.is_kw(0, "OR"):
            self.advance()
            items.append(self.and_expr())
        return _flatten(Or, items)

    def and_expr(self) -> Node:
        items = [self.unary()]
        while self.is_kw(0, "AND"):
            self.advance()
            items.append(self.unary())
        return _flatten(And, items)

    def unary(self) -> Node:
        if self.is_kw(0, "NOT"):
            self.nest(self.advance())
            node = Not(self.unary())
            self.depth -= 1
            return node
        return self.primary()

    def primary(self) -> Node:
        tok = self.peek()
        if tok.kind == "(":
            if self.is_kw(1, "STRUCT") and self.peek(2).kind == "(":
                return self.struct_in()
            if (
                self.is_key(1)
                and self.peek(2).kind == ")"
                and (self.is_kw(3, "IN") or (self.is_kw(3, "NOT") and self.is_kw(4, "IN")))
            ):
                self.advance()
                key, pos = self.key("after '('")
                self.advance()  # ')'
                return self.condition(key, pos)
            self.nest(self.advance())
            node = self.or_expr()
            self.expect(")", f"expected ')' to close the '(' at position {tok.pos}")
            self.depth -= 1
            return node
        if self.is_literal(0):
            value = self.constant("")
            op_tok = self.peek()
            op = self.comparison_op()
            if op is None:
                raise self.error("expected a comparison operator after the value")
            if op == "LIKE":
                raise FilterError(
                    "Value should be on the RHS for LIKE operator", op_tok.pos, self.text
                )
            key, pos = self.key(f"after '{op_tok.text}'")
            return Comparison(key, _FLIP[op], value, pos)
        if self.is_key(0):
            key, pos = self.key("")
            return self.condition(key, pos)
        raise self.error("expected a partition key, a value, NOT or '('")

    def key(self, context: str) -> tuple[str, int]:
        tok = self.peek()
        if not self.is_key(0):
            raise self.error(f"expected a partition key {context}".rstrip())
        self.advance()
        if tok.kind == "QIDENT":
            return tok.text[1:-1].replace("``", "`"), tok.pos
        return tok.text, tok.pos

    def comparison_op(self) -> str | None:
        tok = self.peek()
        if tok.kind == "OP":
            if tok.text == "<=>":
                raise FilterError(
                    "Unsupported comparison operator: <=> (null-safe equality is not supported "
                    "in partition filters)",
                    tok.pos,
                    self.text,
                )
            self.advance()
            return _COMPARISON_OPS[tok.text]
        if self.is_kw(0, "LIKE"):
            self.advance()
            return "LIKE"
        return None

    def condition(self, key: str, pos: int) -> Node:
        negated = False
        if self.is_kw(0, "NOT"):
            self.advance()
            negated = True
            if not (self.is_kw(0, "BETWEEN") or self.is_kw(0, "IN") or self.is_kw(0, "LIKE")):
                raise self.error(f"expected BETWEEN, IN or LIKE after '{key} NOT'")
        if self.is_kw(0, "BETWEEN"):
            self.advance()
            low = self.constant("after BETWEEN")
            if not self.is_kw(0, "AND"):
                raise self.error("expected AND between the bounds of BETWEEN")
            self.advance()
            high = self.constant("after BETWEEN ... AND")
            return Between(key, low, high, negated, pos)
        if self.is_kw(0, "IN"):
            self.advance()
            return In(key, self.value_list("after IN"), negated, pos)
        op_tok = self.peek()
        op = self.comparison_op()
        if op is None:
            raise self.error(
                "expected a comparison operator (=, ==, !=, <>, <, <=, >, >=, LIKE), "
                f"BETWEEN or IN after partition key '{key}'"
            )
        node: Node = Comparison(key, op, self.constant(f"after '{op_tok.text}'"), pos)
        return Not(node) if negated else node

    def value_list(self, context: str) -> tuple[Literal, ...]:
        self.expect("(", f"expected '(' {context}")
        values = [self.constant("in the IN list")]
        while self.peek().kind == ",":
            self.advance()
            values.append(self.constant("after ','"))
        self.expect(")", "expected ',' or ')' in the IN list")
        return tuple(values)

    def struct_in(self) -> Node:
        self.advance()  # '('
        self.advance()  # STRUCT
        self.expect("(", "expected '(' after STRUCT")
        keys = [self.key("in STRUCT(...)")]
        while self.peek().kind == ",":
            self.advance()
            keys.append(self.key("after ','"))
        self.expect(")", "expected ',' or ')' after the STRUCT keys")
        self.expect(")", "expected ')' after STRUCT(...)")
        negated = False
        if self.is_kw(0, "NOT"):
            self.advance()
            negated = True
        if not self.is_kw(0, "IN"):
            raise self.error("expected IN after (STRUCT(...))")
        self.advance()
        self.expect("(", "expected '(' after IN")
        names = [name for name, _ in keys]
        rows = [self.struct_row(names)]
        while self.peek().kind == ",":
            self.advance()
            rows.append(self.struct_row(names))
        self.expect(")", "expected ',' or ')' in the IN list")
        # Hive's expansion: OR of ANDs of '=', or for NOT IN an AND of ORs of '!='.
        op = "<>" if negated else "="
        inner, outer = (Or, And) if negated else (And, Or)
        return _flatten(
            outer,
            [
                _flatten(
                    inner,
                    [
                        Comparison(name, op, value, pos)
                        for (name, pos), value in zip(keys, row, strict=True)
                    ],
                )
                for row in rows
            ],
        )

    def struct_row(self, keys: list[str]) -> list[Literal]:
        start = self.peek()
        if self.is_kw(0, "CONST"):
            self.advance()
        if not self.is_kw(0, "STRUCT"):
            raise self.error("expected STRUCT(...) in the IN list")
        self.advance()
        self.expect("(", "expected '(' after STRUCT")
        row = [self.constant("in STRUCT(...)")]
        while self.peek().kind == ",":
            self.advance()
            row.append(self.constant("after ','"))
        self.expect(")", "expected ',' or ')' in STRUCT(...)")
        if len(row) != len(keys):
            shown = ", ".join(str(v.value) for v in row)
            raise FilterError(
                f"Struct key [{', '.join(keys)}] and value [{shown}] sizes do not match",
                start.pos,
                self.text,
            )
        return row

    def constant(self, context: str) -> Literal:
        tok = self.peek()
        self.terms += 1
        if self.max_terms is not None and self.terms > self.max_terms:
            raise FilterError(
                f"the filter has more than {self.max_terms:,} values "
                "(partition_filter_max_terms); ask for fewer partitions per call",
                tok.pos,
                syntax=False,
            )
        if tok.kind == "STRING":
            raw = []
            while self.peek().kind == "STRING":
                raw.append(self.advance().text)
            return Literal("string", _hive_unquote("".join(raw)), tok.pos)
        if tok.kind == "-" or tok.kind == "INT":
            self.advance()
            negative = tok.kind == "-"
            digits = tok
            if negative:
                digits = self.peek()
                if digits.kind != "INT":
                    raise self.error("expected digits after '-'")
                self.advance()
            number = -int(digits.text) if negative else int(digits.text)
            if not _LONG_MIN <= number <= _LONG_MAX:
                raise FilterError("integer literal out of range (a Java long)", tok.pos, self.text)
            return Literal("int", number, tok.pos)
        if tok.kind == "DATE":
            self.advance()
            return Literal("date", self.checked_date(tok.text, tok), tok.pos)
        if tok.kind == "TS":
            self.advance()
            return Literal("timestamp", self.checked_timestamp(tok.text, tok), tok.pos)
        if self.is_literal(0) and tok.kind == "KW":  # DATE '...' / TIMESTAMP '...'
            self.advance()
            string = self.advance()
            text = _hive_unquote(string.text)
            if tok.text.upper() == "DATE":
                return Literal("date", self.checked_date(text, string), tok.pos)
            return Literal("timestamp", self.checked_timestamp(text, string), tok.pos)
        where = f" {context}" if context else ""
        raise self.error(
            f"expected a value (a quoted string, an integer, a date or a timestamp){where}"
        )

    def checked_date(self, text: str, tok: _Tok) -> str:
        if _strict_date(text) is None:
            raise FilterError(f"invalid date {text!r} (expected yyyy-MM-dd)", tok.pos, self.text)
        return text

    def checked_timestamp(self, text: str, tok: _Tok) -> str:
        if _strict_timestamp(text) is None:
            raise FilterError(
                f"invalid timestamp {text!r} (expected yyyy-MM-dd HH:mm:ss)", tok.pos, self.text
            )
        return text


def _flatten(kind: type[And] | type[Or], items: Sequence[Node]) -> Node:
    """One node for one item, else ``kind`` with nested nodes of the same kind spliced in."""
    if len(items) == 1:
        return items[0]
    flat: list[Node] = []
    for item in items:
        if isinstance(item, kind):
            flat.extend(item.items)
        else:
            flat.append(item)
    return kind(tuple(flat))


# Filters up to this long are remembered (the AST is immutable); longer ones are parsed each
# time, so the cache holds at most 1,024 × 4 KB of filter text.
_CACHED_LENGTH = 4096


@lru_cache(maxsize=1024)
def _parse_cached(text: str) -> Node:
    return _Parser(text).parse()


def parse(text: str | None, *, max_length: int | None = None, max_terms: int | None = None) -> Node:
    """Parse a Hive partition filter; raise FilterError (a ValueError) if Hive would not.

    ``None`` and ``""`` give MatchAll. ``max_length`` (characters) and ``max_terms`` (values)
    bound what one call may make the service parse and evaluate (the settings
    ``partition_filter_max_length`` and ``partition_filter_max_terms``); ``None``: no bound.
    """
    if not text:
        return MatchAll()
    if max_length is not None and len(text) > max_length:
        raise FilterError(
            f"the filter is {len(text):,} characters long, more than "
            f"partition_filter_max_length ({max_length:,}); ask for fewer partitions per call",
            syntax=False,
        )
    if max_terms is not None:
        return _Parser(text, max_terms).parse()
    if len(text) <= _CACHED_LENGTH:
        return _parse_cached(text)
    return _Parser(text).parse()


# -- Back to text ----------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_]+")
_STRING_TOKEN = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*\"""", re.DOTALL)


def _quote_string(value: str) -> str:
    """A literal that Hive reads back as exactly ``value`` (backslashes are kept verbatim)."""
    for quote in ('"', "'"):
        candidate = quote + value + quote
        if _STRING_TOKEN.fullmatch(candidate):
            return candidate
    raise ValueError(f"{value!r} cannot be written as a Hive filter string literal")


def _text_key(key: str) -> str:
    if _PLAIN_KEY.fullmatch(key) and not key.isdigit() and key.upper() not in _KEYWORDS:
        return key
    return "`" + key.replace("`", "``") + "`"


def _text_literal(lit: Literal) -> str:
    if lit.kind == "string":
        return _quote_string(str(lit.value))
    if lit.kind == "date":
        return f"DATE '{lit.value}'"
    if lit.kind == "timestamp":
        return f"TIMESTAMP '{lit.value}'"
    return str(lit.value)


def to_text(node: Node) -> str:
    """Filter text that parses back to ``node`` (for logs, tests and regenerating filters)."""
    if isinstance(node, MatchAll):
        return ""
    if isinstance(node, Comparison):
        return f"{_text_key(node.key)} {node.op} {_text_literal(node.value)}"
    if isinstance(node, Between):
        neg = "NOT " if node.negated else ""
        return (
            f"{_text_key(node.key)} {neg}BETWEEN {_text_literal(node.low)} "
            f"AND {_text_literal(node.high)}"
        )
    if isinstance(node, In):
        neg = "NOT " if node.negated else ""
        values = ", ".join(_text_literal(v) for v in node.values)
        return f"({_text_key(node.key)}) {neg}IN ({values})"
    if isinstance(node, Not):
        return f"NOT {_wrap(node.item, (And, Or, Not))}"
    if isinstance(node, And):
        return " AND ".join(_wrap(item, (And, Or)) for item in node.items)
    if isinstance(node, Or):
        return " OR ".join(_wrap(item, (Or,)) for item in node.items)
    raise TypeError(f"not a filter node: {node!r}")


def _wrap(node: Node, needs_parens: tuple[type, ...]) -> str:
    text = to_text(node)
    return f"({text})" if isinstance(node, needs_parens) else text


# -- Binding: types and values ----------------------------------------------------------------

_STRING_TYPES = frozenset({"string", "char", "varchar"})
_INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
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

    index: int
    semantics: str  # "string", "integral", "date", "timestamp"
    op: str  # = <> < <= > >= LIKE
    operand: object  # str / int / date / datetime, or a _Like for LIKE


class _Like(NamedTuple):
    shape: str  # "eq", "prefix", "suffix", "contains", "any", "glob"
    arg: object  # str, or a matcher (store.patterns.star_matcher: no backtracking)


def _compile_like(pattern: str, pos: int) -> _Like:
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
            return _Like("any", "") if segments else _Like("eq", "")
        if len(lits) == 1:  # only '%'s around one literal
            j = kinds.index("lit")
            before, after = j > 0, j < len(kinds) - 1
            shape = {
                (False, False): "eq",
                (False, True): "prefix",
                (True, False): "suffix",
                (True, True): "contains",
            }[(before, after)]
            return _Like(shape, lits[0])
    parts: list[list[str | None]] = [[]]  # split at '%': runs of characters, None for '_'
    for kind, text in segments:
        if kind == "any":
            parts.append([])
        else:
            parts[-1].extend(text if kind == "lit" else [None])
    return _Like("glob", star_matcher(parts, ignore_case=False))


class _Binder:
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
            value: object = _strict_date(text)
            expected = "a date (yyyy-MM-dd)"
        elif tclass == "timestamp":
            value = _strict_timestamp(text)
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
                    equal.setdefault(leaf.index, set()).add(leaf.operand)  # type: ignore[arg-type]
                    continue
            parts.append(self.compile(item, False))
        for i, values in equal.items():
            if len(values) == 1:
                (s,) = values
                parts.append(lambda v, i=i, s=s: v[i] == s)
            else:
                members = frozenset(values)
                parts.append(lambda v, i=i, members=members: v[i] in members)
        return parts

    def compile_in(self, node: In, negate: bool) -> Predicate:
        leaves = [self.leaf(node.key, "=", value, node.pos) for value in node.values]
        semantics = {leaf.semantics for leaf in leaves}
        if len(semantics) != 1:  # e.g. an integral key compared with 5 and the default name
            return self.compile(_expand_in(node), negate)
        members = frozenset(leaf.operand for leaf in leaves)
        i = leaves[0].index
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
        i = leaf.index
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

    # -- pushdown

    def implied(self, node: Node, negate: bool) -> dict[int, frozenset[str]]:
        """Per key index, the set of values that every partition the node accepts must have."""
        if isinstance(node, Comparison):
            leaf = self.leaf(node.key, node.op, node.value, node.pos)
            if leaf.semantics != "string":
                return {}
            if leaf.op == "LIKE":
                like: _Like = leaf.operand  # type: ignore[assignment]
                if like.shape == "eq" and not negate:
                    return {leaf.index: frozenset([like.arg])}  # type: ignore[list-item]
                return {}
            if (leaf.op == "=" and not negate) or (leaf.op == "<>" and negate):
                return {leaf.index: frozenset([leaf.operand])}  # type: ignore[list-item]
            return {}
        if isinstance(node, In):
            leaves = [self.leaf(node.key, "=", value, node.pos) for value in node.values]
            if node.negated != negate or any(leaf.semantics != "string" for leaf in leaves):
                return {}
            return {leaves[0].index: frozenset(leaf.operand for leaf in leaves)}  # type: ignore[misc]
        if isinstance(node, Not):
            return self.implied(node.item, not negate)
        if isinstance(node, (And, Or)):
            parts = [self.implied(item, negate) for item in node.items]
            conjunction = isinstance(node, And) != negate
            return _intersect_all(parts) if conjunction else _union_common(parts)
        if isinstance(node, Between):
            self.compile(node, negate)  # validates keys and types
        return {}


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
    return _flatten(And if node.negated else Or, leaves)


def _like_predicate(i: int, like: _Like, negate: bool) -> Predicate:
    arg = like.arg
    if like.shape == "any":
        return _never if negate else _always
    if like.shape == "eq":
        return (lambda v: v[i] != arg) if negate else (lambda v: v[i] == arg)
    test: Callable[[str], bool]
    if like.shape == "prefix":
        test = lambda text: text.startswith(arg)  # noqa: E731
    elif like.shape == "suffix":
        test = lambda text: text.endswith(arg)  # noqa: E731
    elif like.shape == "contains":
        test = lambda text: arg in text  # noqa: E731
    else:
        test = arg  # type: ignore[assignment]
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


def _intersect_all(parts: list[dict[int, frozenset[str]]]) -> dict[int, frozenset[str]]:
    result: dict[int, frozenset[str]] = {}
    for part in parts:
        for index, values in part.items():
            result[index] = result[index] & values if index in result else values
    return result


def _union_common(parts: list[dict[int, frozenset[str]]]) -> dict[int, frozenset[str]]:
    common = set(parts[0]) if parts else set()
    for part in parts[1:]:
        common &= set(part)
    return {index: frozenset().union(*(part[index] for part in parts)) for index in common}


# -- Public binding API ----------------------------------------------------------------------


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
    return _Binder(key_names, key_types, default_partition_name).compile(node, False)


class KeyCondition(NamedTuple):
    """The partition's value for key ``key_index`` is one of ``values`` (none: nothing matches)."""

    key_index: int
    values: tuple[str, ...]


def pushdown(
    node: Node,
    key_names: Sequence[str],
    key_types: Sequence[str],
    *,
    default_partition_name: str = DEFAULT_PARTITION_NAME,
) -> list[KeyCondition]:
    """Conditions every partition the filter accepts satisfies, for narrowing a SQL query.

    Only exact string equalities implied by the whole filter are returned (from top-level AND
    conjuncts, equal-key ORs and IN lists); typed comparisons never are, since ``'05' = 5``.
    An empty ``values`` tuple means no partition can match. The compiled predicate must still
    decide; these only narrow the candidates.
    """
    binder = _Binder(key_names, key_types, default_partition_name)
    implied = binder.implied(node, False)
    return [KeyCondition(i, tuple(sorted(implied[i]))) for i in sorted(implied)]
