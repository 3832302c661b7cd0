"""Roles and privileges this service writes are the ones a stock Java metastore reads.

Hive Metastore 2.3.10 (PySpark's jars) is started on the PostgreSQL database our service
wrote roles, role grants and privileges into; it must answer them as ours does, add no second
copy of the ``admin``/``public`` seeds at its start, and what it writes must read back here.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import create_engine, text

from hms_cache_proxy.bench.stock_hms import StockMetastore
from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.metastore import table
from tests.support.server import running_service

pytestmark = [pytest.mark.postgres, pytest.mark.stock]


def _privilege(T: Any, ref: Any, principal: str, ptype: int, privilege: str) -> Any:
    return T.HiveObjectPrivilege(
        hiveObject=ref,
        principalName=principal,
        principalType=ptype,
        grantInfo=T.PrivilegeGrantInfo(
            privilege=privilege,
            createTime=0,
            grantor="hive",
            grantorType=T.PrincipalType.USER,
            grantOption=False,
        ),
    )


def _grants(privileges: list[Any]) -> list[tuple[Any, ...]]:
    """What both servers must agree on (Hive 2.3 has no authorizer or catalog fields)."""
    return sorted(
        (
            p.hiveObject.objectType,
            p.hiveObject.dbName,
            p.hiveObject.objectName,
            p.hiveObject.columnName,
            p.principalName,
            p.principalType,
            p.grantInfo.privilege,
            p.grantInfo.grantor,
            p.grantInfo.grantOption,
            p.grantInfo.createTime,
        )
        for p in privileges
    )


def test_stock_metastore_reads_our_roles_and_privileges(
    pg_server: Any, tmp_path: Any, stock_hms_prerequisites: None
) -> None:
    T = load_apache_modules().ttypes
    USER, ROLE = T.PrincipalType.USER, T.PrincipalType.ROLE
    url = pg_server.new_database()
    engine = create_engine(url)
    warehouse = tmp_path / "warehouse"
    transports = []
    try:
        with running_service(url, warehouse, cache_enabled=False) as service:
            ours, t = apache_client("127.0.0.1", service.port)
            transports.append(t)
            ours.create_database(T.Database(name="shared"))
            ours.create_table(table(T, "shared", "orders"))
            ours.create_role(T.Role(roleName="analysts", ownerName="hive"))
            ours.grant_role("analysts", "bob", USER, "hive", USER, True)
            table_ref = T.HiveObjectRef(
                objectType=T.HiveObjectType.TABLE, dbName="shared", objectName="orders"
            )
            column_ref = T.HiveObjectRef(
                objectType=T.HiveObjectType.COLUMN,
                dbName="shared",
                objectName="orders",
                columnName="a",
            )
            ours.grant_privileges(
                T.PrivilegeBag(
                    privileges=[
                        _privilege(T, table_ref, "analysts", ROLE, "SELECT"),
                        _privilege(T, table_ref, "bob", USER, "INSERT"),
                        _privilege(T, column_ref, "bob", USER, "SELECT"),
                    ]
                )
            )
            with StockMetastore.start(
                url,
                create_schema=False,
                workdir=tmp_path / "stock",
                warehouse_dir=warehouse,
                jvm_args=["-XX:TieredStopAtLevel=1"],
            ) as stock_server:
                stock, t = apache_client("127.0.0.1", stock_server.port)
                transports.append(t)
                assert sorted(stock.get_role_names()) == sorted(ours.get_role_names())
                assert sorted(ours.get_role_names()) == ["admin", "analysts", "public"]
                for principal, ptype in (("bob", USER), ("analysts", ROLE)):
                    assert [
                        (r.roleName, r.ownerName) for r in stock.list_roles(principal, ptype)
                    ] == [(r.roleName, r.ownerName) for r in ours.list_roles(principal, ptype)]
                for ref in (table_ref, column_ref):
                    for principal, ptype in (("bob", USER), ("analysts", ROLE)):
                        assert _grants(stock.list_privileges(principal, ptype, ref)) == _grants(
                            ours.list_privileges(principal, ptype, ref)
                        )
                stock_set = stock.get_privilege_set(table_ref, "bob", [])
                our_set = ours.get_privilege_set(table_ref, "bob", [])
                for field in ("userPrivileges", "rolePrivileges"):
                    assert {
                        k: sorted(i.privilege for i in v)
                        for k, v in (getattr(stock_set, field) or {}).items()
                    } == {
                        k: sorted(i.privilege for i in v)
                        for k, v in (getattr(our_set, field) or {}).items()
                    }, field
                # The stock server's own start found the seeds and added no second copy.
                with engine.connect() as conn:
                    admin_grants = conn.execute(
                        text(
                            'SELECT count(*) FROM "GLOBAL_PRIVS" WHERE "PRINCIPAL_NAME" = \'admin\''
                        )
                    ).scalar()
                assert admin_grants == 1
                # And what the stock server writes reads back here.
                stock.create_role(T.Role(roleName="auditors", ownerName="hive"))
                stock.grant_role("auditors", "carl", USER, "hive", USER, False)
                assert [r.roleName for r in ours.list_roles("carl", USER)] == [
                    "auditors",
                    "public",
                ]
    finally:
        for t in transports:
            t.close()
        engine.dispose()
        pg_server.drop_database(url.rsplit("/", 1)[1])
