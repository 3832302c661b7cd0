"""Partition reads: get_partition*, the listings by values, names, partial values and filter,
get_partition_values, and the expression calls answered as unknown methods (Hive 4.0's
HMSHandler around the store).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from thriftpy2.thrift import TApplicationException

from hms_cache_proxy.handler.encoded import wrap
from hms_cache_proxy.handler.partition_add import PartitionAddHandlers
from hms_cache_proxy.handler.privileges import partition_level, with_partition_privileges
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.partition_filter.binder import compile_filter
from hms_cache_proxy.store.partition_filter.parser import parse
from hms_cache_proxy.store.partition_filter.syntax_tree import FilterError, Node


def _max(n: int | None) -> int:
    return -1 if n is None else int(n)


def unknown_method(name: str) -> TApplicationException:
    """Answer as a server without the method: Hive's clients then prune partitions on the
    client side (HiveMetaStoreClient turns this into IncompatibleMetastoreException)."""
    return TApplicationException(
        TApplicationException.UNKNOWN_METHOD, f"Invalid method name: '{name}'"
    )


class PartitionReadHandlers(PartitionAddHandlers):
    """Reading partitions (the ``*_with_auth`` calls fill partition-level privileges)."""

    # -- get -------------------------------------------------------------------------------------

    def get_partition(self, db_name: str, tbl_name: str, part_vals: list[str]) -> hms.Partition:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self._get_partition(cat, db, tbl, part_vals)

    def _get_partition(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_vals: Sequence[str] | None,
        snapshot: str | None = None,
    ) -> hms.Partition:
        part = self.store.get_partition(
            cat, db, tbl, list(part_vals or []), valid_write_id_list=snapshot
        )
        part.values = list(part_vals or [])  # Hive answers with the values as asked
        return part

    def get_partition_req(self, req: hms.GetPartitionRequest) -> hms.GetPartitionResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        return hms.GetPartitionResponse(
            partition=self._get_partition(cat, db, tbl, req.partVals, req.validWriteIdList)
        )

    def get_partition_with_auth(
        self, db_name: str, tbl_name: str, part_vals: list[str], user_name: str, group_names: Any
    ) -> hms.Partition:
        part = self.get_partition(db_name, tbl_name, part_vals)
        return self._with_auth(db_name, tbl_name, [part], user_name, group_names)[0]

    def _partition_level(self, cat: str, db: str, tbl: str) -> bool:
        """Whether the table keeps partition-level privileges; False for a missing table, whose
        error the partition read itself reports as before."""
        try:
            return partition_level(self.store.get_table(cat, db, tbl))
        except hms.NoSuchObjectException:
            return False

    def _with_auth(
        self,
        db_name: str,
        tbl_name: str,
        parts: list[hms.Partition],
        user_name: str | None,
        group_names: Any,
        cat_name: str | None = None,
    ) -> list[hms.Partition]:
        """The partitions with their privilege sets when the table keeps partition-level
        privileges (PARTITION_LEVEL_PRIVILEGE=TRUE), as Hive's ``*_with_auth`` calls fill them."""
        if not parts:
            return parts
        cat, db, tbl = self._names(db_name, tbl_name, cat_name)
        if not self._partition_level(cat, db, tbl):
            return parts
        table = self.store.get_table(cat, db, tbl)
        return with_partition_privileges(self.store, table, parts, user_name, group_names)

    def get_partition_by_name(self, db_name: str, tbl_name: str, part_name: str) -> hms.Partition:
        """The name is parsed into the table's key values (Warehouse.makeSpecFromName), so
        component order and extra components do not matter, key case does."""
        cat, db, tbl = self._names(db_name, tbl_name)
        table = self.store.get_table(cat, db, tbl)
        values = self._values_from_name(table, part_name, hms.NoSuchObjectException)
        return self._get_partition(cat, db, tbl, values)

    def get_partitions(self, db_name: str, tbl_name: str, max_parts: int) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self.store.get_partitions(cat, db, tbl, _max(max_parts), encoded=True)

    def get_partitions_req(self, req: hms.PartitionsRequest) -> hms.PartitionsResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        parts = self.store.get_partitions(
            cat,
            db,
            tbl,
            _max(req.maxParts),
            valid_write_id_list=req.validWriteIdList,
            encoded=True,
        )
        return wrap(hms.PartitionsResponse, "partitions", parts)

    def get_partitions_with_auth(
        self, db_name: str, tbl_name: str, max_parts: int, user_name: str, group_names: Any
    ) -> list[hms.Partition]:
        """Hive answers this one through JDO, where ``max_parts`` 0 means all."""
        cat, db, tbl = self._names(db_name, tbl_name)
        n = _max(max_parts)
        if not self._partition_level(cat, db, tbl):
            return self.store.get_partitions(cat, db, tbl, -1 if n == 0 else n, encoded=True)
        parts = self.store.get_partitions(cat, db, tbl, -1 if n == 0 else n)
        return self._with_auth(db_name, tbl_name, parts, user_name, group_names)

    def get_partitions_ps(
        self, db_name: str, tbl_name: str, part_vals: list[str], max_parts: int
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self._ps(cat, db, tbl, part_vals, max_parts)

    def _ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_vals: Sequence[str] | None,
        max_parts: int | None,
        snapshot: str | None = None,
        *,
        encoded: bool = True,
    ) -> list[hms.Partition]:
        """Partial specification: leading values, "" for any value of a key; an empty list is
        Warehouse.makePartName's error, as in Hive."""
        if not part_vals:
            self.store.partition_count(cat, db, tbl)  # a missing table is reported first
            raise hms.MetaException(message="Invalid partition key & values; keys [], values []")
        return self.store.get_partitions_ps(
            cat, db, tbl, part_vals, _max(max_parts), valid_write_id_list=snapshot, encoded=encoded
        )

    def get_partitions_ps_with_auth(
        self,
        db_name: str,
        tbl_name: str,
        part_vals: list[str],
        max_parts: int,
        user_name: str,
        group_names: Any,
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        if not self._partition_level(cat, db, tbl):
            return self.get_partitions_ps(db_name, tbl_name, part_vals, max_parts)
        parts = self._ps(cat, db, tbl, part_vals, max_parts, encoded=False)
        return self._with_auth(db_name, tbl_name, parts, user_name, group_names)

    def get_partitions_ps_with_auth_req(
        self, req: hms.GetPartitionsPsWithAuthRequest
    ) -> hms.GetPartitionsPsWithAuthResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        if not self._partition_level(cat, db, tbl):
            parts = self._ps(cat, db, tbl, req.partVals, req.maxParts, req.validWriteIdList)
            return wrap(hms.GetPartitionsPsWithAuthResponse, "partitions", parts)
        parts = self._ps(
            cat, db, tbl, req.partVals, req.maxParts, req.validWriteIdList, encoded=False
        )
        parts = self._with_auth(
            req.dbName, req.tblName, parts, req.userName, req.groupNames, req.catName
        )
        return hms.GetPartitionsPsWithAuthResponse(partitions=parts)

    def get_partition_names(self, db_name: str, tbl_name: str, max_parts: int) -> list[str]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self.store.get_partition_names(cat, db, tbl, _max(max_parts))

    def get_partition_names_ps(
        self, db_name: str, tbl_name: str, part_vals: list[str], max_parts: int
    ) -> list[str]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self._names_ps(cat, db, tbl, part_vals, max_parts)

    def _names_ps(
        self,
        cat: str,
        db: str,
        tbl: str,
        part_vals: Sequence[str] | None,
        max_parts: int | None,
        snapshot: str | None = None,
    ) -> list[str]:
        if not part_vals:
            self.store.partition_count(cat, db, tbl)
            raise hms.MetaException(message="Invalid partition key & values; keys [], values []")
        return self.store.get_partition_names_ps(
            cat, db, tbl, part_vals, _max(max_parts), valid_write_id_list=snapshot
        )

    def get_partition_names_ps_req(
        self, req: hms.GetPartitionNamesPsRequest
    ) -> hms.GetPartitionNamesPsResponse:
        cat, db, tbl = self._names(req.dbName, req.tblName, req.catName)
        return hms.GetPartitionNamesPsResponse(
            names=self._names_ps(cat, db, tbl, req.partValues, req.maxParts, req.validWriteIdList)
        )

    def get_partitions_by_filter(
        self, db_name: str, tbl_name: str, filter: str, max_parts: int
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        try:
            self._check_filter(filter)
            return self.store.get_partitions_by_filter(
                cat, db, tbl, filter, _max(max_parts), encoded=True
            )
        except FilterError as exc:
            raise hms.MetaException(message=str(exc)) from None

    def get_num_partitions_by_filter(self, db_name: str, tbl_name: str, filter: str) -> int:
        cat, db, tbl = self._names(db_name, tbl_name)
        try:
            self._check_filter(filter)
            return self.store.count_partitions_by_filter(cat, db, tbl, filter)
        except FilterError as exc:
            raise hms.MetaException(message=str(exc)) from None

    def _check_filter(self, text: str | None) -> Node:
        """Parses the filter within the size limits before the store sees it (FilterError)."""
        return parse(
            text,
            max_length=self.settings.partition_filter_max_length,
            max_terms=self.settings.partition_filter_max_terms,
        )

    def get_partitions_by_names(
        self, db_name: str, tbl_name: str, names: list[str]
    ) -> list[hms.Partition]:
        cat, db, tbl = self._names(db_name, tbl_name)
        return self.store.get_partitions_by_names(cat, db, tbl, names or [], encoded=True)

    def get_partitions_by_names_req(
        self, req: hms.GetPartitionsByNamesRequest
    ) -> hms.GetPartitionsByNamesResult:
        cat, db = self.require_db(req.db_name)
        if getattr(req, "catName", None):
            cat = self.catalog(req.catName)
        tbl = self.require_name(req.tbl_name)
        parts = self.store.get_partitions_by_names(
            cat,
            db,
            tbl,
            req.names or [],
            valid_write_id_list=req.validWriteIdList,
            encoded=True,
        )
        return wrap(hms.GetPartitionsByNamesResult, "partitions", parts)

    def get_partition_values(
        self, request: hms.PartitionValuesRequest
    ) -> hms.PartitionValuesResponse:
        r = request
        cat, db, tbl = self._names(r.dbName, r.tblName, r.catName)
        keys, parts = self.store.partition_values(
            cat, db, tbl, valid_write_id_list=r.validWriteIdList
        )
        key_index = {k.name.lower(): i for i, k in enumerate(keys)}
        wanted = [key_index.get((k.name or "").lower()) for k in r.partitionKeys or []]
        if any(i is None for i in wanted) or not wanted:
            raise hms.MetaException(
                message="get_partition_values needs partition keys of the table "
                f"({', '.join(k.name for k in keys)})"
            )
        if r.filter:
            try:
                accept = compile_filter(
                    self._check_filter(r.filter), [k.name for k in keys], [k.type for k in keys]
                )
            except FilterError as exc:
                raise hms.MetaException(message=str(exc)) from None
            parts = [p for p in parts if accept(p[1])]
        rows = [[values[i] for i in wanted] for _, values in parts]  # type: ignore[index]
        if r.applyDistinct is None or r.applyDistinct:
            rows = [list(t) for t in dict.fromkeys(tuple(x) for x in rows)]
        if r.partitionOrder:
            order = [key_index.get((k.name or "").lower()) for k in r.partitionOrder]
            picks = [wanted.index(i) for i in order if i in wanted]
            rows.sort(key=lambda x: [x[j] for j in picks], reverse=r.ascending is False)
        if r.maxParts is not None and r.maxParts >= 0:
            rows = rows[: r.maxParts]
        return hms.PartitionValuesResponse(
            partitionValues=[hms.PartitionValuesRow(row=x) for x in rows]
        )

    # Serialized (Kryo) Hive expressions cannot be evaluated here: answer as a server without
    # these methods, so Hive's clients fall back to listing names and pruning themselves.

    def get_partitions_by_expr(self, req: Any) -> Any:
        raise unknown_method("get_partitions_by_expr")

    def get_partitions_spec_by_expr(self, req: Any) -> Any:
        raise unknown_method("get_partitions_spec_by_expr")

    def get_partition_names_req(self, req: Any) -> Any:
        raise unknown_method("get_partition_names_req")

    def get_num_partitions_by_expr(self, req: Any) -> Any:
        raise unknown_method("get_num_partitions_by_expr")
