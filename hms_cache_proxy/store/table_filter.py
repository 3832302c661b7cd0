"""Hive's table-filter language (get_table_names_by_filter) over the partition-filter parser.

A table filter is a partition filter whose keys are Hive's three table fields
(hive_metastore_constants): ``hive_filter_field_owner__`` (the owner, a string),
``hive_filter_field_last_access__`` (lastAccessTime, an integer) and
``hive_filter_field_params__<key>`` (the table parameter ``<key>``, a string), for example
``hive_filter_field_owner__ like "ali%" and hive_filter_field_params__k = "v"``. The grammar,
operators, LIKE patterns and comparisons are those of store/filter.py with these three key
types. A parameter the table does not have is SQL NULL (what Hive's JDO query reads for a
missing map entry): every comparison with it is false.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from hms_cache_proxy.store import filter as pfilter

OWNER = "hive_filter_field_owner__"
LAST_ACCESS = "hive_filter_field_last_access__"
PARAMS = "hive_filter_field_params__"


class _Null(str):
    """A missing parameter: a string that is equal to, ordered against and contains nothing
    (as a subclass its comparisons win over str's on either side)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return False

    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __hash__(self) -> int:
        return 0x4E554C4C

    def __contains__(self, item: object) -> bool:
        return False

    def startswith(self, *args: Any) -> bool:  # type: ignore[override]
        return False

    def endswith(self, *args: Any) -> bool:  # type: ignore[override]
        return False


NULL = _Null()


def _keys(node: pfilter.Node) -> Iterator[str]:
    if isinstance(node, pfilter.And | pfilter.Or):
        for item in node.items:
            yield from _keys(item)
    elif isinstance(node, pfilter.Not):
        yield from _keys(node.item)
    elif isinstance(node, pfilter.Comparison | pfilter.Between | pfilter.In):
        yield node.key


def compile_table_filter(node: pfilter.Node) -> Callable[[Any], bool]:
    """A predicate over hms.Table objects; raises FilterError for keys that are none of the
    three fields and for comparisons of the wrong type."""
    names: list[str] = [OWNER, LAST_ACCESS]
    types: list[str] = ["string", "bigint"]
    params: list[str] = []
    for key in _keys(node):
        lowered = key.lower()
        if lowered in (OWNER, LAST_ACCESS) or key in params:
            continue
        if not lowered.startswith(PARAMS) or len(key) == len(PARAMS):
            raise pfilter.FilterError(
                f"Invalid key name in filter: <{key}>; use {OWNER}, {LAST_ACCESS} or "
                f"{PARAMS}<parameter key>",
                -1,
                syntax=False,
            )
        names.append(key)
        types.append("string")
        params.append(key)
    # Keys match case-insensitively; parameter keys are case-sensitive, so two spellings of
    # one prefix must not collide: they are bound by position in ``names``.
    if len({n.lower() for n in names}) != len(names):
        raise pfilter.FilterError(
            "A table filter may not name one parameter key in two spellings", -1, syntax=False
        )
    predicate = pfilter.compile_filter(node, names, types)
    wanted = [p[len(PARAMS) :] for p in params]

    def test(table: Any) -> bool:
        parameters = table.parameters or {}
        values = [
            table.owner if table.owner is not None else NULL,
            str(table.lastAccessTime or 0),
        ]
        for key in wanted:
            value = parameters.get(key)
            values.append(NULL if value is None else value)
        return bool(predicate(values))

    return test
