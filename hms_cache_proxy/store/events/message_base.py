"""What every notification message body shares: the builder's settings, the embedded objects'
filtering, our extra fields' keys and the ``writer`` that ends each body.

The message families (:mod:`.metadata_messages`, :mod:`.stats_messages`,
:mod:`.txn_messages`) build on :class:`MessageBuilderBase`; :class:`.messages.MessageBuilder`
joins them. The keys are read back by the readers in :mod:`.messages`.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from hms_cache_proxy.store.events import tjson

# -- our extra fields (see the module docstring of .messages) ---------------------------------

VALID_WRITE_ID_LIST = "validWriteIdList"
"""Our extra field: the ValidWriteIdList string of the call that made the change."""
WRITE_ID = "writeId"
"""Hive's field (ALTER_*, UPDATE_*_COL_STAT); our extra in CREATE_TABLE and ADD_PARTITION."""
PARTITIONS_CHANGED = "partitionsChanged"
"""Our extra field of ALTER_TABLE: the change touched the partitions without partition events."""
PARTITION_OBJ_JSON = "partitionObjJson"
"""Our extra field of UPDATE_PART_COL_STAT_EVENT: the partition after the change."""
TXN_WRITES = "txnWrites"
"""Our extra field of COMMIT_TXN: the txn's writes as [database, table, writeId]. Hive's own
lists (writeIds, databases, tables, ...) stay null: REPL DUMP appends the txn's write-event info
to them (JSONCommitTxnMessage#addWriteEventInfo) and reads them by index, so lists we filled
would come first and hold no table objects."""
REPL_LEFT_OUT = "replPropertiesLeftOut"
"""Our extra field of ALTER_DATABASE: Hive's replication properties were left out of its
objects (as Hive's AlterDatabaseEvent does), so they are not the database as stored."""
TABLES_ALTERED = "tablesAltered"
"""Our extra field of COMMIT_TXN: tables ([cat, db, table]) whose parameters the commit changed
(CommitTxnRequest.keyValue). No other event describes that change: caches drop those tables."""
WRITER = "writer"
"""Our extra field in every message our store writes: its embedded objects are exact reads."""
WRITER_NAME = "hms-cache-proxy"


class Body(dict[str, Any]):
    """A message body that also holds Thrift objects some of its TJSON fields encode
    (``objects``: field name to object). Our store builds these for its own writes from the
    objects it read back, which nothing changes afterwards; the cache applying the write's own
    event (``EventLog.body_of``) takes the object rather than decode the field's TJSON (issue
    23: half of applying an insert's ALTER_PARTITION). JSON-encoded as the dict it is."""

    __slots__ = ("objects",)

    def __init__(self, fields: dict[str, Any], objects: dict[str, Any]) -> None:
        super().__init__(fields)
        self.objects = objects


def tf(flag: bool) -> str:
    return "true" if flag else "false"


def partition_key_values(table: Any, partition: Any) -> dict[str, str]:
    """Partition key name to value, in key order (MessageBuilder.getPartitionKeyValues)."""
    keys = table.partitionKeys or []
    values = partition.values or []
    return {k.name: v for k, v in zip(keys, values, strict=False)}


class MessageBuilderBase:
    """Builds message bodies the way Hive's MessageBuilder does, from Thrift objects.

    ``server`` is what Hive puts there (its metastore.thrift.uris, "" when unset) and
    ``service_principal`` its Kerberos principal ("" without Kerberos). ``exclude_parameters``
    are regular expressions (metastore.notification.parameters.exclude.patterns): Table and
    Partition parameters whose key matches one are left out of the embedded objects (the
    caller's objects are not changed). ``writer`` (our store passes :data:`WRITER_NAME`) ends
    every body with ``"writer"``; None builds Hive's layouts exactly.
    """

    def __init__(
        self,
        server: str = "",
        service_principal: str = "",
        clock: Callable[[], float] = time.time,
        exclude_parameters: Iterable[str] = (),
        writer: str | None = None,
    ) -> None:
        self.server = server
        self.service_principal = service_principal
        self._clock = clock
        self._exclude = [re.compile(p) for p in exclude_parameters if p]
        # Filtered objects are not what the database reads back: no promise then.
        self.writer = None if self._exclude else writer

    def now(self) -> int:
        """Seconds since the epoch, as Hive's ``now()`` (currentTimeMillis / 1000)."""
        return int(self._clock())

    # -- embedded objects --

    def _filtered(self, obj: Any) -> Any:
        params = getattr(obj, "parameters", None)
        if not self._exclude or not params:
            return obj
        keep = {k: v for k, v in params.items() if not any(p.search(k) for p in self._exclude)}
        if len(keep) == len(params):
            return obj
        clone = copy.copy(obj)
        clone.parameters = keep
        return clone

    def _keeping(self, body: dict[str, Any], **objects: Any) -> dict[str, Any]:
        """``body`` holding ``objects`` (its fields' objects, see :class:`Body`) when this
        builder writes our ``writer`` mark: unfiltered, so each object is exactly what its
        field encodes. Otherwise (filtered objects, Hive's layouts) ``body`` as it is.

        The objects are not copied (a deep copy of a partition costs about what decoding
        its TJSON does, which this saves): from here on they belong to the event. Nobody may
        change one after handing it over, not even after the commit: the cache serializes it
        when it applies the event (``EventLog.body_of``), which may be later, on the poller's
        thread, and would then hold what neither the field's TJSON nor the database does.
        The store's writes build them from what they read back and let them go."""
        return body if self.writer is None else Body(body, objects)

    def table_json(self, table: Any) -> str:
        return tjson.dumps(self._filtered(table))

    def partition_json(self, partition: Any) -> str:
        return tjson.dumps(self._filtered(partition))

    def _extra(
        self, body: dict[str, Any], valid_write_ids: str | None, **extras: Any
    ) -> dict[str, Any]:
        """Our fields after Hive's: validWriteIdList, then ``extras`` that are not None."""
        if valid_write_ids is not None:
            body[VALID_WRITE_ID_LIST] = valid_write_ids
        for key, value in extras.items():
            if value is not None:
                body[key] = value
        return self._finish(body)

    def _finish(self, body: dict[str, Any]) -> dict[str, Any]:
        """The last field of every body: ``writer`` (when this builder has one)."""
        if self.writer is not None:
            body[WRITER] = self.writer
        return body

    @staticmethod
    def _txn_write_id(write_id: int | None) -> int | None:
        """Our extra ``writeId``: only for a write in a transaction."""
        return write_id if write_id is not None and write_id > 0 else None
