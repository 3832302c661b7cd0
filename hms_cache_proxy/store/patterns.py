"""Hive's name patterns for get_databases, get_tables and get_table_meta.

A pattern is a list of alternatives separated by ``|``; in each, ``*`` matches any run of
characters (and ``.`` a literal dot, unlike a regex); matching ignores case. ``None``, an empty
pattern and ``*`` match everything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache


@lru_cache(maxsize=256)
def compile_pattern(pattern: str | None) -> Callable[[str], bool]:
    if pattern is None or pattern.strip() in ("", "*"):
        return lambda _name: True
    alternatives = [p.strip() for p in pattern.split("|")]
    regex = "|".join(
        "(?:" + ".*".join(re.escape(part) for part in alt.split("*")) + ")" for alt in alternatives
    )
    compiled = re.compile(regex, re.IGNORECASE)
    return lambda name: compiled.fullmatch(name) is not None


def filter_names(names: Iterable[str], pattern: str | None) -> list[str]:
    match = compile_pattern(pattern)
    return [n for n in names if match(n)]
