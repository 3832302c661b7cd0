"""The consistency checker's invariant checks can fail: doctored histories with a stale read,
a read of a version never sent, a partial transaction, a read older than its snapshot, a
snapshot lacking an acknowledged commit and a lost write are each reported; honest
histories are not."""

from __future__ import annotations

from hms_cache_proxy.check.history import ABSENT, DROPPED, ERROR, OK, Op
from hms_cache_proxy.check.invariants import AUDIT_CLIENT, check_history

TABLE = "tbl:chk.o0_0"
NO_OPEN = 9223372036854775807


def _op(n: int, call: str, invoke: float, complete: float, outcome: str = OK, **kw) -> Op:
    client = kw.pop("client", 0)
    args = kw.pop("args", {})
    return Op(n, client, 0, call, args, invoke, complete, outcome, **kw)


def _write(n: int, version: int, invoke: float, complete: float, outcome: str = OK) -> Op:
    return _op(n, "alter_table", invoke, complete, outcome, writes=[(TABLE, version)])


def _read(n: int, seen: int, invoke: float, complete: float, client: int = 1) -> Op:
    return _op(n, "get_table", invoke, complete, client=client, reads=[(TABLE, seen)])


def test_a_read_missing_an_acknowledged_write_is_a_violation_in_strong_mode() -> None:
    ops = [_write(1, 1, 0.0, 1.0), _write(2, 2, 2.0, 3.0), _read(3, 1, 4.0, 4.5)]
    found = check_history(ops, "strong")
    assert [(v.invariant, v.what, v.op) for v in found.violations] == [(3, "stale read", 3)]
    # The report shows the object's history around the violation.
    assert [o["id"] for o in found.violations[0].related] == [1, 2, 3]


def test_eventual_mode_allows_a_lag_within_the_bound_and_reports_it() -> None:
    ops = [_write(1, 1, 0.0, 1.0), _write(2, 2, 2.0, 3.0), _read(3, 1, 4.0, 4.5)]
    found = check_history(ops, "eventual", eventual_bound=5.0)
    assert found.violations == [] and found.stale_reads == 1
    assert found.max_lag_seconds == 1.0
    tight = check_history(ops, "eventual", eventual_bound=0.5)
    assert [v.what for v in tight.violations] == ["read beyond the lag bound"]


def test_writes_of_unknown_outcome_may_be_seen_or_not() -> None:
    ops = [
        _write(1, 1, 0.0, 1.0),
        _write(2, 2, 2.0, 3.0, outcome=ERROR),
        _read(3, 1, 4.0, 4.5),
        _read(4, 2, 4.0, 4.5),
    ]
    assert check_history(ops, "strong").violations == []


def test_a_version_never_sent_and_a_drop_not_yet_sent_are_violations() -> None:
    ops = [
        _write(1, 1, 0.0, 1.0),
        _read(2, 7, 2.0, 2.5),  # no write of version 7
        _read(3, 1, 0.0, 0.5),  # overlaps the write of version 1: may see it
        _op(4, "drop_table", 5.0, 6.0, writes=[(TABLE, DROPPED)]),
        _read(5, ABSENT, 3.0, 4.0),  # absent after version 1 was acknowledged, before the drop
    ]
    found = check_history(ops, "strong")
    assert sorted((v.op, v.what) for v in found.violations) == [
        (2, "read a version never sent"),
        (5, "stale read"),
    ]


def test_the_final_audit_reports_a_lost_acknowledged_write_as_invariant_4() -> None:
    ops = [_write(1, 1, 0.0, 1.0), _write(2, 2, 2.0, 3.0), _read(3, 1, 9.0, 9.5, AUDIT_CLIENT)]
    found = check_history(ops, "eventual", eventual_bound=100.0)
    assert [(v.invariant, v.what) for v in found.violations] == [(4, "acknowledged write lost")]


def _commit(n: int, wid: int, slots: list[str], invoke: float, complete: float) -> Op:
    intent = {"table": "x0", "txn": 100 + wid, "write_id": wid, "partitions": slots}
    return _op(n, "commit_txn", invoke, complete, txn=intent, args={"txn": 100 + wid})


def _snapshot(hwm: int) -> str:
    return f"chk.x0:{hwm}:{NO_OPEN}::"


def test_partial_transactions_and_reads_older_than_their_snapshot_are_reported() -> None:
    snap = _snapshot(1)
    ops = [
        _commit(1, 1, ["s0", "s1"], 0.0, 1.0),
        _op(
            2,
            "get_partitions_req",
            2.0,
            2.5,
            snapshot=snap,
            args={"table": "x0"},
            result={"parts": {"s0": 1}},
        ),
        _op(
            3,
            "get_partitions_req",
            2.0,
            2.5,
            snapshot=snap,
            args={"table": "x0"},
            result={"parts": {}},
        ),
        _op(4, "get_table_req", 2.0, 2.5, snapshot=snap, args={"table": "x0"}, result={"wmax": 0}),
        # A snapshot that does not list write id 1 as committed (it is: acknowledged at 1.0).
        _op(5, "get_valid_write_ids", 3.0, 3.5, snapshot=_snapshot(0), args={"table": "x0"}),
        # Honest: a snapshot older than the commit, with what the database had then.
        _op(
            6,
            "get_partitions_req",
            2.0,
            2.5,
            snapshot=_snapshot(0),
            args={"table": "x0"},
            result={"parts": {}},
        ),
        _op(
            7,
            "get_partitions_req",
            2.0,
            2.5,
            snapshot=snap,
            args={"table": "x0"},
            result={"parts": {"s0": 1, "s1": 3}},
        ),
    ]
    found = check_history(ops, "strong")
    got = sorted((v.op, v.invariant, v.what) for v in found.violations)
    assert got == [
        (2, 2, "partial transaction"),
        (3, 1, "partition older than snapshot"),
        (4, 1, "table older than its snapshot"),
        (5, 1, "snapshot lacks an acknowledged commit"),
    ]


def test_commit_parameters_and_statistics_outside_the_snapshot_are_reported() -> None:
    """Issue 14, findings 2 and 4, as the checker sees them in a history."""
    commit = _commit(1, 1, ["s0"], 0.0, 1.0)
    commit.txn["kv"] = True  # type: ignore[index]
    snap = _snapshot(1)

    def read(n: int, call: str, result: dict, snapshot: str = snap) -> Op:
        return _op(n, call, 2.0, 2.5, snapshot=snapshot, args={"table": "x0"}, result=result)

    ops = [
        commit,
        read(2, "get_table_req", {"wmax": 1, "kv": 0}),  # the commit's keyValue missing
        read(3, "get_table_req", {"wmax": 1, "kv": 1}),  # honest
        read(4, "get_table_statistics_req", {"stats": 1}, _snapshot(0)),  # not in the snapshot
        read(5, "get_table_statistics_req", {"stats": 1}),  # honest
        read(6, "get_table_statistics_req", {"stats": 0}, _snapshot(0)),  # honest: none
    ]
    found = check_history(ops)
    got = sorted((v.op, v.invariant, v.what) for v in found.violations)
    assert got == [
        (2, 1, "parameters set by a commit (keyValue) missing"),
        (4, 5, "statistics of a write the snapshot does not include"),
    ]
