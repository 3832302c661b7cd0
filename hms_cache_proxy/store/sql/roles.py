"""Roles (ROLES) and who holds them (ROLE_MAP), as Hive's ObjectStore stores them.

A ROLES row is a role's name, owner and create time; a ROLE_MAP row grants a role to a user,
group or role (PRINCIPAL_TYPE as the PrincipalType name) with the grantor and a grant option.
Every user holds ``public`` without a row, as in Hive. Hive writes no notification events for
roles, so neither does this store; roles are not cached (every call reads the database).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.rules import PUBLIC_ROLE
from hms_cache_proxy.store.sql.sql_base import SqlPart, now, principal_name, principal_type

_R, _M = schema.ROLES, schema.ROLE_MAP


def _role(row: Any) -> hms.Role:
    return hms.Role(roleName=row.ROLE_NAME, createTime=row.CREATE_TIME, ownerName=row.OWNER_NAME)


def _grant(row: Any) -> hms.RolePrincipalGrant:
    return hms.RolePrincipalGrant(
        roleName=row.ROLE_NAME,
        principalName=row.PRINCIPAL_NAME,
        principalType=principal_type(row.PRINCIPAL_TYPE),
        grantOption=bool(row.GRANT_OPTION),
        grantTime=row.ADD_TIME,
        grantorName=row.GRANTOR,
        grantorPrincipalType=principal_type(row.GRANTOR_TYPE),
    )


def _implicit_public(principal: str, ptype: int) -> hms.RolePrincipalGrant:
    """The grant of ``public`` every user holds without a ROLE_MAP row (ObjectStore.listMRoles)."""
    return hms.RolePrincipalGrant(
        roleName=PUBLIC_ROLE,
        principalName=principal,
        principalType=ptype,
        grantOption=False,
        grantTime=0,
        grantorName=None,
        grantorPrincipalType=None,
    )


_GRANT_COLUMNS = (
    _R.c.ROLE_NAME,
    _M.c.PRINCIPAL_NAME,
    _M.c.PRINCIPAL_TYPE,
    _M.c.GRANT_OPTION,
    _M.c.ADD_TIME,
    _M.c.GRANTOR,
    _M.c.GRANTOR_TYPE,
)


def _grants_select(*conditions: Any) -> Any:
    return (
        select(*_GRANT_COLUMNS)
        .select_from(_M.join(_R, _R.c.ROLE_ID == _M.c.ROLE_ID))
        .where(*conditions)
        .order_by(_M.c.ROLE_GRANT_ID)
    )


def role_grants(conn: Connection, principal: str, ptype: int) -> list[hms.RolePrincipalGrant]:
    """The roles granted directly to a principal; a user also holds ``public``."""
    found = [
        _grant(r)
        for r in conn.execute(
            _grants_select(
                _M.c.PRINCIPAL_NAME == principal, _M.c.PRINCIPAL_TYPE == principal_name(ptype)
            )
        )
    ]
    if ptype == hms.PrincipalType.USER:
        found.append(_implicit_public(principal, ptype))
    return found


def roles_in_hierarchy(conn: Connection, user: str | None, groups: Iterable[str]) -> list[str]:
    """Every role a user and its groups hold, directly or through other roles
    (ObjectStore.listAllRolesInHierarchy), in the order they are found."""
    seen: dict[str, None] = {}
    todo: list[tuple[str, int]] = []
    if user is not None:
        todo.append((user, hms.PrincipalType.USER))
    todo.extend((g, hms.PrincipalType.GROUP) for g in groups or ())
    while todo:
        principal, ptype = todo.pop(0)
        for grant in role_grants(conn, principal, ptype):
            if grant.roleName not in seen:
                seen[grant.roleName] = None
                todo.append((grant.roleName, hms.PrincipalType.ROLE))
    return list(seen)


def role_row(conn: Connection, name: str, *, lock: bool = False) -> Any:
    """The ROLES row, or NoSuchObjectException in Hive's words."""
    stmt = select(_R).where(_R.c.ROLE_NAME == name)
    if lock:
        stmt = stmt.with_for_update()
    row = conn.execute(stmt).first()
    if row is None:
        raise hms.NoSuchObjectException(message=f"Role {name} does not exist")
    return row


def insert_role(conn: Connection, ids: idseq.IdAllocator, name: str, owner: str | None) -> None:
    (role_id,) = ids.allocate(conn, idseq.ROLE)
    conn.execute(
        insert(_R).values(ROLE_ID=role_id, ROLE_NAME=name, OWNER_NAME=owner, CREATE_TIME=now())
    )


class Roles(SqlPart):
    # -- reads -----------------------------------------------------------------------------------

    def get_role_names(self) -> list[str]:
        with self.db.read() as conn:
            return [r[0] for r in conn.execute(select(_R.c.ROLE_NAME).order_by(_R.c.ROLE_ID))]

    def list_roles(self, principal: str, ptype: int) -> list[hms.Role]:
        """Roles granted directly to the principal; a user also gets ``public`` (create time 0,
        owner ``public``), as ObjectStore.listRoles makes it up."""
        stmt = (
            select(_R)
            .select_from(_M.join(_R, _R.c.ROLE_ID == _M.c.ROLE_ID))
            .where(_M.c.PRINCIPAL_NAME == principal, _M.c.PRINCIPAL_TYPE == principal_name(ptype))
            .order_by(_M.c.ROLE_GRANT_ID)
        )
        with self.db.read() as conn:
            roles = [_role(r) for r in conn.execute(stmt)]
        if ptype == hms.PrincipalType.USER:
            roles.append(hms.Role(roleName=PUBLIC_ROLE, createTime=0, ownerName=PUBLIC_ROLE))
        return roles

    def get_role_grants_for_principal(
        self, principal: str, ptype: int
    ) -> list[hms.RolePrincipalGrant]:
        with self.db.read() as conn:
            return role_grants(conn, principal, ptype)

    def get_principals_in_role(self, role: str) -> list[hms.RolePrincipalGrant]:
        """Who holds the role (ROLE_MAP rows only); NoSuchObjectException for a missing role."""
        with self.db.read() as conn:
            role_row(conn, role)
            return [_grant(r) for r in conn.execute(_grants_select(_R.c.ROLE_NAME == role))]

    # -- writes ----------------------------------------------------------------------------------

    def create_role(self, name: str, owner: str | None) -> None:
        """InvalidObjectException ``Role x already exists.`` as ObjectStore.addRole."""

        def run(conn: Connection) -> None:
            if conn.execute(select(_R.c.ROLE_ID).where(_R.c.ROLE_NAME == name)).first():
                raise hms.InvalidObjectException(message=f"Role {name} already exists.")
            insert_role(conn, self.ids, name, owner)

        self.db.transaction(run)

    def drop_role(self, name: str) -> None:
        """Drop a role with its grants to principals, its grants of it, and its privileges.

        A role that does not exist is no error: Hive 4's ObjectStore.removeRole drops nothing
        and answers true (so does 2.3), so a repeated or racing drop is harmless.
        """

        def run(conn: Connection) -> None:
            row = conn.execute(select(_R).where(_R.c.ROLE_NAME == name).with_for_update()).first()
            if row is None:
                return
            conn.execute(delete(_M).where(_M.c.ROLE_ID == row.ROLE_ID))
            conn.execute(
                delete(_M).where(_M.c.PRINCIPAL_NAME == name, _M.c.PRINCIPAL_TYPE == "ROLE")
            )
            for table in (
                schema.GLOBAL_PRIVS,
                schema.DB_PRIVS,
                schema.DC_PRIVS,
                schema.TBL_PRIVS,
                schema.PART_PRIVS,
                schema.TBL_COL_PRIVS,
                schema.PART_COL_PRIVS,
            ):
                conn.execute(
                    delete(table).where(
                        table.c.PRINCIPAL_NAME == name, table.c.PRINCIPAL_TYPE == "ROLE"
                    )
                )
            conn.execute(delete(_R).where(_R.c.ROLE_ID == row.ROLE_ID))

        self.db.transaction(run)

    def grant_role(
        self,
        role: str,
        principal: str,
        ptype: int,
        grantor: str | None,
        grantor_type: int | None,
        grant_option: bool,
    ) -> None:
        """ObjectStore.grantRole, after HMSHandler's cycle check for a role granted to a role."""

        def run(conn: Connection) -> None:
            row = role_row(conn, role, lock=True)
            if ptype == hms.PrincipalType.ROLE and principal in roles_in_hierarchy_of_role(
                conn, role
            ) | {role}:
                raise hms.MetaException(
                    message=f"Cannot grant role {principal} to {role} as {role} already belongs "
                    f"to the role {principal}. (no cycles allowed)"
                )
            existing = conn.execute(
                select(_M.c.ROLE_GRANT_ID).where(
                    _M.c.ROLE_ID == row.ROLE_ID,
                    _M.c.PRINCIPAL_NAME == principal,
                    _M.c.PRINCIPAL_TYPE == principal_name(ptype),
                )
            ).first()
            if existing is not None:
                raise hms.InvalidObjectException(
                    message=f"Principal {principal} already has the role {role}"
                )
            (grant_id,) = self.ids.allocate(conn, idseq.ROLE_MAP)
            conn.execute(
                insert(_M).values(
                    ROLE_GRANT_ID=grant_id,
                    ROLE_ID=row.ROLE_ID,
                    PRINCIPAL_NAME=principal,
                    PRINCIPAL_TYPE=principal_name(ptype),
                    GRANTOR=grantor,
                    GRANTOR_TYPE=principal_name(grantor_type),
                    GRANT_OPTION=1 if grant_option else 0,
                    ADD_TIME=now(),
                )
            )

        self.db.transaction(run)

    def revoke_role(self, role: str, principal: str, ptype: int, grant_option: bool) -> None:
        """Remove the grant, or with ``grant_option`` only its grant option (ObjectStore)."""

        def run(conn: Connection) -> None:
            row = role_row(conn, role, lock=True)
            where = (
                _M.c.ROLE_ID == row.ROLE_ID,
                _M.c.PRINCIPAL_NAME == principal,
                _M.c.PRINCIPAL_TYPE == principal_name(ptype),
            )
            found = conn.execute(select(_M.c.GRANT_OPTION).where(*where)).first()
            if found is None:
                raise hms.NoSuchObjectException(
                    message=f"Principal {principal} does not have the role {role}"
                )
            if not grant_option:
                conn.execute(delete(_M).where(*where))
            elif not found.GRANT_OPTION:
                raise hms.MetaException(
                    message=f"User {principal} does not have grant option with role {role}"
                )
            else:
                conn.execute(update(_M).where(*where).values(GRANT_OPTION=0))

        self.db.transaction(run)


def roles_in_hierarchy_of_role(conn: Connection, role: str) -> set[str]:
    """Every role ``role`` holds, directly or through other roles."""
    seen: set[str] = set()
    todo = [role]
    while todo:
        current = todo.pop()
        for grant in role_grants(conn, current, hms.PrincipalType.ROLE):
            if grant.roleName not in seen:
                seen.add(grant.roleName)
                todo.append(grant.roleName)
    return seen
