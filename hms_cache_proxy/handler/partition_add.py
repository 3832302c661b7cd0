"""Adding partitions: what Hive 4.0's HMSHandler does in add_partition(s), add_partitions_req
and append_partition around the store: checks, locations, directories, quick statistics."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from hms_cache_proxy import warehouse
from hms_cache_proxy.handler import basic_stats
from hms_cache_proxy.handler.base import ThriftError, env_props, normalize
from hms_cache_proxy.handler.confinement import FileRules
from hms_cache_proxy.handler.java_text import java_struct, with_java_defaults
from hms_cache_proxy.handler.table_rules import DDL_TIME, data_deletable, is_view
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import partnames

WHITELIST = "hive.metastore.partition.name.whitelist.pattern"


def copy_partition(p: hms.Partition) -> hms.Partition:
    new = hms.Partition(**p.__dict__)
    if p.sd is not None:
        new.sd = hms.StorageDescriptor(**p.sd.__dict__)
    new.parameters = dict(p.parameters) if p.parameters is not None else None
    return new


def check_values(values: Sequence[str | None] | None) -> list[str]:
    if not values:
        raise hms.MetaException(message="The partition values cannot be null or empty.")
    if any(v is None for v in values):
        raise hms.MetaException(message="Partition value cannot be null.")
    return list(values)  # type: ignore[arg-type]


def part_name(keys: Sequence[str], values: Sequence[str]) -> str:
    try:
        return partnames.make_part_name(keys, list(values))
    except partnames.PartitionNameError as exc:
        raise hms.MetaException(message=str(exc)) from None


def lowered(p: hms.Partition) -> hms.Partition:
    """What ObjectStore stores: column names lower-cased (the reply keeps the client's), an
    unset numBuckets as Java's 0."""
    if p.sd is None:
        return p
    q = copy_partition(p)
    if q.sd.numBuckets is None:
        q.sd.numBuckets = 0
    if p.sd.cols is not None:
        q.sd.cols = [
            hms.FieldSchema(
                name=c.name.lower() if c.name else c.name, type=c.type, comment=c.comment
            )
            for c in p.sd.cols
        ]
    return q


def deep_copy_sd(sd: hms.StorageDescriptor) -> hms.StorageDescriptor:
    new = hms.StorageDescriptor(**sd.__dict__)
    new.cols = [hms.FieldSchema(**c.__dict__) for c in sd.cols or []]
    new.parameters = dict(sd.parameters or {})
    if sd.serdeInfo is not None:
        new.serdeInfo = hms.SerDeInfo(**sd.serdeInfo.__dict__)
        new.serdeInfo.parameters = dict(sd.serdeInfo.parameters or {})
    new.bucketCols = list(sd.bucketCols or [])
    new.sortCols = [hms.Order(**o.__dict__) for o in sd.sortCols or []]
    if sd.skewedInfo is not None:
        new.skewedInfo = hms.SkewedInfo(**sd.skewedInfo.__dict__)
    return new


class PartitionAddHandlers(FileRules):
    """add_partition(s), add_partitions_req, append_partition(_by_name) and shared helpers."""

    def _names(
        self, db_name: str, tbl_name: str, cat_name: str | None = None
    ) -> tuple[str, str, str]:
        cat, db = self.require_db(db_name)
        if cat_name:
            cat = self.catalog(cat_name)
        return cat, db, self.require_name(tbl_name)

    def _whitelist(self, values: Sequence[str]) -> None:
        pattern = self.conf(WHITELIST, "") or ""
        if not pattern:
            return
        try:
            partnames.validate_values(["k"] * len(values), values, pattern)
        except partnames.PartitionNameError as exc:
            raise hms.MetaException(message=str(exc)) from None

    # -- add -------------------------------------------------------------------------------------

    def add_partition(self, new_part: hms.Partition) -> hms.Partition:
        return self._add_one(new_part, None)

    def add_partition_with_environment_context(
        self, new_part: hms.Partition, environment_context: Any
    ) -> hms.Partition:
        return self._add_one(new_part, environment_context)

    def _add_one(self, part: hms.Partition | None, env: Any) -> hms.Partition:
        if part is None:
            raise hms.MetaException(message="The partition must be set")
        cat = self.catalog(part.catName)
        return self._add(
            cat, part.dbName, part.tableName, [part], if_not_exists=False, single=True, env=env
        )[0]

    def add_partitions(self, new_parts: list[hms.Partition] | None) -> int:
        if new_parts is None:
            raise hms.MetaException(message="Partition list cannot be null.")
        if not new_parts:
            return 0
        first = new_parts[0]
        cat = self.catalog(first.catName)
        added = self._add(
            cat, first.dbName, first.tableName, new_parts, if_not_exists=False, env=None
        )
        return len(added)

    def add_partitions_pspec(self, new_parts: list[Any]) -> int:
        raise hms.MetaException(
            message="add_partitions_pspec is not supported by hms-cache-proxy; "
            "use add_partitions_req"
        )

    def add_partitions_req(self, request: hms.AddPartitionsRequest) -> hms.AddPartitionsResult:
        """An empty list answers a result without partitions; ``needResult`` (default true)
        returns the newly added partitions only, as the request objects the server filled."""
        if not request.parts:
            return hms.AddPartitionsResult()
        cat = self.catalog(request.catName)
        added = self._add(
            cat,
            request.dbName,
            request.tblName,
            request.parts,
            if_not_exists=bool(request.ifNotExists),
            env=None,
            valid_write_id_list=request.validWriteIdList,
        )
        need = request.needResult if request.needResult is not None else True
        return hms.AddPartitionsResult(partitions=added if need else None)

    def _add(
        self,
        cat: str,
        db_name: str | None,
        tbl_name: str | None,
        parts: Sequence[hms.Partition],
        *,
        if_not_exists: bool,
        env: Any,
        single: bool = False,
        valid_write_id_list: str | None = None,
    ) -> list[hms.Partition]:
        """HMSHandler.add_partition_core / add_partitions_core (Hive 4.0).

        Checks every partition (values, the target table, existence, duplicates), then gives
        each new one its location (``<table location>/<partition name>`` unless it names one,
        getDnsPath'd), creates missing directories, fills quick statistics for directories
        that already existed, createTime and transient_lastDdlTime. Returns the request's
        partitions as filled, which is what Hive answers."""
        db, tbl = normalize(db_name), normalize(tbl_name)
        if single:
            missing_table = "Unable to add partition because table or database do not exist"
        else:
            missing_table = f"Unable to add partitions because {cat}.{db}.{tbl} does not exist"
        if not db or not tbl:
            raise hms.InvalidObjectException(message=missing_table)
        props = env_props(env)
        made: list[str] = []
        filled: list[hms.Partition] = []
        # Database directories, read before the store's transaction; only a location the
        # client names can lie in another database's directory.
        named = any(p is not None and p.sd is not None and p.sd.location for p in parts)
        dirs = self.database_dirs() if named else []

        def prepare(
            table: hms.Table, existing: Callable[[Sequence[str]], set[str]]
        ) -> list[tuple[str, hms.Partition]]:
            filled.clear()
            keys = [k.name for k in table.partitionKeys or []]
            checked: list[tuple[str, hms.Partition]] = []
            for p in parts:
                if p is None:
                    raise hms.MetaException(message="A partition in the list is null")
                p = copy_partition(p)
                p.catName = p.catName or cat
                if not single:
                    if p.dbName is None or p.tableName is None:
                        raise hms.MetaException(
                            message="The database and table name must be set in the partition."
                        )
                    if p.tableName.lower() != (tbl_name or "").lower() or (
                        p.dbName.lower() != (db_name or "").lower()
                    ):
                        raise hms.MetaException(
                            message=f"Partition does not belong to target table {cat}.{db}."
                            f"{tbl}. It belongs to the table {p.dbName}.{p.tableName} : "
                            f"{java_struct(p)}"
                        )
                values = check_values(p.values)
                self._whitelist(values)
                checked.append((part_name(keys, values), p))
            present = existing([n for n, _ in checked])
            todo: list[tuple[str, hms.Partition]] = []
            seen: set[str] = set()
            for name, p in checked:
                if name in present:
                    if not if_not_exists:
                        raise hms.AlreadyExistsException(
                            message=f"Partition already exists: {java_struct(p)}"
                        )
                    continue
                if name in seen:
                    raise hms.MetaException(
                        message=f"Duplicate partitions in the list: {java_struct(p)}"
                    )
                seen.add(name)
                todo.append((name, p))
            now = int(time.time())
            out: list[tuple[str, hms.Partition]] = []
            for name, q in todo:
                location, made_dir = self._new_partition_location(table, q, name, dirs)
                if made_dir and location:
                    made.append(location)
                params = dict(q.parameters or {})
                if basic_stats.can_update_stats(table.parameters, is_view=is_view(table)):
                    basic_stats.update_partition_stats(
                        params,
                        location,
                        props,
                        self.list_location,
                        made_dir=made_dir,
                        force=False,
                        is_create=True,
                        transactional=basic_stats.is_transactional(table.parameters),
                    )
                q.createTime = now
                if params.get(DDL_TIME) is None:
                    params[DDL_TIME] = str(now)
                q.parameters = params
                filled.append(q)
                out.append((name, lowered(q)))
            return out

        try:
            self.store.add_partitions(
                cat,
                db,
                tbl,
                parts,
                if_not_exists=if_not_exists,
                valid_write_id_list=valid_write_id_list,
                prepare=prepare,
            )
        except Exception as exc:
            for uri in made:
                self.delete_quietly(uri)
            if isinstance(exc, hms.NoSuchObjectException):
                raise hms.InvalidObjectException(message=missing_table) from None
            raise
        return [with_java_defaults(copy_partition(p)) for p in filled]

    def _new_partition_location(
        self, table: hms.Table, part: hms.Partition, name: str, dirs: Any
    ) -> tuple[str | None, bool]:
        """HMSHandler.createLocationForAddedPartition: (location, whether it was created).
        The location must satisfy the confinement rules (handler/confinement.py)."""
        table_location = table.sd.location if table.sd is not None else None
        given = part.sd.location if part.sd is not None else None
        if not given:
            location = warehouse.join(table_location, name) if table_location else None
        else:
            if not table_location:
                raise hms.MetaException(message="Cannot specify location for a view partition")
            location = self.location(given)
        if location is None:
            return None, False
        if part.sd is None:
            raise hms.MetaException(message="The partition's storage descriptor (sd) must be set")
        part.sd.location = location
        writable = self.check_partition_location(
            table,
            location,
            deletable=data_deletable(table),
            exc=hms.MetaException,
            dirs=dirs,
        )
        try:
            return location, writable and self.files.mkdirs(location)
        except OSError:
            raise hms.MetaException(
                message=f"{location} is not a directory or unable to create one"
            ) from None

    # -- append ----------------------------------------------------------------------------------

    def append_partition(self, db_name: str, tbl_name: str, part_vals: list[str]) -> hms.Partition:
        return self._append(db_name, tbl_name, part_vals, None)

    def append_partition_with_environment_context(
        self, db_name: str, tbl_name: str, part_vals: list[str], environment_context: Any
    ) -> hms.Partition:
        return self._append(db_name, tbl_name, part_vals, environment_context)

    def append_partition_by_name(
        self, db_name: str, tbl_name: str, part_name: str
    ) -> hms.Partition:
        return self._append_by_name(db_name, tbl_name, part_name, None)

    def append_partition_by_name_with_environment_context(
        self, db_name: str, tbl_name: str, part_name: str, environment_context: Any
    ) -> hms.Partition:
        return self._append_by_name(db_name, tbl_name, part_name, environment_context)

    def _append_by_name(
        self, db_name: str, tbl_name: str, part_name: str, env: Any
    ) -> hms.Partition:
        cat, db, tbl = self._names(db_name, tbl_name)
        try:
            table = self.store.get_table(cat, db, tbl)
        except hms.NoSuchObjectException:
            raise hms.InvalidObjectException(message=f"{cat}.{db}.{tbl} table not found") from None
        values = self._values_from_name(table, part_name, hms.InvalidObjectException)
        return self._append(db_name, tbl_name, values, env)

    @staticmethod
    def _values_from_name(table: hms.Table, part_name: str | None, exc: ThriftError) -> list[str]:
        """HMSHandler.getPartValsFromName: each table key looked up by its exact name."""
        if not part_name:
            raise hms.MetaException(message=f"Partition name is invalid. {part_name}")
        spec = dict(partnames.parse_part_name(part_name))
        values = []
        for key in table.partitionKeys or []:
            if key.name not in spec:
                raise exc(message=f"incomplete partition name - missing {key.name}")
            values.append(spec[key.name])
        return values

    def _append(
        self, db_name: str, tbl_name: str, part_vals: list[str] | None, env: Any
    ) -> hms.Partition:
        """HMSHandler.append_partition_common: the partition is the table's storage descriptor
        (a copy) at ``<table location>/<partition name>``, transient_lastDdlTime always now."""
        cat, db, tbl = self._names(db_name, tbl_name)
        if not part_vals:
            raise hms.MetaException(message="The partition values must not be null or empty.")
        props = env_props(env)
        made: list[str] = []
        filled: list[hms.Partition] = []
        dirs: list[Any] = []  # <table location>/<name>: never in another database's directory

        def prepare(
            table: hms.Table, existing: Callable[[Sequence[str]], set[str]]
        ) -> list[tuple[str, hms.Partition]]:
            filled.clear()
            keys = [k.name for k in table.partitionKeys or []]
            name = part_name(keys, part_vals)
            self._whitelist(part_vals)
            if table.sd is None or not table.sd.location:
                raise hms.MetaException(message="Cannot append a partition to a view")
            part = hms.Partition(
                values=list(part_vals),
                dbName=db,
                tableName=tbl,
                createTime=0,
                lastAccessTime=0,
                sd=deep_copy_sd(table.sd),
                catName=cat,
            )
            part.sd.location = warehouse.join(table.sd.location, name)
            if existing([name]):
                raise hms.AlreadyExistsException(
                    message=f"Partition already exists:{java_struct(part)}"
                )
            writable = self.check_partition_location(
                table,
                part.sd.location,
                deletable=data_deletable(table),
                exc=hms.MetaException,
                dirs=dirs,
            )
            try:
                made_dir = writable and self.files.mkdirs(part.sd.location)
            except OSError:
                raise hms.MetaException(
                    message=f"{part.sd.location} is not a directory or unable to create one"
                ) from None
            if made_dir:
                made.append(part.sd.location)
            now = int(time.time())
            part.createTime = now
            part.parameters = {DDL_TIME: str(now)}
            if basic_stats.can_update_stats(table.parameters, is_view=is_view(table)):
                basic_stats.update_partition_stats(
                    part.parameters,
                    part.sd.location,
                    props,
                    self.list_location,
                    made_dir=made_dir,
                    force=False,
                    is_create=True,
                    transactional=basic_stats.is_transactional(table.parameters),
                )
            filled.append(part)
            return [(name, part)]

        try:
            self.store.add_partitions(cat, db, tbl, [], prepare=prepare)
        except Exception as exc:
            for uri in made:
                self.delete_quietly(uri)
            if isinstance(exc, hms.NoSuchObjectException):
                raise hms.InvalidObjectException(
                    message="Unable to add partition because table or database do not exist"
                ) from None
            raise
        return filled[0]
