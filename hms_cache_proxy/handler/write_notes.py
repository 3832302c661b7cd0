"""ACID write notifications: add_write_notification_log (and _in_batch), which Hive's
HiveServer2 sends after an insert into a transactional table, and get_all_write_event_info.

The add calls declare no exception: a refused notice (unknown table or partition, a write id
that is not the transaction's, a transaction no longer open) is answered as Java's processor
answers an undeclared one, a TApplicationException carrying the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from thriftpy2.thrift import TApplicationException

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.idl import hms


def _application_error(api: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except (hms.MetaException, hms.NoSuchObjectException, hms.InvalidObjectException) as exc:
        raise TApplicationException(
            TApplicationException.INTERNAL_ERROR, f"Internal error processing {api}: {exc.message}"
        ) from None


class WriteNotificationHandlers(HandlerBase):
    def add_write_notification_log(
        self, rqst: hms.WriteNotificationLogRequest
    ) -> hms.WriteNotificationLogResponse:
        def run() -> None:
            self._check_notice(rqst)
            cat, db = self.require_db(rqst.db)
            self.store.add_write_notifications(cat, db, self.require_name(rqst.table), [rqst])

        _application_error("add_write_notification_log", run)
        return hms.WriteNotificationLogResponse()

    def add_write_notification_log_in_batch(
        self, rqst: hms.WriteNotificationLogBatchRequest
    ) -> hms.WriteNotificationLogBatchResponse:
        """Every notice of the batch is about the batch's table (Hive uses the batch's names
        for all of them); all are recorded in one transaction, or none."""

        def run() -> None:
            if rqst is None or not rqst.requestList:
                raise hms.MetaException(message="requestList must list at least one write")
            cat, db = self.require_db(rqst.db)
            if rqst.catalog:
                cat = self.catalog(rqst.catalog)
            for r in rqst.requestList:
                self._check_notice(r)
            name = self.require_name(rqst.table)
            self.store.add_write_notifications(cat, db, name, list(rqst.requestList))

        _application_error("add_write_notification_log_in_batch", run)
        return hms.WriteNotificationLogBatchResponse()

    @staticmethod
    def _check_notice(rqst: hms.WriteNotificationLogRequest | None) -> None:
        if rqst is None:
            raise hms.MetaException(message="the WriteNotificationLogRequest must be set")
        for field in ("txnId", "writeId", "fileInfo"):
            if getattr(rqst, field) is None:
                raise hms.MetaException(message=f"WriteNotificationLogRequest.{field} must be set")

    def get_all_write_event_info(
        self, request: hms.GetAllWriteEventInfoRequest
    ) -> list[hms.WriteEventInfo]:
        if request is None or request.txnId is None:
            raise hms.MetaException(message="GetAllWriteEventInfoRequest.txnId must be set")
        db = self.split_db(request.dbName)[1] if request.dbName else None
        table = self.require_name(request.tableName) if request.tableName else None
        return self.store.write_event_info(request.txnId, db, table)
