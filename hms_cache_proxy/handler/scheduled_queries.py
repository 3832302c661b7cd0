"""Scheduled queries: the calls HiveServer2's scheduled-query service makes (Hive 4's
HMSHandler over ObjectStore; the store keeps Hive's tables and rules)."""

from __future__ import annotations

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.idl import hms

_TYPES = hms.ScheduledQueryMaintenanceRequestType


def _key(key: hms.ScheduledQueryKey | None) -> hms.ScheduledQueryKey:
    if key is None or not key.scheduleName or key.clusterNamespace is None:
        raise hms.MetaException(
            message="A scheduled query key needs a scheduleName and a clusterNamespace"
        )
    return key


class ScheduledQueryHandlers(HandlerBase):
    def scheduled_query_maintenance(self, request: hms.ScheduledQueryMaintenanceRequest) -> None:
        query = request.scheduledQuery
        if query is None:
            raise hms.MetaException(message="The request has no scheduledQuery")
        _key(query.scheduleKey)
        if request.type == _TYPES.CREATE:
            self.store.create_scheduled_query(query)
        elif request.type == _TYPES.ALTER:
            self.store.alter_scheduled_query(query)
        elif request.type == _TYPES.DROP:
            self.store.drop_scheduled_query(query.scheduleKey)
        else:
            raise hms.MetaException(message="invalid request")

    def scheduled_query_poll(
        self, request: hms.ScheduledQueryPollRequest
    ) -> hms.ScheduledQueryPollResponse:
        if request.clusterNamespace is None:
            raise hms.MetaException(message="The poll request has no clusterNamespace")
        return self.store.poll_scheduled_query(request.clusterNamespace)

    def scheduled_query_progress(self, info: hms.ScheduledQueryProgressInfo) -> None:
        if info.scheduledExecutionId is None or info.state is None:
            raise hms.MetaException(message="The progress info needs an execution id and a state")
        self.store.scheduled_query_progress(info)

    def get_scheduled_query(self, scheduleKey: hms.ScheduledQueryKey) -> hms.ScheduledQuery:
        return self.store.get_scheduled_query(_key(scheduleKey))
