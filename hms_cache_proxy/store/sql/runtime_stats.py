"""RUNTIME_STATS: the runtime statistics HiveServer2 keeps for query re-optimisation, as Hive
4's ObjectStore stores and lists them (opaque payloads with a weight, newest first)."""

from __future__ import annotations

from sqlalchemy import Connection, insert, select

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.sql.sql_base import SqlPart, now

_RS = schema.RUNTIME_STATS


class RuntimeStats(SqlPart):
    """add_runtime_stat, get_runtime_stats."""

    def add_runtime_stat(self, weight: int, payload: bytes) -> None:
        """One row, created now (Hive ignores the client's createTime)."""

        def run(conn: Connection) -> None:
            (stat_id,) = self.ids.allocate(conn, idseq.RUNTIME_STAT)
            conn.execute(
                insert(_RS).values(
                    RS_ID=stat_id, CREATE_TIME=now(), WEIGHT=int(weight), PAYLOAD=payload
                )
            )

        self.db.transaction(run)

    def get_runtime_stats(self, max_weight: int, max_create_time: int) -> list[hms.RuntimeStat]:
        """Newest first (created before ``max_create_time`` when it is positive), until the
        weights add up to ``max_weight`` (negative: no limit); the entry that reaches it is
        included, as in Hive's getMRuntimeStats."""
        query = select(_RS.c.CREATE_TIME, _RS.c.WEIGHT, _RS.c.PAYLOAD).order_by(
            _RS.c.CREATE_TIME.desc(), _RS.c.RS_ID.desc()
        )
        if max_create_time > 0:
            query = query.where(_RS.c.CREATE_TIME < max_create_time)
        limit = max_weight if max_weight >= 0 else None
        out: list[hms.RuntimeStat] = []
        total = 0
        with self.db.read() as conn:
            for row in conn.execute(query):
                out.append(
                    hms.RuntimeStat(
                        createTime=int(row.CREATE_TIME),
                        weight=int(row.WEIGHT),
                        payload=bytes(row.PAYLOAD or b""),
                    )
                )
                total += int(row.WEIGHT)
                if limit is not None and total >= limit:
                    break
        return out
