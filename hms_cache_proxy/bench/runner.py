"""Times one case against one server: 1 or N client processes, latencies and calls/s.

Every client is a process of its own (forked from the command), never the server's: the
server under test runs in its own process too. With N clients, each worker connects and warms
up, then all start together at a barrier and measure for the same time; calls/s is the total
over the common window.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_mod
import statistics
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

from hms_cache_proxy.bench.case_catalog import case_by_name
from hms_cache_proxy.bench.cases import BYTES, Case, Ctx, Timed, connect


@dataclass(frozen=True)
class Timing:
    """How long to measure: ``duration_s`` after ``warmup_s`` (at least one warm-up call),
    at least ``min_calls`` (a case's own minimum wins), never past ``hard_cap_s``."""

    duration_s: float = 3.0
    warmup_s: float = 1.0
    hard_cap_s: float = 60.0


@dataclass
class Result:
    target: str
    case: str
    clients: int
    mode: str
    status: str = "ok"  # ok | n/a | error
    calls: int = 0
    seconds: float = 0.0
    p50_ms: float | None = None
    p99_ms: float | None = None
    calls_per_s: float | None = None
    note: str = ""
    reason: str = ""

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.case, self.clients, self.mode)


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    idx = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[idx]


def _make_op(case: Case, mode: str, host: str, port: int, ctx: Ctx) -> tuple[Any, Any]:
    if mode == BYTES:
        from hms_cache_proxy.bench.rawclient import RawClient, encode_call

        assert case.raw is not None
        method, args = case.raw(ctx)
        request = encode_call(method, args)
        client = RawClient(host, port)
        return client, lambda: client.call(request)
    client = connect(host, port)
    assert case.make_op is not None
    return client, case.make_op(client, ctx)


def _worker(
    spec: dict[str, Any], ctx: Ctx, barrier: Any, out: Any
) -> None:  # pragma: no cover - runs in a child process
    client = None
    try:
        case = case_by_name(spec["case"])
        timing: Timing = spec["timing"]
        client, op = _make_op(case, spec["mode"], spec["host"], spec["port"], ctx)
        if case.warmup:
            warm_end = time.perf_counter() + timing.warmup_s
            op()
            while time.perf_counter() < warm_end:
                op()
        barrier.wait(timeout=timing.hard_cap_s + 120)
        samples: list[float] = []
        self_timed = False
        min_calls = case.min_calls
        start = time.monotonic()
        deadline = start + timing.duration_s
        cap = start + timing.hard_cap_s
        perf = time.perf_counter
        while True:
            t0 = perf()
            took = op()
            t1 = perf()
            if type(took) is Timed:
                samples.append(took)
                self_timed = True
            else:
                samples.append(t1 - t0)
            now = time.monotonic()
            n = len(samples)
            if n >= case.max_calls or now >= cap or (now >= deadline and n >= min_calls):
                break
        out.put(
            {
                "index": ctx.index,
                "samples": samples,
                "start": start,
                "end": time.monotonic(),
                "self_timed": self_timed,
            }
        )
    except BaseException as exc:
        try:
            barrier.abort()
        except Exception:
            pass
        detail = f"{type(exc).__name__}: {exc}"
        out.put({"index": ctx.index, "error": detail[:500], "trace": traceback.format_exc()})
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:
                pass


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    # Fork: the workers inherit the loaded IDL (spawning 8 interpreters that each parse it costs
    # seconds). The command's process runs no threads of its own when it forks.
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def run_case(
    target: str,
    host: str,
    port: int,
    case: Case,
    *,
    clients: int,
    mode: str,
    timing: Timing,
    run_id: str,
) -> Result:
    """Measure ``case`` in ``mode`` with ``clients`` worker processes."""
    ctx_mp = _context()
    barrier = ctx_mp.Barrier(clients + 1)
    out = ctx_mp.Queue()
    spec = {"case": case.name, "mode": mode, "host": host, "port": port, "timing": timing}
    procs = [
        ctx_mp.Process(
            target=_worker,
            args=(spec, Ctx(target, i, clients, run_id), barrier, out),
            daemon=True,
        )
        for i in range(clients)
    ]
    for p in procs:
        p.start()
    result = Result(target, case.name, clients, mode, note=case.note)
    replies: list[dict[str, Any]] = []
    budget = timing.hard_cap_s + timing.warmup_s + 300
    waiter = threading.Thread(target=_release, args=(barrier, budget), daemon=True)
    waiter.start()
    deadline = time.monotonic() + budget
    try:
        while len(replies) < clients and time.monotonic() < deadline:
            try:
                replies.append(out.get(timeout=1.0))
            except queue_mod.Empty:
                if not any(p.is_alive() for p in procs) and out.empty():
                    break
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=10)
        try:
            barrier.abort()
        except Exception:
            pass
    errors = [r["error"] for r in replies if "error" in r]
    if errors or len(replies) < clients:
        result.status = "error"
        result.reason = errors[0] if errors else "a client process died or timed out"
        return result
    samples = [s for r in replies for s in r["samples"]]
    result.calls = len(samples)
    if any(r["self_timed"] for r in replies):
        # The op timed its call itself (untimed preparation around it): calls per timed second.
        busy = max(sum(r["samples"]) for r in replies)
        result.seconds = round(busy, 3)
        result.calls_per_s = result.calls / busy if busy > 0 else None
    else:
        window = max(r["end"] for r in replies) - min(r["start"] for r in replies)
        result.seconds = round(window, 3)
        result.calls_per_s = result.calls / window if window > 0 else None
    result.p50_ms = statistics.median(samples) * 1000
    result.p99_ms = percentile(samples, 0.99) * 1000
    return result


def _release(barrier: Any, timeout: float) -> None:
    """The parent's share of the barrier (in a thread, so the parent keeps draining results)."""
    try:
        barrier.wait(timeout=timeout)
    except Exception:
        pass


def prepare(target: str, host: str, port: int, case: Case, made: set[str], run_id: str) -> None:
    """Make the case's fixtures (once per target) and run its shared setup, untimed."""
    from hms_cache_proxy.bench.cases import FIXTURES

    needed = [f for f in case.fixtures if f not in made]
    if not needed and case.setup is None:
        return
    client = connect(host, port)
    try:
        for name in needed:
            FIXTURES[name](client)
            made.add(name)
        if case.setup is not None:
            case.setup(client, Ctx(target, 0, 1, run_id))
    finally:
        client.close()


def teardown(target: str, host: str, port: int, case: Case, run_id: str) -> None:
    """The case's teardown, once per server after its runs."""
    if case.teardown is None:
        return
    client = connect(host, port)
    try:
        case.teardown(client, Ctx(target, 0, 1, run_id))
    finally:
        client.close()
