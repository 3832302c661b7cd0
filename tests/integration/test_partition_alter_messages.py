"""alter_partitions with a write id on PostgreSQL through psycopg2 (what an INSERT into a
partition of a transactional table sends, issue 23): its transaction is a fixed, small number of
messages to the server, whatever the number of partitions, and the write lands as on any path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.sql.bootstrap import init_db
from hms_cache_proxy.store.sql.sql_store import SqlStore
from tests.integration.test_stats_store import CAT, DB, WAREHOUSE, make_table
from tests.support.stores import sql_store as compose_sql_store

pytestmark = [pytest.mark.postgres]

ALTER_MESSAGES = 13
"""The table with its row share-locked (2: its row and its details), the partitions by
name with their rows locked (2; they also give the rows' PART_ID and SD_ID), the write id's
txn (1), the writer's write-id list (1), clearing them and locking the column descriptors they
may free (1), the new descriptors (1), the rewrite with the old descriptors' removal (1), the
result (2), the event ids (1), the events with the COMMIT (1). Statement by statement, as
before issue 23, it was 29; 17 while the table was resolved (and locked) apart from its load
and the partition rows' ids were read again after the locking read; 15 while the old
descriptors went in a message of their own and their column descriptor, which the new
descriptors use, was checked for use by another."""


@pytest.fixture
def store(pg_url: str) -> Iterator[SqlStore]:
    db = Database(pg_url)
    init_db(db, WAREHOUSE)
    sql_store = compose_sql_store(db, WAREHOUSE)
    sql_store.create_database(hms.Database(name=DB, parameters={}, catalogName=CAT))
    yield sql_store
    db.dispose()


def _messages(store: SqlStore, fn: Any) -> int:
    """How many statements (messages: psycopg2 sends one per execute) ``fn`` sends."""
    seen: list[int] = []

    def on_execute(*_args: Any) -> None:
        seen.append(1)

    engines = store.db.engines()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", on_execute)
    try:
        fn()
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", on_execute)
    return len(seen)


def test_an_alter_with_a_write_id_is_a_few_messages_whatever_its_partitions(store) -> None:
    counts = {}
    for n in (1, 1, 5):
        name = f"t{len(counts)}_{n}"
        make_table(
            store,
            name,
            keys=[("p", "string")],
            params={"transactional": "true", "transactional_properties": "default"},
        )
        names = [f"p={i}" for i in range(n)]
        store.add_partitions(CAT, DB, name, [hms.Partition(values=[str(i)]) for i in range(n)])
        (txn,) = store.txn.open_txns(1, "tester", "test-host")
        [(_, write_id)] = store.txn.allocate_table_write_ids(DB, name, [txn])
        parts = store.get_partitions_by_names(CAT, DB, name, names)
        for part in parts:
            part.parameters = {**(part.parameters or {}), "numRows": "7"}
            part.writeId = write_id

        def alter(name: str = name, parts: Any = parts, write_id: int = write_id) -> None:
            store.alter_partitions(CAT, DB, name, parts, write_id=write_id)

        counts[name] = _messages(store, alter)
        stored = store.get_partitions_by_names(CAT, DB, name, names)
        assert [(p.writeId, p.parameters["numRows"]) for p in stored] == [(write_id, "7")] * n
        store.txn.commit_txn(txn)
    first, again, five = counts.values()
    # The first alter on a fresh database also reserves id blocks (SEQUENCE_TABLE).
    assert again == ALTER_MESSAGES, counts
    assert five == again, counts
    assert first >= again
