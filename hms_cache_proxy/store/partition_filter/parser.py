"""Parsing Hive's partition filter text into the syntax tree, and writing a tree back as text.

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

"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from hms_cache_proxy.store.partition_filter.syntax_tree import (
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
    flatten,
    strict_date,
    strict_timestamp,
)

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
        return flatten(Or, items)

    def and_expr(self) -> Node:
        items = [self.unary()]
        while self.is_kw(0, "AND"):
            self.advance()
            items.append(self.unary())
        return flatten(And, items)

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
        return flatten(
            outer,
            [
                flatten(
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
        if strict_date(text) is None:
            raise FilterError(f"invalid date {text!r} (expected yyyy-MM-dd)", tok.pos, self.text)
        return text

    def checked_timestamp(self, text: str, tok: _Tok) -> str:
        if strict_timestamp(text) is None:
            raise FilterError(
                f"invalid timestamp {text!r} (expected yyyy-MM-dd HH:mm:ss)", tok.pos, self.text
            )
        return text


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
