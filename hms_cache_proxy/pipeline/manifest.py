"""The manifest: which partitions the jobs committed, when, with how many rows.

A JSON file that ``etl`` and ``backfill`` update after each commit (re-running a day replaces
its entries, so the file stays one entry per partition) and ``verify`` checks another instance
against. Also the lag arithmetic ``verify`` reports, kept free of Spark and Thrift.

    {"database": "pipeline",
     "tables": {"events": {"column_stats": ["amount", ...]}},
     "partitions": {"events/ds=2024-03-01": {"table": "events", "partition": "ds=2024-03-01",
        "rows": 1000, "job": "etl", "committed_at": 1700000000.123, "stats": true,
        "repaired": false, "visible_at": 1700000000.140, "observed_on": "thrift://b:9083"}}}
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hms_cache_proxy.pipeline.errors import PipelineError


@dataclass
class Entry:
    """One committed partition. ``committed_at``/``visible_at`` are Unix times (seconds)."""

    table: str
    partition: str
    rows: int
    job: str
    committed_at: float
    stats: bool = False
    repaired: bool = False
    visible_at: float | None = None
    observed_on: str | None = None

    @property
    def key(self) -> str:
        return f"{self.table}/{self.partition}"


@dataclass
class Manifest:
    database: str
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    partitions: dict[str, Entry] = field(default_factory=dict)

    def record(self, entry: Entry) -> None:
        """Add or replace the partition's entry (a re-run replaces, never duplicates)."""
        self.partitions[entry.key] = entry

    def by_table(self) -> dict[str, list[Entry]]:
        out: dict[str, list[Entry]] = {}
        for e in self.partitions.values():
            out.setdefault(e.table, []).append(e)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "tables": self.tables,
            "partitions": {k: asdict(v) for k, v in sorted(self.partitions.items())},
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Manifest:
        try:
            parts = {k: Entry(**v) for k, v in doc.get("partitions", {}).items()}
            return cls(database=doc["database"], tables=doc.get("tables", {}), partitions=parts)
        except (KeyError, TypeError) as exc:
            raise PipelineError(f"not a pipeline manifest: {exc}") from None


def load(path: Path, database: str) -> Manifest:
    """The manifest at ``path``, or an empty one; refuses a manifest of another database."""
    if not path.exists():
        return Manifest(database=database)
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise PipelineError(f"cannot read the manifest {path}: {exc}") from None
    m = Manifest.from_json(doc)
    if m.database != database:
        raise PipelineError(
            f"the manifest {path} is for database {m.database!r}, not {database!r}: "
            "give --manifest or the matching --database"
        )
    return m


def save(path: Path, manifest: Manifest) -> None:
    """Write atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        json.dump(manifest.to_json(), f, indent=1)
    os.replace(tmp, path)


# -- lag -----------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(lags: list[float]) -> dict[str, float | int]:
    """count, p50, p99 and max of lags in seconds (empty: count 0 only)."""
    if not lags:
        return {"count": 0}
    return {
        "count": len(lags),
        "p50": percentile(lags, 50),
        "p99": percentile(lags, 99),
        "max": max(lags),
    }


@dataclass
class Visibility:
    """When a partition was seen on the checked instance and how that was measured."""

    entry: Entry
    seen_at: float | None  # verify's own first sight; None = never
    exact: bool  # True: observed right after the commit (lag measured); False: an upper bound

    @property
    def visible_at(self) -> float | None:
        """None unless verify saw it (whatever the writer observed earlier)."""
        if self.seen_at is None:
            return None
        return self.entry.visible_at if self.exact else self.seen_at

    @property
    def lag(self) -> float | None:
        v = self.visible_at
        return None if v is None else v - self.entry.committed_at


def visibility(entry: Entry, seen_at: float | None, uri: str) -> Visibility:
    """Combine the writer's observation (if it watched ``uri``) with verify's first sight.

    A job run with --observe-uri polled the instance right after its commit, so its
    ``visible_at`` is the lag itself; verify usually runs later, when everything is already
    visible, so its first sight only bounds the lag from above.
    """
    exact = entry.visible_at is not None and entry.observed_on == uri
    return Visibility(entry=entry, seen_at=seen_at, exact=exact)
