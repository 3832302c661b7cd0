"""Role and privilege calls through Apache Thrift's client, on SQLite and PostgreSQL: what a
stock Hive 4.0 metastore answers (docs/compatibility.md lists where we differ)."""

from __future__ import annotations

from typing import Any

from tests.support.apache_thrift import apache_client
from tests.support.metastore import partition, raises, table
from tests.support.server import running_service


def _ref(T: Any, kind: str, db: str | None = None, obj: str | None = None, **kw: Any) -> Any:
    return T.HiveObjectRef(
        objectType=getattr(T.HiveObjectType, kind), dbName=db, objectName=obj, **kw
    )


def _priv(T: Any, ref: Any, principal: str, ptype: str, privilege: str, **kw: Any) -> Any:
    return T.HiveObjectPrivilege(
        hiveObject=ref,
        principalName=principal,
        principalType=getattr(T.PrincipalType, ptype),
        grantInfo=T.PrivilegeGrantInfo(
            privilege=privilege,
            createTime=0,
            grantor=kw.pop("grantor", "hive"),
            grantorType=T.PrincipalType.USER,
            grantOption=kw.pop("grant_option", False),
        ),
        authorizer=kw.pop("authorizer", None),
    )


def _names(privs: list[Any]) -> list[str]:
    """The privileges of HiveObjectPrivileges or PrivilegeGrantInfos, sorted."""
    return sorted(getattr(p, "grantInfo", p).privilege for p in privs)


def test_admin_and_public_are_seeded_once_with_admins_global_privilege(
    service, client, T, database_url, tmp_path
):
    assert {"admin", "public"} <= set(client.get_role_names())
    grants = client.list_privileges("admin", T.PrincipalType.ROLE, _ref(T, "GLOBAL"))
    assert [
        (g.grantInfo.privilege, g.grantInfo.grantor, g.grantInfo.grantOption) for g in grants
    ] == [("All", "admin", True)]
    assert grants[0].authorizer == "SQL"
    # A second instance starting on the same database adds nothing and reads the same rows.
    with running_service(database_url, tmp_path / "wh2") as other:
        second, transport = apache_client("127.0.0.1", other.port)
        try:
            assert sorted(second.get_role_names()) == sorted(client.get_role_names())
            assert (
                len(second.list_privileges("admin", T.PrincipalType.ROLE, _ref(T, "GLOBAL"))) == 1
            )
        finally:
            transport.close()


def test_roles_are_created_granted_listed_revoked_and_dropped(client, T):
    USER, ROLE = T.PrincipalType.USER, T.PrincipalType.ROLE
    assert client.create_role(T.Role(roleName="analysts", ownerName="hive"))
    with raises(T.MetaException, "Role analysts already exists."):
        client.create_role(T.Role(roleName="analysts", ownerName="hive"))
    with raises(T.MetaException, "public role implicitly exists. It can't be created."):
        client.create_role(T.Role(roleName="public", ownerName="hive"))
    client.create_role(T.Role(roleName="readers", ownerName="hive"))

    assert client.grant_role("analysts", "bob", USER, "hive", USER, True)
    with raises(T.MetaException, "Principal bob already has the role analysts"):
        client.grant_role("analysts", "bob", USER, "hive", USER, False)
    client.grant_role("readers", "analysts", ROLE, "hive", USER, False)
    with raises(T.MetaException, contains="(no cycles allowed)"):
        client.grant_role("analysts", "readers", ROLE, "hive", USER, False)
    with raises(T.MetaException, contains="No user can be added to public"):
        client.grant_role("public", "bob", USER, "hive", USER, False)

    assert [r.roleName for r in client.list_roles("bob", USER)] == ["analysts", "public"]
    grants = client.get_role_grants_for_principal(
        T.GetRoleGrantsForPrincipalRequest(principal_name="bob", principal_type=USER)
    ).principalGrants
    assert [(g.roleName, g.grantOption, g.grantorName) for g in grants] == [
        ("analysts", True, "hive"),
        ("public", False, None),
    ]
    members = client.get_principals_in_role(
        T.GetPrincipalsInRoleRequest(roleName="readers")
    ).principalGrants
    assert [(m.principalName, m.principalType) for m in members] == [("analysts", ROLE)]

    # Revoking the grant option keeps the role; revoking the role removes it.
    client.grant_revoke_role(
        T.GrantRevokeRoleRequest(
            requestType=T.GrantRevokeType.REVOKE,
            roleName="analysts",
            principalName="bob",
            principalType=USER,
            grantOption=True,
        )
    )
    grants = client.get_role_grants_for_principal(
        T.GetRoleGrantsForPrincipalRequest(principal_name="bob", principal_type=USER)
    ).principalGrants
    assert [(g.roleName, g.grantOption) for g in grants][0] == ("analysts", False)
    assert client.revoke_role("analysts", "bob", USER)
    assert [r.roleName for r in client.list_roles("bob", USER)] == ["public"]
    with raises(T.MetaException, "Principal bob does not have the role analysts"):
        client.revoke_role("analysts", "bob", USER)

    with raises(T.MetaException, "public,admin roles can't be dropped."):
        client.drop_role("admin")
    assert client.drop_role("readers")
    assert "readers" not in client.get_role_names()
    assert client.list_roles("analysts", ROLE) == []
    with raises(T.MetaException, "Role readers does not exist"):
        client.get_principals_in_role(T.GetPrincipalsInRoleRequest(roleName="readers"))


def test_drop_role_of_a_missing_role_answers_true_as_hive_4(client, T):
    """Hive 4's ObjectStore.removeRole drops nothing and answers true for an unknown role."""
    assert "ghost" not in client.get_role_names()
    assert client.drop_role("ghost") is True
    client.create_role(T.Role(roleName="once"))
    assert client.drop_role("once") is True
    assert client.drop_role("once") is True
    assert "once" not in client.get_role_names()


def test_privileges_at_every_level_are_granted_listed_and_revoked(client, T):
    USER = T.PrincipalType.USER
    client.create_database(T.Database(name="sales"))
    client.create_table(table(T, "sales", "orders", keys=["ds:string"]))
    client.add_partition(partition(T, "sales", "orders", ["2024-01-01"]))
    refs = {
        "global": _ref(T, "GLOBAL"),
        "db": _ref(T, "DATABASE", "sales"),
        "table": _ref(T, "TABLE", "sales", "orders"),
        "partition": _ref(T, "PARTITION", "sales", "orders", partValues=["2024-01-01"]),
        "column": _ref(T, "COLUMN", "sales", "orders", columnName="a"),
        "partition column": _ref(
            T, "COLUMN", "sales", "orders", partValues=["2024-01-01"], columnName="a"
        ),
    }
    for ref in refs.values():
        assert client.grant_privileges(
            T.PrivilegeBag(privileges=[_priv(T, ref, "bob", "USER", "SELECT,UPDATE")])
        )
    for what, ref in refs.items():
        listed = client.list_privileges("bob", USER, ref)
        assert _names(listed) == ["SELECT", "UPDATE"], what
        assert listed[0].hiveObject.objectType == ref.objectType, what
        assert listed[0].hiveObject.partValues == ref.partValues, what
    assert len(client.list_privileges("bob", USER, T.HiveObjectRef())) == 12

    with raises(T.MetaException, "SELECT is already granted on table [sales,orders] by hive"):
        client.grant_privileges(
            T.PrivilegeBag(privileges=[_priv(T, refs["table"], "bob", "USER", "SELECT")])
        )
    with raises(T.MetaException, contains="does not exist"):
        client.grant_privileges(
            T.PrivilegeBag(privileges=[_priv(T, refs["table"], "nobody", "ROLE", "SELECT")])
        )

    for ref in refs.values():
        client.revoke_privileges(
            T.PrivilegeBag(privileges=[_priv(T, ref, "bob", "USER", "UPDATE")])
        )
    assert _names(client.list_privileges("bob", USER, T.HiveObjectRef())) == ["SELECT"] * 6
    with raises(T.MetaException, "No grant (UPDATE) found  on table orders, database is sales"):
        client.revoke_privileges(
            T.PrivilegeBag(privileges=[_priv(T, refs["table"], "bob", "USER", "UPDATE")])
        )

    # Dropping the table drops its privileges, partitions' and columns' too.
    client.drop_table("sales", "orders", True)
    assert _names(client.list_privileges("bob", USER, T.HiveObjectRef())) == ["SELECT"] * 2


def test_privilege_set_holds_user_group_and_role_hierarchy_grants(client, T):
    USER, ROLE = T.PrincipalType.USER, T.PrincipalType.ROLE
    client.create_database(T.Database(name="d"))
    client.create_table(table(T, "d", "t"))
    client.create_role(T.Role(roleName="r1", ownerName="hive"))
    client.create_role(T.Role(roleName="r2", ownerName="hive"))
    client.grant_role("r1", "bob", USER, "hive", USER, False)
    client.grant_role("r2", "r1", ROLE, "hive", USER, False)
    ref = _ref(T, "TABLE", "d", "t")
    bag = [
        _priv(T, ref, "bob", "USER", "SELECT"),
        _priv(T, ref, "eng", "GROUP", "INSERT", grant_option=True),
        _priv(T, ref, "r2", "ROLE", "DELETE"),
    ]
    client.grant_revoke_privileges(
        T.GrantRevokePrivilegeRequest(
            requestType=T.GrantRevokeType.GRANT, privileges=T.PrivilegeBag(privileges=bag)
        )
    )
    got = client.get_privilege_set(ref, "bob", ["eng"])
    assert _names(got.userPrivileges["bob"]) == ["SELECT"]
    assert [(i.privilege, i.grantOption) for i in got.groupPrivileges["eng"]] == [("INSERT", True)]
    assert {k: _names(v) for k, v in got.rolePrivileges.items()} == {
        "r1": [],
        "public": [],
        "r2": ["DELETE"],
    }
    # Globally Hive answers the user's and groups' own grants only.
    assert client.get_privilege_set(_ref(T, "GLOBAL"), "bob", ["eng"]).rolePrivileges is None


def test_create_table_stores_the_owner_privileges_it_carries(client, T):
    client.create_database(T.Database(name="d"))
    t = table(T, "d", "owned")
    info = T.PrivilegeGrantInfo(
        privilege="ALL",
        createTime=0,
        grantor="alice",
        grantorType=T.PrincipalType.USER,
        grantOption=True,
    )
    t.privileges = T.PrincipalPrivilegeSet(userPrivileges={"alice": [info]})
    client.create_table(t)
    listed = client.list_privileges("alice", T.PrincipalType.USER, _ref(T, "TABLE", "d", "owned"))
    assert [(p.grantInfo.privilege, p.grantInfo.grantOption, p.authorizer) for p in listed] == [
        ("ALL", True, "SQL")
    ]
    # The database's privileges are not stored at create, as in Hive.
    client.create_database(T.Database(name="d2", privileges=t.privileges))
    assert client.list_privileges("alice", T.PrincipalType.USER, _ref(T, "DATABASE", "d2")) == []


def test_refresh_privileges_replaces_an_authorizers_grants(client, T):
    client.create_database(T.Database(name="d"))
    ref = _ref(T, "DATABASE", "d")
    client.grant_privileges(
        T.PrivilegeBag(privileges=[_priv(T, ref, "bob", "USER", "SELECT", authorizer="ranger")])
    )
    client.grant_privileges(T.PrivilegeBag(privileges=[_priv(T, ref, "carl", "USER", "SELECT")]))
    request = T.GrantRevokePrivilegeRequest(
        requestType=T.GrantRevokeType.GRANT,
        privileges=T.PrivilegeBag(privileges=[_priv(T, ref, "dana", "USER", "CREATE")]),
    )
    assert client.refresh_privileges(ref, "ranger", request).success
    listed = client.list_privileges(None, None, ref)
    assert sorted((p.principalName, p.authorizer) for p in listed) == [
        ("carl", None),
        ("dana", "ranger"),
    ]


def test_with_auth_calls_fill_partition_privileges_when_the_table_asks(client, T):
    client.create_database(T.Database(name="d"))
    for name, params in (("plain", {}), ("guarded", {"PARTITION_LEVEL_PRIVILEGE": "TRUE"})):
        client.create_table(table(T, "d", name, keys=["ds:string"], params=params))
        client.add_partition(partition(T, "d", name, ["x"]))
        ref = _ref(T, "PARTITION", "d", name, partValues=["x"])
        client.grant_privileges(T.PrivilegeBag(privileges=[_priv(T, ref, "bob", "USER", "SELECT")]))
    assert client.get_partition_with_auth("d", "plain", ["x"], "bob", []).privileges is None
    got = client.get_partition_with_auth("d", "guarded", ["x"], "bob", [])
    assert _names(got.privileges.userPrivileges["bob"]) == ["SELECT"]
    parts = client.get_partitions_with_auth("d", "guarded", -1, "bob", [])
    assert _names(parts[0].privileges.userPrivileges["bob"]) == ["SELECT"]
    parts = client.get_partitions_ps_with_auth("d", "guarded", ["x"], -1, "bob", [])
    assert _names(parts[0].privileges.userPrivileges["bob"]) == ["SELECT"]
    # A new partition of such a table starts with the table's grants, as in Hive.
    table_ref = _ref(T, "TABLE", "d", "guarded")
    client.grant_privileges(
        T.PrivilegeBag(privileges=[_priv(T, table_ref, "carl", "USER", "INSERT")])
    )
    client.add_partition(partition(T, "d", "guarded", ["y"]))
    new_ref = _ref(T, "PARTITION", "d", "guarded", partValues=["y"])
    assert _names(client.list_privileges("carl", T.PrincipalType.USER, new_ref)) == ["INSERT"]
    got = client.get_partition_with_auth("d", "guarded", ["y"], "carl", [])
    assert _names(got.privileges.userPrivileges["carl"]) == ["INSERT"]
    # Groups and roles as get_privilege_set answers them.
    client.create_role(T.Role(roleName="r", ownerName="hive"))
    client.grant_role("r", "bob", T.PrincipalType.USER, "hive", T.PrincipalType.USER, False)
    x_ref = _ref(T, "PARTITION", "d", "guarded", partValues=["x"])
    client.grant_privileges(
        T.PrivilegeBag(
            privileges=[
                _priv(T, x_ref, "eng", "GROUP", "ALTER"),
                _priv(T, x_ref, "r", "ROLE", "DROP"),
            ]
        )
    )
    parts = client.get_partitions_with_auth("d", "guarded", -1, "bob", ["eng"])
    by_values = {tuple(p.values): p.privileges for p in parts}
    assert by_values[("x",)] == client.get_privilege_set(x_ref, "bob", ["eng"])
    assert _names(by_values[("x",)].rolePrivileges["r"]) == ["DROP"]
    assert _names(by_values[("x",)].groupPrivileges["eng"]) == ["ALTER"]


def test_allow_lists_hide_grants_on_hidden_databases(database_url, tmp_path, T):
    with running_service(database_url, tmp_path / "wh") as svc:
        admin, transport = apache_client("127.0.0.1", svc.port)
        try:
            for name in ("open", "hidden"):
                admin.create_database(T.Database(name=name))
                admin.grant_privileges(
                    T.PrivilegeBag(
                        privileges=[_priv(T, _ref(T, "DATABASE", name), "bob", "USER", "SELECT")]
                    )
                )
        finally:
            transport.close()
    with running_service(database_url, tmp_path / "wh", allowed_databases=["open"]) as svc:
        client, transport = apache_client("127.0.0.1", svc.port)
        try:
            listed = client.list_privileges("bob", T.PrincipalType.USER, T.HiveObjectRef())
            assert [p.hiveObject.dbName for p in listed] == ["open"]
            with raises(T.MetaException, "database hive.hidden"):
                client.get_privilege_set(_ref(T, "DATABASE", "hidden"), "bob", [])
        finally:
            transport.close()
