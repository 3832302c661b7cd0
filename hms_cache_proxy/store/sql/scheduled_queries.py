"""Scheduled queries (SCHEDULED_QUERIES, SCHEDULED_EXECUTIONS) as Hive 4's ObjectStore keeps
them: scheduledQueryMaintenance, scheduledQueryPoll, scheduledQueryProgress and
getScheduledQuery, with Hive's messages.

A query is keyed by (schedule name, cluster namespace). NEXT_EXECUTION is the next time its
Quartz cron schedule fires (store/cron.py), in epoch seconds. A poll takes the enabled query of
the namespace that is due first and has no active execution, starts an execution (INITED) and
moves the query's next execution on, all in one transaction, so two pollers never take the
same run. Ids come from SEQUENCE_TABLE (MScheduledQuery, MScheduledExecution) as the Java
metastore takes them. No notification events: Hive writes none for these either.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, insert, select, update

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store import cron
from hms_cache_proxy.store.db import ids as idseq
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.sql.sql_base import SqlPart, now

_Q = schema.SCHEDULED_QUERIES
_E = schema.SCHEDULED_EXECUTIONS
ERROR_MESSAGE_MAX = 1000
"""Hive abbreviates an execution's error message to this many characters."""
_FINAL = ("FAILED", "FINISHED", "TIMED_OUT")


def key_ref(key: hms.ScheduledQueryKey) -> str:
    return f"{key.scheduleName}@{key.clusterNamespace}"


def _next(schedule: str | None) -> int:
    try:
        found = cron.next_execution(schedule or "", now())
    except cron.CronError as exc:
        raise hms.InvalidInputException(message=f"Invalid schedule: {schedule} ({exc})") from None
    if found is None:
        raise hms.InvalidInputException(message=f"Invalid schedule: {schedule} (never fires)")
    return found


def _allowed(before: str | None, after: str) -> bool:
    """Hive's validateStateChange."""
    if before == "INITED":
        return after != "INITED"
    if before == "EXECUTING":
        return after in ("FINISHED", "EXECUTING", "FAILED")
    return False


def _abbreviate(text: str) -> str:
    """commons-lang's StringUtils.abbreviate(text, 1000): cut with an ellipsis."""
    if len(text) <= ERROR_MESSAGE_MAX:
        return text
    return text[: ERROR_MESSAGE_MAX - 3] + "..."


class ScheduledQueries(SqlPart):
    """scheduled_query_maintenance, scheduled_query_poll, scheduled_query_progress,
    get_scheduled_query."""

    def _query_row(self, conn: Connection, key: hms.ScheduledQueryKey, lock: bool = False) -> Any:
        stmt = select(_Q).where(
            _Q.c.SCHEDULE_NAME == key.scheduleName,
            _Q.c.CLUSTER_NAMESPACE == key.clusterNamespace,
        )
        if lock:
            stmt = stmt.with_for_update()
        return conn.execute(stmt).first()

    def get_scheduled_query(self, key: hms.ScheduledQueryKey) -> hms.ScheduledQuery:
        with self.db.read() as conn:
            row = self._query_row(conn, key)
        if row is None:
            raise hms.NoSuchObjectException(
                message=f"There is no scheduled query for: {key_ref(key)}"
            )
        return hms.ScheduledQuery(
            scheduleKey=hms.ScheduledQueryKey(
                scheduleName=row.SCHEDULE_NAME, clusterNamespace=row.CLUSTER_NAMESPACE
            ),
            enabled=bool(row.ENABLED),
            schedule=row.SCHEDULE,
            user=row.USER,
            query=row.QUERY,
            nextExecution=row.NEXT_EXECUTION,
        )

    def create_scheduled_query(self, query: hms.ScheduledQuery) -> None:
        key = query.scheduleKey

        def run(conn: Connection) -> None:
            if self._query_row(conn, key, lock=True) is not None:
                raise hms.AlreadyExistsException(
                    message=f"Scheduled query with name: {key_ref(key)} already exists."
                )
            (query_id,) = self.ids.allocate(conn, idseq.SCHEDULED_QUERY)
            conn.execute(
                insert(_Q).values(
                    SCHEDULED_QUERY_ID=query_id,
                    SCHEDULE_NAME=key.scheduleName,
                    CLUSTER_NAMESPACE=key.clusterNamespace,
                    ENABLED=bool(query.enabled),
                    SCHEDULE=query.schedule,
                    USER=query.user,
                    QUERY=query.query,
                    NEXT_EXECUTION=_next(query.schedule),
                    ACTIVE_EXECUTION_ID=None,
                )
            )

        self.db.transaction(run)

    def alter_scheduled_query(self, query: hms.ScheduledQuery) -> None:
        """Every field but the key is replaced, as Hive's MScheduledQuery.doUpdate; the next
        execution is the one given, else the schedule's next."""
        key = query.scheduleKey

        def run(conn: Connection) -> None:
            row = self._missing_or_row(conn, key)
            following = query.nextExecution
            if following is None:
                following = _next(query.schedule)
            conn.execute(
                update(_Q)
                .where(_Q.c.SCHEDULED_QUERY_ID == row.SCHEDULED_QUERY_ID)
                .values(
                    ENABLED=bool(query.enabled),
                    SCHEDULE=query.schedule,
                    USER=query.user,
                    QUERY=query.query,
                    NEXT_EXECUTION=following,
                )
            )

        self.db.transaction(run)

    def drop_scheduled_query(self, key: hms.ScheduledQueryKey) -> None:
        def run(conn: Connection) -> None:
            row = self._missing_or_row(conn, key)
            query_id = row.SCHEDULED_QUERY_ID
            conn.execute(delete(_E).where(_E.c.SCHEDULED_QUERY_ID == query_id))
            conn.execute(delete(_Q).where(_Q.c.SCHEDULED_QUERY_ID == query_id))

        self.db.transaction(run)

    def _missing_or_row(self, conn: Connection, key: hms.ScheduledQueryKey) -> Any:
        row = self._query_row(conn, key, lock=True)
        if row is None:
            raise hms.NoSuchObjectException(
                message=f"Scheduled query with name: {key_ref(key)} doesn't exists."
            )
        return row

    def poll_scheduled_query(self, namespace: str) -> hms.ScheduledQueryPollResponse:
        def run(conn: Connection) -> hms.ScheduledQueryPollResponse:
            at = now()
            row = conn.execute(
                select(_Q)
                .where(
                    _Q.c.NEXT_EXECUTION <= at,
                    _Q.c.ENABLED.is_(True),
                    _Q.c.CLUSTER_NAMESPACE == namespace,
                    _Q.c.ACTIVE_EXECUTION_ID.is_(None),
                )
                .order_by(_Q.c.NEXT_EXECUTION, _Q.c.SCHEDULED_QUERY_ID)
                .limit(1)
                .with_for_update(skip_locked=True)
            ).first()
            if row is None:
                return hms.ScheduledQueryPollResponse()
            (execution_id,) = self.ids.allocate(conn, idseq.SCHEDULED_EXECUTION)
            conn.execute(
                insert(_E).values(
                    SCHEDULED_EXECUTION_ID=execution_id,
                    SCHEDULED_QUERY_ID=row.SCHEDULED_QUERY_ID,
                    STATE="INITED",
                    START_TIME=at,
                    LAST_UPDATE_TIME=at,
                )
            )
            try:
                following = _next(row.SCHEDULE)
            except hms.InvalidInputException:
                following = None  # a schedule stored by someone else that never fires again
            conn.execute(
                update(_Q)
                .where(_Q.c.SCHEDULED_QUERY_ID == row.SCHEDULED_QUERY_ID)
                .values(NEXT_EXECUTION=following, ACTIVE_EXECUTION_ID=execution_id)
            )
            return hms.ScheduledQueryPollResponse(
                scheduleKey=hms.ScheduledQueryKey(
                    scheduleName=row.SCHEDULE_NAME, clusterNamespace=row.CLUSTER_NAMESPACE
                ),
                executionId=execution_id,
                query=f"/* schedule: {row.SCHEDULE_NAME} */{row.QUERY}",
                user=row.USER,
            )

        return self.db.transaction(run)

    def scheduled_query_progress(self, info: hms.ScheduledQueryProgressInfo) -> None:
        state = hms.QueryState._VALUES_TO_NAMES.get(info.state)
        if state is None:
            raise hms.InvalidOperationException(message=f"invalid state: {info.state}")

        def run(conn: Connection) -> None:
            row = conn.execute(
                select(_E)
                .where(_E.c.SCHEDULED_EXECUTION_ID == info.scheduledExecutionId)
                .with_for_update()
            ).first()
            if row is None:
                raise hms.InvalidOperationException(
                    message=f"No scheduled execution with id {info.scheduledExecutionId}"
                )
            if not _allowed(row.STATE, state):
                raise hms.InvalidOperationException(
                    message=f"Invalid state change: {row.STATE}=>{state}"
                )
            values: dict[str, Any] = {"STATE": state}
            if info.executorQueryId is not None:
                values["EXECUTOR_QUERY_ID"] = info.executorQueryId
            if info.errorMessage is not None:
                values["ERROR_MESSAGE"] = _abbreviate(info.errorMessage)
            if state in _FINAL:
                values.update(END_TIME=now(), LAST_UPDATE_TIME=None)
                conn.execute(
                    update(_Q)
                    .where(_Q.c.ACTIVE_EXECUTION_ID == info.scheduledExecutionId)
                    .values(ACTIVE_EXECUTION_ID=None)
                )
            elif state in ("INITED", "EXECUTING"):
                values["LAST_UPDATE_TIME"] = now()
            else:
                raise hms.InvalidOperationException(message=f"invalid state: {state}")
            conn.execute(
                update(_E)
                .where(_E.c.SCHEDULED_EXECUTION_ID == info.scheduledExecutionId)
                .values(**values)
            )

        self.db.transaction(run)
