"""Invariant 5 at rest, the convergence audit: each caching instance answers, object by object,
exactly as the database path does (an instance with ``cache_enabled: false`` on the same
database): the database ``chk``, and every table name the run ever used (those dropped or
renamed away too: the answer must then be the same NoSuchObjectException) with get_table and
get_partitions; transactional tables with one snapshot on both sides, and their column
statistics for that snapshot.

Called while no client writes (a checkpoint, or the end). The instances may still be
applying the last events, so a difference is retried until ``settle_seconds`` pass; one that
persists is a violation.
"""

from __future__ import annotations

import time
from typing import Any

from hms_cache_proxy.bench.cases import connect
from hms_cache_proxy.check.instances import Instance
from hms_cache_proxy.check.invariants import Violation
from hms_cache_proxy.check.workload_objects import DB, TXN_TABLES
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.txn_snapshots import ValidReaderWriteIdList


def _answer(fn: Any) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a declared exception is an answer too
        return ("exception", type(exc).__name__, getattr(exc, "message", str(exc)))


def _reads(client: Any, table: str, snapshot: str | None) -> dict[str, Any]:
    if snapshot is None:
        return {
            "get_table": _answer(lambda: client.get_table(DB, table)),
            "get_partitions": _answer(lambda: client.get_partitions(DB, table, -1)),
        }
    stats = hms.TableStatsRequest(
        dbName=DB, tblName=table, colNames=["a"], engine="hive", validWriteIdList=snapshot
    )
    return {
        "get_table_statistics_req": _answer(
            lambda: client.get_table_statistics_req(stats).tableStats
        ),
        "get_table_req": _answer(
            lambda: (
                client.get_table_req(
                    hms.GetTableRequest(dbName=DB, tblName=table, validWriteIdList=snapshot)
                ).table
            )
        ),
        "get_partitions_req": _answer(
            lambda: (
                client.get_partitions_req(
                    hms.PartitionsRequest(
                        dbName=DB, tblName=table, maxParts=-1, validWriteIdList=snapshot
                    )
                ).partitions
            )
        ),
    }


def _differences(db_client: Any, client: Any, names: list[str]) -> list[tuple[str, str, str]]:
    """(object, call, how they differ) for the database, every table of it and ``names``."""
    out = []
    want_db, got_db = (
        _answer(lambda: db_client.get_database(DB)),
        _answer(lambda: client.get_database(DB)),
    )
    if want_db != got_db:
        out.append(("", "get_database", _describe(want_db, got_db)))
    for table in sorted(set(db_client.get_all_tables(DB)) | set(names)):
        snapshot = None
        if table in TXN_TABLES:
            req = hms.GetValidWriteIdsRequest(fullTableNames=[f"{DB}.{table}"])
            tvwi = db_client.get_valid_write_ids(req).tblValidWriteIds[0]
            snapshot = ValidReaderWriteIdList.from_table_valid_write_ids(tvwi).to_string()
        expected = _reads(db_client, table, snapshot)
        got = _reads(client, table, snapshot)
        for call, want in expected.items():
            if got[call] != want:
                out.append((table, call, _describe(want, got[call])))
    return out


def _describe(want: Any, got: Any) -> str:
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return f"{len(got)} partitions, database path {len(want)}"
        for w, g in zip(want, got, strict=True):
            if w != g:
                return f"partition {w.values}: {_fields(w, g)}"
    if hasattr(want, "__dict__") and hasattr(got, "__dict__"):
        return _fields(want, got)
    return f"{str(got)[:200]} but database path {str(want)[:200]}"


def _fields(want: Any, got: Any) -> str:
    diff = [k for k in vars(want) if getattr(want, k, None) != getattr(got, k, None)]
    return "fields differ: " + ", ".join(
        f"{k} cache={str(getattr(got, k, None))[:120]} db={str(getattr(want, k, None))[:120]}"
        for k in diff
    )


def compare_all(
    instances: list[Instance],
    db_path: Instance,
    when: str,
    settle_seconds: float = 30.0,
    names: list[str] | None = None,
) -> tuple[int, list[Violation]]:
    """(comparisons made, violations) for every caching instance against the database path.

    A comparison that cannot be made (a connection error, e.g. the first call after a
    PostgreSQL restart meets a stale pooled connection) is tried again until
    ``settle_seconds`` pass; if it never can be, that is reported as a violation too."""
    compared = 0
    violations: list[Violation] = []
    for inst in instances:
        deadline = time.monotonic() + settle_seconds
        diffs: list[tuple[str, str, str]] = []
        while True:
            try:
                diffs, tables = _compare_once(db_path, inst, names or [])
                failure = ""
            except Exception as exc:  # noqa: BLE001 - try again on fresh connections
                failure = f"{type(exc).__name__}: {str(exc)[:300]}"
            if not failure and not diffs:
                compared += 2 * tables
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if failure:
            violations.append(
                Violation(5, "comparison could not be made", f"instance:{inst.name}", 0, failure)
            )
            continue
        compared += 2 * tables if diffs else 0
        for table, call, how in diffs:
            violations.append(
                Violation(
                    5,
                    "cache answer differs from the database path",
                    f"tbl:{DB}.{table}" if table else f"db:{DB}",
                    0,
                    f"{when}: {inst.name} {call}({DB}.{table}): {how}",
                )
            )
    return compared, violations


def _compare_once(
    db_path: Instance, inst: Instance, names: list[str]
) -> tuple[list[tuple[str, str, str]], int]:
    db_client = connect("127.0.0.1", db_path.port, timeout_s=60)
    try:
        client = connect("127.0.0.1", inst.port, timeout_s=60)
        try:
            diffs = _differences(db_client, client, names)
            return diffs, len(set(db_client.get_all_tables(DB)) | set(names))
        finally:
            client.close()
    finally:
        db_client.close()
