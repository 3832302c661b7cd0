"""Privilege calls: grant, revoke, list, the privilege set of a principal on an object, and
the partition privilege sets of the ``*_with_auth`` calls.

Privileges are metadata, as in Hive: stored and answered here, enforced by the engines (this
service's own allow-lists are separate, handler/access.py). Every call declares only
MetaException; the store's other exceptions reach the client as MetaException.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.handler.roles import as_meta
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.rules import partition_level as store_partition_level


def _bag(privileges: hms.PrivilegeBag | None) -> list[hms.HiveObjectPrivilege]:
    return list(privileges.privileges or []) if privileges is not None else []


def partition_level(table: hms.Table) -> bool:
    """Whether Hive fills a partition's privileges in the ``*_with_auth`` calls."""
    return store_partition_level(table.parameters)


def with_partition_privileges(
    store: Any,
    table: hms.Table,
    parts: Sequence[hms.Partition],
    user_name: str | None,
    group_names: Sequence[str] | None,
) -> list[hms.Partition]:
    """Copies of ``parts`` with their privilege sets, as ObjectStore.getPartitionWithAuth
    fills them (the caller checks ``partition_level`` first)."""
    sets = store.partition_privilege_sets(
        table.catName,
        table.dbName,
        table.tableName,
        [p.values for p in parts],
        user_name,
        group_names,
    )
    out = []
    for part, privs in zip(parts, sets, strict=True):
        filled = copy.copy(part)
        filled.privileges = privs
        out.append(filled)
    return out


class PrivilegeHandlers(HandlerBase):
    def grant_privileges(self, privileges: hms.PrivilegeBag) -> bool:
        as_meta(lambda: self.store.grant_privileges(_bag(privileges)))
        return True

    def revoke_privileges(self, privileges: hms.PrivilegeBag) -> bool:
        as_meta(lambda: self.store.revoke_privileges(_bag(privileges), False))
        return True

    def grant_revoke_privileges(
        self, request: hms.GrantRevokePrivilegeRequest
    ) -> hms.GrantRevokePrivilegeResponse:
        if request is None or request.requestType is None:
            raise hms.MetaException(message="Request type must be GRANT or REVOKE")
        bag = _bag(request.privileges)
        if request.requestType == hms.GrantRevokeType.GRANT:
            as_meta(lambda: self.store.grant_privileges(bag))
        elif request.requestType == hms.GrantRevokeType.REVOKE:
            grant_option = bool(request.revokeGrantOption)
            as_meta(lambda: self.store.revoke_privileges(bag, grant_option))
        else:
            raise hms.MetaException(message=f"Unknown request type {request.requestType}")
        return hms.GrantRevokePrivilegeResponse(success=True)

    def refresh_privileges(
        self,
        objToRefresh: hms.HiveObjectRef,
        authorizer: str,
        grantRequest: hms.GrantRevokePrivilegeRequest,
    ) -> hms.GrantRevokePrivilegeResponse:
        """Replace the privileges ``authorizer`` holds on the object by the request's."""
        if objToRefresh is None:
            raise hms.MetaException(message="refresh_privileges needs the object to refresh")
        if grantRequest is None or grantRequest.requestType != hms.GrantRevokeType.GRANT:
            raise hms.MetaException(message="refresh_privileges only accepts a GRANT request")
        bag = []
        for p in _bag(grantRequest.privileges):
            if p is not None and p.authorizer is None:
                p = copy.copy(p)
                p.authorizer = authorizer
            bag.append(p)
        as_meta(lambda: self.store.refresh_privileges(objToRefresh, authorizer, bag))
        return hms.GrantRevokePrivilegeResponse(success=True)

    def list_privileges(
        self, principal_name: str, principal_type: int, hiveObject: hms.HiveObjectRef
    ) -> list[hms.HiveObjectPrivilege]:
        return as_meta(
            lambda: self.store.list_privileges(principal_name, principal_type, hiveObject)
        )

    def get_privilege_set(
        self, hiveObject: hms.HiveObjectRef, user_name: str, group_names: list[str]
    ) -> hms.PrincipalPrivilegeSet:
        if hiveObject is None:
            raise hms.MetaException(message="get_privilege_set needs a hiveObject")
        return as_meta(lambda: self.store.get_privilege_set(hiveObject, user_name, group_names))
