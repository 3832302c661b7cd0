"""A new instance on PostgreSQL settles the floor of old TXNS rows by itself right after start
(store/txn/floor_primer.py), cache on or off: its first opens with min-history on take the
MIN_HISTORY_LEVEL watermark from that floor (no search of TXNS from id 0 through the committed
history), and the watermark is still no higher than any open txn (issue 23)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, select

from hms_cache_proxy.store.db import schema
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import running_service

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
            top = _open(client)
            client.commit_txn(T.CommitTxnRequest(txnid=top))
        finally:
            transport.close()

    with running_service(
        pg_url, tmp_path / "warehouse", cache_enabled=cache_enabled, **settings
    ) as svc:
        assert svc.floor_primer is not None
        # Without a single call: the floor is there once one open window (+1 s) has passed.
        assert svc.floor_primer.primed.wait(15), "no settled floor after start"
        txns = svc.store.txn.txns
        settled = txns._settled_txns
        assert settled is not None and settled.floor == top
        assert settled.unsettled == frozenset({still_open})
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
