"""PARTITION_EVENTS: markPartitionForEvent / isPartitionMarkedForEvent as Hive's ObjectStore
keeps them.

A mark is one row: catalog, database, table, the partition as Hive's getPartitionStr writes
it (the values in partition-key order joined by ``,``), the event type (PartitionEventType,
1 = LOAD_DONE) and the time in milliseconds; its id comes from SEQUENCE_TABLE (MPartitionEvent),
as the Java metastore takes it. Hive writes no notification event for a mark, and neither do
we. A mark without a catalog (Hive 2.3 writes CAT_NAME NULL) counts as the default catalog's
(Hive 4 would not find it). Hive's background expiry of old marks
(``metastore.event.expiry.duration``, off by default) is not run.
"""

from __future__ import annotations

import time

from sqlalchemy import Connection, insert, or_, select

from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.sql.sql_base import DEFAULT_CATALOG, SqlPart

_PE = schema.PARTITION_EVENTS


class PartitionEvents(SqlPart):
    """mark_partition_for_event, is_partition_marked_for_event."""

    def mark_partition_for_event(
        self, cat: str, db: str, table: str, partition: str, event_type: int
    ) -> None:
        """Record that ``event_type`` happened to the partition (``partition``: its values
        joined by commas)."""

        def run(conn: Connection) -> None:
            (event_id,) = self.ids.allocate(conn, idseq.PARTITION_EVENT)
            conn.execute(
                insert(_PE).values(
                    PART_NAME_ID=event_id,
                    CAT_NAME=cat,
                    DB_NAME=db,
                    TBL_NAME=table,
                    PARTITION_NAME=partition,
                    EVENT_TYPE=event_type,
                    EVENT_TIME=int(time.time() * 1000),
                )
            )

        self.db.transaction(run)

    def is_partition_marked_for_event(
        self, cat: str, db: str, table: str, partition: str, event_type: int
    ) -> bool:
        """Whether such a mark exists. Marks without a catalog (written by Hive 2.3, which has
        no catalogs) belong to the default catalog."""
        in_catalog = _PE.c.CAT_NAME == cat
        if cat == DEFAULT_CATALOG:
            in_catalog = or_(in_catalog, _PE.c.CAT_NAME.is_(None))
        query = (
            select(_PE.c.PART_NAME_ID)
            .where(
                in_catalog,
                _PE.c.DB_NAME == db,
                _PE.c.TBL_NAME == table,
                _PE.c.PARTITION_NAME == partition,
                _PE.c.EVENT_TYPE == event_type,
            )
            .limit(1)
        )
        with self.db.read() as conn:
            return conn.execute(query).first() is not None
