"""The txn calls' bounded reads on PostgreSQL: with old committed history skipped (the settled
floor), open_txns still records the lowest open txn (below the floor) in MIN_HISTORY_LEVEL, and
a watermark taken from a recent floor is never above an open txn (also under concurrent opens,
through the server-side function and through the statements); the commit still reads every
write id of its txn (found per table through Hive's index)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select, text

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.txn import install, pgsql
from hms_cache_proxy.store.txn.txn_base import TxnConfig
from hms_cache_proxy.store.txn.txn_service import TxnService
from tests.support.stores import sql_store, txn_service_on

MakeService = Callable[..., TxnService]


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


@pytest.fixture
def make(pg_url: str, tmp_path: Path) -> Iterator[MakeService]:
    """A txn service on the database, through the server-side functions or the statements."""
    made: list[Database] = []

    def _make(functions: bool, open_txn_timeout_ms: int = 1_000) -> TxnService:
        db = Database(pg_url, pool_size=12)
        made.append(db)
        init_db(db, (tmp_path / "wh").as_uri())
        usable = install.install(db).usable and functions
        assert usable == functions
        config = TxnConfig(server_functions=usable, open_txn_timeout_ms=open_txn_timeout_ms)
        return sql_store(db, (tmp_path / "wh").as_uri(), config).txn

    yield _make
    for db in made:
        db.dispose()


def _settle(svc: TxnService, mark_age: float = 3600) -> None:
    """Age every txn past the open window, then two reads, the first one's made ``mark_age``
    seconds ago (its top id becomes the floor)."""
    with svc.db.write_engine.begin() as conn:
        conn.execute(schema.TXNS.update().values(TXN_STARTED=schema.TXNS.c.TXN_STARTED - 60_000))
    svc.txns._settle_marks.clear()
    svc.get_open_txns()
    top, _ = svc.txns._settle_marks[-1]
    svc.txns._settle_marks.clear()
    svc.txns._settle_marks.append((top, time.monotonic() - mark_age))
    svc.get_open_txns()


def _watermark(svc: TxnService, txn: int) -> int:
    mhl = schema.MIN_HISTORY_LEVEL
    with svc.db.read() as conn:
        return int(
            conn.execute(
                select(mhl.c.MHL_MIN_OPEN_TXNID).where(mhl.c.MHL_TXNID == txn)
            ).scalar_one()
        )


def test_open_below_the_floor_is_the_new_txns_min_history_level(svc: TxnService) -> None:
    [old_open] = svc.open_txns(1, "u", "h")
    for _ in range(5):
        [txn] = svc.open_txns(1, "u", "h")
        svc.commit_txn(txn)
    _settle(svc)
    settled = svc.txns._settled_txns
    assert settled is not None and settled.floor > old_open
    assert old_open in settled.unsettled
    [new] = svc.open_txns(1, "u", "h")
    mhl = schema.MIN_HISTORY_LEVEL
    with svc.db.read() as conn:
        mark = conn.execute(
            select(mhl.c.MHL_MIN_OPEN_TXNID).where(mhl.c.MHL_TXNID == new)
        ).scalar_one()
    assert mark == old_open
    assert svc.get_open_txns().open_txns == [old_open, new]


def test_commit_reads_every_write_id_of_the_txn(svc: TxnService) -> None:
    [other] = svc.open_txns(1, "u", "h")
    [txn] = svc.open_txns(1, "u", "h")
    svc.allocate_table_write_ids("db", "t1", [other, txn])
    svc.allocate_table_write_ids("db", "t2", [txn])
    with svc.db.read() as conn:
        _, writes = pgsql.commit_facts(conn, txn)
    assert writes == [(2, "db", "t1"), (1, "db", "t2")]


@pytest.mark.parametrize("functions", [True, False], ids=["function", "statements"])
def test_a_watermark_from_a_recent_floor_is_the_floor_or_an_unsettled_open_txn(
    make: MakeService, functions: bool
) -> None:
    """Hive's value here would be the lowest open txn (every row began long ago); from a
    recent floor it is the floor, or the long-open txn below it while that is open."""
    svc = make(functions)
    [long_open] = svc.open_txns(1, "u", "h")
    for _ in range(5):
        [txn] = svc.open_txns(1, "u", "h")
        svc.commit_txn(txn)
    delay = svc.config.open_txn_timeout_ms / 1000 + 1.0
    _settle(svc, mark_age=delay + 0.05)
    settled = svc.txns._settled_txns
    assert settled is not None and svc.txns.floor_bounds_watermark(settled)
    floor = settled.floor
    assert long_open < floor and long_open in settled.unsettled
    [above] = svc.open_txns(1, "u", "h")
    assert _watermark(svc, above) == long_open  # not the floor: it is still open below it
    svc.commit_txn(long_open)
    [later] = svc.open_txns(1, "u", "h")
    assert _watermark(svc, later) == floor <= above  # Hive's: ``above``, the lowest open
    assert svc.get_open_txns().open_txns == [above, later]


@pytest.mark.parametrize("functions", [True, False], ids=["function", "statements"])
def test_an_old_floor_leaves_the_watermark_to_hives_searches(
    make: MakeService, functions: bool
) -> None:
    svc = make(functions)
    [first] = svc.open_txns(1, "u", "h")
    svc.commit_txn(first)
    _settle(svc, mark_age=3600)
    settled = svc.txns._settled_txns
    assert settled is not None and not svc.txns.floor_bounds_watermark(settled)
    [above] = svc.open_txns(1, "u", "h")
    [later] = svc.open_txns(1, "u", "h")
    assert _watermark(svc, later) == above > settled.floor


_VIOLATIONS = text(
    'SELECT m."MHL_TXNID", m."MHL_MIN_OPEN_TXNID", o."TXN_ID" FROM "MIN_HISTORY_LEVEL" m '
    'JOIN "TXNS" t ON t."TXN_ID" = m."MHL_TXNID" AND t."TXN_STATE" = \'o\' '
    'JOIN "TXNS" o ON o."TXN_STATE" = \'o\' AND o."TXN_ID" < m."MHL_MIN_OPEN_TXNID" '
    'AND o."TXN_ID" <= m."MHL_TXNID"'
)
"""Open txns whose MIN_HISTORY_LEVEL watermark lies above an older open txn (or themselves):
in one statement, one snapshot."""


@pytest.mark.parametrize("functions", [True, False], ids=["function", "statements"])
def test_concurrent_opens_never_record_a_watermark_above_an_open_txn(
    make: MakeService, functions: bool
) -> None:
    """Six clients open and commit, a seventh reads the open-txn list (moving the floor);
    long-open txns come and go below the moving floor. Every snapshot of MIN_HISTORY_LEVEL
    and TXNS shows no open txn below the watermark of a later open txn."""
    svc = make(functions, open_txn_timeout_ms=500)
    stop = threading.Event()
    errors: list[BaseException] = []
    on_floor: list[bool] = []
    decide = svc.txns.floor_bounds_watermark

    def counted(settled: object) -> bool:
        used = decide(settled)  # type: ignore[arg-type]
        on_floor.append(used)
        return used

    svc.txns.floor_bounds_watermark = counted  # type: ignore[method-assign]
    [held_throughout] = svc.open_txns(1, "u", "h")

    def guarded(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                while not stop.is_set():
                    work()
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        return run

    def open_commit() -> None:
        [txn] = svc.open_txns(1, "u", "h")
        svc.commit_txn(txn)

    def read_list() -> None:
        svc.get_open_txns()
        time.sleep(0.05)

    held: list[int] = []

    def hold_and_release() -> None:  # a txn kept open 1 s, one after another
        [txn] = svc.open_txns(1, "u", "h")
        held.append(txn)
        stop.wait(1.0)
        svc.commit_txn(txn)

    workers = [threading.Thread(target=guarded(open_commit)) for _ in range(6)]
    workers += [
        threading.Thread(target=guarded(read_list)),
        threading.Thread(target=guarded(hold_and_release)),
    ]
    for w in workers:
        w.start()
    found: list[tuple[int, int, int]] = []
    # At least 6 s of checking, and on until an open took its watermark from the floor (the
    # floor settles once a read is the open window plus a second younger than a mark: when
    # that happens depends on the machine's load), at most 30 s.
    started = time.monotonic()
    try:
        while not errors and (
            time.monotonic() < started + 6.0
            or (True not in on_floor and time.monotonic() < started + 30.0)
        ):
            with svc.db.read() as conn:
                found += [(int(a), int(b), int(c)) for a, b, c in conn.execute(_VIOLATIONS)]
            time.sleep(0.02)
    finally:
        stop.set()
        for w in workers:
            w.join()
    assert not errors, errors
    t = schema.TXNS
    with svc.db.read() as conn:  # an opener too slow withdraws its txns: never a real one
        present = set(conn.execute(select(t.c.TXN_ID)).scalars())
    assert [v for v in found if v[2] in present] == []
    assert held_throughout in present and held
    assert True in on_floor, (  # the floor's watermark was taken, held_throughout below it
        f"no open took the floor's watermark in 30 s: settled {svc.txns._settled_txns}"
    )
