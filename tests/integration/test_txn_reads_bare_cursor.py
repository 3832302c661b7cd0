"""get_open_txns(_info) and get_valid_write_ids on PostgreSQL go through the bare autocommit
cursor (``Database.autocommit_cursor``, prepared statements, plain tuples): their answers equal
those of the SQLAlchemy path (``single_statement``, Row objects; the snapshot and the write ids
read by separate statements) for open, aborted and committed write ids, a gap in the txn ids,
a table with no write ids, several tables, and a validTxnList given or not."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from sqlalchemy import delete

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn_snapshots import ValidReadTxnList
from tests.support.stores import sql_store

TABLES = ["db.t", "db.u", "db.none"]


class CountedCursors:
    """Counts the bare cursors a call takes (the real ones: it only passes them on)."""

    def __init__(self, db: Database) -> None:
        self.taken = 0
        self._inner: Callable[[], AbstractContextManager[Any]] = db.autocommit_cursor

    def __call__(self) -> AbstractContextManager[Any]:
        self.taken += 1
        return self._inner()


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    db = Database(pg_url)
    init_db(db, "file:/tmp/wh")
    assert db.folds_round_trips  # psycopg2: the bare cursor path applies
    yield sql_store(db, "file:/tmp/wh").txn
    db.dispose()


@pytest.fixture
def cursors(svc: TxnService, monkeypatch: pytest.MonkeyPatch) -> CountedCursors:
    counted = CountedCursors(svc.db)
    monkeypatch.setattr(svc.db, "autocommit_cursor", counted)
    return counted


def _history(svc: TxnService) -> dict[str, int]:
    """db.t: an open, an aborted and committed txns' write ids; db.u: committed ones only;
    db.none: none; then committed txns with a gap (a missing TXNS row) among them."""
    for txn in svc.open_txns(3, "u", "h"):  # txn ids unlike the write ids
        svc.commit_txn(txn)
    opened, aborted, *committed = svc.open_txns(5, "u", "h")
    svc.allocate_table_write_ids("db", "t", [opened, aborted, *committed])
    svc.allocate_table_write_ids("db", "u", committed)
    for txn in committed:
        svc.commit_txn(txn)
    svc.abort_txn(aborted)
    later = svc.open_txns(20, "u", "h")
    for txn in later:
        svc.commit_txn(txn)
    gap = later[10]
    with svc.db.write_engine.begin() as conn:
        conn.execute(delete(schema.TXNS).where(schema.TXNS.c.TXN_ID == gap))
    return {"open": opened, "aborted": aborted, "gap": gap, "top": later[-1]}


def _old_open_txns(svc: TxnService, info: bool) -> Any:
    with svc.db.single_statement() as conn:
        listed = svc.txns.open_txn_list(conn, info=info)
    return listed.info_response() if info else listed.response()


def _old_write_ids(svc: TxnService, name: str, given: ValidReadTxnList | None) -> Any:
    with svc.db.single_statement() as conn:
        snapshot = given if given is not None else svc.txn_snapshot(conn, 0)
        return svc.table_write_ids(conn, name, snapshot)


def test_open_txns_equal_the_sqlalchemy_path(svc: TxnService, cursors: CountedCursors) -> None:
    ids = _history(svc)
    got = svc.get_open_txns()
    assert cursors.taken == 1
    assert got == _old_open_txns(svc, False)
    assert got.txn_high_water_mark == ids["top"]
    assert list(got.open_txns) == [ids["open"], ids["aborted"], ids["gap"]]
    info = svc.get_open_txns_info()
    assert cursors.taken == 2
    assert info == _old_open_txns(svc, True)
    assert [(t.id, t.state) for t in info.open_txns] == [
        (ids["open"], hms.TxnState.OPEN),
        (ids["aborted"], hms.TxnState.ABORTED),
        (ids["gap"], hms.TxnState.OPEN),
    ]
    assert info.open_txns[0].user == "u" and info.open_txns[0].hostname == "h"


def test_valid_write_ids_equal_the_sqlalchemy_path(
    svc: TxnService, cursors: CountedCursors
) -> None:
    _history(svc)
    given = ValidReadTxnList.from_open_txns_response(svc.get_open_txns())
    taken = cursors.taken
    for name in TABLES:
        (now,) = svc.get_valid_write_ids([name])
        (with_list,) = svc.get_valid_write_ids([name], given.to_string())
        assert now == _old_write_ids(svc, name, None), name
        assert with_list == _old_write_ids(svc, name, given), name
        assert now == with_list, name
    assert cursors.taken == taken + 2 * len(TABLES)  # every single-table read took the cursor
    t, u, none = (svc.get_valid_write_ids([name])[0] for name in TABLES)
    assert (t.writeIdHighWaterMark, list(t.invalidWriteIds), t.minOpenWriteId) == (5, [1, 2], 1)
    assert (u.writeIdHighWaterMark, list(u.invalidWriteIds), u.minOpenWriteId) == (3, [], None)
    assert (none.writeIdHighWaterMark, list(none.invalidWriteIds)) == (0, [])
    several = svc.get_valid_write_ids(TABLES)
    assert several == [t, u, none]
    assert svc.get_valid_write_ids(TABLES, given.to_string()) == [t, u, none]


def test_a_snapshot_taken_before_later_writes_keeps_them_invalid(
    svc: TxnService, cursors: CountedCursors
) -> None:
    """validTxnList given: the write ids of txns above its hwm or open in it stay invalid
    after they commit, on the bare cursor as on the SQLAlchemy path."""
    _history(svc)
    given = ValidReadTxnList.from_open_txns_response(svc.get_open_txns())
    (after,) = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("db", "u", [after])
    svc.commit_txn(after)
    (old,) = svc.get_valid_write_ids(["db.u"], given.to_string())
    assert old == _old_write_ids(svc, "db.u", given)
    assert old.writeIdHighWaterMark == 3  # write id 4 is above the snapshot
    (now,) = svc.get_valid_write_ids(["db.u"])
    assert now == _old_write_ids(svc, "db.u", None)
    assert now.writeIdHighWaterMark == 4 and list(now.invalidWriteIds) == []
