"""A new instance on PostgreSQL settles the floor of old TXNS rows by itself right after start
(store/txn/floor_primer.py), cache on or off: its first opens with min-history on take the
MIN_HISTORY_LEVEL watermark from that floor (no search of TXNS from id 0 through the committed
history), and the watermark is still no higher than any open txn (issue 23). The floor taken
under TXN_LOCK_TBL waits for an opener whose ids are taken but not yet visible, and reads only
from the bound an unlocked read found first (no walk of the committed history under the lock)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select, text

from hms_cache_proxy.store.db import schema
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import running_service
from tests.support.stores import txn_service_on

T: Any = load_apache_modules().ttypes
WINDOW_MS = 200  # a short open window: the floor settles 1.2 s after start


def _open(client: Any) -> int:
    (txn,) = client.open_txns(T.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
    return int(txn)


def _watermark(url: str, txn: int) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            mhl = schema.MIN_HISTORY_LEVEL
            query = select(mhl.c.MHL_MIN_OPEN_TXNID).where(mhl.c.MHL_TXNID == txn)
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


def _age_past_the_open_window(url: str) -> None:
    """Every txn so far started a minute ago (the floor stops at the first young one)."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            started = schema.TXNS.c.TXN_STARTED
            conn.execute(schema.TXNS.update().values(TXN_STARTED=started - 60_000))
    finally:
        engine.dispose()


@pytest.mark.parametrize("cache_enabled", [False, True], ids=["db-path", "cache"])
def test_a_new_instance_opens_on_a_settled_floor(
    pg_url: str, tmp_path: Path, cache_enabled: bool
) -> None:
    settings = {"txn_open_timeout_ms": WINDOW_MS, "txn_use_min_history_level": True}
    # History from an earlier instance: committed txns, and one left open.
    with running_service(pg_url, tmp_path / "warehouse", **settings) as first:
        client, transport = apache_client("127.0.0.1", first.port)
        try:
            for _ in range(5):
                client.commit_txn(T.CommitTxnRequest(txnid=_open(client)))
            still_open = _open(client)
            for _ in range(5):
                client.commit_txn(T.CommitTxnRequest(txnid=_open(client)))
            aborted = _open(client)  # stays in TXNS in state 'a'
            client.abort_txn(T.AbortTxnRequest(txnid=aborted))
            for _ in range(5):
                client.commit_txn(T.CommitTxnRequest(txnid=_open(client)))
            top = _open(client)
            client.commit_txn(T.CommitTxnRequest(txnid=top))
        finally:
            transport.close()

    _age_past_the_open_window(pg_url)
    with running_service(
        pg_url, tmp_path / "warehouse", cache_enabled=cache_enabled, **settings
    ) as svc:
        assert svc.floor_primer is not None
        # Without a single call (one read under TXN_LOCK_TBL at start).
        assert svc.floor_primer.primed.wait(15), "no settled floor after start"
        txns = svc.store.txn.txns
        settled = txns._settled_txns
        assert settled is not None and settled.floor == top
        # Both below the bound of the read under the lock: looked up there one by one.
        assert settled.unsettled == frozenset({still_open, aborted})
        client, transport = apache_client("127.0.0.1", svc.port)
        try:
            txn = _open(client)
            # From the floor: the lower of it and the unsettled txns still open, the old open
            # txn here (Hive's two searches give the same value, reading TXNS from id 0).
            assert _watermark(pg_url, txn) == still_open
            client.commit_txn(T.CommitTxnRequest(txnid=still_open))
            txn2 = _open(client)
            # Nothing open below the floor: the floor itself, a lower bound of the open txn
            # (Hive's searches give txn itself: the floor path was taken).
            assert _watermark(pg_url, txn2) == top
            assert top < txn < txn2
        finally:
            transport.close()


def test_the_floor_under_the_lock_waits_for_an_opener_in_flight(pg_url: str) -> None:
    """An opener holding TXN_LOCK_TBL in SHARE mode with its TXNS row not yet committed: no
    floor is settled past its id (the lock is not granted); once it has committed, the floor
    lists it as unsettled and the watermark taken from the floor is not above it."""
    with txn_service_on(pg_url) as svc:
        for _ in range(3):
            svc.commit_txn(svc.open_txns(1, "u", "h")[0])
        _age_past_the_open_window(pg_url)
        engine = create_engine(pg_url)
        try:
            with engine.connect() as opener:
                opener.execute(text('LOCK TABLE "TXN_LOCK_TBL" IN SHARE MODE'))
                in_flight = int(
                    opener.execute(
                        text(
                            'INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", '
                            '"TXN_LAST_HEARTBEAT", "TXN_USER", "TXN_HOST") '
                            "VALUES ('o', 0, 0, 'u', 'h') RETURNING \"TXN_ID\""
                        )
                    ).scalar_one()
                )
                with pytest.raises(Exception, match="lock timeout"):
                    svc.txns.settle_under_lock()
                assert svc.txns._settled_txns is None
                opener.commit()  # the opener's row is visible, its lock released
            for _ in range(2):
                svc.commit_txn(svc.open_txns(1, "u", "h")[0])
            _age_past_the_open_window(pg_url)
            assert svc.txns.settle_under_lock()
        finally:
            engine.dispose()
        settled = svc.txns._settled_txns
        assert settled is not None and in_flight < settled.floor
        assert settled.unsettled == frozenset({in_flight})
        [txn] = svc.open_txns(1, "u", "h")
        assert _watermark(pg_url, txn) == in_flight


def _exclusive_lock_waiting(conn: Any) -> bool:
    """Whether a session waits for a lock on TXN_LOCK_TBL (settle_under_lock's EXCLUSIVE)."""
    query = text(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
        "WHERE c.relname = 'TXN_LOCK_TBL' AND l.mode = 'ExclusiveLock' AND NOT l.granted"
    )
    return bool(conn.execute(query).scalar_one())


def test_the_read_under_the_lock_starts_at_the_bound_of_an_unlocked_read(pg_url: str) -> None:
    """settle_under_lock reads the open-txn list first without the lock and, under it, only
    from that read's bound up (and the rows it listed below): the committed history below is
    not walked while other instances' opens wait. Shown by an id below the bound that only
    turns up while the lock is awaited: an opener's row, its id missing below old rows when
    the unlocked read ran (no open txn by the gap rule: an opener that slow withdraws its ids).
    Read from id 0 under the lock, as before the bound, it would be listed as unsettled."""
    with txn_service_on(pg_url) as svc:
        for _ in range(3):
            svc.commit_txn(svc.open_txns(1, "u", "h")[0])
        _age_past_the_open_window(pg_url)
        engine = create_engine(pg_url)
        try:
            with engine.connect() as opener, engine.connect() as other:
                opener.execute(text('LOCK TABLE "TXN_LOCK_TBL" IN SHARE MODE'))
                late = int(opener.execute(text(_INSERT_TXN.format(state="o"))).scalar_one())
                with other.begin():  # committed txns above it, old: the gap counts as closed
                    top = max(
                        int(other.execute(text(_INSERT_TXN.format(state="c"))).scalar_one())
                        for _ in range(3)
                    )
                outcome: list[object] = []
                settling = threading.Thread(
                    target=lambda: outcome.append(_settle_catching(svc.txns)), daemon=True
                )
                settling.start()
                deadline = time.monotonic() + 0.8  # within the lock's 1 s timeout
                while not _exclusive_lock_waiting(other) and time.monotonic() < deadline:
                    other.rollback()
                    time.sleep(0.005)
                assert _exclusive_lock_waiting(other), "settle_under_lock never asked for the lock"
                other.rollback()
                opener.commit()  # the late row turns up as the lock is granted
                settling.join(10)
        finally:
            engine.dispose()
        assert outcome == [True]
        settled = svc.txns._settled_txns
        assert settled is not None and settled.floor == top > late
        assert settled.unsettled == frozenset()


_INSERT_TXN = (
    'INSERT INTO "TXNS" ("TXN_STATE", "TXN_STARTED", "TXN_LAST_HEARTBEAT", "TXN_USER", '
    "\"TXN_HOST\") VALUES ('{state}', 0, 0, 'u', 'h') RETURNING \"TXN_ID\""
)


def _settle_catching(txns: Any) -> object:
    try:
        return bool(txns.settle_under_lock())
    except Exception as exc:  # noqa: BLE001 - the test reports it
        return exc
