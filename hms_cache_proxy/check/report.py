"""The result of a check run: counts of operations, faults and violations, each violation with
the history of the object it concerns; as a dict (the JSON report) and as text."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hms_cache_proxy.check.history import ERROR, OK, History
from hms_cache_proxy.check.invariants import Findings, Violation

SHOWN_IN_TEXT = 20
"""Violations printed in full (the JSON report has them all)."""


def build(
    history: History,
    findings: Findings,
    comparisons: int,
    compare_violations: list[Violation],
    settings: dict[str, Any],
    fault_counts: dict[str, int],
    fault_errors: list[str],
    seconds: float,
    workload_seconds: float,
    machine: dict[str, Any],
) -> dict[str, Any]:
    ops = history.snapshot_ops()
    violations = findings.violations + compare_violations
    outcomes = Counter(op.outcome for op in ops)
    by_call: dict[str, dict[str, int]] = {}
    for op in ops:
        row = by_call.setdefault(op.call, {"ok": 0, "error": 0})
        row["ok" if op.outcome == OK else "error"] += 1
    return {
        "settings": settings,
        "machine": machine,
        "seconds": round(seconds, 1),
        "workload_seconds": round(workload_seconds, 1),
        "operations": {
            "total": history.operations,
            "calls_with_lock_polls": len(ops),
            "acknowledged": outcomes.get(OK, 0),
            "outcome_unknown": outcomes.get(ERROR, 0),
            "per_second": round(history.operations / workload_seconds, 1)
            if workload_seconds > 0
            else 0.0,
            "by_call": dict(sorted(by_call.items())),
            "acknowledged_by_instance": dict(
                sorted(Counter(o.instance for o in ops if o.outcome == OK).items())
            ),
            "commits_acknowledged": sum(1 for o in ops if o.call == "commit_txn" and o.acked),
            "commonest_errors": [
                {"error": e, "count": n}
                for e, n in Counter(
                    f"{o.call}: {o.error[:120]}" for o in ops if o.outcome == ERROR
                ).most_common(15)
            ],
        },
        "faults": {
            "counts": fault_counts,
            "errors": fault_errors,
            "list": [f.as_dict() for f in history.faults],
        },
        "checks": {
            "reads_checked": findings.reads_checked,
            "stale_reads": findings.stale_reads,
            "max_lag_seconds": round(findings.max_lag_seconds, 3),
            "cache_comparisons": comparisons,
        },
        "violations": {
            "total": len(violations),
            "by_invariant": dict(sorted(Counter(v.invariant for v in violations).items())),
            "list": [v.as_dict() for v in violations],
        },
    }


def text(report: dict[str, Any]) -> str:
    ops, faults, checks, viol = (
        report["operations"],
        report["faults"],
        report["checks"],
        report["violations"],
    )
    lines = [
        f"operations: {ops['total']} in {report['workload_seconds']}s of workload "
        f"({ops['per_second']}/s; {report['seconds']}s in all); "
        f"with lock polls {ops['calls_with_lock_polls']} calls: acknowledged "
        f"{ops['acknowledged']}, outcome unknown {ops['outcome_unknown']}; "
        f"commits acknowledged {ops['commits_acknowledged']}",
        "faults: "
        + (", ".join(f"{k} {n}" for k, n in faults["counts"].items()) or "none")
        + (f" ({len(faults['errors'])} failed to inject)" if faults["errors"] else ""),
        f"checked: {checks['reads_checked']} reads, {checks['cache_comparisons']} cache/database "
        f"comparisons; stale reads {checks['stale_reads']} (largest lag "
        f"{checks['max_lag_seconds']}s)",
        f"violations: {viol['total']}"
        + (f" (by invariant: {viol['by_invariant']})" if viol["total"] else ""),
    ]
    for error in faults["errors"]:
        lines.append(f"  fault not injected: {error}")
    for v in viol["list"][:SHOWN_IN_TEXT]:
        lines.append("")
        lines.append(f"VIOLATION of invariant {v['invariant']}: {v['what']} on {v['object']}")
        lines.append(f"  {v['detail']} (operation {v['op']})")
        for op in v["history"]:
            mark = ">>" if op["id"] == v["op"] else "  "
            extra = {k: op[k] for k in ("writes", "reads", "snapshot", "result", "txn") if k in op}
            lines.append(
                f"  {mark} #{op['id']} client {op['client']} on instance {op['instance']} "
                f"{op['call']}{op['args']} [{op['invoke']:.3f}..{op['complete']:.3f}] "
                f"{op['outcome']}{' ' + op['error'] if op.get('error') else ''} {extra or ''}"
            )
    if viol["total"] > SHOWN_IN_TEXT:
        lines.append(f"... {viol['total'] - SHOWN_IN_TEXT} more in the JSON report")
    return "\n".join(lines)
