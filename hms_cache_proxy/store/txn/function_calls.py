"""open_txns and commit_txn as one call of their server-side function (``plpgsql.py``).

Each call is one autocommit statement: its implicit transaction does every step of the Thrift
call, events included, and commits before the answer returns. Used on PostgreSQL through
psycopg2 when ``TxnConfig.server_functions`` is set (the functions are installed), without a
transaction-mode pooler (whose sessions take the timeouts per BEGIN) and without armed
failpoints (``write.before_commit`` must run between the steps and the commit).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from hms_cache_proxy import failpoints
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as ids_module
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.txn import pgsql, plpgsql
from hms_cache_proxy.store.txn.txn_base import SettledTxns, TxnPart

log = logging.getLogger(__name__)
T = TypeVar("T")


class FunctionCalls(TxnPart):
    """The one-round-trip open_txns and commit_txn."""

    def usable(self) -> bool:
        """Whether this call may take the function now."""
        db = self.db
        return (
            self.config.server_functions
            and db.folds_round_trips
            and db.pooler != "transaction"
            and not failpoints.ACTIVE
        )

    def _call(self, fn: Callable[[Connection], T]) -> T:
        """``fn`` on an autocommit connection, retried as ``Database.transaction`` retries."""
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.db.single_statement(write=True) as conn:
                    return fn(conn)
            except DBAPIError as exc:
                if attempt > self.db.write_retries or not self.db.is_retryable(exc):
                    raise
                log.info("retrying a transaction function call (attempt %d)", attempt)
                time.sleep(min(0.5, 0.01 * (2**attempt)))

    def _recorded(self, event_type: str, row: Any) -> None:
        """Hand the event the function wrote to the writer's cache (``record_commits``)."""
        event_id, event_time, body = row
        self.events.record_committed(
            [
                hms.NotificationEvent(
                    eventId=int(event_id),
                    eventTime=int(event_time),
                    eventType=event_type,
                    catName=None,
                    dbName=None,
                    tableName=None,
                    message=body,
                    messageFormat=msg.JSON_FORMAT,
                )
            ]
        )

    def _nl_id(self, conn: Connection) -> int:
        return self.events.ids.allocate(conn, ids_module.NOTIFICATION_LOG, 1)[0]

    def open_txns(
        self,
        n: int,
        user: str,
        host: str,
        agent_info: str | None,
        txn_type: int,
        started: list[float],
        settled: SettledTxns | None,
    ) -> list[int]:
        """Txns._open's steps; ``started`` gets the moment the ids were taken."""
        params = pgsql.open_params(
            n,
            user or "",
            host or "",
            agent_info,
            txn_type,
            self.config.open_txn_timeout_ms,
            settled.floor if settled else 0,
            sorted(settled.unsettled) if settled else [],
        )
        with_event = txn_type != hms.TxnType.READ_ONLY
        message = (
            msg.to_json(self.messages.open_txn(plpgsql.FROM_SENTINEL, plpgsql.TO_SENTINEL))
            if with_event
            else None
        )

        def run(conn: Connection) -> list[int]:
            values = plpgsql.open_values(
                params,
                self.config.use_min_history_level,
                self._nl_id(conn) if with_event else None,
                message,
                msg.JSON_FORMAT,
                self.events.notify_channel,
            )
            sent = time.monotonic()
            row = conn.exec_driver_sql(plpgsql.OPEN_CALL, values).one()
            started.append(sent + float(row[1]))
            if with_event:
                self._recorded(msg.OPEN_TXN, row[2:])
            return [int(i) for i in row[0]]

        return self._call(run)

    def commit_txn(self, txn_id: int) -> bool:
        """Commit._commit_plain's steps and its event; False when the txn needs the general
        path (not open, a type other than DEFAULT and READ_ONLY, an update or delete: the
        function then changed nothing)."""
        message = msg.to_json(
            self.messages.commit_txn(
                txn_id,
                [
                    hms.WriteEventInfo(
                        writeId=plpgsql.WRITE_ID_SENTINEL, database="@", table="@", files=None
                    )
                ],
            )
        )

        def run(conn: Connection) -> bool:
            values = plpgsql.commit_values(
                txn_id,
                self.config.use_min_history_level,
                self.config.use_min_history_write_id,
                self._nl_id(conn),
                message,
                msg.JSON_FORMAT,
                self.events.notify_channel,
            )
            row = conn.exec_driver_sql(plpgsql.COMMIT_CALL, values).one()
            if row[0] != "done":
                return False
            if row[1] is not None:
                self._recorded(msg.COMMIT_TXN, row[1:])
            return True

        return self._call(run)
