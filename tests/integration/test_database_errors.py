"""Database failures reach clients as a message they can act on, without the driver's text.

The driver's message names the database host and port and quotes the SQL; a client can do
nothing with that, and it leaks the deployment. The calls that declare MetaException get one;
the others (open_txns, commit_txn, lock: their IDL declares no MetaException) get an
INTERNAL_ERROR TApplicationException with the same message, the only error they can carry.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from sqlalchemy.engine import make_url
from thrift.Thrift import TApplicationException

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import running_service

pytestmark = pytest.mark.postgres

DRIVER_WORDS = ("127.0.0.1", "psycopg2", "SELECT", "UPDATE", "LOCK TABLE", '"TXNS"', "[SQL")


@pytest.fixture
def setup(pg_url: str, tmp_path: Path) -> Iterator[tuple[Any, Any, str]]:
    """A client of a service whose database lock waits give up after 1 s."""
    T: Any = load_apache_modules().ttypes
    with running_service(
        pg_url, tmp_path / "wh", cache_enabled=False, database_timeout_seconds=1.0
    ) as service:
        client, transport = apache_client("127.0.0.1", service.port)
        try:
            yield client, T, pg_url
        finally:
            transport.close()


def _holder(url: str) -> Any:
    u = make_url(url)
    return psycopg2.connect(
        host=u.host, port=u.port, user=u.username, password=u.password, dbname=u.database
    )


def _assert_actionable(message: str) -> None:
    assert "not granted in time" in message and "retry" in message, message
    for word in DRIVER_WORDS:
        assert word not in message, (word, message)


def test_a_lock_timeout_is_a_meta_exception_without_driver_text(
    setup: tuple[Any, Any, str],
) -> None:
    client, T, url = setup
    (txn,) = client.open_txns(T.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
    holder = _holder(url)
    try:
        with holder.cursor() as cur:  # another client holds the txn's row
            cur.execute('SELECT 1 FROM "TXNS" WHERE "TXN_ID" = %s FOR UPDATE', (txn,))
            rqst = T.AllocateTableWriteIdsRequest(dbName="default", tableName="t", txnIds=[txn])
            with pytest.raises(T.MetaException) as caught:
                client.allocate_table_write_ids(rqst)
        _assert_actionable(caught.value.message)
    finally:
        holder.rollback()
        holder.close()
    client.commit_txn(T.CommitTxnRequest(txnid=txn))  # the connection and the txn carry on


def test_a_call_without_meta_exception_gets_the_same_message(
    setup: tuple[Any, Any, str],
) -> None:
    client, T, url = setup
    holder = _holder(url)
    try:
        with holder.cursor() as cur:  # a commit numbering itself holds this lock
            cur.execute('LOCK TABLE "TXN_LOCK_TBL" IN EXCLUSIVE MODE')
            with pytest.raises(TApplicationException) as caught:
                client.open_txns(T.OpenTxnRequest(num_txns=1, user="u", hostname="h"))
        _assert_actionable(caught.value.message)
    finally:
        holder.rollback()
        holder.close()
    assert client.open_txns(T.OpenTxnRequest(num_txns=1, user="u", hostname="h")).txn_ids
