"""``serve --workers N``: one supervisor process and N worker processes on one Thrift port.

Each worker is a whole instance (database pools, cache, poller, housekeeping, HTTP endpoint),
so workers stay coherent by the rules that already hold between instances on one database:
each tails the notification log and applies every other worker's writes. Workers listen on
the port with SO_REUSEPORT and the kernel spreads new connections over them.

The supervisor forks the workers before it has started any thread or opened any database
connection (so nothing is inherited that fork would break: no locks held by other threads, no
pooled connections shared), and they share its imported code copy-on-write. It holds the port
with a bound, non-listening SO_REUSEPORT socket (which also resolves port 0 once for all).
Its main thread only waits for signals: SIGTERM or SIGINT is passed to every worker, each
stops gracefully (calls in flight answered within ``shutdown_grace_seconds``), and the
supervisor exits 0 when all did. A worker that dies otherwise is started again after a
backoff (1 s, doubling to 30 s; back to 1 s once a worker has run a minute); one that exits
with status 2 (it could not start: settings, schema, port) stops the others, and the
supervisor exits 2.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hms_cache_proxy.config import Settings

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
CANNOT_START = 2
"""A worker's exit status when it could not start; restarting it would not help."""
MIN_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0
STEADY_SECONDS = 60.0
"""A worker that ran this long before it died is restarted after the shortest backoff."""
_KILL_AFTER_GRACE_SECONDS = 30.0
_PR_SET_PDEATHSIG = 1

log = logging.getLogger("hms_cache_proxy.workers")


def reserve_port(host: str, port: int) -> socket.socket:
    """A socket bound to host:port with SO_REUSEPORT but not listening: the port stays ours
    (port 0 picks one) while workers come and go, and no connection is queued on it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(
            exc.errno,
            f"cannot listen for Thrift on {host}:{port}: {exc.strerror or exc}; set host and "
            "port (--host, --port)",
        ) from exc
    return sock


@dataclass
class _Worker:
    index: int
    pid: int = 0
    started: float = 0.0
    restart_at: float | None = None  # when a dead worker is due to start again
    backoff: float = MIN_BACKOFF_SECONDS


class Supervisor:
    """Forks ``count`` workers running ``run_worker(index)`` (its return is the exit status)
    and keeps them running until SIGTERM/SIGINT. Signals must be blocked by the caller."""

    def __init__(self, count: int, run_worker: Callable[[int], int], grace_seconds: float) -> None:
        self._run_worker = run_worker
        self._grace = grace_seconds
        self._workers = [_Worker(i) for i in range(count)]
        self._keep_fds: list[int] = []

    @property
    def pids(self) -> list[int]:
        return [w.pid for w in self._workers if w.pid]

    def run(self) -> int:
        """Start every worker and supervise them; returns the supervisor's exit status."""
        signal.pthread_sigmask(signal.SIG_BLOCK, {*STOP_SIGNALS, signal.SIGCHLD})
        for worker in self._workers:
            self._start(worker)
        while True:
            signum = _wait_signal(self._next_wakeup())
            if signum in STOP_SIGNALS:
                log.info(
                    "signal %s: stopping %d workers", signal.Signals(signum).name, len(self.pids)
                )
                return self._stop_all(signal.SIGTERM)
            status = self._reap_and_restart()
            if status is not None:
                return status

    def _next_wakeup(self) -> float:
        due = [w.restart_at for w in self._workers if w.restart_at is not None]
        if not due:
            return 5.0
        return max(0.0, min(due) - time.monotonic())

    def _start(self, worker: _Worker) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the supervisor's code
            status = 1
            try:
                _die_with_parent()
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
                status = self._run_worker(worker.index)
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - reported, then the worker exits
                log.exception("worker %d failed", worker.index)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)
        worker.pid, worker.started, worker.restart_at = pid, time.monotonic(), None
        log.info("started worker %d (pid %d)", worker.index, pid)

    def _reap_and_restart(self) -> int | None:
        """Note workers that ended and start the ones due; a status when the supervisor must
        end (a worker that cannot start)."""
        for worker in self._workers:
            if not worker.pid:
                continue
            pid, code = os.waitpid(worker.pid, os.WNOHANG)
            if pid == 0:
                continue
            how = _describe(code)
            worker.pid = 0
            if os.WIFEXITED(code) and os.WEXITSTATUS(code) == CANNOT_START:
                log.error("worker %d could not start (%s): stopping the others", worker.index, how)
                self._stop_all(signal.SIGTERM)
                return CANNOT_START
            ran = time.monotonic() - worker.started
            if ran >= STEADY_SECONDS:
                worker.backoff = MIN_BACKOFF_SECONDS
            log.warning(
                "worker %d (pid %d) %s after %.0f s; starting it again in %.0f s",
                worker.index,
                pid,
                how,
                ran,
                worker.backoff,
            )
            worker.restart_at = time.monotonic() + worker.backoff
            worker.backoff = min(MAX_BACKOFF_SECONDS, worker.backoff * 2)
        now = time.monotonic()
        for worker in self._workers:
            if worker.restart_at is not None and worker.restart_at <= now:
                self._start(worker)
        return None

    def _stop_all(self, signum: int) -> int:
        """Send ``signum`` to every worker and wait for all; 0 when each exited 0."""
        for worker in self._workers:
            worker.restart_at = None
            if worker.pid:
                _kill(worker.pid, signum)
        deadline = time.monotonic() + self._grace + _KILL_AFTER_GRACE_SECONDS
        status = 0
        while self.pids:
            for worker in self._workers:
                if not worker.pid:
                    continue
                pid, code = os.waitpid(worker.pid, os.WNOHANG)
                if pid == 0:
                    continue
                worker.pid = 0
                if not (os.WIFEXITED(code) and os.WEXITSTATUS(code) == 0):
                    log.warning("worker %d %s while stopping", worker.index, _describe(code))
                    status = 1
            if not self.pids:
                break
            if time.monotonic() > deadline:
                for pid in self.pids:
                    log.error("worker pid %d did not stop in time: killing it", pid)
                    _kill(pid, signal.SIGKILL)
                deadline = float("inf")
                status = 1
            _wait_signal(0.5, {signal.SIGCHLD})
        log.info("all workers stopped")
        return status


def _wait_signal(timeout: float, signals: set[signal.Signals] | None = None) -> int | None:
    """The next of ``signals`` (default: stop signals and SIGCHLD) within ``timeout``."""
    wanted = signals if signals is not None else {*STOP_SIGNALS, signal.SIGCHLD}
    info = signal.sigtimedwait(wanted, timeout)
    return info.si_signo if info is not None else None


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _die_with_parent() -> None:
    """Linux: the worker gets SIGTERM (a graceful stop) if the supervisor is killed."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the supervisor died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _describe(code: int) -> str:
    if os.WIFSIGNALED(code):
        return f"was killed by {signal.Signals(os.WTERMSIG(code)).name}"
    return f"exited with status {os.WEXITSTATUS(code)}"


def worker_settings(settings: Settings, port: int, index: int) -> Settings:
    """Worker ``index``'s settings: the supervisor's port, HTTP on metrics_port + index, its
    own instance name (pg_stat_activity tells the workers apart), the REST port on worker 0."""
    name = settings.instance_name or socket.gethostname()
    update: dict[str, Any] = {"port": port, "instance_name": f"{name}-w{index}"}
    if settings.metrics_port is not None and settings.metrics_port > 0:
        update["metrics_port"] = settings.metrics_port + index
    if index > 0 and settings.rest_enabled:
        update["rest_port"] = None
    return settings.model_copy(update=update)
