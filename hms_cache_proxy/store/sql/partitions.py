"""Partitions (PARTITIONS, PARTITION_KEY_VALS, PARTITION_PARAMS and their storage descriptors).

Reading N partitions takes five queries whatever N is: the partitions joined to their
descriptors and serdes, their key values, all their parameters (partition, descriptor, serde)
in one UNION ALL, the distinct column lists, and the bucket/sort/skew lists. Filters are
decided by the one Python evaluator in store/partition_filter/ (the cache uses the same one),
after the database has narrowed the candidates with whatever the filter pins to exact string
values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Row,
    any_,
    bindparam,
    cast,
    column,
    delete,
    exists,
    func,
    select,
    update,
    values,
)
from sqlalchemy.dialects.postgresql import ARRAY

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import partnames
from hms_cache_proxy.store.colstats.accuracy import COLUMN_STATS_ACCURATE, stats_valid_for_query
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import chunks, fetch_in
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.partition_filter.binder import compile_filter
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.pushdown import KeyCondition, pushdown
from hms_cache_proxy.store.sql.details import load_details
from hms_cache_proxy.store.sql.privileges import (
    copy_table_grants_to_partitions,
    partition_level,
)
from hms_cache_proxy.store.sql.sql_base import (
    SqlPart,
    SqlShared,
    TxnWrite,
    is_transactional,
    java_list,
    now,
    replication_target,
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
    same_columns,
    sd_join,
)
from hms_cache_proxy.store.sql.tables import Tables

_P, _KV = schema.PARTITIONS, schema.PARTITION_KEY_VALS

PARTITION_COLUMNS = (
    _P.c.PART_ID,
    _P.c.PART_NAME,
    _P.c.CREATE_TIME,
    _P.c.LAST_ACCESS_TIME,
    _P.c.WRITE_ID,
    *SD_COLUMNS,
)

DDL_TIME = "transient_lastDdlTime"

# A filter's value list longer than this is not sent to the database as an IN list (bound
# parameters are limited); the compiled predicate alone decides for that key.
_PUSHDOWN_VALUES = 1000

_statements: dict[tuple[str, str], Any] = {}


def _name_order(dialect: str) -> Any:
    """Partition-name order in code points on every database (as the cache orders them)."""
    return _P.c.PART_NAME.collate("C") if dialect == "postgresql" else _P.c.PART_NAME


def _partitions_of_table(dialect: str, *, limited: bool) -> Any:
    key = (dialect, "limited" if limited else "all")
    stmt = _statements.get(key)
    if stmt is None:
        stmt = (
            select(*PARTITION_COLUMNS)
            .select_from(sd_join(_P, _P.c.SD_ID))
            .where(_P.c.TBL_ID == bindparam("tbl_id"))
            .order_by(_name_order(dialect))
        )
        if limited:
            stmt = stmt.limit(bindparam("limit"))
        _statements[key] = stmt
    return stmt


def _partitions_by_id(dialect: str) -> Any:
    key = (dialect, "by_id")
    stmt = _statements.get(key)
    if stmt is None:
        ids = (
            _P.c.PART_ID == any_(bindparam("ids", type_=ARRAY(BigInteger)))
            if dialect == "postgresql"
            else _P.c.PART_ID.in_(bindparam("ids", expanding=True))
        )
        stmt = (
            select(*PARTITION_COLUMNS)
            .select_from(sd_join(_P, _P.c.SD_ID))
            .where(_P.c.TBL_ID == bindparam("tbl_id"), ids)
        )
        _statements[key] = stmt
    return stmt


MISSING_PARTITIONS = "Some partitions to drop are missing"
"""drop_partitions' NoSuchObjectException when a named partition is absent (HMSHandler)."""

DIFFERENT_SCHEMAS = "The tables have different schemas. Their partitions cannot be exchanged."
"""exchange_partitions' MetaException when columns or partition keys differ (HMSHandler)."""

EXCHANGE_TRANSACTIONAL = (
    "Exchange partition is not allowed with transactional tables. Alternatively, use load data "
    "or insert overwrite to move partitions."
)
"""Hive's DDL refuses exchanging partitions of transactional tables before calling the
metastore (their delta directories carry the source table's write ids); refused here for
every client."""


class ResolvedTable:
    """What partition calls need to know about their table: id, keys and (lazily) itself."""

    __slots__ = ("tbl_id", "sd_id", "keys", "cat", "db", "name")

    def __init__(self, row: Any, keys: list[hms.FieldSchema], cat: str, db: str, name: str):
        self.tbl_id: int = row.TBL_ID
        self.sd_id: int | None = row.SD_ID
        self.keys = keys
        self.cat, self.db, self.name = cat, db, name

    @property
    def key_names(self) -> list[str]:
        return [k.name for k in self.keys]

    @property
    def key_types(self) -> list[str]:
        return [k.type for k in self.keys]


class Partitions(SqlPart):
    """Partitions of a table: reads (filters pushed down), add/alter/rename/drop; the table
    itself through ``tables``."""

    def __init__(self, shared: SqlShared, tables: Tables) -> None:
        super().__init__(shared)
        self.tables = tables

    # -- helpers ---------------------------------------------------------------------------------

    def resolve_table(
        self, conn: Connection, cat: str, db: str, name: str, *, lock: bool = False
    ) -> ResolvedTable:
        """The table's row and partition keys in one query (NoSuchObjectException if absent)."""
        t, d, k = schema.TBLS, schema.DBS, schema.PARTITION_KEYS
        stmt = (
            select(t.c.TBL_ID, t.c.SD_ID, k.c.PKEY_NAME, k.c.PKEY_TYPE, k.c.PKEY_COMMENT)
            .select_from(t.join(d, t.c.DB_ID == d.c.DB_ID).outerjoin(k, k.c.TBL_ID == t.c.TBL_ID))
            .where(d.c.CTLG_NAME == cat, d.c.NAME == db, t.c.TBL_NAME == name)
            .order_by(k.c.INTEGER_IDX)
        )
        rows = conn.execute(stmt).all()
        if not rows:
            raise hms.NoSuchObjectException(message=f"{table_ref(cat, db, name)} table not found")
        if lock:
            conn.execute(select(t.c.TBL_ID).where(t.c.TBL_ID == rows[0].TBL_ID).with_for_update())
        keys = [
            hms.FieldSchema(name=r.PKEY_NAME, type=r.PKEY_TYPE, comment=r.PKEY_COMMENT)
            for r in rows
            if r.PKEY_NAME is not None
        ]
        return ResolvedTable(rows[0], keys, cat, db, name)

    def _name_order(self, col: Any) -> Any:
        return _name_order(self.db.dialect) if col is _P.c.PART_NAME else col

    def load_partitions(
        self,
        conn: Connection,
        tk: ResolvedTable,
        part_ids: Sequence[int] | None,
        *,
        limit: int | None = None,
    ) -> list[hms.Partition]:
        """Partitions of the table in partition-name order: all of them (``part_ids`` None,
        up to ``limit``) or those with the given ids. Two queries whatever their number."""
        if part_ids is None:
            stmt = _partitions_of_table(self.db.dialect, limited=limit is not None and limit >= 0)
            params: dict[str, Any] = {"tbl_id": tk.tbl_id}
            if limit is not None and limit >= 0:
                params["limit"] = limit
            rows = conn.execute(stmt, params).all()
        else:
            stmt = _partitions_by_id(self.db.dialect)
            rows = []
            for part in chunks(sorted(set(part_ids)), 30_000):
                rows.extend(conn.execute(stmt, {"tbl_id": tk.tbl_id, "ids": list(part)}).all())
            rows.sort(key=lambda r: r.PART_NAME)
        if not rows:
            return []
        details = load_details(
            conn,
            partitions=[r.PART_ID for r in rows],
            sds=[r.SD_ID for r in rows if r.SD_ID is not None],
            serdes=[r.SERDE_ID for r in rows if r.SERDE_ID is not None],
            cds=[r.CD_ID for r in rows if r.CD_ID is not None],
        )
        sds = build_storage_descriptors(conn, rows, details)
        no_params: dict[str, str] = {}
        return [
            hms.Partition(
                values=details.key_values.get(r.PART_ID, []),
                dbName=tk.db,
                tableName=tk.name,
                createTime=r.CREATE_TIME,
                lastAccessTime=r.LAST_ACCESS_TIME,
                sd=sds.get(r.SD_ID),
                parameters=dict(details.part_params.get(r.PART_ID, no_params)),
                catName=tk.cat,
                writeId=r.WRITE_ID if r.WRITE_ID is not None else 0,
            )
            for r in rows
        ]

    def _key_values(self, conn: Connection, part_ids: Sequence[int]) -> dict[int, list[str]]:
        return load_details(conn, partitions=part_ids).key_values

    def _candidates(
        self, conn: Connection, tk: ResolvedTable, conditions: Sequence[KeyCondition]
    ) -> list[tuple[int, str, list[str]]]:
        """(id, name, values) of the partitions satisfying every exact-value condition."""
        stmt = select(_P.c.PART_ID, _P.c.PART_NAME).where(_P.c.TBL_ID == tk.tbl_id)
        names = self._exact_names(tk, conditions)
        rows: Sequence[Row[Any, Any]]
        if names is not None:
            # Every key is pinned: look the names up in the (PART_NAME, TBL_ID) index.
            rows = fetch_in(conn, _P.c.PART_NAME, names, lambda cond: stmt.where(cond))
        else:
            for cond in conditions:
                if len(cond.values) > _PUSHDOWN_VALUES:
                    continue  # the predicate decides; the statement stays small
                kv = _KV.alias()
                stmt = stmt.where(
                    exists().where(
                        kv.c.PART_ID == _P.c.PART_ID,
                        kv.c.INTEGER_IDX == cond.key_index,
                        kv.c.PART_KEY_VAL.in_(list(cond.values)),
                    )
                )
            rows = conn.execute(stmt).all()
        if not rows:
            return []
        values = self._key_values(conn, [r.PART_ID for r in rows])
        out = [(r.PART_ID, r.PART_NAME, values.get(r.PART_ID, [])) for r in rows]
        out.sort(key=lambda x: x[1])
        return out

    @staticmethod
    def _exact_names(
        tk: ResolvedTable, conditions: Sequence[KeyCondition], most: int = 1000
    ) -> list[str] | None:
        """The partition names the conditions allow when they pin every key, else None."""
        allowed: dict[int, set[str]] = {}
        for cond in conditions:
            values = set(cond.values)
            allowed[cond.key_index] = allowed.get(cond.key_index, values) & values
        if not tk.keys or set(allowed) != set(range(len(tk.keys))):
            return None
        combos: list[list[str]] = [[]]
        for i in range(len(tk.keys)):
            combos = [c + [v] for c in combos for v in sorted(allowed[i])]
            if len(combos) > most:
                return None
        return [partnames.make_part_name(tk.key_names, c) for c in combos]

    def _matching(
        self,
        conn: Connection,
        tk: ResolvedTable,
        conditions: Sequence[KeyCondition],
        accept: Callable[[Sequence[str]], bool] | None,
        max_parts: int | None,
    ) -> list[tuple[int, str, list[str]]]:
        found = self._candidates(conn, tk, conditions)
        if accept is not None:
            found = [c for c in found if accept(c[2])]
        if max_parts is not None and max_parts >= 0:
            found = found[:max_parts]
        return found

    # -- reads -----------------------------------------------------------------------------------

    def get_partition(self, cat: str, db: str, tbl: str, values: Sequence[str]) -> hms.Partition:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            name = self.name_for(tk, values)
            parts = self.load_by_names(conn, tk, [name])
        if not parts:
            raise hms.NoSuchObjectException(message=f"partition values={java_list(values)}")
        return parts[0]

    def get_partition_by_name(self, cat: str, db: str, tbl: str, name: str) -> hms.Partition:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            parts = self.load_by_names(conn, tk, [name])
        if not parts:
            raise hms.NoSuchObjectException(
                message=f"partition {name} not found in {table_ref(cat, db, tbl)}"
            )
        return parts[0]

    def get_partitions(
        self, cat: str, db: str, tbl: str, max_parts: int = -1
    ) -> list[hms.Partition]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            if max_parts == 0:
                return []
            return self.load_partitions(conn, tk, None, limit=max_parts if max_parts >= 0 else None)

    def get_partitions_by_names(
        self, cat: str, db: str, tbl: str, names: Sequence[str]
    ) -> list[hms.Partition]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return self.load_by_names(conn, tk, names)

    def load_by_names(
        self, conn: Connection, tk: ResolvedTable, names: Sequence[str]
    ) -> list[hms.Partition]:
        wanted = sorted(set(names))
        ids = (
            [
                r[0]
                for r in fetch_in(
                    conn,
                    _P.c.PART_NAME,
                    wanted,
                    lambda cond: select(_P.c.PART_ID).where(_P.c.TBL_ID == tk.tbl_id, cond),
                )
            ]
            if wanted
            else []
        )
        return self.load_partitions(conn, tk, ids) if ids else []

    def get_partitions_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = -1
    ) -> list[hms.Partition]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            ids = [c[0] for c in self._filtered(conn, tk, filter_text, max_parts)]
            return self.load_partitions(conn, tk, ids) if ids else []

    def count_partitions_by_filter(self, cat: str, db: str, tbl: str, filter_text: str) -> int:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return len(self._filtered(conn, tk, filter_text, None))

    def get_partition_names_by_filter(
        self, cat: str, db: str, tbl: str, filter_text: str, max_parts: int = -1
    ) -> list[str]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return [c[1] for c in self._filtered(conn, tk, filter_text, max_parts)]

    def _filtered(
        self, conn: Connection, tk: ResolvedTable, filter_text: str, max_parts: int | None
    ) -> list[tuple[int, str, list[str]]]:
        node = parse(filter_text or "")
        accept = compile_filter(node, tk.key_names, tk.key_types)
        conditions = pushdown(node, tk.key_names, tk.key_types)
        return self._matching(conn, tk, conditions, accept, max_parts)

    def get_partitions_ps(
        self, cat: str, db: str, tbl: str, partial: Sequence[str] | None, max_parts: int = -1
    ) -> list[hms.Partition]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            ids = [c[0] for c in self._ps(conn, tk, partial, max_parts)]
            return self.load_partitions(conn, tk, ids) if ids else []

    def get_partition_names_ps(
        self, cat: str, db: str, tbl: str, partial: Sequence[str] | None, max_parts: int = -1
    ) -> list[str]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return [c[1] for c in self._ps(conn, tk, partial, max_parts)]

    def _ps(
        self,
        conn: Connection,
        tk: ResolvedTable,
        partial: Sequence[str] | None,
        max_parts: int | None,
    ) -> list[tuple[int, str, list[str]]]:
        partial = list(partial or [])
        if len(partial) > len(tk.keys):
            raise hms.MetaException(
                message=f"Incorrect number of partition values. numPartKeys={len(tk.keys)}, "
                f"part_val={java_list(partial)}"
            )
        conditions = [KeyCondition(i, (v,)) for i, v in enumerate(partial) if v not in ("", None)]
        return self._matching(conn, tk, conditions, None, max_parts)

    def get_partition_names(self, cat: str, db: str, tbl: str, max_parts: int = -1) -> list[str]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            if max_parts == 0:
                return []
            stmt = (
                select(_P.c.PART_NAME)
                .where(_P.c.TBL_ID == tk.tbl_id)
                .order_by(self._name_order(_P.c.PART_NAME))
            )
            if max_parts >= 0:
                stmt = stmt.limit(max_parts)
            return [r[0] for r in conn.execute(stmt)]

    def partition_values(
        self, cat: str, db: str, tbl: str
    ) -> tuple[list[hms.FieldSchema], list[tuple[str, list[str]]]]:
        """Every partition's (name, values), with the table's keys: the input of
        get_partition_values, which the handler shapes (projection, distinct, order)."""
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return tk.keys, [(c[1], c[2]) for c in self._candidates(conn, tk, [])]

    def name_for(self, tk: ResolvedTable, values: Sequence[str]) -> str:
        """The partition name of ``values`` (Warehouse.makePartName: a count mismatch is
        MetaException ``Invalid partition key & values; keys [a, b, ], values [x, ]``)."""
        try:
            return partnames.make_part_name(tk.key_names, list(values or []))
        except partnames.PartitionNameError as exc:
            raise hms.MetaException(message=str(exc)) from None

    # -- writes ----------------------------------------------------------------------------------

    @writes_events
    def add_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        parts: Sequence[hms.Partition],
        *,
        if_not_exists: bool = False,
        valid_write_id_list: str | None = None,
        write_id: int | None = None,
        prepare: Callable[
            [hms.Table, Callable[[Sequence[str]], set[str]]], list[tuple[str, hms.Partition]]
        ]
        | None = None,
    ) -> list[hms.Partition]:
        """Add partitions in one transaction; returns those added, as stored (existing ones are
        skipped with ``if_not_exists``, else AlreadyExistsException).

        ``prepare(table, existing)`` replaces the store's own checks: it runs inside the
        transaction with the locked table and ``existing(names)`` (which of these partition
        names exist), and returns the (name, partition) pairs to insert exactly as given
        (locations, parameters and createTime filled). The ADD_PARTITION event is then
        written even when nothing was new, as Hive does.

        Write ids: on a transactional table, ``write_id`` or else the partitions' writeId (one
        value for the call) must belong to an open txn (``_txn_write``); the new partitions
        get it as PARTITIONS.WRITE_ID and the event carries it with the validWriteIdList. Hive
        4.0's ObjectStore stores 0 whatever the partitions say (convertToMPart sets no write
        id); a partition added by an open txn is that txn's write, so readers that do not see
        the txn must not trust its statistics. Other tables store 0."""

        def run(conn: Connection) -> list[hms.Partition]:
            tk = self.resolve_table(conn, cat, db, tbl, lock=True)
            table = self.tables.load_table_by_id(conn, tk.tbl_id)
            if prepare is not None:
                todo = prepare(table, lambda names: self._existing_names(conn, tk, names))
            else:
                named: dict[str, hms.Partition] = {}
                for p in parts:
                    name = self.name_for(tk, p.values)
                    if name in named:
                        raise hms.MetaException(message=f"Duplicate partitions in the list: {name}")
                    named[name] = p
                existing = self._existing_names(conn, tk, list(named))
                if existing and not if_not_exists:
                    first = sorted(existing)[0]
                    raise hms.AlreadyExistsException(
                        message=f"Partition already exists: {table_ref(cat, db, tbl)} {first}"
                    )
                todo = [(n, p) for n, p in named.items() if n not in existing]
                if not todo:
                    return []
            groups: list[tuple[int | None, list[tuple[str, hms.Partition]]]] = [(None, todo)]
            if is_transactional(table.parameters):  # other tables take no write id (Hive)
                groups = self._write_id_groups(conn, db, write_id, todo)
            ids: list[int] = []
            for call_write_id, group in groups:
                tw = self._txn_write(
                    conn, db, tbl, table.parameters, call_write_id, valid_write_id_list
                )
                if len(groups) > 1 and tw.write_id is not None:
                    raise hms.MetaException(
                        message="The partitions of one call carry different write ids: "
                        + java_list([w for w, _ in groups])
                    )
                ids += self._insert_partitions(
                    conn, tk, table, group, tw.row_write_id, prepared=prepare is not None
                )
            added: list[hms.Partition] = []
            if ids:
                added = _in_order(self.load_partitions(conn, tk, ids), [p for _, p in todo])
            self._emit(
                conn,
                [
                    NewEvent(
                        msg.ADD_PARTITION,
                        self.messages.add_partition(
                            table,
                            added,
                            valid_write_ids=tw.valid_write_ids,
                            write_id=tw.write_id,
                        ),
                        cat,
                        db,
                        tbl,
                    )
                ],
            )
            return added

        return self.db.transaction(run)

    @staticmethod
    def _write_id_groups(
        conn: Connection,
        db: str,
        write_id: int | None,
        todo: list[tuple[str, hms.Partition]],
    ) -> list[tuple[int | None, list[tuple[str, hms.Partition]]]]:
        """The call's write id with its partitions; on a replication target, partitions that
        carry different write ids (LoadPartitions batches a bootstrapped table's partitions,
        each with the source's committed write id it was last written with) are grouped by
        them, each group then checked on its own (only committed source ids may mix)."""
        carried = {p.writeId for _, p in todo if p.writeId is not None and p.writeId > 0}
        if (write_id is not None and write_id > 0) or len(carried) < 2:
            return [(_call_write_id(write_id, [p for _, p in todo]), todo)]
        if not replication_target(conn, db):
            _call_write_id(None, [p for _, p in todo])  # refuses, naming them
        groups: dict[int | None, list[tuple[str, hms.Partition]]] = {}
        for name, p in todo:
            w = p.writeId if p.writeId is not None and p.writeId > 0 else None
            groups.setdefault(w, []).append((name, p))
        return sorted(groups.items(), key=lambda g: g[0] or 0)

    def _existing_names(
        self, conn: Connection, tk: ResolvedTable, names: Sequence[str]
    ) -> set[str]:
        return {
            r[0]
            for r in fetch_in(
                conn,
                _P.c.PART_NAME,
                sorted(set(names)),
                lambda cond: select(_P.c.PART_NAME).where(_P.c.TBL_ID == tk.tbl_id, cond),
            )
        }

    def _insert_partitions(
        self,
        conn: Connection,
        tk: ResolvedTable,
        table: hms.Table,
        todo: Sequence[tuple[str, hms.Partition]],
        write_id: int | None,
        *,
        prepared: bool = False,
    ) -> list[int]:
        """Insert the partitions (WRITE_ID ``write_id`` or 0); returns their PART_IDs in order."""
        ts = now()
        table_cols = table.sd.cols if table.sd is not None else []
        table_cd = None
        if tk.sd_id is not None:
            table_cd = conn.execute(
                select(schema.SDS.c.CD_ID).where(schema.SDS.c.SD_ID == tk.sd_id)
            ).scalar()
        # Partitions whose columns equal the table's share its column descriptor; the others
        # get one new descriptor per distinct column list.
        cd_for: dict[tuple[tuple[str, str, str | None], ...], int | None] = {}
        new_lists: list[list[hms.FieldSchema]] = []
        added: list[hms.Partition] = []
        for name, p in todo:
            if prepared:  # the handler has applied Hive's rules already
                sd = _copy_sd(p.sd)
                params = dict(p.parameters or {})
            else:
                sd = _copy_sd(p.sd) if p.sd is not None else _copy_sd(table.sd)
                if (
                    sd is not None
                    and not sd.location
                    and table.sd is not None
                    and table.sd.location
                ):
                    sd.location = f"{table.sd.location.rstrip('/')}/{name}"
                params = dict(p.parameters or {})
                if not params.get(DDL_TIME) or params.get(DDL_TIME) == "0":
                    params[DDL_TIME] = str(ts)
            part = hms.Partition(
                values=list(p.values),
                dbName=tk.db,
                tableName=tk.name,
                createTime=p.createTime if prepared and p.createTime is not None else ts,
                lastAccessTime=p.lastAccessTime or 0,
                sd=sd,
                parameters=params,
                catName=tk.cat,
                writeId=write_id if write_id is not None and write_id > 0 else 0,
            )
            added.append(part)
            if sd is not None:
                key = _cols_key(sd.cols)
                if key not in cd_for:
                    if table_cd is not None and same_columns(sd.cols, table_cols):
                        cd_for[key] = table_cd
                    else:
                        cd_for[key] = None
                        new_lists.append(sd.cols or [])
        new_cds = iter(insert_column_descriptors(conn, self.ids, new_lists))
        for key, cd in list(cd_for.items()):
            if cd is None:
                cd_for[key] = next(new_cds)
        with_sd = [p for p in added if p.sd is not None]
        sd_ids = iter(
            insert_storage_descriptors(
                conn,
                self.ids,
                [p.sd for p in with_sd],
                [cd_for[_cols_key(p.sd.cols)] for p in with_sd],
            )
        )
        part_ids = self.ids.allocate(conn, idseq.PARTITION, len(added))
        rows: list[dict[str, Any]] = []
        kv_rows: list[dict[str, Any]] = []
        param_rows_: list[dict[str, Any]] = []
        for (name, _), part, part_id in zip(todo, added, part_ids, strict=True):
            rows.append(
                {
                    "PART_ID": part_id,
                    "CREATE_TIME": part.createTime,
                    "LAST_ACCESS_TIME": part.lastAccessTime,
                    "PART_NAME": name,
                    "SD_ID": next(sd_ids) if part.sd is not None else None,
                    "TBL_ID": tk.tbl_id,
                    "WRITE_ID": part.writeId,
                }
            )
            kv_rows.extend(
                {"PART_ID": part_id, "PART_KEY_VAL": v, "INTEGER_IDX": i}
                for i, v in enumerate(part.values)
            )
            param_rows_.extend(param_rows("PART_ID", part_id, part.parameters))
        insert_rows(conn, _P, rows)
        insert_rows(conn, _KV, kv_rows)
        insert_rows(conn, schema.PARTITION_PARAMS, param_rows_)
        if partition_level(table.parameters):
            copy_table_grants_to_partitions(conn, self.ids, tk.tbl_id, part_ids)
        return list(part_ids)

    @writes_events
    def alter_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        new_parts: Sequence[hms.Partition],
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        prepare: Callable[[hms.Partition, hms.Partition], None] | None = None,
        is_truncate: bool = False,
    ) -> list[tuple[hms.Partition, hms.Partition]]:
        """Replace partitions (found by their values); returns (before, after) pairs, as stored.

        A missing partition is NoSuchObjectException ``partition values=[a, b]`` (Hive's
        ObjectStore.getPartition). ``prepare(before, after)`` may adjust each new partition
        inside the transaction. One ALTER_PARTITION event per partition (``is_truncate`` marks
        them as truncate_table's).

        Write ids (Hive's ObjectStore.alterPartitions): only a transactional table takes one,
        ``write_id`` (the request's) or else the new partitions' writeId (one value; echoes of
        the stored ones count only while their txn is open). It must belong to an open txn,
        becomes PARTITIONS.WRITE_ID, and drops COLUMN_STATS_ACCURATE of partitions whose stored
        statistics are not valid for the writer's snapshot. Without one WRITE_ID stays."""

        return self.db.transaction(
            lambda conn: self.alter_partitions_in(
                conn,
                cat,
                db,
                tbl,
                new_parts,
                write_id=write_id,
                valid_write_id_list=valid_write_id_list,
                prepare=prepare,
                is_truncate=is_truncate,
            )
        )

    @writes_events
    def alter_partitions_in(
        self,
        conn: Connection,
        cat: str,
        db: str,
        tbl: str,
        new_parts: Sequence[hms.Partition],
        *,
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
        prepare: Callable[[hms.Partition, hms.Partition], None] | None = None,
        is_truncate: bool = False,
    ) -> list[tuple[hms.Partition, hms.Partition]]:
        """``alter_partitions`` inside the caller's write transaction ``conn``."""
        tk = self.resolve_table(conn, cat, db, tbl, lock=True)
        table = self.tables.load_table_by_id(conn, tk.tbl_id)
        names = [self.name_for(tk, p.values) for p in new_parts]
        before = {p_name(tk, p): p for p in self.load_by_names(conn, tk, names)}
        for name, p in zip(names, new_parts, strict=True):
            if name not in before:
                raise hms.NoSuchObjectException(message=f"partition values={java_list(p.values)}")
        if len(before) != len(names):  # one partition twice (HiveAlterHandler's words)
            raise hms.InvalidOperationException(
                message=f"Alter partition operation failed: new parts size {len(names)} "
                f"not matching with old parts size {len(before)}"
            )
        tw = self._partition_txn_write(
            conn,
            tk,
            table,
            write_id,
            [(p, before[name]) for name, p in zip(names, new_parts, strict=True)],
            valid_write_id_list,
        )
        pairs = []
        for name, p in zip(names, new_parts, strict=True):
            old = before[name]
            new = _copy_partition(p, dbName=tk.db, tableName=tk.name, catName=tk.cat)
            if prepare is not None:
                prepare(old, new)
            self._stamp_partition(new, old, tw)
            pairs.append((name, old, new))
        ids = self._replace_partitions(conn, tk, table, pairs)
        stored = _in_order(self.load_partitions(conn, tk, list(ids.values())), new_parts)
        self._emit(
            conn,
            [
                NewEvent(
                    msg.ALTER_PARTITION,
                    self.messages.alter_partition(
                        table,
                        old,
                        new,
                        is_truncate=is_truncate,
                        write_id=tw.event_write_id,
                        valid_write_ids=tw.valid_write_ids,
                    ),
                    cat,
                    db,
                    tbl,
                )
                for (_, old, _), new in zip(pairs, stored, strict=True)
            ],
        )
        return [(old, new) for (_, old, _), new in zip(pairs, stored, strict=True)]

    @writes_events
    def truncate_table(
        self,
        cat: str,
        db: str,
        name: str,
        part_names: Sequence[str] | None,
        *,
        empty: Callable[[str | None, list[str | None] | None], None],
        reset: Callable[[dict[str, str]], None],
        write_id: int | None = None,
        valid_write_id_list: str | None = None,
    ) -> None:
        """Truncate in one write transaction: the table's row is locked, then the table (or the
        named partitions) is read from the database, ``empty(table_location, partition_locations)``
        runs once (``None`` for an unpartitioned table's partitions), ``reset(parameters)`` on
        each parameter map, and what was read is written back
        (ALTER_TABLE or ALTER_PARTITION events with isTruncateOp). Reading inside the write
        under the lock means no concurrent write, through any instance, is overwritten."""

        def run(conn: Connection) -> None:
            tk = self.resolve_table(conn, cat, db, name, lock=True)
            table = self.tables.load_table_by_id(conn, tk.tbl_id)
            wid = write_id if write_id is not None and write_id > 0 else None
            if wid is not None and is_transactional(table.parameters):
                # Refuse a write id of no open txn before any directory is emptied.
                self.txn.require_open_write_id(conn, db, name, wid)
            if not table.partitionKeys:
                empty(table.sd.location if table.sd else None, None)
                table.parameters = dict(table.parameters or {})
                reset(table.parameters)
                self.tables.alter_table_in(
                    conn,
                    cat,
                    db,
                    name,
                    table,
                    write_id=wid,
                    valid_write_id_list=valid_write_id_list,
                    is_truncate=True,
                )
                return
            if part_names is None:
                parts = self.load_partitions(conn, tk, None)
            else:
                parts = self.load_by_names(conn, tk, part_names)
            empty(
                table.sd.location if table.sd else None,
                [p.sd.location if p.sd else None for p in parts],
            )
            for p in parts:
                p.parameters = dict(p.parameters or {})
                reset(p.parameters)
            if parts:
                self.alter_partitions_in(
                    conn,
                    cat,
                    db,
                    name,
                    parts,
                    write_id=wid,
                    valid_write_id_list=valid_write_id_list,
                    is_truncate=True,
                )

        self.db.transaction(run)

    def _partition_txn_write(
        self,
        conn: Connection,
        tk: ResolvedTable,
        table: hms.Table,
        write_id: int | None,
        changes: Sequence[tuple[hms.Partition, hms.Partition]],
        valid_write_id_list: str | None,
    ) -> TxnWrite:
        """The TxnWrite of an alter or rename of partitions: ``write_id`` (the request's),
        else the one new write id the (new, old) pairs carry (a value differing from the
        stored one; several: MetaException). Values equal to the stored ones are what clients
        send back as read: they name a write only while their txn is open (one such txn),
        see ``_txn_write``."""
        params = table.parameters
        if write_id is not None and write_id > 0 or not is_transactional(params):
            return self._txn_write(conn, tk.db, tk.name, params, write_id, valid_write_id_list)
        given = [(new.writeId, old.writeId) for new, old in changes if (new.writeId or 0) > 0]
        fresh = [hms.Partition(writeId=w) for w, stored in given if w != stored]
        carried = _call_write_id(None, fresh)
        if carried is not None:
            return self._txn_write(conn, tk.db, tk.name, params, carried, valid_write_id_list)
        echoes = {w for w, _ in given}
        still_open = self.txn.open_write_ids(conn, tk.db, tk.name, echoes) if echoes else set()
        if len(still_open) != 1:
            return TxnWrite(valid_write_ids=valid_write_id_list)
        (echo,) = still_open
        return self._txn_write(
            conn, tk.db, tk.name, params, echo, valid_write_id_list, stored_write_id=echo
        )

    def _stamp_partition(self, new: hms.Partition, old: hms.Partition, tw: TxnWrite) -> None:
        """ObjectStore.alterPartitionNoTxn: the write id (else the stored one) and, for a write
        whose snapshot cannot use the stored statistics, no COLUMN_STATS_ACCURATE."""
        if tw.write_id is None:
            new.writeId = tw.replicated_write_id or old.writeId
            return
        new.writeId = tw.write_id
        if COLUMN_STATS_ACCURATE in (new.parameters or {}) and not stats_valid_for_query(
            old.parameters, old.writeId, tw.valid_write_ids, True
        ):
            new.parameters = {k: v for k, v in new.parameters.items() if k != COLUMN_STATS_ACCURATE}

    def _replace_partitions(
        self,
        conn: Connection,
        tk: ResolvedTable,
        table: hms.Table,
        pairs: Sequence[tuple[str, hms.Partition, hms.Partition]],
    ) -> dict[str, int]:
        """Rewrite partitions in place: same PART_IDs, new rows for everything hanging off them.
        Returns the PART_IDs by (old) partition name."""
        rows = fetch_in(
            conn,
            _P.c.PART_NAME,
            [n for n, _, _ in pairs],
            lambda cond: select(_P.c.PART_ID, _P.c.PART_NAME, _P.c.SD_ID).where(
                _P.c.TBL_ID == tk.tbl_id, cond
            ),
        )
        by_name = {r.PART_NAME: r for r in rows}
        part_ids = [by_name[n].PART_ID for n, _, _ in pairs]
        old_sds = [by_name[n].SD_ID for n, _, _ in pairs if by_name[n].SD_ID is not None]
        for part in chunks(part_ids):
            conn.execute(
                delete(schema.PARTITION_PARAMS).where(schema.PARTITION_PARAMS.c.PART_ID.in_(part))
            )
            conn.execute(delete(_KV).where(_KV.c.PART_ID.in_(part)))
            conn.execute(update(_P).where(_P.c.PART_ID.in_(part)).values(SD_ID=None))
        # New descriptors first, so a column descriptor the old and new share stays alive.
        table_cd = None
        if tk.sd_id is not None:
            table_cd = conn.execute(
                select(schema.SDS.c.CD_ID).where(schema.SDS.c.SD_ID == tk.sd_id)
            ).scalar()
        old_cd = {
            r.SD_ID: r.CD_ID
            for r in fetch_in(
                conn,
                schema.SDS.c.SD_ID,
                old_sds,
                lambda cond: select(schema.SDS.c.SD_ID, schema.SDS.c.CD_ID).where(cond),
            )
        }
        table_cols = table.sd.cols if table.sd is not None else []
        cd_ids: list[int | None] = []
        new_lists: list[list[hms.FieldSchema]] = []
        pending: list[int] = []
        for name, old, new in pairs:
            if new.sd is None:
                continue
            if table_cd is not None and same_columns(new.sd.cols, table_cols):
                cd_ids.append(table_cd)
            elif old.sd is not None and same_columns(new.sd.cols, old.sd.cols):
                cd_ids.append(old_cd.get(by_name[name].SD_ID))
            else:
                pending.append(len(cd_ids))
                cd_ids.append(None)
                new_lists.append(new.sd.cols or [])
        for idx, cd in zip(
            pending, insert_column_descriptors(conn, self.ids, new_lists), strict=True
        ):
            cd_ids[idx] = cd
        with_sd = [(n, new) for n, _, new in pairs if new.sd is not None]
        sd_ids = dict(
            zip(
                [n for n, _ in with_sd],
                insert_storage_descriptors(conn, self.ids, [p.sd for _, p in with_sd], cd_ids),
                strict=True,
            )
        )
        kv_rows: list[dict[str, Any]] = []
        prm: list[dict[str, Any]] = []
        part_rows: list[tuple[Any, ...]] = []
        for name, _, new in pairs:
            pid = by_name[name].PART_ID
            part_rows.append(
                (
                    pid,
                    sd_ids.get(name),
                    new.createTime or 0,
                    new.lastAccessTime or 0,
                    new.writeId if new.writeId and new.writeId > 0 else 0,
                )
            )
            kv_rows.extend(
                {"PART_ID": pid, "PART_KEY_VAL": v, "INTEGER_IDX": i}
                for i, v in enumerate(new.values)
            )
            prm.extend(param_rows("PART_ID", pid, new.parameters))
        _update_partition_rows(conn, part_rows)
        insert_rows(conn, _KV, kv_rows)
        insert_rows(conn, schema.PARTITION_PARAMS, prm)
        delete_storage_descriptors(conn, old_sds)
        return {n: by_name[n].PART_ID for n, _, _ in pairs}

    @writes_events
    def rename_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        old_values: Sequence[str],
        new_part: hms.Partition,
        *,
        prepare: Callable[[hms.Table, hms.Partition, hms.Partition], None] | None = None,
        valid_write_id_list: str | None = None,
    ) -> tuple[hms.Partition, hms.Partition]:
        """Rename a partition (new values, maybe a new location); returns (before, after), as
        stored. The write id is the new partition's writeId, as in ``alter_partitions``."""

        def run(conn: Connection) -> tuple[hms.Partition, hms.Partition]:
            tk = self.resolve_table(conn, cat, db, tbl, lock=True)
            table = self.tables.load_table_by_id(conn, tk.tbl_id)
            old_name = self.name_for(tk, old_values)
            new_name = self.name_for(tk, new_part.values)
            found = self.load_by_names(conn, tk, [old_name])
            if not found:
                raise hms.InvalidOperationException(
                    message="Unable to rename partition because old partition does not exist"
                )
            if self.load_by_names(conn, tk, [new_name]):
                # HiveAlterHandler: "Partition already exists:<db>.<tbl>.[v]", names as the
                # client sent them, which the handler knows.
                raise hms.AlreadyExistsException(
                    message=f"Partition already exists:{db}.{tbl}.{java_list(new_part.values)}"
                )
            old = found[0]
            new = _copy_partition(new_part, dbName=tk.db, tableName=tk.name, catName=tk.cat)
            tw = self._partition_txn_write(conn, tk, table, None, [(new, old)], valid_write_id_list)
            if prepare is not None:
                prepare(table, old, new)
            self._stamp_partition(new, old, tw)
            ids = self._replace_partitions(conn, tk, table, [(old_name, old, new)])
            conn.execute(
                update(_P)
                .where(_P.c.TBL_ID == tk.tbl_id, _P.c.PART_NAME == old_name)
                .values(PART_NAME=new_name)
            )
            conn.execute(
                update(schema.PART_COL_STATS)
                .where(
                    schema.PART_COL_STATS.c.PART_ID.in_(
                        select(_P.c.PART_ID)
                        .where(_P.c.TBL_ID == tk.tbl_id, _P.c.PART_NAME == new_name)
                        .scalar_subquery()
                    )
                )
                .values(PARTITION_NAME=new_name)
            )
            (stored,) = self.load_partitions(conn, tk, [ids[old_name]])
            self._emit(
                conn,
                [
                    NewEvent(
                        msg.ALTER_PARTITION,
                        self.messages.alter_partition(
                            table,
                            old,
                            stored,
                            write_id=tw.event_write_id,
                            valid_write_ids=tw.valid_write_ids,
                        ),
                        cat,
                        db,
                        tbl,
                    )
                ],
            )
            return old, stored

        return self.db.transaction(run)

    @writes_events
    def drop_partitions(
        self,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        if_exists: bool = False,
        check: Callable[[hms.Table, list[hms.Partition]], None] | None = None,
    ) -> tuple[hms.Table, list[hms.Partition]]:
        """Drop partitions by name; returns the table and the dropped partitions.

        A missing name raises NoSuchObjectException unless ``if_exists``."""

        def run(conn: Connection) -> tuple[hms.Table, list[hms.Partition]]:
            tk = self.resolve_table(conn, cat, db, tbl, lock=True)
            table = self.tables.load_table_by_id(conn, tk.tbl_id)
            found = self.load_by_names(conn, tk, names)
            if not if_exists and len(found) < len(set(names)):
                raise hms.NoSuchObjectException(message=MISSING_PARTITIONS)
            if not found:
                return table, []
            if check is not None:
                check(table, found)
            ids = fetch_in(
                conn,
                _P.c.PART_NAME,
                [p_name(tk, p) for p in found],
                lambda cond: select(_P.c.PART_ID, _P.c.SD_ID).where(_P.c.TBL_ID == tk.tbl_id, cond),
            )
            self.tables.delete_partition_rows(
                conn, [r.PART_ID for r in ids], [r.SD_ID for r in ids]
            )
            self._emit(
                conn,
                [
                    NewEvent(
                        msg.DROP_PARTITION, self.messages.drop_partition(table, [p]), cat, db, tbl
                    )
                    for p in found
                ],
            )
            return table, found

        return self.db.transaction(run)

    @writes_events
    def exchange_partitions(
        self,
        cat: str,
        source_db: str,
        source_tbl: str,
        dest_db: str,
        dest_tbl: str,
        spec: Mapping[str, str],
        *,
        prepare: Callable[[hms.Table, hms.Table, list[tuple[hms.Partition, hms.Partition]]], None]
        | None = None,
    ) -> list[hms.Partition]:
        """Move the source table's partitions that ``spec`` names (a prefix of its keys) to the
        destination table in one transaction, with Hive 4.0's checks and messages
        (HMSHandler.exchange_partitions, all MetaException); returns them as now stored.

        As Hive's ObjectStore does it, they are added to the destination (new PART_IDs, at
        ``<destination location>/<name>``, parameters and times kept) and dropped from the
        source with everything hanging off them, column statistics included. Events: one
        ADD_PARTITION on the destination, then a DROP_PARTITION per partition on the source.
        ``prepare(source, dest, pairs)`` runs inside the transaction before anything is
        written, with each (source partition, destination partition to store); it may change
        the latter's location, and raising rolls everything back."""

        def run(conn: Connection) -> list[hms.Partition]:
            dst_tk = self._exchanged_table(conn, cat, dest_db, dest_tbl, "destination")
            src_tk = self._exchanged_table(conn, cat, source_db, source_tbl, "source")
            for tbl_id in sorted({dst_tk.tbl_id, src_tk.tbl_id}):  # one order: no deadlock
                conn.execute(
                    select(schema.TBLS.c.TBL_ID)
                    .where(schema.TBLS.c.TBL_ID == tbl_id)
                    .with_for_update()
                )
            src = self.tables.load_table_by_id(conn, src_tk.tbl_id)
            dst = self.tables.load_table_by_id(conn, dst_tk.tbl_id)
            if is_transactional(src.parameters) or is_transactional(dst.parameters):
                raise hms.MetaException(message=EXCHANGE_TRANSACTIONAL)
            wanted = {k.lower(): v for k, v in spec.items()}
            partial = [wanted.get(k, "") or "" for k in src_tk.key_names]
            found = self._ps(conn, src_tk, partial, None)
            if not found:
                shown = ", ".join(f"{k}={v}" for k, v in spec.items())
                raise hms.MetaException(
                    message=f"No partition is found with the values {{{shown}}} "
                    f"for the table {source_tbl}"
                )
            if not _same_schema(src.sd, dst.sd) or not _same_fields(
                src.partitionKeys, dst.partitionKeys
            ):
                raise hms.MetaException(message=DIFFERENT_SCHEMAS)
            given = [v != "" for v in partial]
            if not any(given):
                raise hms.MetaException(
                    message="Invalid partition key & values; keys [], values []"
                )
            if False in given and True in given[given.index(False) :]:
                shown = ", ".join(f"{k}={v}" for k, v in spec.items())
                raise hms.MetaException(
                    message="Partition values specified are not continuous. A subpartition "
                    f"value is specified without specifying the parent partition's value "
                    f"{{{shown}}}"
                )
            names = [name for _, name, _ in found]
            taken = self._existing_names(conn, dst_tk, names)
            if taken:
                raise hms.MetaException(
                    message=f"The partition {sorted(taken)[0]} already exists in the table "
                    f"{dest_tbl}"
                )
            moving = self.load_partitions(conn, src_tk, [pid for pid, _, _ in found])
            base = dst.sd.location if dst.sd is not None else None
            pairs: list[tuple[hms.Partition, hms.Partition]] = []
            for p in moving:
                sd = _copy_sd(p.sd)
                if sd is not None and base:
                    sd.location = f"{base.rstrip('/')}/{p_name(src_tk, p)}"
                new = _copy_partition(
                    p, dbName=dst_tk.db, tableName=dst_tk.name, catName=cat, sd=sd, writeId=0
                )
                pairs.append((p, new))
            if prepare is not None:
                prepare(src, dst, pairs)
            todo = [(p_name(src_tk, new), new) for _, new in pairs]
            ids = self._insert_partitions(conn, dst_tk, dst, todo, None, prepared=True)
            added = _in_order(self.load_partitions(conn, dst_tk, ids), [new for _, new in pairs])
            rows = fetch_in(
                conn,
                _P.c.PART_NAME,
                names,
                lambda cond: select(_P.c.PART_ID, _P.c.SD_ID).where(
                    _P.c.TBL_ID == src_tk.tbl_id, cond
                ),
            )
            self.tables.delete_partition_rows(
                conn, [r.PART_ID for r in rows], [r.SD_ID for r in rows]
            )
            events = [
                NewEvent(
                    msg.ADD_PARTITION,
                    self.messages.add_partition(dst, added),
                    cat,
                    dest_db,
                    dest_tbl,
                )
            ]
            events += [
                NewEvent(
                    msg.DROP_PARTITION,
                    self.messages.drop_partition(src, [p]),
                    cat,
                    source_db,
                    source_tbl,
                )
                for p in moving
            ]
            self._emit(conn, events)
            return added

        return self.db.transaction(run)

    def _exchanged_table(
        self, conn: Connection, cat: str, db: str, name: str, role: str
    ) -> ResolvedTable:
        try:
            return self.resolve_table(conn, cat, db, name)
        except hms.NoSuchObjectException:
            raise hms.MetaException(
                message=f"The {role} table {table_ref(cat, db, name)} not found"
            ) from None

    def partition_count(self, cat: str, db: str, tbl: str) -> int:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return int(
                conn.execute(
                    select(func.count()).select_from(_P).where(_P.c.TBL_ID == tk.tbl_id)
                ).scalar_one()
            )


def p_name(tk: ResolvedTable, p: hms.Partition) -> str:
    return partnames.make_part_name(tk.key_names, p.values)


def _call_write_id(write_id: int | None, parts: Sequence[hms.Partition]) -> int | None:
    """A partition call's write id: ``write_id`` when positive, else the one positive writeId
    the partitions carry (several different ones: MetaException), else None."""
    if write_id is not None and write_id > 0:
        return write_id
    carried = sorted({p.writeId for p in parts if p.writeId is not None and p.writeId > 0})
    if len(carried) > 1:
        raise hms.MetaException(
            message=f"The partitions of one call carry different write ids: {java_list(carried)}"
        )
    return carried[0] if carried else None


def _in_order(
    stored: Sequence[hms.Partition], wanted: Sequence[hms.Partition]
) -> list[hms.Partition]:
    """``stored`` (read back in name order) in the order of ``wanted``, matched by values."""
    position = {tuple(p.values): i for i, p in enumerate(wanted)}
    return sorted(stored, key=lambda p: position[tuple(p.values)])


def _same_fields(a: Sequence[hms.FieldSchema] | None, b: Sequence[hms.FieldSchema] | None) -> bool:
    """MetaStoreUtils.compareFieldColumns: same names and types in the same order (comments
    do not count)."""
    a, b = a or [], b or []
    if len(a) != len(b):
        return False
    return all(x.name == y.name and x.type == y.type for x, y in zip(a, b, strict=True))


def _same_schema(a: hms.StorageDescriptor | None, b: hms.StorageDescriptor | None) -> bool:
    return _same_fields(a.cols if a is not None else None, b.cols if b is not None else None)


def _cols_key(cols: Sequence[hms.FieldSchema] | None) -> tuple[tuple[str, str, str | None], ...]:
    return tuple((c.name, c.type, c.comment) for c in cols or [])


def _copy_sd(sd: hms.StorageDescriptor | None) -> hms.StorageDescriptor | None:
    if sd is None:
        return None
    new = hms.StorageDescriptor(**sd.__dict__)
    if sd.serdeInfo is not None:
        new.serdeInfo = hms.SerDeInfo(**sd.serdeInfo.__dict__)
    return new


def _copy_partition(p: hms.Partition, **changes: Any) -> hms.Partition:
    new = hms.Partition(**p.__dict__)
    for k, v in changes.items():
        setattr(new, k, v)
    return new


_ROW_COLUMNS = ("PART_ID", "SD_ID", "CREATE_TIME", "LAST_ACCESS_TIME", "WRITE_ID")


def _update_partition_rows(conn: Connection, rows: list[tuple[Any, ...]]) -> None:
    """Rewrite PARTITIONS rows (PART_ID, SD_ID, CREATE_TIME, LAST_ACCESS_TIME, WRITE_ID) of an
    alter: on PostgreSQL one ``UPDATE ... FROM (VALUES ...)`` per thousand rows instead of a
    statement (a round trip) per partition; elsewhere one executemany."""
    if not rows:
        return
    if conn.dialect.name != "postgresql":
        stmt = (
            update(_P)
            .where(_P.c.PART_ID == bindparam("pid"))
            .values({c: bindparam(f"v_{c}") for c in _ROW_COLUMNS[1:]})
        )
        conn.execute(stmt, [{"pid": r[0], **dict(zip(_V_NAMES, r[1:], strict=True))} for r in rows])
        return
    for part in chunks(rows, 1000):
        v = values(*(column(c, _P.c[c].type) for c in _ROW_COLUMNS), name="v").data(part)
        conn.execute(
            update(_P)
            .where(_P.c.PART_ID == v.c.PART_ID)
            .values({c: cast(v.c[c], _P.c[c].type) for c in _ROW_COLUMNS[1:]})
        )


_V_NAMES = tuple(f"v_{c}" for c in _ROW_COLUMNS[1:])
