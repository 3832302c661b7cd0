"""add_foreign_key against a concurrent alter of the parent, on PostgreSQL with the cache on.

alter_table locks the table's TBLS row for update before it replaces the columns. The key's
columns are read under a share lock of that row, so an add that arrives while an alter is in
flight waits for it and then sees the alter's columns: a key is never added on a column the
alter just renamed away (it used to be, from the columns read before the alter committed).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text

from tests.support.apache_thrift import apache_client
from tests.support.metastore import foreign_key, table
from tests.support.server import running_service

DB = "racedb"


def _waiting_on_a_lock(engine: Any) -> bool:
    with engine.connect() as conn:
        found = conn.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND datname = current_database()"
            )
        ).scalar()
    return bool(found)


def test_a_foreign_key_waits_for_an_alter_of_its_parent_and_sees_its_columns(
    pg_url: str, tmp_path: Path, T: Any
) -> None:
    with running_service(pg_url, tmp_path / "wh") as svc:
        client, transport = apache_client("127.0.0.1", svc.port)
        try:
            client.create_database(T.Database(name=DB))
            on = {"table_db": DB, "table_name": "parent"}
            flags = {"enable_cstr": True, "validate_cstr": False, "rely_cstr": False}
            client.create_table_req(
                T.CreateTableRequest(
                    table=table(T, DB, "parent", ["id:int", "v:string"]),
                    primaryKeys=[
                        T.SQLPrimaryKey(column_name="id", key_seq=1, pk_name="pk", **on, **flags)
                    ],
                )
            )
            client.create_table(table(T, DB, "child", ["pid:int"]))
        finally:
            transport.close()

        engine = create_engine(pg_url)
        outcome: dict[str, Any] = {}

        def add_key() -> None:
            c, t = apache_client("127.0.0.1", svc.port)
            try:
                fk = foreign_key(T, (DB, "parent", "id"), (DB, "child", "pid"), "fk")
                c.add_foreign_key(T.AddForeignKeyRequest([fk]))
                outcome["result"] = "added"
            except Exception as exc:  # noqa: BLE001 - the answer is what the test checks
                outcome["result"] = exc
            finally:
                t.close()

        adder = threading.Thread(target=add_key)
        try:
            with engine.begin() as alter:
                # What alter_table does first: the parent's row, locked for update; then the
                # column is renamed in the same transaction.
                alter.execute(
                    text(
                        'SELECT t."TBL_ID" FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
                        'WHERE d."NAME" = :db AND t."TBL_NAME" = \'parent\' FOR UPDATE OF t'
                    ),
                    {"db": DB},
                )
                alter.execute(
                    text(
                        'UPDATE "COLUMNS_V2" SET "COLUMN_NAME" = \'id2\' WHERE "COLUMN_NAME" = '
                        '\'id\' AND "CD_ID" = (SELECT s."CD_ID" FROM "SDS" s JOIN "TBLS" t ON '
                        't."SD_ID" = s."SD_ID" WHERE t."TBL_NAME" = \'parent\')'
                    )
                )
                adder.start()
                deadline = time.monotonic() + 60
                while not _waiting_on_a_lock(engine):
                    assert adder.is_alive(), f"the add did not wait for the alter: {outcome}"
                    assert time.monotonic() < deadline, "the add never waited for the alter"
                    time.sleep(0.05)
            adder.join(60)
            assert not adder.is_alive()
        finally:
            engine.dispose()

        result = outcome["result"]
        assert result != "added", "a key was added on a column the alter had renamed away"
        assert isinstance(result, T.InvalidObjectException | T.MetaException), result
        assert "id" in result.message
        client, transport = apache_client("127.0.0.1", svc.port)
        try:
            keys = client.get_foreign_keys(
                T.ForeignKeysRequest(foreign_db_name=DB, foreign_tbl_name="child")
            ).foreignKeys
            assert keys == []
        finally:
            transport.close()
