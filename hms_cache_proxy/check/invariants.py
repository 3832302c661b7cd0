"""The invariants of docs/design.md, checked over a recorded history (after the run).

1. *Never older than the snapshot*: a read of a transactional table with snapshot ``S``
   reflects every transaction ``S`` reports committed: the table's ``wmax`` is at least the
   largest such write id, each partition slot at least the largest such write id that wrote
   it. A snapshot itself lists every commit acknowledged before it was asked for.
2. *No partial transaction*: the same check, told apart: a read that reflects some of a
   committed transaction's partitions but not all of them.
3. *Reads see acknowledged writes*: a read of an owned object returns its last version
   acknowledged before the read began, or a later one (strong); in eventual mode a read may
   lag by at most ``eventual_bound`` seconds (the largest lag seen is reported). No read
   returns a version not yet sent when it completed.
4. *Nothing acknowledged lost*: the final audit's reads (through the database path, after
   the run) are checked strictly: every acknowledged write and commit is there.
   The same for the table parameter a commit sets (``keyValue``): ``_meta.k`` is at least the
   largest such write id whose commit set it.
5. *Cache answer = database path answer*: checked live by ``compare`` (not from the history);
   from the history: a read with snapshot ``S`` never shows column statistics written by a
   write id ``S`` does not report committed (the database path answers none).

A write whose call failed may or may not have applied: reads may show it or not.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from hms_cache_proxy.check.history import ABSENT, DROPPED, Op
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList

AUDIT_CLIENT = -1
"""The client number of the final audit's reads (checked strictly in every mode)."""


@dataclass
class Violation:
    invariant: int
    what: str
    object: str
    op: int
    detail: str
    related: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "what": self.what,
            "object": self.object,
            "op": self.op,
            "detail": self.detail,
            "history": self.related,
        }


@dataclass
class Findings:
    violations: list[Violation] = field(default_factory=list)
    reads_checked: int = 0
    max_lag_seconds: float = 0.0
    stale_reads: int = 0


class _Register:
    """The writes of one owned object, in version (= write) order."""

    def __init__(self) -> None:
        self.writes: list[tuple[int, Op]] = []

    def prepare(self) -> None:
        self.writes.sort(key=lambda w: w[0])
        # Acknowledged writes by completion time, with the running maximum of their versions.
        acked = sorted((op.complete, v) for v, op in self.writes if op.acked)
        self.ack_times = [t for t, _ in acked]
        self.ack_max: list[int] = []
        best = ABSENT
        for _, v in acked:
            best = max(best, v)
            self.ack_max.append(best)

    def required(self, before: float) -> int:
        """The highest version acknowledged before ``before``."""
        i = bisect.bisect_left(self.ack_times, before)
        return self.ack_max[i - 1] if i else ABSENT

    def first_ack_above(self, version: int) -> float | None:
        times = [op.complete for v, op in self.writes if v > version and op.acked]
        return min(times) if times else None

    def sent_before(self, version: int, before: float) -> bool:
        return any(v == version and op.invoke < before for v, op in self.writes)


def check_history(
    ops: list[Op],
    consistency: str = "strong",
    eventual_bound: float = 30.0,
    eventual_instances: frozenset[int] = frozenset(),
) -> Findings:
    """Every read in ``ops`` against invariants 1-4; reads on ``eventual_instances`` (the
    sidecars) are judged as eventual whatever ``consistency`` says."""
    found = Findings()
    _check_registers(ops, consistency, eventual_bound, found, eventual_instances)
    _check_transactions(ops, found)
    by_object = _index(ops)
    for v in found.violations:
        v.related = [o.as_dict() for o in _nearby(by_object.get(v.object, []), v.op)]
    return found


# -- owned objects ---------------------------------------------------------------------------


def _check_registers(
    ops: list[Op],
    consistency: str,
    bound: float,
    found: Findings,
    eventual_instances: frozenset[int] = frozenset(),
) -> None:
    registers: dict[str, _Register] = defaultdict(_Register)
    for op in ops:
        for key, version in op.writes:
            registers[key].writes.append((version, op))
    for reg in registers.values():
        reg.prepare()
    for op in ops:
        if not op.acked or not op.reads:
            continue
        audit = op.client == AUDIT_CLIENT
        for key, seen in op.reads:
            found.reads_checked += 1
            reg = registers.get(key)
            required = reg.required(op.invoke) if reg else ABSENT
            if seen == ABSENT:
                dropped = reg is not None and reg.sent_before(DROPPED, op.complete)
                if required == ABSENT or dropped:
                    continue
            elif reg is None or not reg.sent_before(seen, op.complete):
                found.violations.append(
                    Violation(3, "read a version never sent", key, op.id, f"saw version {seen}")
                )
                continue
            if seen >= required:
                continue
            acked_at = reg.first_ack_above(seen) if reg else None
            lag = op.invoke - acked_at if acked_at is not None else 0.0
            found.stale_reads += 1
            found.max_lag_seconds = max(found.max_lag_seconds, lag)
            if audit:
                found.violations.append(
                    Violation(
                        4,
                        "acknowledged write lost",
                        key,
                        op.id,
                        f"final audit saw {_v(seen)}, version {_v(required)} was acknowledged",
                    )
                )
            elif (strong := consistency == "strong" and op.instance not in eventual_instances) or (
                lag > bound
            ):
                found.violations.append(
                    Violation(
                        3,
                        "stale read" if strong else "read beyond the lag bound",
                        key,
                        op.id,
                        f"saw {_v(seen)} although {_v(required)} was acknowledged "
                        f"{lag:.3f}s before the read began",
                    )
                )


def _v(version: int) -> str:
    if version == ABSENT:
        return "absent"
    if version == DROPPED:
        return "dropped"
    return f"version {version}"


# -- transactional tables --------------------------------------------------------------------


def _check_transactions(ops: list[Op], found: Findings) -> None:
    # Transactions whose commit was sent: (table) -> write id -> slots; and acknowledged ones.
    intents: dict[str, dict[int, list[str]]] = defaultdict(dict)
    acked_commits: list[tuple[float, str, int]] = []
    for op in ops:
        if op.call == "commit_txn" and op.txn:
            intents[op.txn["table"]][op.txn["write_id"]] = op.txn["partitions"]
            if op.acked:
                acked_commits.append((op.complete, op.txn["table"], op.txn["write_id"]))
    acked_commits.sort()
    slot_writers: dict[tuple[str, str], list[int]] = defaultdict(list)
    for tbl, by_wid in intents.items():
        for wid, slots in by_wid.items():
            for s in slots:
                slot_writers[(tbl, s)].append(wid)
    for writers in slot_writers.values():
        writers.sort(reverse=True)
    table_writers = {tbl: sorted(by_wid, reverse=True) for tbl, by_wid in intents.items()}
    kv_writers: dict[str, list[int]] = defaultdict(list)
    for op in ops:
        if op.call == "commit_txn" and op.txn and op.txn.get("kv"):
            kv_writers[op.txn["table"]].append(op.txn["write_id"])
    for writers in kv_writers.values():
        writers.sort(reverse=True)

    for op in ops:
        if not op.acked or op.snapshot is None:
            continue
        tbl = op.args.get("table")
        if tbl is None:
            continue
        valid = ValidReaderWriteIdList.parse(op.snapshot)
        obj = f"txn:{tbl}"
        if op.call == "get_valid_write_ids":
            found.reads_checked += 1
            i = bisect.bisect_left(acked_commits, (op.invoke,))
            for _, t, wid in acked_commits[:i]:
                if t == tbl and not valid.is_write_id_valid(wid):
                    found.violations.append(
                        Violation(
                            4 if op.client == AUDIT_CLIENT else 1,
                            "snapshot lacks an acknowledged commit",
                            obj,
                            op.id,
                            f"{op.snapshot} does not list write id {wid} as committed",
                        )
                    )
                    break
        elif op.call == "get_table_req":
            found.reads_checked += 1
            wid = _newest_valid(table_writers.get(tbl, []), valid)
            seen = op.result.get("wmax", 0)
            if wid and seen < wid:
                found.violations.append(
                    Violation(
                        _inv(op, 1),
                        "table older than its snapshot",
                        obj,
                        op.id,
                        f"wmax={seen} but {op.snapshot} reports write id {wid} committed",
                    )
                )
            kv = _newest_valid(kv_writers.get(tbl, []), valid)
            seen_kv = op.result.get("kv", 0)
            if kv and seen_kv < kv:
                found.violations.append(
                    Violation(
                        _inv(op, 1),
                        "parameters set by a commit (keyValue) missing",
                        obj,
                        op.id,
                        f"_meta.k={seen_kv} but {op.snapshot} reports write id {kv} committed, "
                        f"whose commit set _meta.k={kv}",
                    )
                )
        elif op.call == "get_table_statistics_req":
            found.reads_checked += 1
            high = op.result.get("stats", 0)
            if high and not valid.is_write_id_valid(high):
                found.violations.append(
                    Violation(
                        _inv(op, 5),
                        "statistics of a write the snapshot does not include",
                        obj,
                        op.id,
                        f"statistics written by write id {high}, not committed in {op.snapshot}",
                    )
                )
        elif op.call == "get_partitions_req":
            found.reads_checked += 1
            parts = op.result.get("parts", {})
            for slot in sorted({s for (t, s) in slot_writers if t == tbl}):
                wid = _newest_valid(slot_writers[(tbl, slot)], valid)
                if not wid or parts.get(slot, 0) >= wid:
                    continue
                slots = intents[tbl][wid]
                seen_here = {s: parts.get(s) for s in slots}
                partial = any(parts.get(s, 0) >= wid for s in slots)
                found.violations.append(
                    Violation(
                        _inv(op, 2 if partial else 1),
                        "partial transaction" if partial else "partition older than snapshot",
                        obj,
                        op.id,
                        f"write id {wid} committed in {op.snapshot} wrote slots {slots}; "
                        f"the read saw {seen_here}",
                    )
                )
                break


def _inv(op: Op, default: int) -> int:
    return 4 if op.client == AUDIT_CLIENT else default


def _newest_valid(wids_desc: list[int], valid: ValidReaderWriteIdList) -> int:
    for wid in wids_desc:
        if valid.is_write_id_valid(wid):
            return wid
    return 0


# -- the history shown with a violation ------------------------------------------------------

NEARBY = 25
"""Operations on the violating object shown before it (and a few after)."""


def _index(ops: list[Op]) -> dict[str, list[Op]]:
    """Each object's operations, in invocation order."""
    out: dict[str, list[Op]] = defaultdict(list)
    for op in sorted(ops, key=lambda o: o.invoke):
        keys = {k for k, _ in op.writes} | {k for k, _ in op.reads}
        table = op.args.get("table")
        if table is not None and (op.snapshot is not None or op.txn or "write_id" in op.args):
            keys.add(f"txn:{table}")
        if op.call == "commit_txn" and op.txn:
            keys.add(f"txn:{op.txn['table']}")
        for key in keys:
            out[key].append(op)
    return out


def _nearby(ops: list[Op], op_id: int) -> list[Op]:
    at = next((i for i, o in enumerate(ops) if o.id == op_id), len(ops))
    return ops[max(0, at - NEARBY) : at + 6]
