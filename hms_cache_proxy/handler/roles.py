"""Role calls: HMSHandler's checks around the store's roles.

Roles are metadata, as in Hive: this service stores and answers them, the engines enforce
them. Every role call declares only MetaException, so the store's NoSuchObjectException and
InvalidObjectException reach the client as MetaException with the same message, as in Hive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.rules import ADMIN_ROLE, PUBLIC_ROLE

R = TypeVar("R")


def as_meta(call: Callable[[], R]) -> R:
    """Run a store call, answering its declared-elsewhere exceptions as MetaException."""
    try:
        return call()
    except (hms.NoSuchObjectException, hms.InvalidObjectException) as exc:
        raise hms.MetaException(message=exc.message) from None


def _require(value: str | None, what: str) -> str:
    if value is None or not value.strip():
        raise hms.MetaException(message=f"{what} cannot be null or empty")
    return value


def _require_type(value: int | None) -> int:
    if value not in (hms.PrincipalType.USER, hms.PrincipalType.ROLE, hms.PrincipalType.GROUP):
        raise hms.MetaException(message=f"Invalid principal type {value}")
    return value  # type: ignore[return-value]


class RoleHandlers(HandlerBase):
    def create_role(self, role: hms.Role) -> bool:
        if role is None:
            raise hms.MetaException(message="Role cannot be null")
        name = _require(role.roleName, "Role name")
        if name == PUBLIC_ROLE:
            raise hms.MetaException(
                message=f"{PUBLIC_ROLE} role implicitly exists. It can't be created."
            )
        as_meta(lambda: self.store.create_role(name, role.ownerName))
        return True

    def drop_role(self, role_name: str) -> bool:
        name = _require(role_name, "Role name")
        if name in (ADMIN_ROLE, PUBLIC_ROLE):
            raise hms.MetaException(message=f"{PUBLIC_ROLE},{ADMIN_ROLE} roles can't be dropped.")
        as_meta(lambda: self.store.drop_role(name))
        return True

    def get_role_names(self) -> list[str]:
        return self.store.get_role_names()

    def grant_role(
        self,
        role_name: str,
        principal_name: str,
        principal_type: int,
        grantor: str,
        grantorType: int,
        grant_option: bool,
    ) -> bool:
        role = _require(role_name, "Role name")
        principal = _require(principal_name, "Principal name")
        ptype = _require_type(principal_type)
        if role == PUBLIC_ROLE:
            raise hms.MetaException(
                message=f"No user can be added to {PUBLIC_ROLE}. Since all users implicitly "
                f"belong to {PUBLIC_ROLE} role."
            )
        as_meta(
            lambda: self.store.grant_role(
                role, principal, ptype, grantor, grantorType, bool(grant_option)
            )
        )
        return True

    def revoke_role(self, role_name: str, principal_name: str, principal_type: int) -> bool:
        self._revoke_role(role_name, principal_name, principal_type, False)
        return True

    def _revoke_role(
        self,
        role_name: str | None,
        principal_name: str | None,
        principal_type: int | None,
        grant_option: bool,
    ) -> None:
        role = _require(role_name, "Role name")
        principal = _require(principal_name, "Principal name")
        ptype = _require_type(principal_type)
        if role == PUBLIC_ROLE:
            raise hms.MetaException(message=f"{PUBLIC_ROLE} role can't be revoked.")
        as_meta(lambda: self.store.revoke_role(role, principal, ptype, grant_option))

    def grant_revoke_role(self, request: hms.GrantRevokeRoleRequest) -> hms.GrantRevokeRoleResponse:
        if request is None or request.requestType is None:
            raise hms.MetaException(message="Request type must be GRANT or REVOKE")
        if request.requestType == hms.GrantRevokeType.GRANT:
            self.grant_role(
                request.roleName,
                request.principalName,
                request.principalType,
                request.grantor,
                request.grantorType,
                bool(request.grantOption),
            )
        elif request.requestType == hms.GrantRevokeType.REVOKE:
            self._revoke_role(
                request.roleName,
                request.principalName,
                request.principalType,
                bool(request.grantOption),
            )
        else:
            raise hms.MetaException(message=f"Unknown request type {request.requestType}")
        return hms.GrantRevokeRoleResponse(success=True)

    def list_roles(self, principal_name: str, principal_type: int) -> list[hms.Role]:
        principal = _require(principal_name, "Principal name")
        return self.store.list_roles(principal, _require_type(principal_type))

    def get_principals_in_role(
        self, request: hms.GetPrincipalsInRoleRequest
    ) -> hms.GetPrincipalsInRoleResponse:
        role = _require(request.roleName if request else None, "Role name")
        grants = as_meta(lambda: self.store.get_principals_in_role(role))
        return hms.GetPrincipalsInRoleResponse(principalGrants=grants)

    def get_role_grants_for_principal(
        self, request: hms.GetRoleGrantsForPrincipalRequest
    ) -> hms.GetRoleGrantsForPrincipalResponse:
        principal = _require(request.principal_name if request else None, "Principal name")
        grants = self.store.get_role_grants_for_principal(
            principal, _require_type(request.principal_type)
        )
        return hms.GetRoleGrantsForPrincipalResponse(principalGrants=grants)
