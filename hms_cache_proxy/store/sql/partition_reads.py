"""Partition reads (PARTITIONS, PARTITION_KEY_VALS, PARTITION_PARAMS and their storage
descriptors); the writes are in partition_writes.py, which reads through this class.

Reading N partitions takes five queries whatever N is: the partitions joined to their
descriptors and serdes, their key values, all their parameters (partition, descriptor, serde)
in one UNION ALL, the distinct column lists, and the bucket/sort/skew lists. Filters are
decided by the one Python evaluator in store/partition_filter/ (the cache uses the same one),
after the database has narrowed the candidates with whatever the filter pins to exact string
values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Row,
    any_,
    bindparam,
    exists,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import partnames
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import chunks, fetch_in
from hms_cache_proxy.store.db.prepared import PreparedCore
from hms_cache_proxy.store.partition_filter.binder import compile_filter
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.pushdown import KeyCondition, pushdown
from hms_cache_proxy.store.sql.details import load_details
from hms_cache_proxy.store.sql.sql_base import (
    SqlPart,
    java_list,
    table_ref,
)
from hms_cache_proxy.store.sql.storage import (
    SD_COLUMNS,
    build_storage_descriptors,
    sd_join,
)

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


def _resolve_statement(mode: str) -> Any:
    """resolve_table's query (bound: r_cat, r_db, r_tbl); ``mode`` lock or share: the
    table's row only FOR UPDATE or FOR SHARE (the same row lock, taken by the same read)."""
    t, d, k = schema.TBLS, schema.DBS, schema.PARTITION_KEYS
    stmt = (
        select(t.c.TBL_ID, t.c.SD_ID, k.c.PKEY_NAME, k.c.PKEY_TYPE, k.c.PKEY_COMMENT)
        .select_from(t.join(d, t.c.DB_ID == d.c.DB_ID).outerjoin(k, k.c.TBL_ID == t.c.TBL_ID))
        .where(
            d.c.CTLG_NAME == bindparam("r_cat"),
            d.c.NAME == bindparam("r_db"),
            t.c.TBL_NAME == bindparam("r_tbl"),
        )
        .order_by(k.c.INTEGER_IDX)
    )
    return stmt if mode == "read" else stmt.with_for_update(of=t, read=mode == "share")


_RESOLVE = {
    mode: PreparedCore(f"hms_resolve_table_{mode}", _resolve_statement(mode))
    for mode in ("read", "lock", "share")
}
"""Built once: a statement object reused keeps its SQLAlchemy cache key (no rebuilding and
re-keying per call on the write path's hot reads)."""


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


_BY_ID = PreparedCore("hms_partitions_by_id", _partitions_by_id("postgresql"))
"""PostgreSQL: ``_partitions_by_id`` (the ids one array parameter), prepared: an alter of
partitions loads what it wrote by id in its transaction (issue 23: 0.15 ms of planning per
acid insert as text)."""


def _partitions_by_name_statement(lock: bool) -> Any:
    stmt = (
        select(*PARTITION_COLUMNS)
        .select_from(sd_join(_P, _P.c.SD_ID))
        .where(
            _P.c.TBL_ID == bindparam("tbl_id"),
            _P.c.PART_NAME == any_(bindparam("names", type_=ARRAY(_P.c.PART_NAME.type))),
        )
    )
    return stmt.order_by(_P.c.PART_ID).with_for_update(of=_P) if lock else stmt


_BY_NAME = {
    lock: PreparedCore(
        "hms_partitions_by_name" + ("_locked" if lock else ""), _partitions_by_name_statement(lock)
    )
    for lock in (False, True)
}
"""PostgreSQL: ``_partitions_by_id``'s columns for the partitions named in ``names``; locked:
their PARTITIONS rows locked FOR UPDATE in PART_ID order by the same read. Prepared (an alter
of partitions reads them in its transaction)."""


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


class PartitionReads(SqlPart):
    """Partitions of a table as read: the get_partition* calls (filters pushed down) and the
    helpers the writes and the other families read through (resolve_table, load_partitions,
    load_by_names, name_for)."""

    # -- helpers ---------------------------------------------------------------------------------

    def resolve_table(
        self,
        conn: Connection,
        cat: str,
        db: str,
        name: str,
        *,
        lock: bool = False,
        share: bool = False,
    ) -> ResolvedTable:
        """The table's row and partition keys in one query (NoSuchObjectException if absent).
        ``lock``: the table's row FOR UPDATE (writers of the table or of its set of partitions);
        ``share``: FOR SHARE, which excludes those writers but not other sharers (alters of
        partitions, which lock the partitions' own rows: ``lock_partitions``)."""
        stmt = _RESOLVE["lock" if lock else "share" if share else "read"]
        rows = stmt.execute(conn, {"r_cat": cat, "r_db": db, "r_tbl": name}).all()
        if not rows:
            raise hms.NoSuchObjectException(message=f"{table_ref(cat, db, name)} table not found")
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
        row_ids: dict[str, tuple[int, int | None]] | None = None,
    ) -> list[hms.Partition]:
        """Partitions of the table in partition-name order: all of them (``part_ids`` None,
        up to ``limit``) or those with the given ids. Two queries whatever their number.
        ``row_ids``, when given, receives each partition's (PART_ID, SD_ID) by name."""
        if part_ids is None:
            stmt = _partitions_of_table(self.db.dialect, limited=limit is not None and limit >= 0)
            params: dict[str, Any] = {"tbl_id": tk.tbl_id}
            if limit is not None and limit >= 0:
                params["limit"] = limit
            rows = conn.execute(stmt, params).all()
        else:
            rows = []
            for part in chunks(sorted(set(part_ids)), 30_000):
                values = {"tbl_id": tk.tbl_id, "ids": list(part)}
                if self.db.dialect == "postgresql":
                    rows.extend(_BY_ID.execute(conn, values).all())
                else:
                    rows.extend(conn.execute(_partitions_by_id(self.db.dialect), values).all())
            rows.sort(key=lambda r: r.PART_NAME)
        return self._built(conn, tk, rows, row_ids)

    def _built(
        self,
        conn: Connection,
        tk: ResolvedTable,
        rows: Sequence[Any],
        row_ids: dict[str, tuple[int, int | None]] | None = None,
    ) -> list[hms.Partition]:
        """Partitions from their PARTITION_COLUMNS rows (in that order), details read at once;
        ``row_ids`` (if given) receives their (PART_ID, SD_ID) by PART_NAME."""
        if row_ids is not None:
            row_ids.update((r.PART_NAME, (r.PART_ID, r.SD_ID)) for r in rows)
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
        self,
        conn: Connection,
        tk: ResolvedTable,
        names: Sequence[str],
        *,
        lock: bool = False,
        row_ids: dict[str, tuple[int, int | None]] | None = None,
    ) -> list[hms.Partition]:
        """The named partitions (absent ones left out), in name order. ``lock``: their rows
        locked FOR UPDATE in PART_ID order (one order for every writer, so alters of
        overlapping partitions wait rather than deadlock); the caller holds the table's row
        at least FOR SHARE, so no partition of the table comes or goes meanwhile.
        ``row_ids``, when given, receives each found partition's (PART_ID, SD_ID) by name
        (under ``lock`` they stay so until the caller commits)."""
        wanted = sorted(set(names))
        if self.db.dialect == "postgresql" and wanted:
            # By name in the same read that loads them (no separate lookup of their ids). A
            # locking read is one statement (an array parameter has no size limit), so the
            # rows are locked in one PART_ID order.
            by_name = _BY_NAME[lock]
            rows: list[Any] = []
            for part in [wanted] if lock else chunks(wanted, 30_000):
                values = {"tbl_id": tk.tbl_id, "names": list(part)}
                rows.extend(by_name.execute(conn, values).all())
            rows.sort(key=lambda r: r.PART_NAME)
            return self._built(conn, tk, rows, row_ids)
        if lock and wanted:
            for part in chunks(wanted, 30_000):
                conn.execute(
                    select(_P.c.PART_ID)
                    .where(_P.c.TBL_ID == tk.tbl_id, _P.c.PART_NAME.in_(part))
                    .order_by(_P.c.PART_ID)
                    .with_for_update()
                ).all()
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
        return self.load_partitions(conn, tk, ids, row_ids=row_ids) if ids else []

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
            ids = [c[0] for c in self.matching_spec(conn, tk, partial, max_parts)]
            return self.load_partitions(conn, tk, ids) if ids else []

    def get_partition_names_ps(
        self, cat: str, db: str, tbl: str, partial: Sequence[str] | None, max_parts: int = -1
    ) -> list[str]:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return [c[1] for c in self.matching_spec(conn, tk, partial, max_parts)]

    def matching_spec(
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

    def partition_count(self, cat: str, db: str, tbl: str) -> int:
        with self.db.read() as conn:
            tk = self.resolve_table(conn, cat, db, tbl)
            return int(
                conn.execute(
                    select(func.count()).select_from(_P).where(_P.c.TBL_ID == tk.tbl_id)
                ).scalar_one()
            )
