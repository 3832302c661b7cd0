"""Hive's name patterns (get_databases, get_tables, get_tables_by_type, get_table_meta).

ObjectStore.appendPatternCondition turns each ``|``-separated alternative into the regular
expression ``(?i)`` + alternative with ``*`` replaced by ``.*``, and DataNucleus runs it as SQL
``LIKE``. What a client observes (measured on a stock 2.3.10 server, same code in 4.x): ``*``
matches any run of characters, ``.`` exactly one character, everything else (``_``, ``%``,
``[``, ``]``, ...) only itself; matching ignores case and covers the whole name; an empty
pattern matches nothing. The matcher is the store's linear glob matcher (no regex backtracking).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from hms_cache_proxy.store.patterns import CACHED_PATTERN_CHARS, Matcher, glob_matcher


def compile_hive_pattern(pattern: str) -> Matcher:
    if len(pattern) <= CACHED_PATTERN_CHARS:
        return _compile_cached(pattern)
    return glob_matcher(pattern.split("|"), any_char=".")


@lru_cache(maxsize=256)
def _compile_cached(pattern: str) -> Matcher:
    return glob_matcher(pattern.split("|"), any_char=".")


def filter_names(names: Iterable[str], pattern: str) -> list[str]:
    """The names matching a Hive pattern (trimmed first, as Hive does), in the given order."""
    match = compile_hive_pattern(pattern.strip())
    return [n for n in names if match(n)]
