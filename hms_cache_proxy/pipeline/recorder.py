"""What the writing jobs do after each commit: note it in the manifest and, with
--observe-uri, time how long the partitions take to show up on a second instance."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from thriftpy2.transport import TTransportException

from hms_cache_proxy.pipeline import manifest as pipeline_manifest
from hms_cache_proxy.pipeline.thrift_client import connect, wait_visible

OBSERVE_TIMEOUT_S = 120.0


class Recorder:
    """Commits go to the manifest (saved after each one, so a crash loses nothing recorded)."""

    def __init__(
        self,
        path: Path,
        manifest: pipeline_manifest.Manifest,
        observer: Any,
        observe_uri: str | None,
        stack: ExitStack | None = None,
        tls_ca: str | None = None,
    ):
        self._stack = stack or ExitStack()
        self.path = path
        self.manifest = manifest
        self.observer = observer
        self.observe_uri = observe_uri
        self.tls_ca = tls_ca
        self.lags: list[float] = []

    def commit(
        self, job: str, table: str, rows: dict[str, int], committed_at: float, **flags: bool
    ) -> None:
        """Record partitions (name -> rows) committed at ``committed_at`` (Unix time)."""
        seen = self._observe(table, list(rows))
        for name, n in rows.items():
            visible_at = seen.get((table, name))
            if visible_at is not None:
                self.lags.append(visible_at - committed_at)
            self.manifest.record(
                pipeline_manifest.Entry(
                    table=table,
                    partition=name,
                    rows=n,
                    job=job,
                    committed_at=committed_at,
                    visible_at=visible_at,
                    observed_on=self.observe_uri if visible_at is not None else None,
                    **flags,
                )
            )
        pipeline_manifest.save(self.path, self.manifest)

    def _observe(self, table: str, names: list[str]) -> dict[tuple[str, str], float]:
        """When each partition appeared on the observed instance (nothing if not observing).
        The connection sat idle while Spark worked: if the server closed it, reconnect once."""
        if self.observer is None or self.observe_uri is None:
            return {}
        db = self.manifest.database
        try:
            return wait_visible(self.observer, db, {table: names}, OBSERVE_TIMEOUT_S)
        except (TTransportException, OSError, EOFError):
            self.observer.close()
            self.observer = self._stack.enter_context(connect(self.observe_uri, tls_ca=self.tls_ca))
            return wait_visible(self.observer, db, {table: names}, OBSERVE_TIMEOUT_S)

    def mark_stats(self, table: str, names: list[str]) -> None:
        """The partitions' statistics were computed (verify checks they arrive)."""
        for name in names:
            self.manifest.partitions[f"{table}/{name}"].stats = True
        pipeline_manifest.save(self.path, self.manifest)

    def table_info(self, table: str, **info: Any) -> None:
        self.manifest.tables.setdefault(table, {}).update(info)
        pipeline_manifest.save(self.path, self.manifest)

    def summary(self) -> str:
        if self.observer is None:
            return ""
        s = pipeline_manifest.summarize(self.lags)
        if not s["count"]:
            return f"visibility on {self.observe_uri}: nothing observed"
        return (
            f"visibility lag on {self.observe_uri} over {s['count']} partitions: "
            f"p50 {s['p50'] * 1000:.1f} ms, p99 {s['p99'] * 1000:.1f} ms, "
            f"max {s['max'] * 1000:.1f} ms"
        )


@contextmanager
def recorder(
    path: Path, database: str, observe_uri: str | None, tls_ca: str | None = None
) -> Iterator[Recorder]:
    """A Recorder over the manifest at ``path``, with a Thrift client if observing."""
    with ExitStack() as stack:
        observer = stack.enter_context(connect(observe_uri, tls_ca=tls_ca)) if observe_uri else None
        yield Recorder(
            path, pipeline_manifest.load(path, database), observer, observe_uri, stack, tls_ca
        )


def now() -> float:
    """The commit clock: Unix time, so separate processes (verify) can compare."""
    return time.time()
