"""What the checker's clients do: random writes and reads, every call recorded.

Objects, in the database ``chk``:

- Transactional tables ``x0`` to ``x3`` (partitioned by ``p``), shared by every client and
  written only by multi-statement transactions: open, lock the table (exclusive), allocate a
  write id ``w``, set the table parameter ``wmax=w``, add partitions among ``p=s0..s7`` that
  are missing and set ``w=w`` on 1-3 of them, then commit (or abort, one in ten). Each
  transaction's intent is recorded on its commit call (``Op.txn``) before it is sent.
- Tables ``o<client>_<n>`` owned by one client each (plain tables, partitioned by ``p``):
  created, altered (parameter ``ver``), dropped; their partitions added, altered, dropped.
  Only the owner writes them, so the versions it numbers them with are in write order.
  The owner also renames them (the old name is dropped, the new one holds the next version)
  and re-creates a dropped one once (its versions then start above ``DROPPED``). Any client
  truncates any owned table: truncate changes no version, so a truncate that wrote back a
  stale copy shows up as a lost write.
- Transactions also commit with ``keyValue`` (``_meta.k=w``, TABLE_PARAMS set by the commit)
  and write column statistics of ``a`` with ``highValue=w`` under their write id.

Reads: a transactional table with a snapshot (get_valid_write_ids, then get_table_req,
get_partitions_req and get_table_statistics_req carrying it), or any client's owned table
(get_table, get_partitions).
A call that fails leaves its outcome unknown; the client reconnects and goes on, aborting
the transaction it was in when it can (otherwise the instance's txn timeout ends it).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from hms_cache_proxy.bench.cases import connect
from hms_cache_proxy.check.history import ABSENT, DROPPED, History, Op
from hms_cache_proxy.check.txn_workload import TxnSteps
from hms_cache_proxy.check.workload_objects import (
    DB,
    MAX_LIVE_PARTS,
    MAX_LIVE_TABLES,
    PROBE_TABLE,
    RECHECKS,
    TXN_TABLES,
    Owned,
    Shared,
    declared,
    new_partition,
    new_table,
    part_key,
    table_key,
)
from hms_cache_proxy.idl import hms


class Client(TxnSteps):
    """One client thread's state: its connection (to ``port``), its owned tables."""

    def __init__(
        self,
        index: int,
        instance: int,
        port: int,
        history: History,
        shared: Shared,
        seed: int,
        timeout_s: float = 60.0,
        txn_share: float = 0.15,
        write_share: float = 0.35,
    ) -> None:
        self.index = index
        self.instance = instance
        self.port = port
        self.history = history
        self.shared = shared
        self.rng = random.Random(seed)
        self.timeout_s = timeout_s
        self.txn_share = txn_share
        self.write_share = write_share
        self.owned: list[Owned] = []
        self.created = 0
        self.recheck: dict[str, int] = {}  # names dropped or renamed away -> reads still due
        self._client: Any = None

    # -- connection ------------------------------------------------------------------------------

    def _conn(self) -> Any:
        if self._client is None:
            self._client = connect("127.0.0.1", self.port, timeout_s=self.timeout_s)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001
                pass
        self._client = None

    def ensure_connected(self, stop: threading.Event) -> bool:
        """Connect (retrying while the instance is down); False when asked to stop first."""
        while not stop.is_set():
            try:
                self._conn()
                return True
            except Exception:  # noqa: BLE001 - down (killed, restarting): try again
                self.close()
                stop.wait(0.2)
        return False

    def call(self, name: str, fn: Any, **args: Any) -> tuple[Op, Any]:
        """Make one recorded call; ``fn(client, op)`` sends it (and may fill the op in).
        Raises what the call raised; a connection-level error also drops the connection."""
        conn = self._conn()  # failing to connect is no call (the instance is down)
        with self.history.call(self.index, self.instance, name, **args) as op:
            try:
                result = fn(conn, op)
            except Exception as exc:
                if not declared(exc):
                    self.close()
                raise
        return op, result

    # -- one step --------------------------------------------------------------------------------

    def step(self) -> None:
        r = self.rng.random()
        try:
            if self.recheck:
                self._recheck()
            if r < self.txn_share:
                self.txn_write()
            elif r < self.txn_share + self.write_share:
                self.owned_write()
            elif self.rng.random() < 0.5:
                self.txn_read(self.rng.choice(TXN_TABLES))
            else:
                name = self.shared.random_table(self.rng)
                if name is not None:
                    self.owned_read(name)
        except Exception:  # noqa: BLE001 - recorded in the history; go on
            if self._client is None:
                time.sleep(0.1)  # the connection broke: do not hammer an instance restarting

    def _recheck(self) -> None:
        """Read a table this client dropped (or renamed away) again, at each of its next few
        steps: a load older than the drop that installed anyway (issue 14, finding 1) is
        visible only until the tiny cache budget evicts it."""
        name = next(iter(self.recheck))
        self.recheck[name] -= 1
        if self.recheck[name] <= 0:
            del self.recheck[name]
        self.call("get_table", lambda c, op: self._observe_table(c, op, name))

    # -- owned tables ----------------------------------------------------------------------------

    def owned_write(self) -> None:
        live = [t for t in self.owned if t.live]
        writable = [t for t in live if t.writable and t.obj is not None]
        rng = self.rng
        dropped = [t for t in self.owned if not t.live and t.dropped_cleanly and not t.recreated]
        if dropped and len(live) < MAX_LIVE_TABLES and rng.random() < 0.1:
            self.recreate_table(rng.choice(dropped))
            return
        if not writable or (len(live) < MAX_LIVE_TABLES and rng.random() < 0.05):
            self.create_table()
            return
        if len(live) >= MAX_LIVE_TABLES and rng.random() < 0.05:
            self.drop_table(live[0])
            return
        r = rng.random()
        settled = [t for t in writable if t.settled]
        if r < 0.03 and settled:
            self.rename_table(rng.choice(settled))
            return
        if r < 0.08:
            self.truncate_any()
            return
        t = rng.choice(writable)
        parts = [v for v, p in t.parts.items() if p["live"] and p["writable"]]
        r = rng.random()
        if r < 0.3:
            self.alter_table(t)
        elif r < 0.55 and sum(p["live"] for p in t.parts.values()) < MAX_LIVE_PARTS:
            self.add_partition(t)
        elif r < 0.85 and parts:
            self.alter_partition(t, rng.choice(parts))
        elif parts:
            self.drop_partition(t, rng.choice(parts))
        else:
            self.add_partition(t)

    def create_table(self) -> None:
        name = f"o{self.index}_{self.created}"
        self.created += 1
        t = Owned(name, version=1)
        self.owned.append(t)
        self.shared.register(name, self.index)

        def send(c: Any, op: Op) -> None:
            op.writes = [(table_key(name), 1)]
            c.create_table(new_table(name, {"ver": "1"}))

        try:
            self.call("create_table", send, table=name)
        except Exception:
            t.live = t.writable = False  # may exist or not: only a drop may follow
            raise
        _, t.obj = self.call("get_table", lambda c, op: self._observe_table(c, op, name))

    def _observe_table(self, c: Any, op: Op, name: str) -> Any:
        op.args = {"table": name}
        try:
            t = c.get_table(DB, name)
        except hms.NoSuchObjectException:
            op.reads = [(table_key(name), ABSENT)]
            return None
        op.reads = [(table_key(name), int(t.parameters.get("ver", "0")))]
        return t

    def alter_table(self, t: Owned) -> None:
        t.version += 1
        version = t.version
        t.obj.parameters["ver"] = str(version)

        def send(c: Any, op: Op) -> None:
            op.writes = [(table_key(t.name), version)]
            c.alter_table(DB, t.name, t.obj)

        self.call("alter_table", send, table=t.name, version=version)

    def drop_table(self, t: Owned) -> None:
        # Read, drop, read again: with a tiny cache budget the first read misses and starts a
        # load that is still running when the drop lands (issue 14, finding 1).
        self.call("get_table", lambda c, op: self._observe_table(c, op, t.name))
        t.live = t.writable = False
        writes = [(table_key(t.name), DROPPED)] + [
            (part_key(t.name, v), DROPPED) for v, p in t.parts.items() if not p["dropped"]
        ]
        for p in t.parts.values():
            p["dropped"] = True

        def send(c: Any, op: Op) -> None:
            op.writes = writes
            c.drop_table(DB, t.name, True)

        self.call("drop_table", send, table=t.name)
        t.dropped_cleanly = True
        self.call("get_table", lambda c, op: self._observe_table(c, op, t.name))
        self.recheck[t.name] = RECHECKS

    def recreate_table(self, old: Owned) -> None:
        """Create a dropped table's name again (once): versions go on above ``DROPPED``, so a
        read of the old table after the new one was acknowledged is stale."""
        old.recreated = True
        t = Owned(old.name, version=DROPPED + 1, next_part=old.next_part, recreated=True)
        self.owned.append(t)
        version = t.version

        def send(c: Any, op: Op) -> None:
            op.writes = [(table_key(t.name), version)]
            c.create_table(new_table(t.name, {"ver": str(version)}))

        try:
            self.call("create_table", send, table=t.name, recreate=True)
        except Exception:
            t.live = t.writable = False
            raise
        _, t.obj = self.call("get_table", lambda c, op: self._observe_table(c, op, t.name))

    def rename_table(self, t: Owned) -> None:
        """alter_table to a new name: the old name is dropped, the new one holds the next
        version and the partitions at their versions."""
        new_name = f"o{self.index}_{self.created}"
        self.created += 1
        old_name = t.name
        self.call("get_table", lambda c, op: self._observe_table(c, op, old_name))
        t.version += 1
        version = t.version
        live_parts = {v: p for v, p in t.parts.items() if not p["dropped"]}
        self.shared.register(new_name, self.index)
        for v in live_parts:
            self.shared.register(new_name, self.index, v)
        obj = t.obj
        obj.tableName = new_name
        obj.parameters["ver"] = str(version)
        writes = [(table_key(old_name), DROPPED), (table_key(new_name), version)]
        writes += [(part_key(old_name, v), DROPPED) for v in live_parts]
        writes += [(part_key(new_name, v), p["version"]) for v, p in live_parts.items()]
        t.name = new_name
        for p in live_parts.values():
            if p["obj"] is not None:
                p["obj"].tableName = new_name

        def send(c: Any, op: Op) -> None:
            op.writes = writes
            c.alter_table(DB, old_name, obj)

        try:
            self.call("alter_table", send, table=old_name, rename_to=new_name, version=version)
        except Exception:
            t.live = t.writable = False  # under either name, or none: stop writing it
            raise
        for name in (old_name, new_name):
            self.call("get_table", lambda c, op, n=name: self._observe_table(c, op, n))
        self.recheck[old_name] = RECHECKS

    def truncate_any(self) -> None:
        """truncate_table on any client's table (it may be gone): changes no version."""
        name = self.shared.random_table(self.rng)
        if name is None:
            return

        def send(c: Any, op: Op) -> None:
            try:
                c.truncate_table(DB, name, None)
            except hms.MetaException as exc:
                if "not found" not in (exc.message or ""):
                    raise
                op.result = {"absent": True}

        self.call("truncate_table", send, table=name)

    def add_partition(self, t: Owned) -> None:
        value = f"q{t.next_part}"
        t.next_part += 1
        state = {"version": 1, "obj": None, "live": True, "writable": True, "dropped": False}
        t.parts[value] = state
        self.shared.register(t.name, self.index, value)

        def send(c: Any, op: Op) -> Any:
            op.writes = [(part_key(t.name, value), 1)]
            req = hms.AddPartitionsRequest(
                dbName=DB,
                tblName=t.name,
                parts=[new_partition(t.name, value, {"ver": "1"})],
                ifNotExists=False,
                needResult=True,
            )
            return c.add_partitions_req(req).partitions[0]

        try:
            _, state["obj"] = self.call("add_partitions_req", send, table=t.name, partition=value)
        except Exception:
            state["writable"] = t.settled = False
            raise

    def alter_partition(self, t: Owned, value: str) -> None:
        state = t.parts[value]
        state["version"] += 1
        version = state["version"]
        obj = state["obj"]
        obj.parameters["ver"] = str(version)

        def send(c: Any, op: Op) -> None:
            op.writes = [(part_key(t.name, value), version)]
            c.alter_partition(DB, t.name, obj)

        try:
            self.call("alter_partition", send, table=t.name, partition=value, version=version)
        except Exception:
            t.settled = False
            raise

    def drop_partition(self, t: Owned, value: str) -> None:
        state = t.parts[value]
        state["live"] = state["writable"] = False
        state["dropped"] = True

        def send(c: Any, op: Op) -> None:
            op.writes = [(part_key(t.name, value), DROPPED)]
            c.drop_partition(DB, t.name, [value], True)

        try:
            self.call("drop_partition", send, table=t.name, partition=value)
        except Exception:
            t.settled = False
            raise

    def probe_write(self) -> None:
        """A write to ``chk.probe`` (no history of its own): the purge fault makes events."""
        t = self._conn().get_table(DB, PROBE_TABLE)
        t.parameters["n"] = str(int(t.parameters.get("n", "0")) + 1)
        self._conn().alter_table(DB, PROBE_TABLE, t)

    def owned_read(self, name: str) -> None:
        self.call("get_table", lambda c, op: self._observe_table(c, op, name))

        def read_parts(c: Any, op: Op) -> None:
            try:
                parts = c.get_partitions(DB, name, -1)
            except hms.NoSuchObjectException:
                op.reads = [(table_key(name), ABSENT)]
                return
            seen = {p.values[0]: int(p.parameters.get("ver", "0")) for p in parts}
            # Registered before any write of them was sent: every partition seen is known.
            known = self.shared.parts_of(name)
            op.reads = [(part_key(name, v), seen.get(v, ABSENT)) for v in known]
            op.reads += [(part_key(name, v), n) for v, n in seen.items() if v not in known]

        self.call("get_partitions", read_parts, table=name)
