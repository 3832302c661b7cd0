"""Tables (TBLS, TABLE_PARAMS, PARTITION_KEYS and the table's storage descriptor).

Reading a table takes four queries whatever its shape: the table joined to its database,
storage descriptor and serde; all parameters (table, descriptor, serde) in one UNION ALL; its
columns and partition keys in one UNION ALL; its bucket/sort/skew lists in one UNION ALL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    Connection,
    bindparam,
    delete,
    insert,
    or_,
    select,
)

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import chunks, fetch_in
from hms_cache_proxy.store.db.prepared import PreparedCore
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.patterns import compile_pattern, filter_names
from hms_cache_proxy.store.sql import privileges
from hms_cache_proxy.store.sql.constraints import Constraints
from hms_cache_proxy.store.sql.details import load_details
from hms_cache_proxy.store.sql.sql_base import (
    SqlPart,
    SqlShared,
    TxnWrite,
    is_transactional,
    principal_name,
    principal_type,
    table_ref,
)
from hms_cache_proxy.store.sql.storage import (
    SD_COLUMNS,
    build_storage_descriptors,
    delete_storage_descriptors,
    insert_column_descriptors,
    insert_rows,
    insert_storage_descriptors,
    param_rows,
    sd_join,
)

_T, _D = schema.TBLS, schema.DBS

TABLE_COLUMNS = (
    _T.c.TBL_ID,
    _T.c.TBL_NAME,
    _T.c.DB_ID,
    _T.c.OWNER,
    _T.c.OWNER_TYPE,
    _T.c.CREATE_TIME,
    _T.c.LAST_ACCESS_TIME,
    _T.c.RETENTION,
    _T.c.TBL_TYPE,
    _T.c.VIEW_ORIGINAL_TEXT,
    _T.c.VIEW_EXPANDED_TEXT,
    _T.c.IS_REWRITE_ENABLED,
    _T.c.WRITE_ID,
    _D.c.NAME.label("DB_NAME"),
    _D.c.CTLG_NAME,
    *SD_COLUMNS,
)


def table_select(*conditions: Any) -> Any:
    return (
        select(*TABLE_COLUMNS)
        .select_from(sd_join(_T.join(_D, _T.c.DB_ID == _D.c.DB_ID), _T.c.SD_ID))
        .where(*conditions)
    )


# Built once: statement construction costs more than the query on the hot path.
TABLE_BY_NAME = table_select(
    _D.c.CTLG_NAME == bindparam("cat"),
    _D.c.NAME == bindparam("db"),
    _T.c.TBL_NAME == bindparam("tbl"),
)
TABLE_BY_ID = table_select(_T.c.TBL_ID == bindparam("tbl_id"))
TABLE_BY_NAME_SHARED = PreparedCore(
    "hms_table_by_name_shared", TABLE_BY_NAME.with_for_update(of=_T, read=True)
)
"""TABLE_BY_NAME taking the table's row FOR SHARE (alters of its partitions, inside their
transaction: prepared)."""


class Tables(SqlPart):
    """Tables: reads, create and drop with their storage, grants and events (constraints
    created with a table go through ``constraints``; alters are table_alters.py's)."""

    def __init__(self, shared: SqlShared, constraints: Constraints) -> None:
        super().__init__(shared)
        self.constraints = constraints

    # -- reads -----------------------------------------------------------------------------------

    def get_table(self, cat: str, db: str, name: str) -> hms.Table:
        with self.db.read() as conn:
            tables = self.load_tables(conn, TABLE_BY_NAME, {"cat": cat, "db": db, "tbl": name})
        if not tables:
            raise hms.NoSuchObjectException(message=f"{table_ref(cat, db, name)} table not found")
        return tables[0]

    def get_tables_by_names(self, cat: str, db: str, names: Sequence[str]) -> list[hms.Table]:
        """The named tables that exist, in the order asked (missing names are skipped)."""
        wanted = list(dict.fromkeys(names))
        found: dict[str, hms.Table] = {}
        with self.db.read() as conn:
            self._db_row(conn, cat, db)
            for part in chunks(wanted):
                for t in self.load_tables(
                    conn,
                    table_select(_D.c.CTLG_NAME == cat, _D.c.NAME == db, _T.c.TBL_NAME.in_(part)),
                ):
                    found[t.tableName] = t
        return [found[n] for n in wanted if n in found]

    def tables_using_locations(
        self, exact: Sequence[str], below: str
    ) -> list[tuple[str, str, str, str]]:
        """(catalog, database, table, location) of every table, and every partition's table,
        whose storage location is one of ``exact`` or starts with ``below``: who else has data
        at, around or inside a directory about to be deleted. Two scans of SDS, no objects."""
        sd = schema.SDS.c
        match = or_(sd.LOCATION.in_(list(exact)), sd.LOCATION.startswith(below, autoescape=True))
        cols = (_D.c.CTLG_NAME, _D.c.NAME, _T.c.TBL_NAME, sd.LOCATION)
        by_table = (
            select(*cols)
            .select_from(
                _T.join(_D, _T.c.DB_ID == _D.c.DB_ID).join(schema.SDS, _T.c.SD_ID == sd.SD_ID)
            )
            .where(match)
        )
        p = schema.PARTITIONS.c
        by_partition = (
            select(*cols)
            .select_from(
                schema.PARTITIONS.join(_T, p.TBL_ID == _T.c.TBL_ID)
                .join(_D, _T.c.DB_ID == _D.c.DB_ID)
                .join(schema.SDS, p.SD_ID == sd.SD_ID)
            )
            .where(match)
        )
        with self.db.read() as conn:
            rows = [*conn.execute(by_table), *conn.execute(by_partition)]
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def get_table_names(
        self, cat: str, db: str, pattern: str | None = None, table_type: str | None = None
    ) -> list[str]:
        with self.db.read() as conn:
            row = self._db_row(conn, cat, db)
            stmt = select(_T.c.TBL_NAME).where(_T.c.DB_ID == row.DB_ID).order_by(_T.c.TBL_NAME)
            if table_type:
                stmt = stmt.where(_T.c.TBL_TYPE == table_type)
            names = [r[0] for r in conn.execute(stmt)]
        return filter_names(names, pattern)

    def get_table_meta(
        self, cat: str, db_pattern: str | None, tbl_pattern: str | None, types: Sequence[str] | None
    ) -> list[hms.TableMeta]:
        db_match, tbl_match = compile_pattern(db_pattern), compile_pattern(tbl_pattern)
        stmt = (
            select(_D.c.NAME, _T.c.TBL_NAME, _T.c.TBL_TYPE, _T.c.TBL_ID, _D.c.CTLG_NAME)
            .select_from(_T.join(_D, _T.c.DB_ID == _D.c.DB_ID))
            .where(_D.c.CTLG_NAME == cat)
            .order_by(_D.c.NAME, _T.c.TBL_NAME)
        )
        if types:
            stmt = stmt.where(_T.c.TBL_TYPE.in_(list(types)))
        with self.db.read() as conn:
            rows = [r for r in conn.execute(stmt) if db_match(r[0]) and tbl_match(r[1])]
            comments = self._table_params_for(conn, [r.TBL_ID for r in rows], "comment")
        return [
            hms.TableMeta(
                dbName=r[0],
                tableName=r[1],
                tableType=r[2],
                comments=comments.get(r.TBL_ID),
                catName=r.CTLG_NAME,
            )
            for r in rows
        ]

    def _table_params_for(self, conn: Connection, tbl_ids: list[int], key: str) -> dict[int, str]:
        p = schema.TABLE_PARAMS.c
        rows = fetch_in(
            conn,
            p.TBL_ID,
            tbl_ids,
            lambda cond: select(p.TBL_ID, p.PARAM_VALUE).where(cond, p.PARAM_KEY == key),
        )
        return {r[0]: r[1] for r in rows}

    def table_exists(self, conn: Connection, cat: str, db: str, name: str) -> bool:
        stmt = (
            select(_T.c.TBL_ID)
            .select_from(_T.join(_D, _T.c.DB_ID == _D.c.DB_ID))
            .where(_D.c.CTLG_NAME == cat, _D.c.NAME == db, _T.c.TBL_NAME == name)
        )
        return conn.execute(stmt).first() is not None

    def load_tables(
        self,
        conn: Connection,
        stmt: Any,
        params: dict[str, Any] | None = None,
        *,
        sd_ids: list[int | None] | None = None,
    ) -> list[hms.Table]:
        """The tables ``stmt`` (a ``table_select``, or one prepared) finds; ``sd_ids``, when
        given, receives their SD_IDs in the same order."""
        if isinstance(stmt, PreparedCore):
            rows = stmt.execute(conn, params or {}).all()
        else:
            rows = conn.execute(stmt, params or {}).all()
        if sd_ids is not None:
            sd_ids.extend(r.SD_ID for r in rows)
        if not rows:
            return []
        details = load_details(
            conn,
            tables=[r.TBL_ID for r in rows],
            sds=[r.SD_ID for r in rows if r.SD_ID is not None],
            serdes=[r.SERDE_ID for r in rows if r.SERDE_ID is not None],
            cds=[r.CD_ID for r in rows if r.CD_ID is not None],
        )
        sds = build_storage_descriptors(conn, rows, details)
        return [
            _table(
                r,
                sds.get(r.SD_ID),
                details.partition_keys.get(r.TBL_ID, []),
                details.table_params.get(r.TBL_ID, {}),
            )
            for r in rows
        ]

    def load_table_by_id(self, conn: Connection, tbl_id: int) -> hms.Table:
        return self.load_tables(conn, TABLE_BY_ID, {"tbl_id": tbl_id})[0]

    # -- writes ----------------------------------------------------------------------------------

    @writes_events
    def create_table(
        self,
        table: hms.Table,
        *,
        valid_write_id_list: str | None = None,
        constraints: hms.SQLAllTableConstraints | None = None,
    ) -> hms.Table:
        """Store a table the handler has completed (names normalised, defaults filled); returns
        it as stored.

        A transactional table created inside a transaction (Table.writeId, or Table.txnId with
        a write id allocated on the new name, as Hive's CTAS asks for one before the table
        exists) gets TBLS.WRITE_ID = that write id, checked to belong to an open txn
        (``_txn_write``); its CREATE_TABLE carries ``writeId`` and the txn's validWriteIdList.
        Other tables store 0, as Hive's ObjectStore.createTable does. ``constraints`` are
        stored with the table, their events (ADD_PRIMARYKEY, ...) after its CREATE_TABLE.
        """
        cat, db, name = table.catName, table.dbName, table.tableName

        def run(conn: Connection) -> hms.Table:
            db_row = self._db_row(conn, cat, db)
            if self.table_exists(conn, cat, db, name):
                raise hms.AlreadyExistsException(
                    message=f"Table {table_ref(cat, db, name)} already exists"
                )
            tw = self._create_txn_write(conn, table, valid_write_id_list)
            tbl_id = self._insert_table(conn, db_row.DB_ID, table, tw.row_write_id or 0)
            grants = privileges.owner_grant_rows(privileges.TABLE, tbl_id, table.privileges)
            privileges.insert_grants(conn, self.ids, privileges.TABLE, grants)
            stored = self.load_table_by_id(conn, tbl_id)
            extra = (
                self.constraints.insert_constraints(conn, cat, constraints) if constraints else []
            )
            self._emit(
                conn,
                [
                    NewEvent(
                        msg.CREATE_TABLE,
                        self.messages.create_table(
                            stored, valid_write_ids=tw.valid_write_ids, write_id=tw.write_id
                        ),
                        cat,
                        db,
                        name,
                    ),
                    *extra,
                ],
            )
            return stored

        return self.db.transaction(run)

    def _create_txn_write(
        self, conn: Connection, table: hms.Table, valid_write_id_list: str | None
    ) -> TxnWrite:
        """The write id of a create: Table.writeId, else the one Table.txnId holds on the new
        name; with both, the write id must be the txn's."""
        db, name = table.dbName, table.tableName
        write_id = table.writeId if table.writeId is not None and table.writeId > 0 else None
        txn_id = table.txnId if table.txnId is not None and table.txnId > 0 else None
        if txn_id is not None and is_transactional(table.parameters):
            held = self.txn.table_write_id(conn, db, name, txn_id)
            if write_id is None:
                write_id = held
            elif held != write_id:
                raise hms.MetaException(
                    message=f"write id {write_id} of {db}.{name} does not belong to txnid:{txn_id}"
                )
        return self._txn_write(conn, db, name, table.parameters, write_id, valid_write_id_list)

    def _insert_table(self, conn: Connection, db_id: int, table: hms.Table, write_id: int) -> int:
        (tbl_id,) = self.ids.allocate(conn, idseq.TABLE)
        sd_id = None
        if table.sd is not None:
            (cd_id,) = insert_column_descriptors(conn, self.ids, [table.sd.cols or []])
            (sd_id,) = insert_storage_descriptors(conn, self.ids, [table.sd], [cd_id])
        values = tbl_values(table)
        conn.execute(
            insert(_T).values(TBL_ID=tbl_id, DB_ID=db_id, SD_ID=sd_id, WRITE_ID=write_id, **values)
        )
        insert_rows(conn, schema.TABLE_PARAMS, param_rows("TBL_ID", tbl_id, table.parameters))
        insert_rows(conn, schema.PARTITION_KEYS, key_rows(tbl_id, table.partitionKeys))
        return tbl_id

    @writes_events
    def drop_table(
        self, cat: str, db: str, name: str, *, check: Any = None
    ) -> tuple[hms.Table, list[str]]:
        """Drop a table with its partitions and statistics.

        Returns the dropped table and its partitions' locations (for the handler's filesystem
        clean-up). ``check(table)`` may refuse the drop inside the transaction.
        """

        def run(conn: Connection) -> tuple[hms.Table, list[str]]:
            row = self._table_row(conn, cat, db, name, lock=True)
            table = self.load_table_by_id(conn, row.TBL_ID)
            if check is not None:
                check(table)
            locations = self._delete_table_rows(conn, row.TBL_ID, row.SD_ID)
            self._emit(
                conn, [NewEvent(msg.DROP_TABLE, self.messages.drop_table(table), cat, db, name)]
            )
            return table, locations

        return self.db.transaction(run)

    def _delete_table_rows(self, conn: Connection, tbl_id: int, sd_id: int | None) -> list[str]:
        p = schema.PARTITIONS.c
        part_rows = conn.execute(
            select(p.PART_ID, p.SD_ID, schema.SDS.c.LOCATION)
            .select_from(schema.PARTITIONS.outerjoin(schema.SDS, schema.SDS.c.SD_ID == p.SD_ID))
            .where(p.TBL_ID == tbl_id)
        ).all()
        locations = [r.LOCATION for r in part_rows if r.LOCATION]
        self.delete_partition_rows(
            conn, [r.PART_ID for r in part_rows], [r.SD_ID for r in part_rows]
        )
        for table, col in (
            (schema.TAB_COL_STATS, "TBL_ID"),
            (schema.TBL_COL_PRIVS, "TBL_ID"),
            (schema.TBL_PRIVS, "TBL_ID"),
            (schema.TABLE_PARAMS, "TBL_ID"),
            (schema.PARTITION_KEYS, "TBL_ID"),
        ):
            conn.execute(delete(table).where(table.c[col] == tbl_id))
        kc = schema.KEY_CONSTRAINTS.c
        conn.execute(
            delete(schema.KEY_CONSTRAINTS).where(
                or_(kc.PARENT_TBL_ID == tbl_id, kc.CHILD_TBL_ID == tbl_id)
            )
        )
        conn.execute(delete(_T).where(_T.c.TBL_ID == tbl_id))
        if sd_id is not None:
            delete_storage_descriptors(conn, [sd_id])
        return locations

    def delete_partition_rows(
        self, conn: Connection, part_ids: Sequence[int], sd_ids: Sequence[int | None]
    ) -> None:
        """Delete partitions and everything that hangs off them (partition_writes.py drops)."""
        for part in chunks(sorted(set(part_ids))):
            for table in (
                schema.PART_COL_STATS,
                schema.PART_COL_PRIVS,
                schema.PART_PRIVS,
                schema.PARTITION_PARAMS,
                schema.PARTITION_KEY_VALS,
            ):
                conn.execute(delete(table).where(table.c.PART_ID.in_(part)))
            conn.execute(delete(schema.PARTITIONS).where(schema.PARTITIONS.c.PART_ID.in_(part)))
        delete_storage_descriptors(conn, [i for i in sd_ids if i is not None])


def _table(
    row: Any, sd: hms.StorageDescriptor | None, keys: list[hms.FieldSchema], params: dict[str, str]
) -> hms.Table:
    return hms.Table(
        tableName=row.TBL_NAME,
        dbName=row.DB_NAME,
        owner=row.OWNER,
        createTime=row.CREATE_TIME,
        lastAccessTime=row.LAST_ACCESS_TIME,
        retention=row.RETENTION,
        sd=sd,
        partitionKeys=list(keys),
        parameters=dict(params),
        viewOriginalText=row.VIEW_ORIGINAL_TEXT,
        viewExpandedText=row.VIEW_EXPANDED_TEXT,
        tableType=row.TBL_TYPE or _fallback_type(row, params),
        temporary=False,
        rewriteEnabled=bool(row.IS_REWRITE_ENABLED),
        catName=row.CTLG_NAME,
        ownerType=principal_type(row.OWNER_TYPE) or hms.PrincipalType.USER,
        writeId=row.WRITE_ID if row.WRITE_ID is not None else 0,
        id=row.TBL_ID,
    )


def _fallback_type(row: Any, params: dict[str, str]) -> str:
    """ObjectStore.convertToTable for a row without TBL_TYPE (stored by old metastores, or for
    a client that sent none): a view if it has view text, external if EXTERNAL=true."""
    if row.VIEW_ORIGINAL_TEXT is not None:
        return "VIRTUAL_VIEW"
    if str(params.get("EXTERNAL", "")).lower() == "true":
        return "EXTERNAL_TABLE"
    return "MANAGED_TABLE"


def tbl_values(t: hms.Table) -> dict[str, Any]:
    return {
        "CREATE_TIME": t.createTime or 0,
        "LAST_ACCESS_TIME": t.lastAccessTime or 0,
        "OWNER": t.owner,
        "OWNER_TYPE": principal_name(t.ownerType) or "USER",
        "RETENTION": t.retention or 0,
        "TBL_NAME": t.tableName,
        "TBL_TYPE": t.tableType,
        "VIEW_EXPANDED_TEXT": t.viewExpandedText,
        "VIEW_ORIGINAL_TEXT": t.viewOriginalText,
        "IS_REWRITE_ENABLED": bool(t.rewriteEnabled),
    }


def key_rows(tbl_id: int, keys: Sequence[hms.FieldSchema] | None) -> list[dict[str, Any]]:
    return [
        {
            "TBL_ID": tbl_id,
            "PKEY_COMMENT": k.comment,
            "PKEY_NAME": k.name,
            "PKEY_TYPE": k.type,
            "INTEGER_IDX": i,
        }
        for i, k in enumerate(keys or [])
    ]


def copy_table(t: hms.Table, **changes: Any) -> hms.Table:
    new = hms.Table(**{k: getattr(t, k) for k in t.__dict__})
    for k, v in changes.items():
        setattr(new, k, v)
    return new
