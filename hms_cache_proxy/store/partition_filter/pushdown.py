"""What a partition filter implies about key values, for narrowing a database query first.

Only exact string equalities implied by the whole filter count (from top-level AND conjuncts,
equal-key ORs and IN lists); typed comparisons never do, since ``'05' = 5``. The compiled
predicate (binder.py) still decides; these conditions only narrow the candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from hms_cache_proxy.store.partition_filter.binder import Binder, LikePattern
from hms_cache_proxy.store.partition_filter.syntax_tree import (
    DEFAULT_PARTITION_NAME,
    And,
    Between,
    Comparison,
    In,
    Node,
    Not,
    Or,
)


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
    binder = Binder(key_names, key_types, default_partition_name)
    implied = _implied(binder, node, False)
    return [KeyCondition(i, tuple(sorted(implied[i]))) for i in sorted(implied)]


def _implied(binder: Binder, node: Node, negate: bool) -> dict[int, frozenset[str]]:
    """Per key index, the set of values that every partition the node accepts must have."""
    if isinstance(node, Comparison):
        leaf = binder.leaf(node.key, node.op, node.value, node.pos)
        if leaf.semantics != "string":
            return {}
        if leaf.op == "LIKE":
            like: LikePattern = leaf.operand  # type: ignore[assignment]
            if like.shape == "eq" and not negate:
                return {leaf.value_index: frozenset([like.arg])}  # type: ignore[list-item]
            return {}
        if (leaf.op == "=" and not negate) or (leaf.op == "<>" and negate):
            return {leaf.value_index: frozenset([leaf.operand])}  # type: ignore[list-item]
        return {}
    if isinstance(node, In):
        leaves = [binder.leaf(node.key, "=", value, node.pos) for value in node.values]
        if node.negated != negate or any(leaf.semantics != "string" for leaf in leaves):
            return {}
        return {leaves[0].value_index: frozenset(leaf.operand for leaf in leaves)}  # type: ignore[misc]
    if isinstance(node, Not):
        return _implied(binder, node.item, not negate)
    if isinstance(node, (And, Or)):
        parts = [_implied(binder, item, negate) for item in node.items]
        conjunction = isinstance(node, And) != negate
        return _intersect_all(parts) if conjunction else _union_common(parts)
    if isinstance(node, Between):
        binder.compile(node, negate)  # validates keys and types
    return {}


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
