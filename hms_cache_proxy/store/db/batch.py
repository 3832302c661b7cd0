"""Small helpers for running one query over many ids without one statement per object."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, Select, any_, bindparam
from sqlalchemy.dialects.postgresql import ARRAY

T = TypeVar("T")

# Bound parameters per IN list: well under SQLite's and PostgreSQL's limits.
CHUNK = 1000

IdSource = Sequence[Any] | Select[Any]
"""Either explicit ids (or names), or a SELECT of one id column (``col IN (SELECT ...)``)."""


def chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def in_conditions(
    col: ColumnElement[Any], ids: IdSource, dialect: str | None = None
) -> list[ColumnElement[bool]]:
    """``col IN (...)`` for a set of values, as few conditions as the database allows.

    On PostgreSQL a list is one ``col = ANY(:array)``: a single parameter whatever its length,
    which the planner turns into an index scan even when table statistics are stale. Elsewhere
    it is one ``IN`` per chunk of values. A subquery is always one ``IN (SELECT ...)``.
    """
    if isinstance(ids, Select):
        return [col.in_(ids.scalar_subquery())]
    unique = sorted(set(ids))
    if dialect == "postgresql" and unique:
        return [col == any_(bindparam(None, unique, type_=ARRAY(col.type)))]
    return [col.in_(part) for part in chunks(unique)]


def fetch_in(
    conn: Connection,
    col: ColumnElement[Any],
    ids: IdSource,
    build: Callable[[ColumnElement[bool]], Select[Any]],
) -> list[Any]:
    """Rows of ``build(condition)`` for every chunk of ``ids``, concatenated."""
    if not isinstance(ids, Select) and not ids:
        return []
    rows: list[Any] = []
    for cond in in_conditions(col, ids, conn.dialect.name):
        rows.extend(conn.execute(build(cond)).all())
    return rows


def group(rows: Iterable[Any], key: Callable[[Any], Any]) -> dict[Any, list[Any]]:
    out: dict[Any, list[Any]] = {}
    for row in rows:
        out.setdefault(key(row), []).append(row)
    return out
