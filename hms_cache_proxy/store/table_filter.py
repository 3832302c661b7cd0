r"""Hive's table-filter language (get_table_names_by_filter) over the partition-filter parser.

A table filter is a partition filter whose keys are Hive's three table fields
(hive_metastore_constants): ``hive_filter_field_owner__`` (the owner, a string),
``hive_filter_field_last_access__`` (lastAccessTime, an integer) and
``hive_filter_field_params__<key>`` (the table parameter ``<key>``, a string), for example
``hive_filter_field_owner__ like "ali.*" and hive_filter_field_params__k = "v"``. The grammar,
operators and comparisons are those of store/partition_filter/ with these three key types. A
parameter the table does not have is SQL NULL (what Hive's JDO query reads for a missing map
entry): a comparison with it is unknown, which no table passes, under NOT too.

LIKE is not the partition filter's SQL LIKE. Hive (2.3 and 4) has no direct-SQL path for table
filters: ObjectStore.listTableNamesByFilter runs the JDOQL ``this.owner.matches(v)``, whose
argument is a Java regular expression, and DataNucleus runs it on the database as SQL LIKE
after its RegularExpressionConverter (``matches_as_like``): ``.*`` is any text, ``.`` one
character, ``\.`` a dot, ``%`` and ``_`` stand for themselves, and a leading ``(?i)`` compares
case-insensitively; every other character, regex syntax included, is literal. So
``diff.*`` finds owner ``diff``, and ``d[i]ff`` or ``a|b`` only that very text, as on a stock
metastore. No regular-expression engine runs: a pattern costs at most its length times the value's
(no backtracking; the
filter's length is bounded by ``partition_filter_max_length``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hms_cache_proxy.store.partition_filter.binder import compile_filter
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
)

OWNER = "hive_filter_field_owner__"
LAST_ACCESS = "hive_filter_field_last_access__"
PARAMS = "hive_filter_field_params__"


def _keys(node: Node) -> Iterator[str]:
    if isinstance(node, And | Or):
        for item in node.items:
            yield from _keys(item)
    elif isinstance(node, Not):
        yield from _keys(node.item)
    elif isinstance(node, Comparison | Between | In):
        yield node.key


def compile_table_filter(node: Node) -> Callable[[Any], bool]:
    """A predicate over hms.Table objects; raises FilterError for keys that are none of the
    three fields and for comparisons of the wrong type.

    Each comparison is compiled by store/partition_filter/binder.py; AND, OR and NOT are
    evaluated here in SQL's three-valued logic, so a comparison with a missing parameter is
    unknown (false at the top, also under NOT).
    """
    names: list[str] = [OWNER, LAST_ACCESS]
    types: list[str] = ["string", "bigint"]
    for key in _keys(node):
        lowered = key.lower()
        if lowered in (OWNER, LAST_ACCESS) or key in names:
            continue
        if not lowered.startswith(PARAMS) or len(key) == len(PARAMS):
            raise FilterError(
                f"Invalid key name in filter: <{key}>; use {OWNER}, {LAST_ACCESS} or "
                f"{PARAMS}<parameter key>",
                -1,
                syntax=False,
            )
        names.append(key)
        types.append("string")
    wanted = [n[len(PARAMS) :] for n in names[2:]]
    # Keys are matched case-insensitively by the compiler, parameter keys are not: two
    # spellings of one key are told apart by binding each leaf to its own key alone.
    evaluate = _compile(node, names, types)

    def test(table: Any) -> bool:
        parameters = table.parameters or {}
        values: list[str | None] = [table.owner, str(table.lastAccessTime or 0)]
        values += [parameters.get(key) for key in wanted]
        return evaluate(values) is True

    return test


Tri = bool | None
"""True, False or unknown (None)."""


def _compile(node: Node, names: list[str], types: list[str]) -> Callable[[Any], Tri]:
    if isinstance(node, MatchAll):
        return lambda _values: True
    if isinstance(node, And):
        parts = [_compile(item, names, types) for item in node.items]

        def conjunction(values: Any) -> Tri:
            result: Tri = True
            for part in parts:
                got = part(values)
                if got is False:
                    return False
                if got is None:
                    result = None
            return result

        return conjunction
    if isinstance(node, Or):
        parts = [_compile(item, names, types) for item in node.items]

        def disjunction(values: Any) -> Tri:
            result: Tri = False
            for part in parts:
                got = part(values)
                if got is True:
                    return True
                if got is None:
                    result = None
            return result

        return disjunction
    if isinstance(node, Not):
        inner = _compile(node.item, names, types)

        def negation(values: Any) -> Tri:
            got = inner(values)
            return None if got is None else not got

        return negation
    # A comparison: compiled against its own key only, unknown when that value is missing.
    assert isinstance(node, Comparison | Between | In)
    index = _index(node.key, names)
    fold = False
    if isinstance(node, Comparison) and node.op == "LIKE" and node.value.kind == "string":
        like, fold = matches_as_like(str(node.value.value))
        node = Comparison(node.key, "LIKE", Literal("string", like, node.value.pos), node.pos)
    predicate = compile_filter(node, [node.key], [types[index]])

    def leaf(values: Any) -> Tri:
        value = values[index]
        if value is None:
            return None
        return bool(predicate([value.lower() if fold else value]))

    return leaf


def matches_as_like(pattern: str) -> tuple[str, bool]:
    """The SQL LIKE pattern (escape ``\\``) DataNucleus runs for JDOQL ``x.matches(pattern)``,
    and whether it compares lower-cased (a leading ``(?i)``).

    Step for step DataNucleus's RegularExpressionConverter, quirks included, since that and
    not java.util.regex decides which tables a stock metastore answers: a backslash before a
    character is a literal backslash followed by that character as it is, except ``\\.`` (a
    dot) and ``\\\\`` (two backslashes); a trailing backslash is one backslash.
    """
    fold = pattern.startswith("(?i)")
    if fold:
        pattern = pattern[4:]
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 == n:
                out.append("\\\\")
            elif pattern[i + 1] == ".":
                out.append(".")
            elif pattern[i + 1] == "\\":
                out.append("\\\\\\\\")
            else:
                out.append("\\\\" + pattern[i + 1])
            i += 2
        elif c == ".":
            if i + 1 < n and pattern[i + 1] == "*":
                out.append("%")
                i += 2
            else:
                out.append("_")
                i += 1
        else:
            out.append("\\" + c if c in "%_" else c)
            i += 1
    like = "".join(out)
    return (like.lower(), True) if fold else (like, False)


def _index(key: str, names: list[str]) -> int:
    if key in names:
        return names.index(key)
    return [n.lower() for n in names].index(key.lower())
