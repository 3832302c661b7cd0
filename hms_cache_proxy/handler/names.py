"""Hive's name patterns (get_databases, get_tables, get_tables_by_type, get_table_meta).

ObjectStore.appendPatternCondition turns each ``|``-separated alternative into the regular
expression ``(?i)`` + alternative with ``*`` replaced by ``.*``, and DataNucleus runs it as SQL
``LIKE``. What a client observes (measured on a stock 2.3.10 server, same code in 4.x): ``*``
matches any run of characters, ``.`` exactly one character, everything else (``_``, ``%``,
``[``, ``]``, ...) only itself; matching ignores case and covers the whole name; an empty
pattern matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache


@lru_cache(maxsize=256)
def compile_hive_pattern(pattern: str) -> Callable[[str], bool]:
    alternatives = pattern.split("|")
    regex = "|".join(
        "(?:"
        + "".join(".*" if ch == "*" else "." if ch == "." else re.escape(ch) for ch in alt)
        + ")"
        for alt in alternatives
    )
    compiled = re.compile(regex, re.IGNORECASE | re.DOTALL)
    return lambda name: compiled.fullmatch(name) is not None


def filter_names(names: Iterable[str], pattern: str) -> list[str]:
    """The names matching a Hive pattern (trimmed first, as Hive does), in the given order."""
    match = compile_hive_pattern(pattern.strip())
    return [n for n in names if match(n)]
