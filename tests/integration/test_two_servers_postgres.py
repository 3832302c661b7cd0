"""Two `serve` processes on one PostgreSQL database, written to at the same time.

Object ids come from SEQUENCE_TABLE and event ids from NOTIFICATION_SEQUENCE under row locks,
so concurrent writers on different processes must never collide, every acknowledged write must
be in the database with its event, and event ids must be gap-free and in commit order.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

WRITERS_PER_SERVER = 4
TABLES_PER_WRITER = 5
PARTITIONS_PER_TABLE = 20


def _table(T: object, db: str, name: str) -> object:
    cols = [T.FieldSchema(name=f"c{i}", type="string") for i in range(5)]  # type: ignore[attr-defined]
    sd = T.StorageDescriptor(  # type: ignore[attr-defined]
        cols=cols,
        inputFormat="org.apache.hadoop.mapred.TextInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
        serdeInfo=T.SerDeInfo(  # type: ignore[attr-defined]
            serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}
        ),
        numBuckets=-1,
        compressed=False,
        parameters={},
        bucketCols=[],
        sortCols=[],
    )
    return T.Table(  # type: ignore[attr-defined]
        tableName=name,
        dbName=db,
        owner="test",
        sd=sd,
        partitionKeys=[T.FieldSchema(name="dt", type="string")],  # type: ignore[attr-defined]
        parameters={},
        tableType="MANAGED_TABLE",
    )


def test_concurrent_writes_on_two_servers_never_collide(pg_server: object, tmp_path: Path) -> None:
    url = pg_server.new_database()  # type: ignore[attr-defined]
    servers = [
        ServerProcess(url, tmp_path / "warehouse", tmp_path / f"server{i}.log") for i in range(2)
    ]
    T = load_apache_modules().ttypes
    errors: list[BaseException] = []
    acknowledged: list[tuple[str, str, int]] = []
    lock = threading.Lock()
    try:
        client, trans = apache_client("127.0.0.1", servers[0].port)
        client.create_database(T.Database(name="shared"))
        trans.close()

        def writer(server: ServerProcess, w: int) -> None:
            try:
                c, tr = apache_client("127.0.0.1", server.port)
                try:
                    for i in range(TABLES_PER_WRITER):
                        name = f"t_{server.port}_{w}_{i}"
                        c.create_table(_table(T, "shared", name))
                        parts = [
                            T.Partition(
                                values=[f"2024-01-{d:02d}"],
                                dbName="shared",
                                tableName=name,
                                sd=_table(T, "shared", name).sd,
                                parameters={},
                            )
                            for d in range(1, PARTITIONS_PER_TABLE + 1)
                        ]
                        added = c.add_partitions(parts)
                        with lock:
                            acknowledged.append(("shared", name, added))
                finally:
                    tr.close()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [
            threading.Thread(target=writer, args=(srv, w))
            for srv in servers
            for w in range(WRITERS_PER_SERVER)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        assert len(acknowledged) == 2 * WRITERS_PER_SERVER * TABLES_PER_WRITER

        # Every acknowledged write is readable through either server.
        for srv in servers:
            c, tr = apache_client("127.0.0.1", srv.port)
            try:
                names = set(c.get_all_tables("shared"))
                for _, name, added in acknowledged:
                    assert name in names
                    assert added == PARTITIONS_PER_TABLE
                    assert len(c.get_partition_names("shared", name, -1)) == added
            finally:
                tr.close()
    finally:
        for srv in servers:
            srv.stop()

    engine = create_engine(url)
    with engine.connect() as conn:
        tables = len(acknowledged)
        parts = tables * PARTITIONS_PER_TABLE
        # Unique ids (the primary keys would have refused duplicates; count them anyway).
        assert conn.execute(text('SELECT count(DISTINCT "TBL_ID") FROM "TBLS"')).scalar() == tables
        assert (
            conn.execute(text('SELECT count(DISTINCT "PART_ID") FROM "PARTITIONS"')).scalar()
            == parts
        )
        # Every table and partition owns its own storage descriptor.
        assert conn.execute(text('SELECT count(*) FROM "SDS"')).scalar() == tables + parts
        # Events: one per create (database, tables) and one per add_partitions call,
        # numbered 1..N without a hole, matching NOTIFICATION_SEQUENCE.
        ids = [
            r[0] for r in conn.execute(text('SELECT "EVENT_ID" FROM "NOTIFICATION_LOG" ORDER BY 1'))
        ]
        assert ids == list(range(1, 1 + 1 + 2 * tables))
        nxt = conn.execute(text('SELECT "NEXT_EVENT_ID" FROM "NOTIFICATION_SEQUENCE"')).scalar()
        assert nxt == ids[-1] + 1
        types = [
            r[0]
            for r in conn.execute(
                text('SELECT "EVENT_TYPE" FROM "NOTIFICATION_LOG" ORDER BY "EVENT_ID"')
            )
        ]
        assert types.count("CREATE_TABLE") == tables and types.count("ADD_PARTITION") == tables
        # SEQUENCE_TABLE is past every id in use, so the next writer (ours or a stock
        # metastore's) cannot collide either.
        for seq, table, col in (
            ("MTable", "TBLS", "TBL_ID"),
            ("MPartition", "PARTITIONS", "PART_ID"),
            ("MStorageDescriptor", "SDS", "SD_ID"),
        ):
            next_val = conn.execute(
                text('SELECT "NEXT_VAL" FROM "SEQUENCE_TABLE" WHERE "SEQUENCE_NAME" = :n'),
                {"n": "org.apache.hadoop.hive.metastore.model." + seq},
            ).scalar()
            highest = conn.execute(text(f'SELECT max("{col}") FROM "{table}"')).scalar()
            assert next_val > highest
    engine.dispose()
