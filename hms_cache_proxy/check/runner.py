"""One check run: start the instances, run the clients and the faults, audit, compare, check.

Instances: ``instances`` caching ``serve`` processes and one more with ``cache_enabled:
false`` (the database path: the audit and the comparisons go through it; no faults hit it
except a PostgreSQL restart), and ``sidecars`` in upstream mode, sidecar ``j`` in front of
caching instance ``j % instances`` (killed and restarted by ``kill`` faults like them; a kill
of a caching instance is a kill of its sidecars' upstream). Clients are threads, client ``i``
on the ``i % n``-th of the caching instances then the sidecars (instance 0 through the
cutting proxy when ``drop`` faults are asked for).
"""

from __future__ import annotations

import logging
import os
import platform
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hms_cache_proxy.bench.cases import connect
from hms_cache_proxy.check import report as reports
from hms_cache_proxy.check.compare import compare_all
from hms_cache_proxy.check.faults import FaultInjector
from hms_cache_proxy.check.history import History
from hms_cache_proxy.check.instances import Instance
from hms_cache_proxy.check.invariants import AUDIT_CLIENT, Violation, check_history
from hms_cache_proxy.check.proxy import CuttingProxy
from hms_cache_proxy.check.workload import Client
from hms_cache_proxy.check.workload_objects import (
    DB,
    PROBE_TABLE,
    TXN_PARAMS,
    TXN_TABLES,
    Shared,
    new_table,
)
from hms_cache_proxy.idl import hms

log = logging.getLogger(__name__)

SLOW_LOADS = "load.after_snapshot=50%sleep(0.1);poller.before_apply=10%sleep(0.02)"
"""The checker's default failpoints: half of the loads wait 100 ms after their snapshot, one
batch of events in ten waits 20 ms before it is applied."""


@dataclass
class CheckConfig:
    instances: int = 2
    sidecars: int = 0
    clients: int = 4
    operations: int | None = None
    duration: float | None = 30.0
    seed: int = 1
    faults: list[str] = field(default_factory=list)
    database_url: str | None = None
    consistency: str = "strong"
    fault_interval: float = 5.0
    stall_seconds: float = 2.0
    eventual_bound: float = 30.0
    checkpoint_every: float = 0.0
    workdir: str | None = None
    keep_logs: bool = False
    cache_max_bytes: int = 20_000
    """The caching instances' byte budget: tiny by default, so tables are evicted and loaded
    again all the time (0: the service's default)."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Settings over the checker's own for every instance (e.g. database_pooler and
    database_listen_url, for a run through a transaction pooler)."""
    failpoints: str = SLOW_LOADS
    """The caching instances' failpoints (hms_cache_proxy/failpoints.py): slow loads and
    applies widen the windows in which loads race events."""

    def validate(self) -> None:
        if self.instances < 1 or self.clients < 1:
            raise ValueError("--instances and --clients must be at least 1")
        if self.sidecars < 0:
            raise ValueError("--sidecars must be 0 or more")
        if self.operations is None and self.duration is None:
            raise ValueError("give --operations N or --duration SECONDS")
        if self.operations is not None and self.operations < 1:
            raise ValueError("--operations must be at least 1")
        if self.duration is not None and self.duration <= 0:
            raise ValueError("--duration must be positive")
        if self.consistency not in ("eventual", "strong"):
            raise ValueError("--consistency must be eventual or strong")
        if self.database_url is not None and not self.database_url.startswith("postgres"):
            raise ValueError("--database-url must be a PostgreSQL URL (postgresql://...)")
        if self.fault_interval <= 0 or self.stall_seconds <= 0:
            raise ValueError("--fault-interval and --stall-seconds must be positive")
        if self.cache_max_bytes < 0:
            raise ValueError("--cache-max-bytes must be 0 (the service's default) or more")
        from hms_cache_proxy import failpoints

        failpoints.parse(self.failpoints)  # ValueError naming what is wrong


def run_check(cfg: CheckConfig, postgres: Any | None = None) -> dict[str, Any]:
    """Run the check; ``postgres`` is the server behind ``database_url`` when the caller can
    restart it (``PostgresServer``). Without a URL a throwaway PostgreSQL is started."""
    cfg.validate()
    own_pg = None
    url = cfg.database_url
    if url is None:
        from hms_cache_proxy.bench.postgres import PostgresServer

        own_pg = postgres = PostgresServer.start()
        url = postgres.new_database("hms_check")
    if "pg-restart" in cfg.faults and postgres is None:
        raise ValueError(
            "pg-restart faults need a PostgreSQL the checker can restart: leave out "
            "--database-url (a throwaway server is started) or leave out pg-restart"
        )
    workdir = Path(cfg.workdir or tempfile.mkdtemp(prefix="hms-check-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        return _run(cfg, url, postgres, workdir)
    finally:
        if own_pg is not None:
            own_pg.stop()
        if not cfg.keep_logs and cfg.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _common_settings(cfg: CheckConfig) -> dict[str, Any]:
    return {
        "consistency": cfg.consistency,
        "cache_poll_interval_seconds": 0.5,
        "txn_timeout_seconds": 10,
        "txn_housekeeping_interval_seconds": 1,
        "database_timeout_seconds": 10,
        "prewarm_threads": 1,
        "database_pool_size": 4,
        **cfg.settings,
    }


def _run(cfg: CheckConfig, url: str, postgres: Any, workdir: Path) -> dict[str, Any]:
    common = _common_settings(cfg)
    db_path = Instance("db-path", url, workdir, {**common, "cache_enabled": False})
    # Two loader threads: loads of one table run side by side (misses, reloads, refreshes).
    caching: dict[str, Any] = {**common, "cache_enabled": True, "prewarm_threads": 2}
    if cfg.cache_max_bytes:
        caching["cache_max_bytes"] = cfg.cache_max_bytes
    if cfg.failpoints:
        caching["failpoints"] = cfg.failpoints
    cached = [Instance(f"instance{i}", url, workdir, caching) for i in range(cfg.instances)]
    sidecars = [
        Instance(f"sidecar{j}", "", workdir, _sidecar_settings(cfg, cached[j % len(cached)]))
        for j in range(cfg.sidecars)
    ]
    everyone = [db_path, *cached, *sidecars]
    proxy: CuttingProxy | None = None
    started = time.monotonic()
    try:
        db_path.start()  # first: it creates the schema in an empty database
        _start_all(cached)
        _start_all(sidecars)
        _setup(db_path)
        phases = {"start_seconds": round(time.monotonic() - started, 1)}
        if "drop" in cfg.faults:
            proxy = CuttingProxy(cached[0].port, seed=cfg.seed)
        history = History()
        shared = Shared()
        serving = [*cached, *sidecars]  # what clients talk to, in instance-index order
        injector = FaultInjector(
            cfg.faults,
            history,
            cached,
            url,
            postgres,
            proxy,
            cfg.fault_interval,
            cfg.stall_seconds,
            cfg.seed,
            writer=Client(AUDIT_CLIENT, len(serving), db_path.port, history, shared, seed=0),
            names=lambda: [*shared.names(), *TXN_TABLES],
            also_killed=sidecars,
        )
        checkpoints: list[Violation] = []
        comparisons = _drive(cfg, history, shared, serving, db_path, proxy, injector, checkpoints)
        workload_seconds = history.now()
        # Invariant 4: the final audit through the database path, then invariant 5 at rest.
        mark = time.monotonic()
        _audit(history, shared, db_path, len(serving))
        phases["audit_seconds"] = round(time.monotonic() - mark, 1)
        mark = time.monotonic()
        made, at_end = compare_all(serving, db_path, "end of run", names=shared.names())
        phases["compare_seconds"] = round(time.monotonic() - mark, 1)
        mark = time.monotonic()
        findings = check_history(
            history.snapshot_ops(),
            cfg.consistency,
            cfg.eventual_bound,
            eventual_instances=frozenset(range(len(cached), len(serving))),
        )
        phases["check_seconds"] = round(time.monotonic() - mark, 1)
        seconds = time.monotonic() - started
        settings = {k: v for k, v in asdict(cfg).items() if k not in ("workdir", "keep_logs")}
        settings["database_url"] = "throwaway PostgreSQL" if cfg.database_url is None else "given"
        settings["phases"] = phases
        return reports.build(
            history,
            findings,
            comparisons + made,
            checkpoints + at_end,
            settings,
            injector.counts,
            injector.errors,
            seconds,
            workload_seconds,
            _machine(),
        )
    finally:
        if proxy is not None:
            proxy.stop()
        for inst in everyone:
            inst.stop()


def _sidecar_settings(cfg: CheckConfig, upstream: Instance) -> dict[str, Any]:
    """An instance in upstream mode in front of ``upstream``, its cache on (tiny, like the
    caching instances'), upstream calls failing fast when the upstream is killed."""
    settings: dict[str, Any] = {
        "upstream_uri": f"thrift://127.0.0.1:{upstream.port}",
        "upstream_timeout_seconds": 30,
        "upstream_connect_timeout_seconds": 5,
    }
    if cfg.cache_max_bytes:
        settings["cache_max_bytes"] = cfg.cache_max_bytes
    return settings


def _start_all(instances: list[Instance]) -> None:
    errors: list[BaseException] = []

    def start(inst: Instance) -> None:
        try:
            inst.start()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(i,)) for i in instances]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


def _setup(db_path: Instance) -> None:
    client = connect("127.0.0.1", db_path.port, timeout_s=60)
    try:
        if DB in client.get_all_databases():
            raise ValueError(
                f"the metastore database already has a database {DB!r}: give the checker an "
                "empty metastore database (or leave out --database-url)"
            )
        client.create_database(hms.Database(name=DB, description="consistency checker"))
        for name in TXN_TABLES:
            client.create_table(new_table(name, TXN_PARAMS))
        client.create_table(new_table(PROBE_TABLE, {}))
    finally:
        client.close()


def _drive(
    cfg: CheckConfig,
    history: History,
    shared: Shared,
    cached: list[Instance],
    db_path: Instance,
    proxy: CuttingProxy | None,
    injector: FaultInjector,
    checkpoints: list[Violation],
) -> int:
    """Run the clients and the faults until the run is long enough; returns comparisons made."""
    stop = threading.Event()
    gate = threading.Event()
    gate.set()
    busy = [0]
    busy_cond = threading.Condition()

    def work(client: Client) -> None:
        while not stop.is_set():
            gate.wait()
            if stop.is_set():
                break
            with busy_cond:
                busy[0] += 1
            try:
                if client.ensure_connected(stop):
                    client.step()
            finally:
                with busy_cond:
                    busy[0] -= 1
                    busy_cond.notify_all()
        client.close()

    clients = []
    for i in range(cfg.clients):
        inst = i % len(cached)
        port = proxy.port if proxy is not None and inst == 0 else cached[inst].port
        clients.append(Client(i, inst, port, history, shared, seed=cfg.seed * 1000 + i))
    threads = [threading.Thread(target=work, args=(c,), daemon=True) for c in clients]
    for th in threads:
        th.start()
    injector.start()
    comparisons = 0
    t0 = time.monotonic()
    next_checkpoint = t0 + cfg.checkpoint_every if cfg.checkpoint_every > 0 else float("inf")
    # Every fault kind asked for is injected once, unless that takes far too long.
    hard_cap = (cfg.duration or 0.0) + 60.0 * len(cfg.faults)
    last_note = t0
    while True:
        time.sleep(0.2)
        elapsed = time.monotonic() - t0
        count = history.operations
        reached = (cfg.operations is not None and count >= cfg.operations) or (
            cfg.duration is not None and elapsed >= cfg.duration
        )
        if reached and (injector.all_done_once() or elapsed >= hard_cap):
            break
        if time.monotonic() - last_note >= 30:
            last_note = time.monotonic()
            log.info("%d operations in %.0fs; faults %s", count, elapsed, injector.counts)
        if time.monotonic() >= next_checkpoint:
            with injector.busy:
                gate.clear()
                with busy_cond:
                    busy_cond.wait_for(lambda: busy[0] == 0, timeout=120)
                made, found = compare_all(
                    cached, db_path, f"checkpoint at {history.now():.0f}s", names=shared.names()
                )
                comparisons += made
                checkpoints.extend(found)
                gate.set()
            next_checkpoint = time.monotonic() + cfg.checkpoint_every
    stop.set()
    gate.set()
    for th in threads:
        th.join(180)
    injector.stop()
    return comparisons


def _audit(history: History, shared: Shared, db_path: Instance, index: int) -> None:
    """Read every object once more through the database path (checked strictly)."""
    auditor = Client(AUDIT_CLIENT, index, db_path.port, history, shared, seed=0)
    try:
        reads = [(auditor.owned_read, t) for t in sorted(shared.tables)]
        reads += [(auditor.txn_read, t) for t in TXN_TABLES]
        for read, table in reads:
            for _ in range(3):  # a failed read is recorded (outcome unknown) and tried again
                try:
                    read(table)
                    break
                except Exception:  # noqa: BLE001
                    time.sleep(0.5)
    finally:
        auditor.close()


def _machine() -> dict[str, Any]:
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_at_end": load,
    }
