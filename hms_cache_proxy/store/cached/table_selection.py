"""Which tables the cache holds: include/exclude regular expressions on ``db.table``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hms_cache_proxy.store.cache.entries import TableName


class TablePatterns:
    """A table is cached when ``db.table`` fully matches an include pattern and no exclude
    pattern (case-insensitive; names are lower case already)."""

    def __init__(self, include: Sequence[str] = (".*",), exclude: Sequence[str] = ()) -> None:
        self._include = [re.compile(p, re.IGNORECASE) for p in include if p]
        self._exclude = [re.compile(p, re.IGNORECASE) for p in exclude if p]
        self._memo: dict[TableName, bool] = {}

    def cached(self, key: TableName) -> bool:
        found = self._memo.get(key)
        if found is None:
            name = key.qualified()
            found = any(p.fullmatch(name) for p in self._include) and not any(
                p.fullmatch(name) for p in self._exclude
            )
            if len(self._memo) > 100_000:
                self._memo.clear()
            self._memo[key] = found
        return found
