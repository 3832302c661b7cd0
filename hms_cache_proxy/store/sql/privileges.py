"""Privileges at every level (GLOBAL_PRIVS, DB_PRIVS, TBL_PRIVS, PART_PRIVS, TBL_COL_PRIVS,
PART_COL_PRIVS), as Hive's ObjectStore stores and answers them.

A row is one privilege (``SELECT``, ``All``, ...) of one principal (PRINCIPAL_TYPE as the
PrincipalType name) on one object, with its grantor, grant option and authorizer. A grant's
privilege string may hold several privileges separated by commas, one row each. Hive writes
no notification events for grants, so neither does this store; privileges are not cached.
Rows go with their object (tables.py and databases.py delete them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.partnames import PartitionNameError, make_part_name, parse_part_name
from hms_cache_proxy.store.sql.roles import role_row, roles_in_hierarchy
from hms_cache_proxy.store.sql.sql_base import (
    DEFAULT_CATALOG,
    SqlPart,
    now,
    principal_name,
    principal_type,
)

_T = hms.HiveObjectType


@dataclass(frozen=True)
class Level:
    """One privilege table: its id sequence, privilege column and the object it hangs off."""

    table: Table
    seq: idseq.IdSequence
    priv: str
    owner: str | None  # DB_ID, TBL_ID, PART_ID; None for global privileges
    object_type: int  # the HiveObjectType its rows are listed as
    has_column: bool = False


GLOBAL = Level(schema.GLOBAL_PRIVS, idseq.GLOBAL_PRIVILEGE, "USER_PRIV", None, _T.GLOBAL)
DATABASE = Level(schema.DB_PRIVS, idseq.DB_PRIVILEGE, "DB_PRIV", "DB_ID", _T.DATABASE)
TABLE = Level(schema.TBL_PRIVS, idseq.TABLE_PRIVILEGE, "TBL_PRIV", "TBL_ID", _T.TABLE)
PARTITION = Level(
    schema.PART_PRIVS, idseq.PARTITION_PRIVILEGE, "PART_PRIV", "PART_ID", _T.PARTITION
)
TABLE_COLUMN = Level(
    schema.TBL_COL_PRIVS, idseq.TABLE_COLUMN_PRIVILEGE, "TBL_COL_PRIV", "TBL_ID", _T.COLUMN, True
)
PARTITION_COLUMN = Level(
    schema.PART_COL_PRIVS,
    idseq.PARTITION_COLUMN_PRIVILEGE,
    "PART_COL_PRIV",
    "PART_ID",
    _T.COLUMN,
    True,
)
LEVELS = (GLOBAL, DATABASE, TABLE, PARTITION, TABLE_COLUMN, PARTITION_COLUMN)


@dataclass(frozen=True)
class Target:
    """The object a HiveObjectRef names, resolved to its level and owner row id (None when
    the object does not exist)."""

    level: Level
    owner_id: int | None
    cat: str
    db: str | None = None
    tbl: str | None = None
    part_name: str | None = None
    column: str | None = None

    def where(self) -> list[Any]:
        c = self.level.table.c
        out = [] if self.level.owner is None else [c[self.level.owner] == self.owner_id]
        if self.level.has_column:
            out.append(c.COLUMN_NAME == self.column)
        return out

    def already_granted(self, priv: str, grantor: str | None) -> str:
        """ObjectStore.grantPrivileges' message for a privilege the principal already holds."""
        if self.level is GLOBAL:
            where = ""
        elif self.level is DATABASE:
            where = f" on database {self.db}"
        elif self.level is TABLE:
            where = f" on table [{self.db},{self.tbl}]"
        elif self.level is PARTITION:
            where = f" on partition [{self.db},{self.tbl},{self.part_name}]"
        elif self.level is TABLE_COLUMN:
            where = f" on column {self.column} [{self.db},{self.tbl}]"
        else:
            where = f" on column {self.column} [{self.db},{self.tbl},{self.part_name}]"
        return f"{priv} is already granted{where} by {grantor}"

    def not_granted(self, priv: str) -> str:
        """ObjectStore.revokePrivileges' message for a privilege the principal does not hold."""
        if self.level is GLOBAL:
            return f"No user grant found for privileges {priv}"
        if self.level is DATABASE:
            return f"No database grant found for privileges {priv} on database {self.db}"
        text = f"No grant ({priv}) found  on table {self.tbl}"
        if self.part_name is not None:
            text += f", partition is {self.part_name}"
        if self.column is not None:
            text += f", column name = {self.column}"
        return text + f", database is {self.db}"


def _split(privilege: str | None) -> list[str]:
    return [p.strip() for p in (privilege or "").split(",") if p.strip()]


def _grant_info(level: Level, row: Any) -> hms.PrivilegeGrantInfo:
    return hms.PrivilegeGrantInfo(
        privilege=row._mapping[level.priv],
        createTime=row.CREATE_TIME,
        grantor=row.GRANTOR,
        grantorType=principal_type(row.GRANTOR_TYPE),
        grantOption=bool(row.GRANT_OPTION),
    )


def _refs_select(level: Level, *conditions: Any) -> Any:
    """Rows of a level with the names of their objects (for HiveObjectRef)."""
    p, d, t, pt = level.table, schema.DBS, schema.TBLS, schema.PARTITIONS
    if level is GLOBAL:
        return select(p).where(*conditions)
    if level is DATABASE:
        joined = p.join(d, d.c.DB_ID == p.c.DB_ID)
        cols = [d.c.NAME.label("DB_NAME"), d.c.CTLG_NAME]
    elif level.owner == "TBL_ID":
        joined = p.join(t, t.c.TBL_ID == p.c.TBL_ID).join(d, d.c.DB_ID == t.c.DB_ID)
        cols = [d.c.NAME.label("DB_NAME"), d.c.CTLG_NAME, t.c.TBL_NAME]
    else:
        joined = (
            p.join(pt, pt.c.PART_ID == p.c.PART_ID)
            .join(t, t.c.TBL_ID == pt.c.TBL_ID)
            .join(d, d.c.DB_ID == t.c.DB_ID)
        )
        cols = [d.c.NAME.label("DB_NAME"), d.c.CTLG_NAME, t.c.TBL_NAME, pt.c.PART_NAME]
    return select(p, *cols).select_from(joined).where(*conditions)


def _object_privilege(level: Level, row: Any) -> hms.HiveObjectPrivilege:
    m = row._mapping
    if level is GLOBAL:
        ref = hms.HiveObjectRef(objectType=_T.GLOBAL, catName=DEFAULT_CATALOG)
    else:
        part = m.get("PART_NAME")
        ref = hms.HiveObjectRef(
            objectType=level.object_type,
            dbName=m["DB_NAME"],
            objectName=m.get("TBL_NAME"),
            partValues=[v for _, v in parse_part_name(part)] if part else None,
            columnName=m.get("COLUMN_NAME"),
            catName=m["CTLG_NAME"],
        )
    return hms.HiveObjectPrivilege(
        hiveObject=ref,
        principalName=row.PRINCIPAL_NAME,
        principalType=principal_type(row.PRINCIPAL_TYPE),
        grantInfo=_grant_info(level, row),
        authorizer=row.AUTHORIZER,
    )


def insert_grants(
    conn: Connection,
    ids: idseq.IdAllocator,
    level: Level,
    rows: Sequence[dict[str, Any]],
) -> None:
    """Insert privilege rows of one level (values without the grant id)."""
    if not rows:
        return
    grant_ids = ids.allocate(conn, level.seq, len(rows))
    id_column = level.table.primary_key.columns.values()[0].name
    conn.execute(
        insert(level.table), [{id_column: i, **r} for i, r in zip(grant_ids, rows, strict=True)]
    )


def _row(
    level: Level,
    principal: str,
    ptype: int | None,
    info: hms.PrivilegeGrantInfo,
    privilege: str,
    authorizer: str | None,
    owner_id: int | None,
    column: str | None = None,
) -> dict[str, Any]:
    values: dict[str, Any] = {
        "PRINCIPAL_NAME": principal,
        "PRINCIPAL_TYPE": principal_name(ptype),
        level.priv: privilege,
        "CREATE_TIME": now(),
        "GRANTOR": info.grantor,
        "GRANTOR_TYPE": principal_name(info.grantorType),
        "GRANT_OPTION": 1 if info.grantOption else 0,
        "AUTHORIZER": authorizer,
    }
    if level.owner is not None:
        values[level.owner] = owner_id
    if level.has_column:
        values["COLUMN_NAME"] = column
    return values


def owner_grant_rows(
    level: Level, owner_id: int, privileges: hms.PrincipalPrivilegeSet | None
) -> list[dict[str, Any]]:
    """The rows of a PrincipalPrivilegeSet a new object carries (Table.privileges), as
    Hive 4's ObjectStore.createTable stores them (authorizer ``SQL``)."""
    if privileges is None:
        return []
    rows = []
    for ptype, grants in (
        (hms.PrincipalType.USER, privileges.userPrivileges),
        (hms.PrincipalType.GROUP, privileges.groupPrivileges),
        (hms.PrincipalType.ROLE, privileges.rolePrivileges),
    ):
        for principal, infos in (grants or {}).items():
            for info in infos or []:
                for priv in _split(info.privilege):
                    rows.append(_row(level, principal, ptype, info, priv, "SQL", owner_id))
    return rows


def copy_table_grants_to_partitions(
    conn: Connection, ids: idseq.IdAllocator, tbl_id: int, part_ids: Sequence[int]
) -> None:
    """ObjectStore.addPartition on a table with PARTITION_LEVEL_PRIVILEGE=TRUE: each new
    partition gets the table's grants (TBL_PRIVS) and column grants (TBL_COL_PRIVS)."""
    if not part_ids:
        return
    for source, target in ((TABLE, PARTITION), (TABLE_COLUMN, PARTITION_COLUMN)):
        grants = conn.execute(select(source.table).where(source.table.c.TBL_ID == tbl_id)).all()
        rows = []
        for part_id in part_ids:
            for g in grants:
                row = {
                    "PRINCIPAL_NAME": g.PRINCIPAL_NAME,
                    "PRINCIPAL_TYPE": g.PRINCIPAL_TYPE,
                    target.priv: g._mapping[source.priv],
                    "CREATE_TIME": now(),
                    "GRANTOR": g.GRANTOR,
                    "GRANTOR_TYPE": g.GRANTOR_TYPE,
                    "GRANT_OPTION": g.GRANT_OPTION,
                    "AUTHORIZER": g.AUTHORIZER,
                    "PART_ID": part_id,
                }
                if target.has_column:
                    row["COLUMN_NAME"] = g.COLUMN_NAME
                rows.append(row)
        insert_grants(conn, ids, target, rows)


class Privileges(SqlPart):
    # -- objects -----------------------------------------------------------------------------

    def _target(self, conn: Connection, ref: hms.HiveObjectRef, *, must_exist: bool) -> Target:
        """Resolve a HiveObjectRef; a missing object raises NoSuchObjectException when
        ``must_exist``, else gives a Target without owner id (no rows)."""
        if ref is None or ref.objectType is None:
            raise hms.MetaException(message="The object of a privilege must have an objectType")
        cat = (ref.catName or DEFAULT_CATALOG).strip().lower()
        kind = ref.objectType
        if kind == _T.GLOBAL:
            return Target(GLOBAL, None, cat)
        db = (ref.dbName or "").strip().lower()
        if not db:
            raise hms.MetaException(message="A privilege on a database or table needs a dbName")
        if kind == _T.DATABASE:
            found = conn.execute(
                select(schema.DBS.c.DB_ID).where(
                    schema.DBS.c.CTLG_NAME == cat, schema.DBS.c.NAME == db
                )
            ).scalar()
            if found is None and must_exist:
                raise hms.NoSuchObjectException(message=f"database {cat}.{db}")
            return Target(DATABASE, found, cat, db)
        if kind not in (_T.TABLE, _T.PARTITION, _T.COLUMN):
            raise hms.MetaException(
                message=f"Privileges on objects of type {kind} are not supported by this metastore"
            )
        tbl = (ref.objectName or "").strip().lower()
        try:
            table = self._table_row(conn, cat, db, tbl)
        except hms.NoSuchObjectException:
            if must_exist:
                raise
            table = None
        column = ref.columnName.strip().lower() if ref.columnName is not None else None
        if kind == _T.COLUMN and not column:
            raise hms.MetaException(message="A column privilege needs a columnName")
        if kind == _T.TABLE or (kind == _T.COLUMN and ref.partValues is None):
            level = TABLE if kind == _T.TABLE else TABLE_COLUMN
            return Target(level, table.TBL_ID if table else None, cat, db, tbl, None, column)
        part_name = None
        part_id = None
        if table is not None:
            keys = [
                r[0]
                for r in conn.execute(
                    select(schema.PARTITION_KEYS.c.PKEY_NAME)
                    .where(schema.PARTITION_KEYS.c.TBL_ID == table.TBL_ID)
                    .order_by(schema.PARTITION_KEYS.c.INTEGER_IDX)
                )
            ]
            try:
                part_name = make_part_name(keys, list(ref.partValues or []))
            except PartitionNameError as exc:
                raise hms.MetaException(message=str(exc)) from None
            part_id = conn.execute(
                select(schema.PARTITIONS.c.PART_ID).where(
                    schema.PARTITIONS.c.TBL_ID == table.TBL_ID,
                    schema.PARTITIONS.c.PART_NAME == part_name,
                )
            ).scalar()
            if part_id is None and must_exist:
                raise hms.NoSuchObjectException(
                    message=f"partition values={list(ref.partValues or [])}"
                )
        level = PARTITION if kind == _T.PARTITION else PARTITION_COLUMN
        return Target(level, part_id, cat, db, tbl, part_name, column)

    def _principal_rows(
        self,
        conn: Connection,
        target: Target,
        principal: str | None,
        ptype: int | None,
        authorizer: str | None = None,
    ) -> Sequence[Any]:
        if target.level.owner is not None and target.owner_id is None:
            return []
        c = target.level.table.c
        conditions = target.where()
        if principal is not None:
            conditions += [c.PRINCIPAL_NAME == principal, c.PRINCIPAL_TYPE == principal_name(ptype)]
        if authorizer is not None:
            conditions.append(c.AUTHORIZER == authorizer)
        id_column = target.level.table.primary_key.columns.values()[0]
        return conn.execute(_refs_select(target.level, *conditions).order_by(id_column)).all()

    # -- reads -----------------------------------------------------------------------------------

    def list_privileges(
        self, principal: str | None, ptype: int | None, ref: hms.HiveObjectRef | None
    ) -> list[hms.HiveObjectPrivilege]:
        """A principal's privileges on one object (every principal's when ``principal`` is
        None), or on every object when ``ref`` has no objectType (HMSHandler.list_privileges)."""
        with self.db.read() as conn:
            if ref is None or ref.objectType is None:
                if principal is None:
                    raise hms.MetaException(
                        message="list_privileges without an object needs a principal_name"
                    )
                out: list[hms.HiveObjectPrivilege] = []
                for level in LEVELS:
                    c = level.table.c
                    level_rows = conn.execute(
                        _refs_select(
                            level,
                            c.PRINCIPAL_NAME == principal,
                            c.PRINCIPAL_TYPE == principal_name(ptype),
                        )
                    )
                    out.extend(_object_privilege(level, r) for r in level_rows)
                return out
            target = self._target(conn, ref, must_exist=False)
            rows = self._principal_rows(conn, target, principal, ptype)
            return [_object_privilege(target.level, r) for r in rows]

    def get_privilege_set(
        self, ref: hms.HiveObjectRef, user: str | None, groups: Sequence[str] | None
    ) -> hms.PrincipalPrivilegeSet:
        """What a user, its groups and (except globally) all their roles hold on the object,
        in ObjectStore.get*PrivilegeSet's shape."""
        groups = list(groups or [])
        with self.db.read() as conn:
            target = self._target(conn, ref, must_exist=False)

            def infos(principal: str, ptype: int) -> list[hms.PrivilegeGrantInfo]:
                rows = self._principal_rows(conn, target, principal, ptype)
                return [_grant_info(target.level, r) for r in rows]

            result = hms.PrincipalPrivilegeSet()
            if target.level is GLOBAL:
                if user is not None and (found := infos(user, hms.PrincipalType.USER)):
                    result.userPrivileges = {user: found}
                if groups:
                    result.groupPrivileges = {
                        g: found for g in groups if (found := infos(g, hms.PrincipalType.GROUP))
                    }
                return result
            if user is not None:
                result.userPrivileges = {user: infos(user, hms.PrincipalType.USER)}
            if groups:
                result.groupPrivileges = {g: infos(g, hms.PrincipalType.GROUP) for g in groups}
            roles = roles_in_hierarchy(conn, user, groups)
            if roles:
                result.rolePrivileges = {r: infos(r, hms.PrincipalType.ROLE) for r in roles}
            return result

    def partition_privilege_sets(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_values: Iterable[Sequence[str]],
        user: str | None,
        groups: Sequence[str] | None,
    ) -> list[hms.PrincipalPrivilegeSet]:
        """get_privilege_set of each partition, for the ``*_with_auth`` calls: the table's
        partition grants of the user, its groups and roles in one query."""
        groups = list(groups or [])
        part_values = [list(v) for v in part_values]
        with self.db.read() as conn:
            try:
                table = self._table_row(conn, cat, db, tbl)
            except hms.NoSuchObjectException:
                return [hms.PrincipalPrivilegeSet() for _ in part_values]
            keys = [
                r[0]
                for r in conn.execute(
                    select(schema.PARTITION_KEYS.c.PKEY_NAME)
                    .where(schema.PARTITION_KEYS.c.TBL_ID == table.TBL_ID)
                    .order_by(schema.PARTITION_KEYS.c.INTEGER_IDX)
                )
            ]
            roles = roles_in_hierarchy(conn, user, groups)
            principals = [(g, "GROUP") for g in groups] + [(r, "ROLE") for r in roles]
            if user is not None:
                principals.append((user, "USER"))
            c, pt = schema.PART_PRIVS.c, schema.PARTITIONS.c
            rows = conn.execute(
                select(schema.PART_PRIVS, pt.PART_NAME)
                .select_from(schema.PART_PRIVS.join(schema.PARTITIONS, pt.PART_ID == c.PART_ID))
                .where(pt.TBL_ID == table.TBL_ID, c.PRINCIPAL_NAME.in_([n for n, _ in principals]))
                .order_by(c.PART_GRANT_ID)
            ).all()
        held: dict[tuple[str, str, str], list[hms.PrivilegeGrantInfo]] = {}
        for r in rows:
            key = (r.PART_NAME, r.PRINCIPAL_NAME, r.PRINCIPAL_TYPE)
            held.setdefault(key, []).append(_grant_info(PARTITION, r))
        out = []
        for values in part_values:
            try:
                name = make_part_name(keys, values)
            except PartitionNameError as exc:
                raise hms.MetaException(message=str(exc)) from None
            result = hms.PrincipalPrivilegeSet()
            if user is not None:
                result.userPrivileges = {user: held.get((name, user, "USER"), [])}
            if groups:
                result.groupPrivileges = {g: held.get((name, g, "GROUP"), []) for g in groups}
            if roles:
                result.rolePrivileges = {r: held.get((name, r, "ROLE"), []) for r in roles}
            out.append(result)
        return out

    # -- writes ----------------------------------------------------------------------------------

    def grant_privileges(self, privileges: Sequence[hms.HiveObjectPrivilege]) -> None:
        """ObjectStore.grantPrivileges: every privilege or none (one transaction)."""
        self.db.transaction(lambda conn: self._grant(conn, privileges))

    def _grant(self, conn: Connection, privileges: Sequence[hms.HiveObjectPrivilege]) -> None:
        for p in privileges:
            info = _require(p)
            if p.principalType == hms.PrincipalType.ROLE:
                role_row(conn, p.principalName)
            target = self._target(conn, p.hiveObject, must_exist=True)
            held = {
                r._mapping[target.level.priv]
                for r in self._principal_rows(
                    conn, target, p.principalName, p.principalType, p.authorizer
                )
                if (r.GRANTOR or "").lower() == (info.grantor or "").lower()
            }
            rows = []
            for priv in _split(info.privilege):
                if priv in held:
                    raise hms.InvalidObjectException(
                        message=target.already_granted(priv, info.grantor)
                    )
                held.add(priv)
                rows.append(
                    _row(
                        target.level,
                        p.principalName,
                        p.principalType,
                        info,
                        priv,
                        p.authorizer,
                        target.owner_id,
                        target.column,
                    )
                )
            insert_grants(conn, self.ids, target.level, rows)

    def revoke_privileges(
        self, privileges: Sequence[hms.HiveObjectPrivilege], grant_option: bool
    ) -> None:
        """ObjectStore.revokePrivileges: drop each privilege, or with ``grant_option`` only
        its grant option; a privilege not held is InvalidObjectException."""
        self.db.transaction(lambda conn: self._revoke(conn, privileges, grant_option))

    def _revoke(
        self, conn: Connection, privileges: Sequence[hms.HiveObjectPrivilege], grant_option: bool
    ) -> None:
        for p in privileges:
            info = _require(p)
            target = self._target(conn, p.hiveObject, must_exist=False)
            level = target.level
            rows = self._principal_rows(conn, target, p.principalName, p.principalType)
            id_column = level.table.primary_key.columns.values()[0]
            for priv in _split(info.privilege):
                match = next(
                    (r for r in rows if (r._mapping[level.priv] or "").lower() == priv.lower()),
                    None,
                )
                if match is None:
                    raise hms.InvalidObjectException(message=target.not_granted(priv))
                grant_id = match._mapping[id_column.name]
                if not grant_option:
                    conn.execute(delete(level.table).where(id_column == grant_id))
                    rows = [r for r in rows if r is not match]
                elif match.GRANT_OPTION:
                    conn.execute(
                        update(level.table).where(id_column == grant_id).values(GRANT_OPTION=0)
                    )
                else:
                    raise hms.MetaException(
                        message=f"User {p.principalName} does not have grant option with "
                        f"privilege {priv}"
                    )

    def refresh_privileges(
        self,
        ref: hms.HiveObjectRef,
        authorizer: str | None,
        grants: Sequence[hms.HiveObjectPrivilege],
    ) -> None:
        """ObjectStore.refreshPrivileges: replace every privilege ``authorizer`` holds on the
        object (a table's include its columns') by ``grants``, in one transaction."""

        def run(conn: Connection) -> None:
            target = self._target(conn, ref, must_exist=True)
            levels = [target.level]
            if target.level is TABLE:
                levels.append(TABLE_COLUMN)
            for level in levels:
                c = level.table.c
                where = [] if level.owner is None else [c[level.owner] == target.owner_id]
                where.append(
                    c.AUTHORIZER.is_(None) if authorizer is None else c.AUTHORIZER == authorizer
                )
                conn.execute(delete(level.table).where(*where))
            self._grant(conn, grants)

        self.db.transaction(run)


def _require(p: hms.HiveObjectPrivilege) -> hms.PrivilegeGrantInfo:
    if p is None or p.hiveObject is None or p.grantInfo is None:
        raise hms.MetaException(message="A privilege needs a hiveObject and a grantInfo")
    if not p.principalName or principal_name(p.principalType) is None:
        raise hms.MetaException(
            message="A privilege needs a principalName and a principalType (USER, ROLE, GROUP)"
        )
    return p.grantInfo
