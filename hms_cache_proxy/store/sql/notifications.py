"""Notification-log reads, fired events, and the metastore's database identity."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy import Connection, insert, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.event_writes import writes_events
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import NewEvent
from hms_cache_proxy.store.sql.partition_reads import PartitionReads
from hms_cache_proxy.store.sql.sql_base import SqlPart, SqlShared
from hms_cache_proxy.store.sql.tables import Tables

UUID_KEY = "guid"


class Notifications(SqlPart):
    """The notification log: reads, and insert events a client fires for its own writes."""

    def __init__(self, shared: SqlShared, partitions: PartitionReads, tables: Tables) -> None:
        super().__init__(shared)
        self.partitions = partitions
        self.tables = tables

    def current_notification_event_id(self) -> int:
        with self.db.read() as conn:
            return self.events.current_event_id(conn)

    def next_notifications(
        self,
        last_event: int,
        max_events: int | None,
        skip_types: Sequence[str] = (),
        *,
        encoded: bool = False,
    ) -> list[hms.NotificationEvent]:
        """The events as objects (``encoded`` or not: read once, nobody shares them). Bounded
        by NEXT_EVENT_ID - 1 read first, which keeps the log's index read on a log without
        statistics (``EventLog.next_events``, ``upto``)."""
        with self.db.read() as conn:
            upto = self.events.current_event_id(conn)
            if upto <= last_event:
                return []
            return self.events.next_events(conn, last_event, max_events, skip_types, upto=upto)

    def notification_events_count(
        self,
        from_event: int,
        db_name: str,
        cat_name: str | None = None,
        to_event: int | None = None,
        limit: int | None = None,
        table_names: Sequence[str] | None = None,
    ) -> int:
        with self.db.read() as conn:
            return self.events.count_events(
                conn,
                from_event,
                db_name,
                cat_name=cat_name,
                to_event=to_event,
                limit=limit,
                table_names=table_names,
            )

    @writes_events
    def fire_insert_events(
        self,
        cat: str,
        db: str,
        tbl: str,
        inserts: Sequence[tuple[list[str] | None, hms.InsertEventRequestData]],
    ) -> list[int]:
        """INSERT events for data a client wrote itself (one per partition or the table)."""

        def run(conn: Connection) -> list[int]:
            tk = self.partitions.resolve_table(conn, cat, db, tbl)
            table = self.tables.load_table_by_id(conn, tk.tbl_id)
            events = []
            for values, data in inserts:
                part = None
                if values:
                    found = self.partitions.load_by_names(
                        conn, tk, [self.partitions.name_for(tk, values)]
                    )
                    if not found:
                        raise hms.NoSuchObjectException(
                            message=f"partition values={values} not found in {cat}.{db}.{tbl}"
                        )
                    part = found[0]
                events.append(
                    NewEvent(
                        msg.INSERT,
                        self.messages.insert(
                            table, part, replace=bool(data.replace), files=data.filesAdded or []
                        ),
                        cat,
                        db,
                        tbl,
                    )
                )
            return self._emit(conn, events)

        return self.db.transaction(run)

    def metastore_db_uuid(self) -> str:
        """The database's identity (METASTORE_DB_PROPERTIES 'guid'), created on first use."""
        p = schema.METASTORE_DB_PROPERTIES.c
        with self.db.read() as conn:
            found = conn.execute(
                select(p.PROPERTY_VALUE).where(p.PROPERTY_KEY == UUID_KEY)
            ).scalar()
        if found:
            return found

        def run(conn: Connection) -> str:
            current = conn.execute(
                select(p.PROPERTY_VALUE).where(p.PROPERTY_KEY == UUID_KEY).with_for_update()
            ).scalar()
            if current:
                return current
            value = str(uuid.uuid4())
            conn.execute(
                insert(schema.METASTORE_DB_PROPERTIES).values(
                    PROPERTY_KEY=UUID_KEY, PROPERTY_VALUE=value, DESCRIPTION="Metastore DB GUID"
                )
            )
            return value

        return self.db.transaction(run)
