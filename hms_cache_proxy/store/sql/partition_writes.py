"""Partition writes: add, drop and exchange, each one database transaction (a named
``_<call>_txn`` method) that reads through partition_reads.py and writes its event in the same
transaction; alter, rename and truncate_table are in partition_alters.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import partnames
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.batch import fetch_in
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.rules import MISSING_PARTITIONS, partition_level
from hms_cache_proxy.store.sql.partition_reads import DDL_TIME, PartitionReads, ResolvedTable
from hms_cache_proxy.store.sql.privileges import copy_table_grants_to_partitions
from hms_cache_proxy.store.sql.sql_base import (
    SqlPart,
    SqlShared,
    is_transactional,
    java_list,
    now,
    replication_target,
    table_ref,
)
from hms_cache_proxy.store.sql.storage import (
    insert_column_descriptors,
    insert_rows,
    insert_storage_descriptors,
    param_rows,
    same_columns,
)
from hms_cache_proxy.store.sql.tables import Tables

_P, _KV = schema.PARTITIONS, schema.PARTITION_KEY_VALS


DIFFERENT_SCHEMAS = "The tables have different schemas. Their partitions cannot be exchanged."
"""exchange_partitions' MetaException when columns or partition keys differ (HMSHandler)."""

EXCHANGE_TRANSACTIONAL = (
    "Exchange partition is not allowed with transactional tables. Alternatively, use load data "
    "or insert overwrite to move partitions."
)
"""Hive's DDL refuses exchanging partitions of transactional tables before calling the
metastore (their delta directories carry the source table's write ids); refused here for
every client."""


class PartitionWrites(SqlPart):
    """Partitions added, dropped and exchanged; the partitions are read through ``reads``, the
    table through ``tables``."""

    def __init__(self, shared: SqlShared, reads: PartitionReads, tables: Tables) -> None:
        super().__init__(shared)
        self.reads = reads
        self.tables = tables

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
        return self.db.transaction(
            lambda conn: self._add_partitions_txn(
                conn,
                cat,
                db,
                tbl,
                parts,
                if_not_exists=if_not_exists,
                valid_write_id_list=valid_write_id_list,
                write_id=write_id,
                prepare=prepare,
            )
        )

    def _add_partitions_txn(
        self,
        conn: Connection,
        cat: str,
        db: str,
        tbl: str,
        parts: Sequence[hms.Partition],
        *,
        if_not_exists: bool,
        valid_write_id_list: str | None,
        write_id: int | None,
        prepare: Callable[
            [hms.Table, Callable[[Sequence[str]], set[str]]], list[tuple[str, hms.Partition]]
        ]
        | None,
    ) -> list[hms.Partition]:
        tk = self.reads.resolve_table(conn, cat, db, tbl, lock=True)
        table = self.tables.load_table_by_id(conn, tk.tbl_id)
        if prepare is not None:
            todo = prepare(table, lambda names: self._existing_names(conn, tk, names))
        else:
            named: dict[str, hms.Partition] = {}
            for p in parts:
                name = self.reads.name_for(tk, p.values)
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
            added = in_order(self.reads.load_partitions(conn, tk, ids), [p for _, p in todo])
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
            return [(write_id_of_call(write_id, [p for _, p in todo]), todo)]
        if not replication_target(conn, db):
            write_id_of_call(None, [p for _, p in todo])  # refuses, naming them
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
        return self.db.transaction(
            lambda conn: self._drop_partitions_txn(
                conn, cat, db, tbl, names, if_exists=if_exists, check=check
            )
        )

    def _drop_partitions_txn(
        self,
        conn: Connection,
        cat: str,
        db: str,
        tbl: str,
        names: Sequence[str],
        *,
        if_exists: bool,
        check: Callable[[hms.Table, list[hms.Partition]], None] | None,
    ) -> tuple[hms.Table, list[hms.Partition]]:
        tk = self.reads.resolve_table(conn, cat, db, tbl, lock=True)
        table = self.tables.load_table_by_id(conn, tk.tbl_id)
        found = self.reads.load_by_names(conn, tk, names)
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
        self.tables.delete_partition_rows(conn, [r.PART_ID for r in ids], [r.SD_ID for r in ids])
        self._emit(
            conn,
            [
                NewEvent(msg.DROP_PARTITION, self.messages.drop_partition(table, [p]), cat, db, tbl)
                for p in found
            ],
        )
        return table, found

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
        return self.db.transaction(
            lambda conn: self._exchange_partitions_txn(
                conn, cat, source_db, source_tbl, dest_db, dest_tbl, spec, prepare=prepare
            )
        )

    def _exchange_partitions_txn(
        self,
        conn: Connection,
        cat: str,
        source_db: str,
        source_tbl: str,
        dest_db: str,
        dest_tbl: str,
        spec: Mapping[str, str],
        *,
        prepare: Callable[[hms.Table, hms.Table, list[tuple[hms.Partition, hms.Partition]]], None]
        | None,
    ) -> list[hms.Partition]:
        dst_tk = self._exchanged_table(conn, cat, dest_db, dest_tbl, "destination")
        src_tk = self._exchanged_table(conn, cat, source_db, source_tbl, "source")
        for tbl_id in sorted({dst_tk.tbl_id, src_tk.tbl_id}):  # one order: no deadlock
            conn.execute(
                select(schema.TBLS.c.TBL_ID).where(schema.TBLS.c.TBL_ID == tbl_id).with_for_update()
            )
        src = self.tables.load_table_by_id(conn, src_tk.tbl_id)
        dst = self.tables.load_table_by_id(conn, dst_tk.tbl_id)
        if is_transactional(src.parameters) or is_transactional(dst.parameters):
            raise hms.MetaException(message=EXCHANGE_TRANSACTIONAL)
        wanted = {k.lower(): v for k, v in spec.items()}
        partial = [wanted.get(k, "") or "" for k in src_tk.key_names]
        found = self.reads.matching_spec(conn, src_tk, partial, None)
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
            raise hms.MetaException(message="Invalid partition key & values; keys [], values []")
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
                message=f"The partition {sorted(taken)[0]} already exists in the table {dest_tbl}"
            )
        moving = self.reads.load_partitions(conn, src_tk, [pid for pid, _, _ in found])
        base = dst.sd.location if dst.sd is not None else None
        pairs: list[tuple[hms.Partition, hms.Partition]] = []
        for p in moving:
            sd = _copy_sd(p.sd)
            if sd is not None and base:
                sd.location = f"{base.rstrip('/')}/{p_name(src_tk, p)}"
            new = copy_partition(
                p, dbName=dst_tk.db, tableName=dst_tk.name, catName=cat, sd=sd, writeId=0
            )
            pairs.append((p, new))
        if prepare is not None:
            prepare(src, dst, pairs)
        todo = [(p_name(src_tk, new), new) for _, new in pairs]
        ids = self._insert_partitions(conn, dst_tk, dst, todo, None, prepared=True)
        added = in_order(self.reads.load_partitions(conn, dst_tk, ids), [new for _, new in pairs])
        rows = fetch_in(
            conn,
            _P.c.PART_NAME,
            names,
            lambda cond: select(_P.c.PART_ID, _P.c.SD_ID).where(_P.c.TBL_ID == src_tk.tbl_id, cond),
        )
        self.tables.delete_partition_rows(conn, [r.PART_ID for r in rows], [r.SD_ID for r in rows])
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

    def _exchanged_table(
        self, conn: Connection, cat: str, db: str, name: str, role: str
    ) -> ResolvedTable:
        try:
            return self.reads.resolve_table(conn, cat, db, name)
        except hms.NoSuchObjectException:
            raise hms.MetaException(
                message=f"The {role} table {table_ref(cat, db, name)} not found"
            ) from None


def p_name(tk: ResolvedTable, p: hms.Partition) -> str:
    return partnames.make_part_name(tk.key_names, p.values)


def write_id_of_call(write_id: int | None, parts: Sequence[hms.Partition]) -> int | None:
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


def in_order(
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


def copy_partition(p: hms.Partition, **changes: Any) -> hms.Partition:
    new = hms.Partition(**p.__dict__)
    for k, v in changes.items():
        setattr(new, k, v)
    return new
