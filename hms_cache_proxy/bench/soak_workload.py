"""The soak's workload: a read-heavy mix of metastore calls, and the client process that
issues it at full speed.

Reads go to the benchmark's 1,000-partition table (``hms_bench.parts_1000``, made if missing)
and to the database list; writes go to a scratch table of each client's own, which they keep
bounded: partitions are added in small batches and dropped again, so a long run does not grow
the data (a growing table would show as growing memory). Every client picks its calls from
the same weights with a random generator of its own, seeded, so runs are repeatable.

A client reports, per time window, the latency of every call (seconds) with the index of its
method, and the calls that failed (the first messages kept), on a multiprocessing queue.
"""

from __future__ import annotations

import random
import time
import traceback
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hms_cache_proxy.bench.cases import (
    BENCH_DB,
    FIXTURES,
    PARTS,
    Ctx,
    connect,
    ensure_database,
    part_names,
    part_value,
    partitions,
    recreate_table,
)
from hms_cache_proxy.idl import hms

READ_TABLE = PARTS[1000]
READ_PARTITIONS = 1000
SCRATCH_PARTITIONS = 20  # partitions a scratch table starts with (alter_partition's targets)
BATCH = 10  # partitions per add_partitions / drop_partitions call
BATCH_BASE = 1_000_000  # added batches' partition values start here (clear of the first ones)
MAX_BATCHES = 4  # batches a client holds at most before it drops one

# (method label, weight): about 90 % reads.
MIX: tuple[tuple[str, int], ...] = (
    ("get_table", 30),
    ("get_all_databases", 12),
    ("get_partitions_by_filter", 18),
    ("get_partition_names", 15),
    ("get_partitions", 6),
    ("get_partition_by_name", 9),
    ("alter_partition", 5),
    ("add_partitions", 3),
    ("drop_partitions", 2),
)
METHODS: tuple[str, ...] = tuple(name for name, _ in MIX)
WRITES = frozenset({"alter_partition", "add_partitions", "drop_partitions"})


def mix_description() -> str:
    total = sum(w for _, w in MIX)
    return ", ".join(f"{name} {100 * w / total:.0f}%" for name, w in MIX)


def scratch_name(run_id: str, index: int) -> str:
    return Ctx("soak", index, 1, run_id).unique("soak_scratch")


def prepare(host: str, port: int) -> None:
    """Make the read table (idempotent: kept when it is there already)."""
    client = connect(host, port)
    try:
        FIXTURES[READ_TABLE](client)
    finally:
        client.close()


def drop_scratch(host: str, port: int, run_id: str, clients: int) -> None:
    """Drop the clients' scratch tables (a run against --uri leaves nothing behind)."""
    client = connect(host, port)
    try:
        for i in range(clients):
            try:
                client.drop_table(BENCH_DB, scratch_name(run_id, i), True)
            except hms.NoSuchObjectException:
                pass
    finally:
        client.close()


class Workload:
    """One client's calls: ``next_call()`` picks a method and returns (label, thunk)."""

    def __init__(self, client: Any, run_id: str, index: int, seed: int) -> None:
        self.client = client
        self.rng = random.Random(seed * 1_000_003 + index)
        self.scratch = scratch_name(run_id, index)
        self.batches: deque[int] = deque()
        self.next_batch = 0
        self.alters = 0
        self.labels = [name for name, _ in MIX]
        self.weights = [w for _, w in MIX]

    def setup(self) -> None:
        """The scratch table with its first partitions (before timing starts)."""
        ensure_database(self.client)
        recreate_table(self.client, self.scratch)
        self.client.add_partitions(partitions(self.scratch, 0, SCRATCH_PARTITIONS))

    def next_call(self) -> tuple[str, Callable[[], Any]]:
        label = self.rng.choices(self.labels, self.weights)[0]
        if label == "add_partitions" and len(self.batches) >= MAX_BATCHES:
            label = "drop_partitions"
        elif label == "drop_partitions" and not self.batches:
            label = "add_partitions"
        return label, getattr(self, "_" + label)()

    # -- reads -----------------------------------------------------------------------------------

    def _get_table(self) -> Callable[[], Any]:
        return lambda: self.client.get_table(BENCH_DB, READ_TABLE)

    def _get_all_databases(self) -> Callable[[], Any]:
        return self.client.get_all_databases

    def _get_partitions_by_filter(self) -> Callable[[], Any]:
        lo = self.rng.randrange(READ_PARTITIONS - 10)
        expr = f'dt >= "{part_value(lo)}" and dt < "{part_value(lo + 10)}"'
        return lambda: self.client.get_partitions_by_filter(BENCH_DB, READ_TABLE, expr, -1)

    def _get_partition_names(self) -> Callable[[], Any]:
        return lambda: self.client.get_partition_names(BENCH_DB, READ_TABLE, -1)

    def _get_partitions(self) -> Callable[[], Any]:
        return lambda: self.client.get_partitions(BENCH_DB, READ_TABLE, -1)

    def _get_partition_by_name(self) -> Callable[[], Any]:
        name = f"dt={part_value(self.rng.randrange(READ_PARTITIONS))}"
        return lambda: self.client.get_partition_by_name(BENCH_DB, READ_TABLE, name)

    # -- writes, on the client's scratch table ---------------------------------------------------

    def _alter_partition(self) -> Callable[[], Any]:
        self.alters += 1
        part = partitions(self.scratch, self.rng.randrange(SCRATCH_PARTITIONS), 1)[0]
        part.parameters["soak.seq"] = str(self.alters)
        return lambda: self.client.alter_partition(BENCH_DB, self.scratch, part)

    def _add_partitions(self) -> Callable[[], Any]:
        batch = self.next_batch
        self.next_batch += 1
        new = partitions(self.scratch, BATCH_BASE + batch * BATCH, BATCH)

        def call() -> Any:
            self.client.add_partitions(new)
            self.batches.append(batch)

        return call

    def _drop_partitions(self) -> Callable[[], Any]:
        batch = self.batches.popleft()
        req = hms.DropPartitionsRequest(
            dbName=BENCH_DB,
            tblName=self.scratch,
            parts=hms.RequestPartsSpec(names=part_names(BATCH_BASE + batch * BATCH, BATCH)),
            deleteData=False,
            ifExists=True,
            needResult=False,
        )
        return lambda: self.client.drop_partitions_req(req)


@dataclass(frozen=True)
class ClientSpec:
    host: str
    port: int
    run_id: str
    seed: int
    window_s: float
    duration_s: float
    max_requests: int  # this client's share of the cap


MAX_ERROR_MESSAGES = 5


def client_main(
    spec: ClientSpec, index: int, barrier: Any, start_at: Any, out: Any
) -> None:  # pragma: no cover - runs in a child process
    """Connect, make the scratch table, wait for the common start, then call at full speed,
    sending each finished window's latencies (seconds), method indexes and errors to ``out``."""
    client = None
    try:
        client = connect(spec.host, spec.port, timeout_s=120)
        work = Workload(client, spec.run_id, index, spec.seed)
        work.setup()
        barrier.wait(timeout=300)
        while start_at.value == 0.0:  # the parent sets it once everyone is past the barrier
            time.sleep(0.005)
        start = start_at.value
        while time.monotonic() < start:
            time.sleep(min(0.01, max(0.0, start - time.monotonic())))
        end = start + spec.duration_s
        method_index = {m: i for i, m in enumerate(METHODS)}
        window = 0
        lat, meth = array("d"), array("b")
        errors: list[str] = []
        n_errors = 0
        done = 0
        perf = time.perf_counter
        mono = time.monotonic
        while done < spec.max_requests:
            now = mono()
            if now >= end:
                break
            w = int((now - start) // spec.window_s)
            if w != window:
                out.put(("window", index, window, lat.tobytes(), meth.tobytes(), n_errors, errors))
                window, lat, meth, errors, n_errors = w, array("d"), array("b"), [], 0
            label, call = work.next_call()
            t0 = perf()
            try:
                call()
            except Exception as exc:
                n_errors += 1
                if len(errors) < MAX_ERROR_MESSAGES:
                    errors.append(f"{label}: {type(exc).__name__}: {exc}"[:300])
                client = _reconnect(client, spec)
                work.client = client
            else:
                lat.append(perf() - t0)
                meth.append(method_index[label])
            done += 1
        out.put(("window", index, window, lat.tobytes(), meth.tobytes(), n_errors, errors))
        out.put(("done", index, done))
    except BaseException as exc:
        try:
            barrier.abort()
        except Exception:
            pass
        detail = f"{type(exc).__name__}: {exc}"[:500]
        out.put(("failed", index, detail, traceback.format_exc()))
    finally:
        if client is not None:
            try:
                client.close()
            except Exception:
                pass


def _reconnect(client: Any, spec: ClientSpec) -> Any:
    """A fresh connection after a failed call (the old one may be out of step)."""
    try:
        client.close()
    except Exception:
        pass
    return connect(spec.host, spec.port, timeout_s=120)
