"""Id reservation from SEQUENCE_TABLE under concurrency, and across rollbacks.

Several threads, processes (and stock metastores) take ids from the same rows; an id handed out
twice would make two objects share a primary key, so these tests insert nothing but ids and
demand that none repeats.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Connection, event, func, insert, select

from hms_cache_proxy.store.db import ids, schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator, IdSequence
from hms_cache_proxy.store.sql.bootstrap import init_db

WAREHOUSE = "file:/tmp/hms-warehouse"


def _allocate_many(
    db: Database, allocator: IdAllocator, seq: IdSequence, calls: int, barrier: Any = None
) -> list[int]:
    """``calls`` write transactions, each taking 1 to 3 ids."""
    if barrier is not None:
        barrier.wait()
    got: list[int] = []
    for i in range(calls):
        n = 1 + i % 3
        got += db.transaction(lambda conn, n=n: allocator.allocate(conn, seq, n))
    return got


def _threads(db: Database, allocators: list[IdAllocator], seq: IdSequence, calls: int) -> list[int]:
    barrier = threading.Barrier(len(allocators))
    results: list[list[int]] = [[] for _ in allocators]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = _allocate_many(db, allocators[i], seq, calls, barrier)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(allocators))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return [i for r in results for i in r]


def _process_worker(url: str, seq_name: str, calls: int, start: Any) -> list[int]:
    """One process: its own Database and IdAllocator shared by two threads (spawned child)."""
    seq = next(q for q in vars(ids).values() if isinstance(q, IdSequence) and q.name == seq_name)
    db = Database(url)
    try:
        start.wait()
        allocator = IdAllocator(db, block_size=7)
        return _threads(db, [allocator, allocator], seq, calls)
    finally:
        db.dispose()


def _assert_unique_and_below_next_val(db: Database, seq: IdSequence, got: list[int]) -> None:
    assert len(got) == len(set(got)), "an id was handed out twice"
    with db.read() as conn:
        next_val = conn.execute(
            select(schema.SEQUENCE_TABLE.c.NEXT_VAL).where(
                schema.SEQUENCE_TABLE.c.SEQUENCE_NAME == seq.name
            )
        ).scalar_one()
    assert max(got) < next_val


# -- PostgreSQL --------------------------------------------------------------------------------


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[Database]:
    db = Database(pg_url)
    init_db(db, WAREHOUSE)
    yield db
    db.dispose()


@pytest.mark.postgres
def test_threads_with_their_own_allocators_never_share_an_id(pg_db: Database) -> None:
    # block_size=1: every id is a round trip to the locked row, the most contention there is.
    allocators = [IdAllocator(pg_db, block_size=1), IdAllocator(pg_db, block_size=3)]
    got = _threads(pg_db, allocators, ids.TABLE, calls=60)
    assert len(got) == 2 * sum(1 + i % 3 for i in range(60))
    _assert_unique_and_below_next_val(pg_db, ids.TABLE, got)


@pytest.mark.postgres
def test_threads_sharing_an_allocator_never_share_an_id(pg_db: Database) -> None:
    allocator = IdAllocator(pg_db, block_size=5)
    got = _threads(pg_db, [allocator, allocator], ids.PARTITION, calls=60)
    _assert_unique_and_below_next_val(pg_db, ids.PARTITION, got)


@pytest.mark.postgres
def test_processes_never_share_an_id(pg_db: Database) -> None:
    url = pg_db.url.render_as_string(hide_password=False)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Barrier(2)
        with ctx.Pool(2) as pool:
            runs = [
                pool.apply_async(_process_worker, (url, ids.STORAGE_DESCRIPTOR.name, 40, start))
                for _ in range(2)
            ]
            got = [i for r in runs for i in r.get(timeout=120)]
    assert len(got) == 2 * 2 * sum(1 + i % 3 for i in range(40))
    _assert_unique_and_below_next_val(pg_db, ids.STORAGE_DESCRIPTOR, got)


def _insert_table_row(conn: Connection, tbl_id: int) -> None:
    conn.execute(
        insert(schema.TBLS).values(
            TBL_ID=tbl_id, CREATE_TIME=0, LAST_ACCESS_TIME=0, RETENTION=0, TBL_NAME=f"t{tbl_id}"
        )
    )


@pytest.mark.postgres
def test_missing_sequence_row_starts_after_the_largest_id(pg_db: Database) -> None:
    pg_db.transaction(lambda conn: _insert_table_row(conn, 41))
    with pg_db.read() as conn:
        assert (
            conn.execute(
                select(func.count()).where(schema.SEQUENCE_TABLE.c.SEQUENCE_NAME == ids.TABLE.name)
            ).scalar_one()
            == 0
        )
    # Two allocators meet the missing row at once: one creates it, the other waits and reads it.
    got = _threads(pg_db, [IdAllocator(pg_db, 1), IdAllocator(pg_db, 1)], ids.TABLE, calls=5)
    assert min(got) == 42
    _assert_unique_and_below_next_val(pg_db, ids.TABLE, got)


@pytest.mark.postgres
def test_rolled_back_reservation_is_not_reused_on_postgres(pg_db: Database) -> None:
    allocator = IdAllocator(pg_db, block_size=2)

    def fail(conn: Connection) -> None:
        allocator.allocate(conn, ids.TABLE, 2)
        raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        pg_db.transaction(fail)
    later = pg_db.transaction(lambda conn: allocator.allocate(conn, ids.TABLE, 2))
    other = pg_db.transaction(lambda conn: IdAllocator(pg_db).allocate(conn, ids.TABLE, 2))
    assert len(set(later) | set(other)) == 4


def _next_val(db: Database, seq: IdSequence) -> int | None:
    with db.read() as conn:
        return conn.execute(
            select(schema.SEQUENCE_TABLE.c.NEXT_VAL).where(
                schema.SEQUENCE_TABLE.c.SEQUENCE_NAME == seq.name
            )
        ).scalar()


@pytest.mark.postgres
def test_a_block_is_reserved_on_the_write_transactions_own_connection(pg_db: Database) -> None:
    """No second connection per write: the block is reserved inside the transaction."""
    allocator = IdAllocator(pg_db, block_size=10)
    checkouts: list[str] = []
    for engine in pg_db.engines():
        event.listen(engine.pool, "checkout", lambda *_: checkouts.append("out"))
    first = pg_db.transaction(lambda conn: allocator.allocate(conn, ids.TABLE, 2))
    assert checkouts == ["out"]
    before = _next_val(pg_db, ids.TABLE)
    # Committed: the rest of the block serves the next calls without a reservation.
    later = pg_db.transaction(lambda conn: allocator.allocate(conn, ids.TABLE, 3))
    assert later == list(range(first[-1] + 1, first[-1] + 4))
    assert _next_val(pg_db, ids.TABLE) == before


@pytest.mark.postgres
def test_a_block_reserved_by_a_rolled_back_transaction_is_not_kept(pg_db: Database) -> None:
    """Rolled back, the reservation is undone: another process takes the same ids, so the
    rest of the block must not serve this process's later calls."""
    allocator = IdAllocator(pg_db, block_size=10)

    def fail(conn: Connection) -> None:
        allocator.allocate(conn, ids.TABLE, 2)
        raise RuntimeError("roll back")

    before = _next_val(pg_db, ids.TABLE)
    with pytest.raises(RuntimeError):
        pg_db.transaction(fail)
    assert _next_val(pg_db, ids.TABLE) == before
    other = pg_db.transaction(lambda conn: IdAllocator(pg_db, 10).allocate(conn, ids.TABLE, 10))
    mine = pg_db.transaction(lambda conn: allocator.allocate(conn, ids.TABLE, 8))
    assert not set(other) & set(mine)


@pytest.mark.postgres
def test_several_blocks_in_one_transaction_are_kept_once_it_commits(pg_db: Database) -> None:
    allocator = IdAllocator(pg_db, block_size=4)

    def run(conn: Connection) -> list[int]:
        got = allocator.allocate(conn, ids.TABLE, 3)  # a block of 4: one left
        got += allocator.allocate(conn, ids.TABLE, 1)  # that one, from the transaction's
        got += allocator.allocate(conn, ids.TABLE, 2)  # a second block: two left
        assert allocator.allocate(conn, ids.PARTITION, 1)
        return got

    got = pg_db.transaction(run)
    assert len(set(got)) == len(got) == 6
    before = _next_val(pg_db, ids.TABLE)
    later = pg_db.transaction(lambda conn: allocator.allocate(conn, ids.TABLE, 2))
    assert later == [got[5] + 1, got[5] + 2]
    assert _next_val(pg_db, ids.TABLE) == before


# -- SQLite ------------------------------------------------------------------------------------


def test_rolled_back_transaction_does_not_leak_ids_on_sqlite(sqlite_url: str) -> None:
    """A reservation made in a transaction that rolls back must not live on in the allocator.

    On SQLite the reservation shares the caller's transaction; a block kept in memory after a
    rollback would be handed out again by the database to the next allocator.
    """
    db = Database(sqlite_url)
    try:
        init_db(db, WAREHOUSE)
        mine, other = IdAllocator(db, block_size=10), IdAllocator(db, block_size=10)

        def use(allocator: IdAllocator, n: int, conn: Connection) -> list[int]:
            got = allocator.allocate(conn, ids.TABLE, n)
            for tbl_id in got:  # as primary keys: an id handed out twice fails to insert
                _insert_table_row(conn, tbl_id)
            return got

        def fail(conn: Connection) -> None:
            use(mine, 2, conn)
            raise RuntimeError("roll back")

        with pytest.raises(RuntimeError):
            db.transaction(fail)
        committed: list[int] = []
        for allocator, n in [(mine, 3), (other, 2), (mine, 2), (other, 3)]:
            committed += db.transaction(lambda conn, a=allocator, n=n: use(a, n, conn))
        assert len(committed) == len(set(committed)) == 10
        with db.read() as conn:
            rows = conn.execute(
                select(schema.TBLS.c.TBL_ID).order_by(schema.TBLS.c.TBL_ID)
            ).scalars()
            assert list(rows) == sorted(committed)
        _assert_unique_and_below_next_val(db, ids.TABLE, committed)
    finally:
        db.dispose()
