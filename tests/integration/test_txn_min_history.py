"""Hive 4's min-history switches, on SQLite and PostgreSQL: which MIN_HISTORY_LEVEL rows open,
commit and abort write or remove, and which TXN_TO_WRITE_ID rows housekeeping keeps, with
``metastore.txn.use.minhistorylevel`` / ``metastore.txn.use.minhistorywriteid`` on and off."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import ensure_ready
from hms_cache_proxy.store.txn.housekeeping import clean_txn_tables
from hms_cache_proxy.store.txn.txn_base import TxnConfig
from hms_cache_proxy.store.txn.txn_service import TxnService
from hms_cache_proxy.store.txn_snapshots import LONG_MAX
from tests.support.pg_template import database_url, pg_template  # noqa: F401
from tests.support.stores import sql_store

MakeService = Callable[..., TxnService]


@pytest.fixture
def make(database_url: str, tmp_path: Path) -> Iterator[MakeService]:  # noqa: F811
    """Txn services over one database, each with its own switches."""
    made: list[Database] = []

    def _make(level: bool = True, write_id: bool = False) -> TxnService:
        db = Database(database_url)
        made.append(db)
        ensure_ready(db, (tmp_path / "wh").as_uri(), True)
        config = TxnConfig(use_min_history_level=level, use_min_history_write_id=write_id)
        return sql_store(db, (tmp_path / "wh").as_uri(), config).txn

    yield _make
    for db in made:
        db.dispose()


def mhl_rows(svc: TxnService) -> dict[int, int]:
    mhl = schema.MIN_HISTORY_LEVEL
    with svc.db.read() as conn:
        return dict(conn.execute(select(mhl.c.MHL_TXNID, mhl.c.MHL_MIN_OPEN_TXNID)).all())


def t2w_txns(svc: TxnService) -> set[int]:
    t2w = schema.TXN_TO_WRITE_ID
    with svc.db.read() as conn:
        return set(conn.execute(select(t2w.c.T2W_TXNID)).scalars())


def test_with_the_level_switch_on_each_open_txn_records_the_watermark(make: MakeService) -> None:
    svc = make(level=True)
    [first] = svc.open_txns(1, "u", "h")
    second, third = svc.open_txns(2, "u", "h", txn_type=hms.TxnType.READ_ONLY)
    assert mhl_rows(svc) == {first: first, second: first, third: first}
    svc.commit_txn(first)
    svc.abort_txn(second)
    assert mhl_rows(svc) == {third: first}


def test_with_the_level_switch_off_no_row_is_written_or_read(make: MakeService) -> None:
    on, off = make(level=True), make(level=False)
    [kept] = on.open_txns(1, "u", "h")  # another metastore with the switch on
    [a] = off.open_txns(1, "u", "h")
    [b] = off.open_txns(1, "u", "h", txn_type=hms.TxnType.READ_ONLY)
    assert mhl_rows(off) == {kept: kept}
    with off.db.read() as conn:
        assert off.txns.min_txn_id_seen_open(conn) == LONG_MAX
    with on.db.read() as conn:
        assert on.txns.min_txn_id_seen_open(conn) == kept
    assert off.get_open_txns().open_txns == [kept, a]  # the list does not need the rows


def test_switched_off_rows_of_ended_txns_are_left_to_housekeeping(make: MakeService) -> None:
    on, off = make(level=True), make(level=False)
    ended, still_open = on.open_txns(2, "u", "h")
    off.commit_txn(ended)  # with the switch off commit leaves MIN_HISTORY_LEVEL alone (Hive)
    assert set(mhl_rows(off)) == {ended, still_open}
    result = clean_txn_tables(off)
    assert result.min_history_removed == 1
    assert set(mhl_rows(off)) == {still_open}  # whoever wrote it still needs it


def _insert_lock(svc: TxnService, txn: int, op: int = hms.DataOperationType.INSERT) -> None:
    """The SHARED_WRITE lock a writer takes (its TXN_COMPONENTS row)."""
    component = hms.LockComponent(
        type=hms.LockType.SHARED_WRITE,
        level=hms.LockLevel.TABLE,
        dbname="default",
        tablename="t",
        operationType=op,
        isTransactional=True,
    )
    svc.lock(hms.LockRequest(component=[component], txnid=txn, user="u", hostname="h"))


def _reader_saw_a_writer_open(svc: TxnService) -> tuple[int, int]:
    """A writer (write id, insert lock), then a reader opened while it was open; the writer
    commits. The reader's snapshot holds the writer as open, so it needs its write id."""
    [writer] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "t", [writer])
    _insert_lock(svc, writer)
    [reader] = svc.open_txns(1, "u", "h")
    svc.commit_txn(writer)
    return writer, reader


def _age_txns(svc: TxnService) -> None:
    """Every txn begun long before the open window (so the open-txn watermark can rise)."""
    t = schema.TXNS
    with svc.db.write_engine.begin() as conn:
        conn.execute(t.update().values(TXN_STARTED=t.c.TXN_STARTED - 60_000))


def write_set(svc: TxnService) -> list[tuple[int, int, str]]:
    ws = schema.WRITE_SET
    with svc.db.read() as conn:
        rows = conn.execute(select(ws.c.WS_TXNID, ws.c.WS_COMMIT_ID, ws.c.WS_OPERATION_TYPE))
        return sorted((int(a), int(b), str(c)) for a, b, c in rows)


@pytest.mark.parametrize("level", [True, False], ids=["level-on", "level-off"])
def test_housekeeping_keeps_the_write_ids_an_open_snapshot_needs(
    make: MakeService, level: bool
) -> None:
    """Level on: the reader's MIN_HISTORY_LEVEL row keeps them; off: the writer's WRITE_SET
    row, which stays until no open txn began before the writer committed (Hive 4)."""
    svc = make(level=level)
    writer, reader = _reader_saw_a_writer_open(svc)
    _age_txns(svc)
    clean_txn_tables(svc)
    clean_txn_tables(svc)
    assert writer in t2w_txns(svc)
    svc.commit_txn(reader)
    _age_txns(svc)
    clean_txn_tables(svc)
    clean_txn_tables(svc)
    assert writer not in t2w_txns(svc)


@pytest.mark.parametrize("level", [True, False], ids=["level-on", "level-off"])
def test_without_min_history_level_a_commit_records_its_inserts_in_the_write_set(
    make: MakeService, level: bool
) -> None:
    svc = make(level=level)
    [other] = svc.open_txns(1, "u", "h")
    writer, _ = _reader_saw_a_writer_open(svc)
    [reader_only] = svc.open_txns(1, "u", "h", txn_type=hms.TxnType.READ_ONLY)
    svc.commit_txn(reader_only)
    expected = [] if level else [(writer, writer + 1, "i")]  # commit id: the txn hwm then
    assert write_set(svc) == expected
    assert other < writer


def test_with_the_write_id_switch_min_history_level_no_longer_bounds_the_cleaning(
    make: MakeService,
) -> None:
    """As Hive's findMinTxnIdSeenOpen with metastore.txn.use.minhistorywriteid: the cleaning
    keeps the open and aborted txns' write ids only (their protection would be
    MIN_HISTORY_WRITE_ID, which HiveServer2 fills through add_write_ids_to_min_history)."""
    svc = make(level=True, write_id=True)
    writer, reader = _reader_saw_a_writer_open(svc)
    [aborted] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "t", [aborted])
    svc.abort_txn(aborted)
    [late] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "t", [late])
    result = clean_txn_tables(svc)
    assert writer not in t2w_txns(svc) and result.write_ids_removed == 1
    assert {aborted, late} <= t2w_txns(svc)
    assert reader < aborted


def test_without_min_history_level_an_update_write_set_keeps_its_txns_write_ids(
    make: MakeService,
) -> None:
    svc = make(level=False)
    [updater] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("default", "t", [updater])
    [reader] = svc.open_txns(1, "u", "h")
    _insert_lock(svc, updater, hms.DataOperationType.UPDATE)
    svc.commit_txn(updater)
    assert [row[0] for row in write_set(svc)] == [updater]
    clean_txn_tables(svc)
    assert updater in t2w_txns(svc)  # min(WS_TXNID) bounds the cleaning
    assert reader > updater


def test_the_write_id_switch_removes_min_history_write_id_rows_at_the_end(
    make: MakeService,
) -> None:
    with_rows, without = make(write_id=True), make(write_id=False)
    a, b = with_rows.open_txns(2, "u", "h")
    mhw = schema.MIN_HISTORY_WRITE_ID
    with with_rows.db.write_engine.begin() as conn:
        conn.execute(
            insert(mhw),
            [
                {"MH_TXNID": t, "MH_DATABASE": "default", "MH_TABLE": "t", "MH_WRITEID": 1}
                for t in (a, b)
            ],
        )
    with_rows.commit_txn(a)
    without.commit_txn(b)

    def left() -> list[int]:
        with without.db.read() as conn:
            return list(conn.execute(select(mhw.c.MH_TXNID)).scalars())

    assert left() == [b]
    clean_txn_tables(without)  # the TXNS row can go once its history row has
    assert left() == []
