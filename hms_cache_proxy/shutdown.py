"""Graceful shutdown of ``serve`` on SIGTERM or SIGINT.

A Python signal handler runs only when the main thread next executes bytecode; the kernel may
deliver the signal to any other thread, and the main thread then sleeps in ``accept()`` with the
handler pending until the next client connects (a `docker stop` that never stops). So the
signals are blocked in every thread (threads inherit the mask of the thread that starts them)
and one thread takes them with ``sigwait``. It starts ``service.stop``: stop accepting, close
idle connections, let calls in flight finish within the grace period, stop background work,
close the database pool. The main thread, whose accept loop ends as soon as the listener
closes, waits for that to finish before the process exits.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import TracebackType
from typing import Any

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class StopOnSignal:
    """Context manager: signals held from ``__enter__``; ``watch(service)`` acts on them."""

    def __init__(self, grace_seconds: float, log: logging.Logger) -> None:
        self._grace = grace_seconds
        self._log = log
        self._old_mask: set[signal.Signals] | None = None
        self._service: Any = None
        self._stopping: threading.Thread | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> StopOnSignal:
        # Before any thread starts, so that all of them inherit the blocked mask.
        self._old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._old_mask)

    def watch(self, service: Any) -> None:
        """Stop ``service`` on the first SIGTERM/SIGINT (also one received before this call)."""
        self._service = service
        threading.Thread(target=self._take_signals, name="hms-signals", daemon=True).start()

    def stop(self, reason: str) -> None:
        """Start stopping the service once (later calls only log)."""
        with self._lock:
            if self._stopping is not None:
                self._log.info("%s: already shutting down", reason)
                return
            self._log.info(
                "%s: shutting down (calls in flight get up to %g s)", reason, self._grace
            )
            self._stopping = threading.Thread(target=self._stop, name="hms-stop")
            self._stopping.start()

    def wait(self) -> None:
        """Block until a started stop has finished (the database pool is closed then)."""
        with self._lock:
            stopping = self._stopping
        if stopping is not None:
            stopping.join()

    def _take_signals(self) -> None:
        while True:
            signum = signal.sigwait(STOP_SIGNALS)
            self.stop(f"signal {signal.Signals(signum).name}")

    def _stop(self) -> None:
        self._service.stop(self._grace)
        closed = "upstream" if getattr(self._service, "upstream", None) is not None else "database"
        self._log.info("stopped: calls finished, %s connections closed", closed)
