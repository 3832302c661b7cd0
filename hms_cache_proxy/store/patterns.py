"""Hive's name patterns for get_databases, get_tables and get_table_meta.

A pattern is a list of alternatives separated by ``|``; in each, ``*`` matches any run of
characters (and ``.`` a literal dot, unlike a regex); matching ignores case. ``None``, an empty
pattern and ``*`` match everything.

Matching never backtracks: an alternative is split at its stars into fixed-length segments, the
first anchored at the start, the last at the end and the others found leftmost in between (the
greedy-star algorithm), so a name is matched in time proportional to name × pattern. A regular
expression of ``.*`` runs would take exponential time on patterns like ``*a*a*a*a*a*b``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

Matcher = Callable[[str], bool]


def glob_matcher(alternatives: Iterable[str], any_char: str | None = None) -> Matcher:
    """A matcher for names equal (ignoring case) to any of the alternatives, in which ``*`` is any
    run of characters and ``any_char`` (when given) exactly one character."""
    matchers = [
        star_matcher(
            [[None if ch == any_char else ch for ch in part] for part in alt.split("*")],
            ignore_case=True,
        )
        for alt in alternatives
    ]
    return lambda name: any(match(name) for match in matchers)


def star_matcher(parts: Sequence[Sequence[str | None]], *, ignore_case: bool) -> Matcher:
    """A matcher for ``parts[0] * parts[1] * ... * parts[-1]``: each part a run of characters
    (``None``: any one character) and each ``*`` between them any run of characters."""
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    segments = [re.compile(_segment(part), flags) for part in parts]
    if len(segments) == 1:
        only = segments[0]
        return lambda name: only.fullmatch(name) is not None
    first, middle, last = segments[0], segments[1:-1], segments[-1]
    first_len, last_len = len(parts[0]), len(parts[-1])

    def match(name: str) -> bool:
        end = len(name) - last_len
        if end < first_len or first.match(name) is None:
            return False
        if last.fullmatch(name, end) is None:
            return False
        pos = first_len
        for segment in middle:
            found = segment.search(name, pos, end)
            if found is None:
                return False
            pos = found.end()
        return True

    return match


def _segment(part: Sequence[str | None]) -> str:
    """A fixed-length regular expression (no repetition, so no backtracking) for a star-free
    part of a pattern."""
    return "".join("." if ch is None else re.escape(ch) for ch in part)


CACHED_PATTERN_CHARS = 1024
"""Patterns up to this long are remembered compiled; longer ones (a client may send megabytes)
are compiled per call, so the caches hold at most 256 × 1 KB of pattern text."""


def compile_pattern(pattern: str | None) -> Matcher:
    if pattern is None or pattern.strip() in ("", "*"):
        return lambda _name: True
    if len(pattern) <= CACHED_PATTERN_CHARS:
        return _compile_cached(pattern)
    return _compile(pattern)


@lru_cache(maxsize=256)
def _compile_cached(pattern: str) -> Matcher:
    return _compile(pattern)


def _compile(pattern: str) -> Matcher:
    return glob_matcher(p.strip() for p in pattern.split("|"))


def filter_names(names: Iterable[str], pattern: str | None) -> list[str]:
    match = compile_pattern(pattern)
    return [n for n in names if match(n)]
