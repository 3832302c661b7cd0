"""Runtime statistics (add_runtime_stats, get_runtime_stats): HiveServer2's re-optimisation
hints, stored as opaque payloads (store/sql/runtime_stats.py)."""

from __future__ import annotations

from hms_cache_proxy.handler.base import HandlerBase
from hms_cache_proxy.idl import hms


class RuntimeStatsHandlers(HandlerBase):
    def add_runtime_stats(self, stat: hms.RuntimeStat) -> None:
        if stat is None or stat.weight is None or stat.payload is None:
            raise hms.MetaException(message="A runtime stat needs a weight and a payload")
        payload = stat.payload.encode() if isinstance(stat.payload, str) else stat.payload
        self.store.add_runtime_stat(stat.weight, payload)

    def get_runtime_stats(self, rqst: hms.GetRuntimeStatsRequest) -> list[hms.RuntimeStat]:
        if rqst is None or rqst.maxWeight is None or rqst.maxCreateTime is None:
            raise hms.MetaException(message="The request needs maxWeight and maxCreateTime")
        return self.store.get_runtime_stats(int(rqst.maxWeight), int(rqst.maxCreateTime))
