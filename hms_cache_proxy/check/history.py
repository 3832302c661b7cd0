"""The history of a check run: every client call with its invocation and completion times and
outcome, and every fault with its window. The invariant checks read only this record.

Objects written by one client only ("registers") carry version numbers that the owner hands
out in call order, so the checks know the order of their writes without a global clock:
``Op.writes`` names the registers a call changes (and to which version), ``Op.reads`` what a
read observed (``ABSENT`` when the object was not there). Transactional tables are written
under an exclusive lock by multi-statement transactions; ``Op.txn`` describes them.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

OK, ERROR = "ok", "error"
"""Outcomes. An error (connection cut, instance killed, database restarted, exception) leaves
the outcome unknown: the call may or may not have applied; only OK counts as acknowledged."""

POLLS = frozenset({"check_lock"})
"""Calls that only poll (a lock wait): recorded, but not counted as operations."""

ABSENT = 0
"""The version a read reports for an object it did not find (also: not created yet)."""
DROPPED = 1 << 30
"""The version of a drop: the last state of a register."""


@dataclass
class Op:
    """One client call."""

    id: int
    client: int
    instance: int
    call: str
    args: dict[str, Any]
    invoke: float
    complete: float = 0.0
    outcome: str = ""
    error: str = ""
    writes: list[tuple[str, int]] = field(default_factory=list)
    reads: list[tuple[str, int]] = field(default_factory=list)
    snapshot: str | None = None
    txn: dict[str, Any] | None = None
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def acked(self) -> bool:
        return self.outcome == OK

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "client": self.client,
            "instance": self.instance,
            "call": self.call,
            "args": self.args,
            "invoke": round(self.invoke, 6),
            "complete": round(self.complete, 6),
            "outcome": self.outcome,
        }
        for key in ("error", "writes", "reads", "snapshot", "txn", "result"):
            value = getattr(self, key)
            if value:
                out[key] = value
        return out


@dataclass
class Fault:
    """One injected fault: its kind, what it hit and when (seconds since the run began)."""

    kind: str
    target: str
    start: float
    end: float = 0.0
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "target": self.target,
            "start": round(self.start, 3),
            "end": round(self.end, 3),
            "detail": self.detail,
        }


class History:
    """Thread-safe record of a run; times are seconds since ``t0`` (monotonic)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.ops: list[Op] = []
        self.faults: list[Fault] = []
        self.operations = 0  # calls other than polls
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def now(self) -> float:
        return time.monotonic() - self.t0

    def add(self, op: Op) -> Op:
        with self._lock:
            self.ops.append(op)
            if op.call not in POLLS:
                self.operations += 1
        return op

    @contextmanager
    def call(self, client: int, instance: int, call: str, **args: Any) -> Iterator[Op]:
        """Record one call: the block makes it; an exception marks the outcome unknown and
        propagates. The block fills ``writes``/``reads``/``result`` as it learns them."""
        op = Op(next(self._ids), client, instance, call, args, self.now())
        try:
            yield op
        except BaseException as exc:
            op.complete = self.now()
            op.outcome = ERROR
            op.error = f"{type(exc).__name__}: {str(exc)[:200]}"
            self.add(op)
            raise
        op.complete = self.now()
        op.outcome = OK
        self.add(op)

    def fault(self, kind: str, target: str, detail: str = "") -> Fault:
        found = Fault(kind, target, self.now(), detail=detail)
        with self._lock:
            self.faults.append(found)
        return found

    def snapshot_ops(self) -> list[Op]:
        with self._lock:
            return list(self.ops)
