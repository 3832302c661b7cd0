"""Small partition calls engines make: partition-name helpers and partition event marks.

- ``partition_name_has_valid_characters``: the values against the partition-name whitelist
  (``metastore.partition.name.whitelist.pattern``, set per connection with setMetaConf; none
  set: every value is valid).
- ``partition_name_to_vals`` / ``partition_name_to_spec``: Warehouse.makeSpecFromName, which
  unescapes ``key=value`` components and skips the others.
- ``markPartitionForEvent`` / ``isPartitionMarkedForEvent``: PARTITION_EVENTS rows keyed by the
  partition's values in key order (store/sql/partition_events.py). The table must exist and
  the map must give a value for each of its partition keys; the partition itself need not
  exist, as in Hive.
"""

from __future__ import annotations

import re

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.handler.partition_add import WHITELIST
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import partnames


def _name(part_name: str | None) -> str:
    if part_name is None:
        raise hms.MetaException(message="part_name must be set")
    return part_name


class PartitionHelperHandlers(HandlerBase):
    def partition_name_has_valid_characters(
        self, part_vals: list[str] | None, throw_exception: bool
    ) -> bool:
        pattern = self.conf(WHITELIST, "") or ""
        if not pattern:
            return True
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise hms.MetaException(
                message=f"Invalid whitelist pattern {pattern!r}: {exc}"
            ) from None
        for value in part_vals or []:
            if value is None or compiled.fullmatch(value) is None:
                if not throw_exception:
                    return False
                raise hms.MetaException(
                    message=f"Partition value '{value}' contains a character not matched by "
                    f"whitelist pattern '{pattern}'.  (configure with "
                    "metastore.partition.name.whitelist.pattern)"
                )
        return True

    def partition_name_to_vals(self, part_name: str | None) -> list[str]:
        name = _name(part_name)
        if not name:
            return []
        return [value for _, value in self._spec(name)]

    def partition_name_to_spec(self, part_name: str | None) -> dict[str, str]:
        name = _name(part_name)
        if not name:
            return {}
        return dict(self._spec(name))

    @staticmethod
    def _spec(name: str) -> list[tuple[str, str]]:
        try:
            return partnames.parse_part_name(name)
        except partnames.PartitionNameError as exc:
            raise hms.MetaException(message=str(exc)) from None

    # -- partition events -----------------------------------------------------------------------

    def markPartitionForEvent(  # noqa: N802
        self,
        db_name: str,
        tbl_name: str,
        part_vals: dict[str, str] | None,
        eventType: int,  # noqa: N803
    ) -> None:
        cat, db, tbl, partition, kind = self._event_target(db_name, tbl_name, part_vals, eventType)
        self.store.mark_partition_for_event(cat, db, tbl, partition, kind)

    def isPartitionMarkedForEvent(  # noqa: N802
        self,
        db_name: str,
        tbl_name: str,
        part_vals: dict[str, str] | None,
        eventType: int,  # noqa: N803
    ) -> bool:
        cat, db, tbl, partition, kind = self._event_target(db_name, tbl_name, part_vals, eventType)
        return self.store.is_partition_marked_for_event(cat, db, tbl, partition, kind)

    def _event_target(
        self, db_name: str, tbl_name: str, part_vals: dict[str, str] | None, event_type: int
    ) -> tuple[str, str, str, str, int]:
        """(catalog, db, table, Hive's getPartitionStr, event type), or the declared error."""
        if event_type not in hms.PartitionEventType._VALUES_TO_NAMES:
            raise hms.MetaException(
                message=f"Unknown PartitionEventType {event_type}; expected LOAD_DONE (1)"
            )
        cat, db = self.require_db(db_name)
        tbl = self.require_name(tbl_name)
        try:
            table = self.store.get_table(cat, db, tbl)
        except hms.NoSuchObjectException:
            raise hms.UnknownTableException(message=f"Table: {tbl_name} is not found.") from None
        keys = [k.name for k in table.partitionKeys or []]
        given = part_vals or {}
        if len(keys) != len(given):
            raise hms.InvalidPartitionException(
                message=f"Number of partition columns in table: {len(keys)} doesn't match with "
                f"number of supplied partition values: {len(given)}"
            )
        values = []
        for key in keys:
            value = given.get(key)
            if value is None:
                raise hms.InvalidPartitionException(
                    message=f"No value found for partition column: {key}"
                )
            values.append(value)
        return cat, db, tbl, ",".join(values), event_type
