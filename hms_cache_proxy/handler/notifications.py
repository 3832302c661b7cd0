"""Notification-log calls."""

from __future__ import annotations

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.handler.encoded import wrap
from hms_cache_proxy.idl import hms


class NotificationHandlers(HandlerBase):
    def get_next_notification(
        self, rqst: hms.NotificationEventRequest
    ) -> hms.NotificationEventResponse:
        if rqst is None or rqst.lastEvent is None:
            raise hms.MetaException(message="lastEvent must be set")
        events = self.store.next_notifications(
            rqst.lastEvent, rqst.maxEvents, rqst.eventTypeSkipList or (), encoded=True
        )
        return wrap(hms.NotificationEventResponse, "events", events)

    def get_current_notificationEventId(self) -> hms.CurrentNotificationEventId:
        return hms.CurrentNotificationEventId(eventId=self.store.notification_event_id())

    def get_notification_events_count(
        self, rqst: hms.NotificationEventsCountRequest
    ) -> hms.NotificationEventsCountResponse:
        if rqst is None or rqst.fromEventId is None:
            raise hms.MetaException(message="fromEventId must be set")
        cat = self.catalog(rqst.catName)
        db = (rqst.dbName or "").strip().lower() or "*"  # no database: every database
        tables = getattr(rqst, "tableNames", None)  # Hive 4.1's field; absent from 4.0's IDL
        count = self.store.notification_events_count(
            rqst.fromEventId,
            db,
            cat_name=cat,
            to_event=rqst.toEventId,
            limit=rqst.limit,
            table_names=[t.lower() for t in tables] if tables else None,
        )
        return hms.NotificationEventsCountResponse(eventsCount=count)

    def fire_listener_event(self, rqst: hms.FireEventRequest) -> hms.FireEventResponse:
        if rqst is None or rqst.data is None:
            raise hms.MetaException(message="FireEventRequest.data must be set")
        cat, db = self.require_db(rqst.dbName)
        if rqst.catName:
            cat = self.catalog(rqst.catName)
        tbl = self.require_name(rqst.tableName)
        data = rqst.data
        if data.insertData is not None:
            inserts = [(rqst.partitionVals, data.insertData)]
        elif data.insertDatas is not None:
            inserts = [(d.partitionVal or rqst.partitionVals, d) for d in data.insertDatas]
        else:
            raise hms.MetaException(message="FireEventRequest.data holds no insert data")
        if not rqst.successful:
            return hms.FireEventResponse(eventIds=[])
        ids = self.store.fire_insert_events(cat, db, tbl, inserts)
        return hms.FireEventResponse(eventIds=ids)

    def flushCache(self) -> None:
        """Empty this instance's cache (other instances keep theirs; nothing to flush on the
        database path). Hive's fire_listener_event refresh (FireEventRequestData.refreshEvent)
        is not in Hive 4.0's IDL, so flushCache and POST /admin/refresh are the only ways."""
        self.store.flush_all()
