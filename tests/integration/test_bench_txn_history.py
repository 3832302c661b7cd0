"""The bench's history knob (bench/txn_history.py) on PostgreSQL: what it leaves under each
min-history setting, and its settling, after which the open-txn reads start above it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select, text

from hms_cache_proxy.bench import txn_history
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.txn.txn_service import TxnService
from tests.support.stores import txn_service_on

pytestmark = pytest.mark.postgres

N = 300


@pytest.fixture
def svc(pg_url: str) -> Iterator[TxnService]:
    with txn_service_on(pg_url) as service:
        yield service


def _history_rows(svc: TxnService) -> dict[str, int]:
    t, ws, t2w = schema.TXNS, schema.WRITE_SET, schema.TXN_TO_WRITE_ID
    with svc.db.read() as conn:
        return {
            "TXNS": conn.execute(
                select(func.count()).where(t.c.TXN_USER == txn_history.HISTORY_USER)
            ).scalar_one(),
            "TXN_TO_WRITE_ID": conn.execute(
                select(func.count()).where(t2w.c.T2W_TABLE == txn_history.HISTORY_TABLE)
            ).scalar_one(),
            "WRITE_SET": conn.execute(
                select(func.count()).where(
                    ws.c.WS_TABLE == txn_history.HISTORY_TABLE,
                    ws.c.WS_COMMIT_ID == ws.c.WS_TXNID,
                    ws.c.WS_OPERATION_TYPE == "i",
                )
            ).scalar_one(),
        }


@pytest.mark.parametrize("level", [True, False])
def test_history_leaves_write_set_rows_only_with_the_level_switch_off(
    svc: TxnService, pg_url: str, level: bool
) -> None:
    txn_history.add(pg_url, stock=False, n=N, min_history_level=level)
    assert _history_rows(svc) == {
        "TXNS": N,
        "TXN_TO_WRITE_ID": N,
        # Hive 4 without MIN_HISTORY_LEVEL: every insert's commit writes its WRITE_SET row
        "WRITE_SET": 0 if level else N,
    }
    txn_history.remove(pg_url, stock=False)
    assert _history_rows(svc) == {"TXNS": 0, "TXN_TO_WRITE_ID": 0, "WRITE_SET": 0}
    # and vacuumed, as autovacuum would: the next target finds no dead rows, fresh statistics
    with svc.db.read() as conn:
        vacuumed = conn.execute(
            text(
                "SELECT relname, last_vacuum IS NOT NULL, last_analyze IS NOT NULL "
                "FROM pg_stat_user_tables "
                "WHERE relname IN ('TXNS', 'TXN_TO_WRITE_ID')"
            )
        ).all()
    assert sorted(vacuumed) == [("TXNS", True, True), ("TXN_TO_WRITE_ID", True, True)]


def test_settling_moves_the_settled_floor_above_the_history(svc: TxnService, pg_url: str) -> None:
    for txn in svc.open_txns(3, "u", "h"):
        svc.commit_txn(txn)
    txn_history.keep_reading(svc.get_open_txns)  # a floor below the history, as a served one
    before = svc.txns._settled_txns
    assert before is not None
    txn_history.add(pg_url, stock=False, n=N)
    with svc.db.read() as conn:
        top = conn.execute(select(func.max(schema.TXNS.c.TXN_ID))).scalar_one()
    assert before.floor <= top - N  # below the history: every read from it walks it

    txn_history.keep_reading(svc.get_open_txns)

    after = svc.txns._settled_txns
    assert after is not None and after.floor >= top
    txn_history.remove(pg_url, stock=False)
