"""The database half of ``/healthz``: a trivial query, bounded in time, cached for a moment.

Probes arrive every few seconds from several places (kubelet, load balancer, operators); one
query per ``cache_seconds`` answers all of them. A database that hangs must not hang the probe:
the query runs in its own thread and the probe gives up after ``timeout_seconds``. A query
still running then is waited on by the next probe rather than joined by a second one, so a
stuck database costs one thread, not one per probe.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HealthResult:
    ok: bool
    reason: str | None  # why not ok
    at: float  # monotonic time the result was taken
    seconds: float | None  # how long the query took (None when it did not finish)


class _Probe:
    __slots__ = ("done", "error", "seconds")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.seconds = 0.0


class DatabaseHealth:
    """Runs ``probe()`` (any cheap read that raises when the database cannot answer)."""

    def __init__(
        self,
        probe: Callable[[], object],
        *,
        timeout_seconds: float = 2.0,
        cache_seconds: float = 1.0,
        secrets: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
        subject: str = "database",
    ) -> None:
        """``subject``: what the probe checks, as /healthz and its reasons name it ("database",
        or "upstream" in upstream mode)."""
        self._probe = probe
        self.subject = subject
        self.timeout_seconds = timeout_seconds
        self.cache_seconds = cache_seconds
        self._secrets = [s for s in secrets if s]
        self._clock = clock
        self._lock = threading.Lock()
        self._result: HealthResult | None = None
        self._inflight: _Probe | None = None

    def check(self) -> HealthResult:
        with self._lock:
            cached = self._result
            if cached is not None and self._clock() - cached.at < self.cache_seconds:
                return cached
            probe = self._inflight
            if probe is None:
                probe = self._inflight = _Probe()
                threading.Thread(
                    target=self._run, args=(probe,), name="hms-health-probe", daemon=True
                ).start()
        finished = probe.done.wait(self.timeout_seconds)
        with self._lock:
            if finished:
                if self._inflight is probe:
                    self._inflight = None
                if probe.error is None:
                    result = HealthResult(True, None, self._clock(), probe.seconds)
                else:
                    result = HealthResult(False, self._describe(probe.error), self._clock(), None)
            else:
                result = HealthResult(
                    False,
                    f"{self.subject} did not answer within {self.timeout_seconds:g}s",
                    self._clock(),
                    None,
                )
            if result.ok != (self._result.ok if self._result is not None else True):
                log.warning("%s health: %s", self.subject, "ok" if result.ok else result.reason)
            self._result = result
            return result

    def _run(self, probe: _Probe) -> None:
        started = time.perf_counter()
        try:
            self._probe()
        except BaseException as exc:  # noqa: BLE001 - reported, never raised
            probe.error = exc
        probe.seconds = time.perf_counter() - started
        probe.done.set()

    def _describe(self, exc: BaseException) -> str:
        """The error's class and first line, with anything secret masked (probes are public)."""
        inner = getattr(exc, "orig", None) or exc  # the driver's error inside SQLAlchemy's
        lines = str(inner).strip().splitlines()
        text = f"{type(inner).__name__}: {lines[0] if lines else ''}"[:300]
        for secret in self._secrets:
            text = text.replace(secret, "********")
        return f"{self.subject}: {text}"
