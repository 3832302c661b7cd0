"""Table constraints (KEY_CONSTRAINTS): primary, foreign, unique, not-null, default and check.

Rows are laid out as Hive's ObjectStore lays them out, so a stock metastore on the same
database reads them: a column is its table's column descriptor (CD_ID) and its index there,
or, for a partition column, no CD_ID and its index among the partition keys; POSITION is the
key sequence (1 for single-column kinds); ENABLE_VALIDATE_RELY packs the three flags as
4/2/1; DEFAULT_VALUE holds a default's value or a check's expression. A foreign key's parent
is the referenced (primary or unique key's) table, its child the referencing one. Unnamed
constraints get Hive's generated names (``<kind>_<hash>_<millis>_<n>``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, FromClause, and_, delete, insert, or_, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.sql.sql_base import SqlPart, table_ref

PRIMARY_KEY, FOREIGN_KEY, UNIQUE, NOT_NULL, DEFAULT, CHECK = range(6)
"""KEY_CONSTRAINTS.CONSTRAINT_TYPE, as MConstraint numbers them."""

_KC = schema.KEY_CONSTRAINTS


@dataclass(frozen=True)
class _Kind:
    """How one kind of constraint maps to rows and events."""

    code: int
    event: str
    list_key: str  # the event message's list field
    name_field: str  # the Thrift struct's constraint-name field
    suffix: str  # Hive's generated-name suffix
    keyed: bool  # several columns per constraint (key_seq), else one column each


KINDS = {
    "primaryKeys": _Kind(
        PRIMARY_KEY, msg.ADD_PRIMARYKEY, "primaryKeyListJson", "pk_name", "pk", True
    ),
    "foreignKeys": _Kind(
        FOREIGN_KEY, msg.ADD_FOREIGNKEY, "foreignKeyListJson", "fk_name", "fk", True
    ),
    "uniqueConstraints": _Kind(
        UNIQUE, msg.ADD_UNIQUECONSTRAINT, "uniqueConstraintListJson", "uk_name", "uk", True
    ),
    "notNullConstraints": _Kind(
        NOT_NULL, msg.ADD_NOTNULLCONSTRAINT, "notNullConstraintListJson", "nn_name", "nn", False
    ),
    "defaultConstraints": _Kind(
        DEFAULT, msg.ADD_DEFAULTCONSTRAINT, "defaultConstraintListJson", "dc_name", "dc", False
    ),
    "checkConstraints": _Kind(
        CHECK, msg.ADD_CHECKCONSTRAINT, "checkConstraintListJson", "dc_name", "cc", False
    ),
}
"""SQLAllTableConstraints field -> kind, in the order Hive adds them (primary keys first, so a
foreign key may reference a primary key created in the same call)."""


def _norm(name: str | None) -> str | None:
    return name.strip().lower() if name is not None else None


def java_hash(text: str) -> int:
    """Java's String.hashCode (over UTF-16 code units), as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def generated_name(parts: Sequence[str | None], attempt: int, millis: int) -> str:
    """ObjectStore.generateConstraintName: the last part (the kind), a 28-bit hash of
    ArrayUtils.toString(parts), the time in milliseconds and the attempt number."""
    text = "{" + ",".join("<null>" if p is None else p for p in parts) + "}"
    return f"{parts[-1]}_{java_hash(text) & 0xFFFFFFF}_{millis}_{attempt}"


def flags(c: Any) -> int:
    return (4 if c.enable_cstr else 0) + (2 if c.validate_cstr else 0) + (1 if c.rely_cstr else 0)


@dataclass
class _TableCols:
    """A table as constraints see it: its id, column descriptor and column positions."""

    tbl_id: int
    cd_id: int | None
    cols: dict[str, int]
    keys: dict[str, int]

    def column(self, name: str | None, where: str) -> tuple[int | None, int]:
        """(CD_ID, index) of a column, or (None, index) of a partition key."""
        if name in self.cols:
            return self.cd_id, self.cols[name]
        if name in self.keys:
            return None, self.keys[name]
        raise hms.InvalidObjectException(message=f"Parent column not found: {name} ({where})")


class Constraints(SqlPart):
    """Constraints are written with their table (create_table) or added and dropped on their
    own; every change writes Hive's event in the same transaction."""

    # -- reads -----------------------------------------------------------------------------------

    def get_table_constraints(
        self, cat: str, db: str, name: str, *, valid_write_id_list: str | None = None
    ) -> hms.SQLAllTableConstraints:
        """Every constraint of a table (those whose parent it is, and the foreign keys it
        holds); empty lists for a table that does not exist, as Hive answers. The database
        answers every snapshot (constraint changes take no write ids)."""
        with self.db.read() as conn:
            return self.table_constraints_in(conn, cat, db, name)

    def table_constraints_in(
        self, conn: Connection, cat: str, db: str, name: str
    ) -> hms.SQLAllTableConstraints:
        """get_table_constraints inside the caller's snapshot (the cache's loads)."""
        row = self._find_table(conn, cat, db, name)
        if row is None:
            return _empty()
        rows = self._constraint_rows(
            conn, or_(_KC.c.PARENT_TBL_ID == row, _KC.c.CHILD_TBL_ID == row)
        )
        pk_names = self._primary_key_names(conn, rows)
        out = _empty()
        for r in rows:
            if r.CONSTRAINT_TYPE == FOREIGN_KEY:
                if r.CHILD_TBL_ID == row:
                    out.foreignKeys.append(_foreign_key(r, pk_names))
            elif r.PARENT_TBL_ID == row:
                _append(out, r)
        return out

    def get_foreign_keys(
        self, cat: str, parent: tuple[str, str] | None, child: tuple[str, str] | None
    ) -> list[hms.SQLForeignKey]:
        """Foreign keys held by ``child`` (db, table), referencing ``parent`` (either may be
        None: any)."""
        with self.db.read() as conn:
            conditions = [_KC.c.CONSTRAINT_TYPE == FOREIGN_KEY]
            for side, column in ((parent, _KC.c.PARENT_TBL_ID), (child, _KC.c.CHILD_TBL_ID)):
                if side is not None:
                    tbl_id = self._find_table(conn, cat, *side)
                    if tbl_id is None:
                        return []
                    conditions.append(column == tbl_id)
            rows = self._constraint_rows(conn, and_(*conditions))
            pk_names = self._primary_key_names(conn, rows)
        return [_foreign_key(r, pk_names) for r in rows]

    def _find_table(self, conn: Connection, cat: str, db: str, name: str) -> int | None:
        t, d = schema.TBLS, schema.DBS
        return conn.execute(
            select(t.c.TBL_ID)
            .select_from(t.join(d, t.c.DB_ID == d.c.DB_ID))
            .where(d.c.CTLG_NAME == cat, d.c.NAME == db, t.c.TBL_NAME == name)
        ).scalar()

    def _constraint_rows(self, conn: Connection, condition: Any) -> Sequence[Any]:
        """Constraint rows with their tables' and columns' names (outer joins: a column whose
        descriptor is gone reads as None)."""
        side = {}
        for prefix in ("PARENT", "CHILD"):
            tbl, dbs = schema.TBLS.alias(f"{prefix}_t"), schema.DBS.alias(f"{prefix}_d")
            col, key = (
                schema.COLUMNS_V2.alias(f"{prefix}_c"),
                schema.PARTITION_KEYS.alias(f"{prefix}_k"),
            )
            side[prefix] = (tbl, dbs, col, key)
        joined: FromClause = _KC
        columns: list[Any] = [_KC]
        for prefix, (tbl, dbs, col, key) in side.items():
            tbl_id, cd_id, idx = (
                _KC.c[f"{prefix}_{n}"] for n in ("TBL_ID", "CD_ID", "INTEGER_IDX")
            )
            joined = (
                joined.outerjoin(tbl, tbl.c.TBL_ID == tbl_id)
                .outerjoin(dbs, dbs.c.DB_ID == tbl.c.DB_ID)
                .outerjoin(col, and_(col.c.CD_ID == cd_id, col.c.INTEGER_IDX == idx))
                .outerjoin(
                    key, and_(cd_id.is_(None), key.c.TBL_ID == tbl_id, key.c.INTEGER_IDX == idx)
                )
            )
            columns += [
                tbl.c.TBL_NAME.label(f"{prefix}_TABLE"),
                dbs.c.NAME.label(f"{prefix}_DB"),
                dbs.c.CTLG_NAME.label(f"{prefix}_CAT"),
                col.c.COLUMN_NAME.label(f"{prefix}_COLUMN"),
                key.c.PKEY_NAME.label(f"{prefix}_KEY"),
            ]
        stmt = (
            select(*columns)
            .select_from(joined)
            .where(condition)
            .order_by(_KC.c.CONSTRAINT_TYPE, _KC.c.CONSTRAINT_NAME, _KC.c.POSITION)
        )
        return conn.execute(stmt).all()

    def _primary_key_names(self, conn: Connection, rows: Sequence[Any]) -> dict[int, str]:
        """The primary key's name of every table a foreign key in ``rows`` references."""
        parents = {r.PARENT_TBL_ID for r in rows if r.CONSTRAINT_TYPE == FOREIGN_KEY}
        if not parents:
            return {}
        found = conn.execute(
            select(_KC.c.PARENT_TBL_ID, _KC.c.CONSTRAINT_NAME).where(
                _KC.c.CONSTRAINT_TYPE == PRIMARY_KEY, _KC.c.PARENT_TBL_ID.in_(sorted(parents))
            )
        )
        return {r[0]: r[1] for r in found}

    # -- writes ----------------------------------------------------------------------------------

    @writes_events
    def add_constraints(self, cat: str, constraints: hms.SQLAllTableConstraints) -> None:
        """Add constraints to existing tables (the add_* calls): one event per kind."""

        def run(conn: Connection) -> None:
            self._emit(conn, self.insert_constraints(conn, cat, constraints))

        self.db.transaction(run)

    @writes_events
    def drop_constraint(self, cat: str, db: str, name: str, constraint: str) -> None:
        """Drop a constraint the table holds (as parent, or a foreign key it holds)."""

        def run(conn: Connection) -> None:
            tbl_id = self._table_row(conn, cat, db, name, lock=True).TBL_ID
            gone = conn.execute(
                delete(_KC).where(
                    _KC.c.CONSTRAINT_NAME == constraint,
                    or_(_KC.c.PARENT_TBL_ID == tbl_id, _KC.c.CHILD_TBL_ID == tbl_id),
                )
            ).rowcount
            if not gone:
                raise hms.NoSuchObjectException(
                    message=f"The constraint: {constraint} does not exist for the associated "
                    f"table: {db}.{name}"
                )
            body = self.messages.drop_constraint(cat, db, name, constraint)
            self._emit(conn, [NewEvent(msg.DROP_CONSTRAINT, body, cat, db, name)])

        self.db.transaction(run)

    def insert_constraints(
        self, conn: Connection, cat: str, constraints: hms.SQLAllTableConstraints
    ) -> list[NewEvent]:
        """Insert every constraint (names normalised, unnamed ones named); the events to
        append, one per non-empty kind, naming the first constraint's table as Hive does."""
        tables: dict[tuple[str, str, str], _TableCols] = {}

        def table(c: str, db: str | None, name: str | None) -> _TableCols:
            key = (c, _norm(db) or "", _norm(name) or "")
            if key not in tables:
                tables[key] = self._table_cols(conn, *key)
            return tables[key]

        millis = int(time.time() * 1000)
        events: list[NewEvent] = []
        for field, kind in KINDS.items():
            items = [_copy(c) for c in getattr(constraints, field, None) or []]
            if not items:
                continue
            rows = self._constraint_insert_rows(conn, cat, kind, items, table, millis)
            conn.execute(insert(_KC), rows)
            first = items[0]
            # DbNotificationListener names a foreign key's referenced (parent) table
            db = first.pktable_db if kind.code == FOREIGN_KEY else first.table_db
            tbl = first.pktable_name if kind.code == FOREIGN_KEY else first.table_name
            body = self.messages.add_constraints(kind.list_key, items)
            events.append(NewEvent(kind.event, body, cat, db, tbl))
        return events

    def _constraint_insert_rows(
        self,
        conn: Connection,
        cat: str,
        kind: _Kind,
        items: list[Any],
        table: Callable[[str, str | None, str | None], _TableCols],
        millis: int,
    ) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        names: dict[int, str] = {}  # the name of the constraint being read (by group start)
        group = 0
        taken: set[tuple[int, str]] = set()
        for i, c in enumerate(items):
            c_cat = _norm(getattr(c, "catName", None)) or cat
            fk = kind.code == FOREIGN_KEY
            if fk:
                c.pktable_db, c.pktable_name = _norm(c.pktable_db), _norm(c.pktable_name)
                c.fktable_db, c.fktable_name = _norm(c.fktable_db), _norm(c.fktable_name)
                c.pkcolumn_name, c.fkcolumn_name = _norm(c.pkcolumn_name), _norm(c.fkcolumn_name)
                parent = table(c_cat, c.pktable_db, c.pktable_name)
                child = table(c_cat, c.fktable_db, c.fktable_name)
                parent_cd, parent_idx = parent.column(c.pkcolumn_name, "referenced column")
                child_cd, child_idx = child.column(c.fkcolumn_name, "foreign key column")
                parts = [
                    c.fktable_db,
                    c.fktable_name,
                    c.pktable_db,
                    c.pktable_name,
                    c.pkcolumn_name,
                    c.fkcolumn_name,
                    kind.suffix,
                ]
            else:
                c.table_db, c.table_name = _norm(c.table_db), _norm(c.table_name)
                c.column_name = _norm(c.column_name)
                parent, child = table(c_cat, c.table_db, c.table_name), None
                if kind.code == CHECK and c.column_name is None:
                    parent_cd, parent_idx = None, -1  # a table-level check
                else:
                    parent_cd, parent_idx = parent.column(c.column_name, kind.suffix)
                child_cd = child_idx = None
                parts = [c.table_db, c.table_name, c.column_name, kind.suffix]
            seq = c.key_seq if kind.keyed else 1
            starts = not kind.keyed or seq in (None, 1) or i == 0
            given = _norm(getattr(c, kind.name_field))
            if given is None:
                if starts:
                    group = i
                    names[group] = self._free_name(conn, parent.tbl_id, parts, millis, taken)
                given = names[group]
            elif starts or (parent.tbl_id, given) not in taken:
                group = i
                if (parent.tbl_id, given) in taken or self._name_exists(conn, parent.tbl_id, given):
                    raise hms.InvalidObjectException(
                        message=f"Constraint name already exists: {given}"
                    )
                names[group] = given
            setattr(c, kind.name_field, given)
            taken.add((parent.tbl_id, given))
            if kind.code == PRIMARY_KEY and starts:
                self._check_no_primary_key(conn, parent.tbl_id, c_cat, c.table_db, c.table_name)
            rows.append(
                {
                    "CHILD_CD_ID": child_cd,
                    "CHILD_INTEGER_IDX": child_idx,
                    "CHILD_TBL_ID": child.tbl_id if child is not None else None,
                    "PARENT_CD_ID": parent_cd,
                    "PARENT_INTEGER_IDX": parent_idx,
                    "PARENT_TBL_ID": parent.tbl_id,
                    "POSITION": seq if seq is not None else 1,
                    "CONSTRAINT_NAME": given,
                    "CONSTRAINT_TYPE": kind.code,
                    "UPDATE_RULE": c.update_rule if fk else None,
                    "DELETE_RULE": c.delete_rule if fk else None,
                    "ENABLE_VALIDATE_RELY": flags(c),
                    "DEFAULT_VALUE": _value(kind, c),
                }
            )
        if kind.code == FOREIGN_KEY:
            self._check_referenced_keys(conn, rows)
        return rows

    def _table_cols(self, conn: Connection, cat: str, db: str, name: str) -> _TableCols:
        """The table's columns, read under a share lock of its TBLS row.

        alter_table locks that row for update before it changes the columns, so a key cannot
        be added on a column list that a concurrent alter is replacing: the lock is taken in a
        statement of its own, and the columns are read by the next statements, which (READ
        COMMITTED) see whatever an alter that held the row committed."""
        t = schema.TBLS
        locked = conn.execute(
            select(t.c.TBL_ID)
            .select_from(t.join(schema.DBS, schema.DBS.c.DB_ID == t.c.DB_ID))
            .where(schema.DBS.c.CTLG_NAME == cat, schema.DBS.c.NAME == db, t.c.TBL_NAME == name)
            .with_for_update(of=t, read=True)
        ).first()
        if locked is None:
            raise hms.InvalidObjectException(
                message=f"Parent table not found: {table_ref(cat, db, name)}"
            )
        row = conn.execute(
            select(t.c.TBL_ID, schema.SDS.c.CD_ID)
            .select_from(t.outerjoin(schema.SDS, schema.SDS.c.SD_ID == t.c.SD_ID))
            .where(t.c.TBL_ID == locked.TBL_ID)
        ).first()
        if row is None:  # renamed or dropped between the two statements (no lock on SQLite)
            raise hms.InvalidObjectException(
                message=f"Parent table not found: {table_ref(cat, db, name)}"
            )
        cols: dict[str, int] = {}
        if row.CD_ID is not None:
            c = schema.COLUMNS_V2.c
            found = conn.execute(select(c.COLUMN_NAME, c.INTEGER_IDX).where(c.CD_ID == row.CD_ID))
            cols = {r[0]: r[1] for r in found}
        k = schema.PARTITION_KEYS.c
        found = conn.execute(select(k.PKEY_NAME, k.INTEGER_IDX).where(k.TBL_ID == row.TBL_ID))
        return _TableCols(row.TBL_ID, row.CD_ID, cols, {r[0]: r[1] for r in found})

    def _name_exists(self, conn: Connection, tbl_id: int, name: str) -> bool:
        stmt = select(_KC.c.CONSTRAINT_NAME).where(
            _KC.c.PARENT_TBL_ID == tbl_id, _KC.c.CONSTRAINT_NAME == name
        )
        return conn.execute(stmt.limit(1)).first() is not None

    def _free_name(
        self,
        conn: Connection,
        tbl_id: int,
        parts: Sequence[str | None],
        millis: int,
        taken: set[tuple[int, str]],
    ) -> str:
        for attempt in range(10):
            name = generated_name(parts, attempt, millis)
            if (tbl_id, name) not in taken and not self._name_exists(conn, tbl_id, name):
                return name
        shown = "{" + ",".join(str(p) for p in parts) + "}"
        raise hms.MetaException(
            message=f"Error while trying to generate the constraint name for {shown}"
        )

    def _check_no_primary_key(
        self, conn: Connection, tbl_id: int, cat: str, db: str | None, name: str | None
    ) -> None:
        existing = conn.execute(
            select(_KC.c.CONSTRAINT_NAME)
            .where(_KC.c.PARENT_TBL_ID == tbl_id, _KC.c.CONSTRAINT_TYPE == PRIMARY_KEY)
            .limit(1)
        ).first()
        if existing is not None:
            raise hms.MetaException(
                message=f"Primary key already exists for: {table_ref(cat, db or '', name or '')}"
            )

    def _check_referenced_keys(self, conn: Connection, rows: list[dict[str, Any]]) -> None:
        """Each foreign key references the whole of a primary or unique key of its parent."""
        by_fk: dict[tuple[int, str], set[tuple[int | None, int]]] = {}
        for r in rows:
            key = (r["PARENT_TBL_ID"], r["CONSTRAINT_NAME"])
            by_fk.setdefault(key, set()).add((r["PARENT_CD_ID"], r["PARENT_INTEGER_IDX"]))
        for (parent, fk_name), referenced in by_fk.items():
            keys: dict[str, set[tuple[int | None, int]]] = {}
            for key_row in conn.execute(
                select(_KC.c.CONSTRAINT_NAME, _KC.c.PARENT_CD_ID, _KC.c.PARENT_INTEGER_IDX).where(
                    _KC.c.PARENT_TBL_ID == parent, _KC.c.CONSTRAINT_TYPE.in_([PRIMARY_KEY, UNIQUE])
                )
            ):
                keys.setdefault(key_row[0], set()).add((key_row[1], key_row[2]))
            if referenced not in keys.values():
                raise hms.MetaException(
                    message=f"Foreign key {fk_name} references columns that are not a primary "
                    "key or unique constraint of the referenced table; add that key first"
                )


def follow_columns(
    conn: Connection, old_cd: int, new_cd: int, new_cols: Sequence[hms.FieldSchema]
) -> None:
    """A table's column descriptor is being replaced: move the constraints on its columns to
    the new one, as Hive's ObjectStore.copyMSD does. A column moves when the new list holds a
    column equal in name, type and comment (the first such). Constraints on any other column
    (renamed, retyped, dropped) are deleted, as Hive's removeUnusedColumnDescriptor deletes them
    with the old descriptor; Hive waits until no partition uses that descriptor any more, which
    no event would tell a cache, so here they go with the table's ALTER_TABLE."""
    kc = _KC.c
    rows = conn.execute(
        select(
            kc.PARENT_TBL_ID,
            kc.CONSTRAINT_NAME,
            kc.POSITION,
            kc.PARENT_CD_ID,
            kc.PARENT_INTEGER_IDX,
            kc.CHILD_CD_ID,
            kc.CHILD_INTEGER_IDX,
        ).where(or_(kc.PARENT_CD_ID == old_cd, kc.CHILD_CD_ID == old_cd))
    ).all()
    if not rows:
        return
    first_at: dict[tuple[str, str, str | None], int] = {}
    for j, col in enumerate(new_cols):
        first_at.setdefault((col.name, col.type, col.comment), j)
    c = schema.COLUMNS_V2.c
    old_cols = conn.execute(
        select(c.INTEGER_IDX, c.COLUMN_NAME, c.TYPE_NAME, c.COMMENT).where(c.CD_ID == old_cd)
    )
    moved_to = {idx: first_at[key] for idx, *rest in old_cols if (key := tuple(rest)) in first_at}
    for r in rows:
        values: dict[str, Any] = {}  # the new place of each side on the old descriptor
        for side, cd, idx in (
            ("PARENT", r.PARENT_CD_ID, r.PARENT_INTEGER_IDX),
            ("CHILD", r.CHILD_CD_ID, r.CHILD_INTEGER_IDX),
        ):
            if cd == old_cd:
                values[f"{side}_CD_ID"] = new_cd
                values[f"{side}_INTEGER_IDX"] = moved_to.get(idx)
        this_row = and_(
            kc.PARENT_TBL_ID == r.PARENT_TBL_ID,
            kc.CONSTRAINT_NAME == r.CONSTRAINT_NAME,
            kc.POSITION == r.POSITION,
        )
        if None in values.values():  # a column the new list lacks
            conn.execute(delete(_KC).where(this_row))
        else:
            conn.execute(update(_KC).where(this_row).values(**values))


def _copy(c: Any) -> Any:
    return type(c)(**c.__dict__)


def _value(kind: _Kind, c: Any) -> str | None:
    if kind.code == DEFAULT:
        return c.default_value
    if kind.code == CHECK:
        return c.check_expression
    return None


def _empty() -> hms.SQLAllTableConstraints:
    return hms.SQLAllTableConstraints(
        primaryKeys=[],
        foreignKeys=[],
        uniqueConstraints=[],
        notNullConstraints=[],
        defaultConstraints=[],
        checkConstraints=[],
    )


def _bits(r: Any) -> dict[str, bool]:
    v = r.ENABLE_VALIDATE_RELY or 0
    return {"enable_cstr": bool(v & 4), "validate_cstr": bool(v & 2), "rely_cstr": bool(v & 1)}


def _column(r: Any, prefix: str) -> str | None:
    return r._mapping[f"{prefix}_COLUMN"] or r._mapping[f"{prefix}_KEY"]


def _append(out: hms.SQLAllTableConstraints, r: Any) -> None:
    common = {
        "table_db": r.PARENT_DB,
        "table_name": r.PARENT_TABLE,
        "column_name": _column(r, "PARENT"),
        "catName": r.PARENT_CAT,
        **_bits(r),
    }
    code, name = r.CONSTRAINT_TYPE, r.CONSTRAINT_NAME
    if code == PRIMARY_KEY:
        out.primaryKeys.append(hms.SQLPrimaryKey(key_seq=r.POSITION, pk_name=name, **common))
    elif code == UNIQUE:
        out.uniqueConstraints.append(
            hms.SQLUniqueConstraint(key_seq=r.POSITION, uk_name=name, **common)
        )
    elif code == NOT_NULL:
        out.notNullConstraints.append(hms.SQLNotNullConstraint(nn_name=name, **common))
    elif code == DEFAULT:
        out.defaultConstraints.append(
            hms.SQLDefaultConstraint(default_value=r.DEFAULT_VALUE, dc_name=name, **common)
        )
    elif code == CHECK:
        out.checkConstraints.append(
            hms.SQLCheckConstraint(check_expression=r.DEFAULT_VALUE, dc_name=name, **common)
        )


def _foreign_key(r: Any, pk_names: dict[int, str]) -> hms.SQLForeignKey:
    return hms.SQLForeignKey(
        pktable_db=r.PARENT_DB,
        pktable_name=r.PARENT_TABLE,
        pkcolumn_name=_column(r, "PARENT"),
        fktable_db=r.CHILD_DB,
        fktable_name=r.CHILD_TABLE,
        fkcolumn_name=_column(r, "CHILD"),
        key_seq=r.POSITION,
        update_rule=r.UPDATE_RULE,
        delete_rule=r.DELETE_RULE,
        fk_name=r.CONSTRAINT_NAME,
        pk_name=pk_names.get(r.PARENT_TBL_ID),
        catName=r.CHILD_CAT,
        **_bits(r),
    )
