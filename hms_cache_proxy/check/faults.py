"""Faults injected while the clients run, one at a time, in turn, every ``interval`` seconds.

- ``kill``: SIGKILL a caching instance, start it again on the same port;
- ``pg-restart``: restart PostgreSQL (only when the checker started it);
- ``stall``: stall an instance's poller (``POST /admin/poller/pause``);
- ``purge``: stall an instance's poller, delete the notification log behind it (all but the
  newest event) while the others write on, let it go: it must notice the hole and start over;
- ``drop``: the proxy in front of instance 0 cuts connections mid-call for a while;
- ``churn``: for a while, ``POST /admin/refresh`` and ``/admin/flush`` of random tables on
  random instances, back to back: loads of one table run side by side with the clients'
  misses, reloads after events and each other (with a tiny ``cache_max_bytes`` and slow loads
  through failpoints, the interleavings of issue 14).

The purge uses SQL of its own (a test tool may): the service has no purge of its own.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from hms_cache_proxy import dburl
from hms_cache_proxy.check.history import History
from hms_cache_proxy.check.instances import Instance
from hms_cache_proxy.check.proxy import CuttingProxy
from hms_cache_proxy.store.events.log import EventLog

log = logging.getLogger(__name__)

KINDS = ("kill", "pg-restart", "stall", "purge", "drop", "churn")
PURGE_EXTRA_STALL_SECONDS = 5.0
"""A purge's stall lasts this much longer than --stall-seconds (writes and the purge fit)."""
GAP_MESSAGE = "no longer in the log (purged)"
"""What an instance logs when its poller finds a hole (store/events/poller.py)."""


def parse_kinds(text_: str) -> list[str]:
    """``kill,stall`` -> the kinds; ``all``; ``none`` or empty: no faults."""
    value = text_.strip().lower()
    if value in ("", "none"):
        return []
    if value == "all":
        return list(KINDS)
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"--faults: unknown kind(s) {unknown}; choose from {', '.join(KINDS)}")
    return list(dict.fromkeys(kinds))


class FaultInjector:
    """Runs faults in a thread of its own until ``stop``; ``counts`` says how many of each."""

    def __init__(
        self,
        kinds: list[str],
        history: History,
        instances: list[Instance],
        database_url: str,
        postgres: Any | None,
        proxy: CuttingProxy | None,
        interval: float,
        stall_seconds: float,
        seed: int,
        writer: Any | None = None,
        names: Any | None = None,
        also_killed: list[Instance] | None = None,
    ) -> None:
        self.kinds = kinds
        self.history = history
        self.instances = instances
        self.database_url = database_url
        self.postgres = postgres
        self.proxy = proxy
        self.interval = interval
        self.stall_seconds = stall_seconds
        self.writer = writer  # a workload Client on the database path (probe_write)
        self.names = names or (lambda: [])  # table names the churn picks from
        self.also_killed = also_killed or []  # sidecars: killed too, no other fault
        self.rng = random.Random(seed)
        self.counts: dict[str, int] = dict.fromkeys(kinds, 0)
        self.errors: list[str] = []
        self.busy = threading.Lock()  # held while a fault is under way (checkpoints take it)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.kinds:
            self._thread = threading.Thread(target=self._run, name="check-faults", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Finish the fault under way and stop (every instance left running)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(600)
        for inst in [*self.instances, *self.also_killed]:
            if inst.proc is None or inst.proc.poll() is not None:
                try:
                    inst.start()
                except Exception as exc:  # noqa: BLE001 - reported; the comparison will fail
                    self.errors.append(f"restart of {inst.name}: {type(exc).__name__}: {exc}")

    def all_done_once(self) -> bool:
        return all(n > 0 for n in self.counts.values())

    def _run(self) -> None:
        turn = 0
        while not self._stop.wait(self.interval * (0.5 + self.rng.random())):
            kind = self.kinds[turn % len(self.kinds)]
            turn += 1
            with self.busy:
                try:
                    getattr(self, "_" + kind.replace("-", "_"))()
                    self.counts[kind] += 1
                except Exception as exc:  # noqa: BLE001 - reported; the run goes on
                    log.warning("fault %s failed", kind, exc_info=True)
                    self.errors.append(f"{kind}: {type(exc).__name__}: {exc}")

    def _victim(self) -> Instance:
        return self.rng.choice(self.instances)

    def _kill(self) -> None:
        inst = self.rng.choice([*self.instances, *self.also_killed])
        fault = self.history.fault("kill", inst.name)
        inst.kill()
        time.sleep(0.3)
        started = time.monotonic()
        inst.start()
        fault.end = self.history.now()
        fault.detail = f"SIGKILL, restarted in {time.monotonic() - started:.1f}s"

    def _pg_restart(self) -> None:
        if self.postgres is None:
            raise RuntimeError("the checker did not start PostgreSQL: it cannot restart it")
        fault = self.history.fault("pg-restart", "postgresql")
        started = time.monotonic()
        self.postgres.restart("fast")
        fault.end = self.history.now()
        fault.detail = f"pg_ctl stop -m fast + start: {time.monotonic() - started:.1f}s"

    def _stall(self) -> None:
        inst = self._victim()
        fault = self.history.fault("stall", inst.name)
        answer = inst.pause_poller(self.stall_seconds)
        time.sleep(self.stall_seconds)
        fault.end = self.history.now()
        fault.detail = f"poller paused {self.stall_seconds:g}s at event {answer.get('position')}"

    def _purge(self) -> None:
        inst = self._victim()
        gaps_before = inst.log_text().count(GAP_MESSAGE)
        fault = self.history.fault("purge", inst.name)
        # Stalled long enough for the writes and the purge below even on a slow machine; the
        # purge counts only if it committed while the stall still held.
        stall = self.stall_seconds + PURGE_EXTRA_STALL_SECONDS
        answer = inst.pause_poller(stall)
        stalled_at = time.monotonic()
        if self.writer is not None:  # events the stalled instance has not seen, whatever else
            for _ in range(2):
                try:
                    self.writer.probe_write()
                except Exception:  # noqa: BLE001 - a broken connection: once more, anew
                    self.writer.close()
                    self.writer.probe_write()
        engine = create_engine(dburl.resolve(self.database_url), poolclass=NullPool)
        try:
            with engine.begin() as conn:
                newest = EventLog.newest_event_id(conn) or 0
                purged = EventLog.purge_before(conn, newest)
        finally:
            engine.dispose()
        in_time = time.monotonic() - stalled_at < stall
        position = int(answer.get("position", 0))
        time.sleep(max(0.0, stall - (time.monotonic() - stalled_at)) + 0.5)
        seen = False
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not seen:
            seen = inst.log_text().count(GAP_MESSAGE) > gaps_before
            if not seen:
                time.sleep(0.2)
        fault.end = self.history.now()
        fault.detail = (
            f"poller paused at event {position}; events up to {newest - 1} purged ({purged}); "
            f"hole {'noticed' if seen else 'NOT noticed'}"
        )
        if not answer.get("held") or not in_time:
            fault.detail += " (the stall had not held or was over by the purge: inconclusive)"
        elif not seen and position + 1 < newest:
            raise RuntimeError(f"{inst.name} did not notice the hole: {fault.detail}")

    def _drop(self) -> None:
        if self.proxy is None:
            raise RuntimeError("no proxy in front of an instance")
        fault = self.history.fault("drop", f"proxy to {self.instances[0].name}")
        before = self.proxy.cuts
        self.proxy.cutting = True
        time.sleep(self.stall_seconds)
        self.proxy.cutting = False
        fault.end = self.history.now()
        fault.detail = f"{self.proxy.cuts - before} connections cut mid-call"

    def _churn(self) -> None:
        fault = self.history.fault("churn", "all instances")
        deadline = time.monotonic() + self.stall_seconds
        done = {"refresh": 0, "flush": 0}
        while time.monotonic() < deadline:
            names = list(self.names())
            if not names:
                break
            inst = self._victim()
            action = "refresh" if self.rng.random() < 0.6 else "flush"
            try:
                inst.admin(action, "chk", self.rng.choice(names))
                done[action] += 1
            except OSError:  # the instance is restarting (a kill): go on with another
                time.sleep(0.05)
        fault.end = self.history.now()
        fault.detail = f"{done['refresh']} refreshes, {done['flush']} flushes"
