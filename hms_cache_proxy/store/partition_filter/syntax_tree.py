"""The partition filter's syntax tree and its one error type (FilterError).

Nodes are immutable; positions are kept for error messages only. The parser builds them,
the binder and the pushdown walk them. The strict date and timestamp readers are here because
the parser checks literals with them and the binder reads values with them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

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


def flatten(kind: type[And] | type[Or], items: Sequence[Node]) -> Node:
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


_DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TS_TEXT = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})")


def strict_date(text: str) -> date | None:
    """MetaStoreUtils.convertStringToDate: ``uuuu-MM-dd``, resolved strictly."""
    if _DATE_TEXT.fullmatch(text) is None:
        return None
    try:
        return date(int(text[0:4]), int(text[5:7]), int(text[8:10]))
    except ValueError:
        return None


def strict_timestamp(text: str) -> datetime | None:
    """MetaStoreUtils.convertStringToTimestamp: ``uuuu-MM-dd HH:mm:ss``, resolved strictly."""
    m = _TS_TEXT.fullmatch(text)
    if m is None:
        return None
    day = strict_date(m.group(1))
    if day is None:
        return None
    try:
        return datetime(
            day.year, day.month, day.day, int(m.group(2)), int(m.group(3)), int(m.group(4))
        )
    except ValueError:
        return None
