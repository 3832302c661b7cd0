"""Read-only mode and database allow-lists over a real socket on SQLite: what a client sees,
what it is refused, and that a refused write leaves the metastore as it was. Every test runs
with the cache on (the default configuration: the caching store answers) and off."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException

from hms_cache_proxy.handler import Handler
from hms_cache_proxy.handler.access import READ_ONLY_MESSAGE, WRITE_CALLS
from hms_cache_proxy.idl import hms, service
from tests.support.metastore import partition, table
from tests.support.security import sasl_client
from tests.support.server import running_service


def _client(port: int) -> Any:
    return make_client(service, "127.0.0.1", port, timeout=30_000)


Serve = Callable[..., AbstractContextManager[Any]]


@pytest.fixture(params=[True, False], ids=["cache_on", "cache_off"])
def serve(sqlite_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> Serve:
    """A SQLite metastore holding sales.orders (partitioned) and secret_db.keys; serve(**settings)
    runs the service over it with the cache on or off."""
    with running_service(sqlite_url, tmp_path / "wh", cache_enabled=False) as svc:
        c = _client(svc.port)
        for db in ("sales", "secret_db"):
            c.create_database(hms.Database(name=db, description=db, parameters={}))
        c.create_table(table(hms, "sales", "orders", keys=["day:string"]))
        c.add_partition(partition(hms, "sales", "orders", ["2024-01-01"]))
        c.create_table(table(hms, "secret_db", "keys"))
        c.close()
    return functools.partial(
        running_service, sqlite_url, tmp_path / "wh", cache_enabled=request.param
    )


# -- read-only -------------------------------------------------------------------------------------


def test_read_only_serves_reads_and_refuses_every_write(serve: Serve) -> None:
    with serve(read_only=True) as svc:
        c = _client(svc.port)
        before = c.get_current_notificationEventId().eventId
        assert c.get_all_databases() == ["default", "sales", "secret_db"]
        assert c.get_table("sales", "orders").tableName == "orders"
        assert len(c.get_partitions("sales", "orders", -1)) == 1
        assert c.get_open_txns().open_txns == []

        implemented = sorted(n for n in WRITE_CALLS if hasattr(Handler, n))
        assert "create_table" in implemented and "open_txns" in implemented
        for name in implemented:
            with pytest.raises((hms.MetaException, TApplicationException)) as refused:
                getattr(c, name)()  # arguments do not matter: refused before they are read
            assert refused.value.message == READ_ONLY_MESSAGE, name
            if hms.MetaException in _declared(name):
                assert isinstance(refused.value, hms.MetaException), name

        # refused with real arguments too, and nothing was written
        with pytest.raises(hms.MetaException, match="read-only"):
            c.create_table(table(hms, "sales", "new_one"))
        with pytest.raises(hms.MetaException, match="read-only"):
            c.drop_table("sales", "orders", True)
        with pytest.raises(hms.MetaException, match="read-only"):
            c.add_partition(partition(hms, "sales", "orders", ["2024-01-02"]))
        assert c.get_all_tables("sales") == ["orders"]
        assert len(c.get_partitions("sales", "orders", -1)) == 1
        assert c.get_current_notificationEventId().eventId == before
        assert c.get_open_txns().open_txns == []
        c.close()


def _declared(name: str) -> list[type]:
    spec = getattr(service, name + "_result").thrift_spec
    return [s[2] for fid, s in spec.items() if fid != 0]


# -- allow-lists -----------------------------------------------------------------------------------


def test_hidden_database_is_absent_everywhere(serve: Serve) -> None:
    with serve(allowed_databases=["default", "sal.*"]) as svc:
        c = _client(svc.port)
        assert c.get_all_databases() == ["default", "sales"]
        assert c.get_databases("*") == ["default", "sales"]
        assert {m.dbName for m in c.get_table_meta("*", "*", None)} == {"sales"}
        assert c.get_table("sales", "orders").tableName == "orders"

        with pytest.raises(hms.NoSuchObjectException) as absent:
            c.get_database("no_such_db")
        for db in ("secret_db", "SECRET_DB", "@hive#secret_db"):
            with pytest.raises(hms.NoSuchObjectException) as hidden:
                c.get_database(db)
            assert hidden.value.message == absent.value.message.replace("no_such_db", "secret_db")
            with pytest.raises(hms.NoSuchObjectException):
                c.get_table(db, "keys")
        with pytest.raises(hms.NoSuchObjectException):
            c.get_table_req(hms.GetTableRequest(dbName="secret_db", tblName="keys"))
        assert c.get_all_tables("secret_db") == []  # as for an absent database
        assert c.get_tables("secret_db", "*") == []
        with pytest.raises(hms.UnknownDBException):
            c.get_fields("secret_db", "keys")
        with pytest.raises(hms.NoSuchObjectException):
            c.create_table(table(hms, "secret_db", "sneaky"))
        with pytest.raises(hms.NoSuchObjectException):
            c.drop_database("secret_db", True, True)
        with pytest.raises(hms.MetaException, match="may not be created here"):
            c.create_database(hms.Database(name="other_db", parameters={}))

        events = c.get_next_notification(hms.NotificationEventRequest(lastEvent=0)).events
        assert events and {e.dbName for e in events} <= {"sales", "default", None}
        c.close()
    # nothing was written into the hidden database, which still exists unfiltered
    with serve() as svc:
        c = _client(svc.port)
        assert c.get_all_tables("secret_db") == ["keys"]
        assert "other_db" not in c.get_all_databases()
        c.close()


def test_allow_list_per_sasl_user(serve: Serve) -> None:
    with serve(
        sasl_enabled=True,
        sasl_users={"alice": "alice-pw", "bob": "bob-pw"},
        allowed_databases=["default", "sales"],
        allowed_databases_by_user={"bob": ["secret_db"]},
    ) as svc:
        alice = sasl_client(svc.port, "alice", "alice-pw")
        bob = sasl_client(svc.port, "bob", "bob-pw")
        assert alice.get_all_databases() == ["default", "sales"]
        assert bob.get_all_databases() == ["secret_db"]
        assert bob.get_table("secret_db", "keys").tableName == "keys"
        with pytest.raises(hms.NoSuchObjectException):
            alice.get_table("secret_db", "keys")
        with pytest.raises(hms.NoSuchObjectException):
            bob.get_table("sales", "orders")
        alice.close()
        bob.close()


def test_constraint_calls_keep_to_the_allow_list(serve: Serve) -> None:
    flags = {"enable_cstr": False, "validate_cstr": False, "rely_cstr": False}
    with serve() as svc:
        c = _client(svc.port)
        pk = hms.SQLPrimaryKey(
            table_db="sales", table_name="orders", column_name="a", key_seq=1, **flags
        )
        c.add_primary_key(hms.AddPrimaryKeyRequest(primaryKeyCols=[pk]))
        fk = hms.SQLForeignKey(
            pktable_db="sales", pktable_name="orders", pkcolumn_name="a", fktable_db="secret_db",
            fktable_name="keys", fkcolumn_name="a", key_seq=1, update_rule=0, delete_rule=0,
            fk_name="keys_orders", **flags,
        )  # fmt: skip
        c.add_foreign_key(hms.AddForeignKeyRequest(foreignKeyCols=[fk]))
        by_parent = hms.ForeignKeysRequest(parent_db_name="sales", parent_tbl_name="orders")
        assert [k.fk_name for k in c.get_foreign_keys(by_parent).foreignKeys] == ["keys_orders"]
        c.close()
    with serve(allowed_databases=["sales"]) as svc:
        c = _client(svc.port)
        assert c.get_foreign_keys(by_parent).foreignKeys == []  # held by a hidden table
        assert [k.column_name for k in c.get_primary_keys(
            hms.PrimaryKeysRequest(db_name="sales", tbl_name="orders")
        ).primaryKeys] == ["a"]  # fmt: skip
        with pytest.raises(hms.NoSuchObjectException):
            c.get_foreign_keys(
                hms.ForeignKeysRequest(foreign_db_name="secret_db", foreign_tbl_name="keys")
            )
        with pytest.raises(hms.NoSuchObjectException):
            c.drop_constraint(hms.DropConstraintRequest("secret_db", "keys", "keys_orders"))
        events = c.get_next_notification(hms.NotificationEventRequest(lastEvent=0)).events
        assert "ADD_PRIMARYKEY" in {e.eventType for e in events}
        assert "ADD_FOREIGNKEY" not in {e.eventType for e in events}  # names secret_db
        c.close()


def test_spec_listings_keep_to_the_allow_list(serve: Serve) -> None:
    with serve(allowed_databases=["sales"]) as svc:
        c = _client(svc.port)

        def tables_ext(db: str) -> list[str]:
            request = hms.GetTablesExtRequest(
                catalog="hive",
                database=db,
                tableNamePattern="*",
                requestedFields=1,
                processorCapabilities=["HIVEFULLACIDREAD"],
            )
            return [t.tblName for t in c.get_tables_ext(request)]

        assert tables_ext("sales") == ["orders"]
        assert tables_ext("secret_db") == []  # as for an absent database
        assert c.get_partitions_pspec("sales", "orders", -1)[0].partitionList.partitions
        with pytest.raises(hms.NoSuchObjectException):
            c.get_partitions_pspec("secret_db", "keys", -1)
        with pytest.raises(hms.MetaException):
            c.get_partitions_with_specs(
                hms.GetPartitionsRequest(dbName="secret_db", tblName="keys")
            )
        c.close()
