"""open_txns and commit_txn as one call of their server-side function (``plpgsql.py``).

Each call is one autocommit statement: its implicit transaction does every step of the Thrift
call, events included, and commits before the answer returns. Used on PostgreSQL through
psycopg2 when ``TxnConfig.server_functions`` is set (the functions are installed) and
failpoint ``write.before_commit`` is off (it must run between the steps and the commit). Behind
a transaction-mode pooler the call is a single statement like the other autocommit ones: the
role's own timeouts apply (docs/deployment.md).

The call goes through a bare DB-API cursor on a pooled connection (``Database.autocommit_cursor``)
with its parameters as psycopg2 binds them: with 8 clients one process's GIL is the limit, and
SQLAlchemy's statement and result objects were a third of the Python each call cost.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError

from hms_cache_proxy import failpoints
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as ids_module
from hms_cache_proxy.store.db.engine import PooledCursor
from hms_cache_proxy.store.db.prepared import Prepared
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.txn import pgsql, plpgsql
from hms_cache_proxy.store.txn.txn_base import SettledTxns, TxnPart, TxnShared, settled_bounds

log = logging.getLogger(__name__)
T = TypeVar("T")

_EVENT_TYPES = {"nl_id": "bigint", "message": "text", "format": "text", "channel": "text"}
_OPEN = Prepared(
    f"hms_open_txns_fn_v{plpgsql.VERSION}",
    plpgsql.OPEN_CALL,
    {
        "n": "integer",
        "user": "text",
        "host": "text",
        "agent": "text",
        "type": "integer",
        "min_history": "boolean",
        "floor": "bigint",
        "unsettled": "bigint[]",
        "window": "bigint",
        "on_floor": "boolean",
    }
    | _EVENT_TYPES,
)
_COMMIT = Prepared(
    f"hms_commit_txn_fn_v{plpgsql.VERSION}",
    plpgsql.COMMIT_CALL,
    {"txn": "bigint", "level": "boolean", "write_id": "boolean", "temp_id": "bigint"}
    | _EVENT_TYPES,
)
_ALLOCATE = Prepared(
    f"hms_allocate_write_ids_fn_v{plpgsql.VERSION}",
    plpgsql.ALLOCATE_CALL,
    {"txns": "bigint[]", "db": "text", "tbl": "text"} | _EVENT_TYPES,
)
_ABORT = Prepared(
    f"hms_abort_txn_fn_v{plpgsql.VERSION}",
    plpgsql.ABORT_CALL,
    {"txn": "bigint", "reason": "text", "level": "boolean", "write_id": "boolean"} | _EVENT_TYPES,
)
"""The calls, prepared once per pooled session (the top-level SELECT's planning is a good part
of what PostgreSQL spends on a call; the functions' own statements are planned once per
session anyway)."""

_TXN_PLACEHOLDER = -7000000000000000009
_TXN_MARK = f'"txnid":{_TXN_PLACEHOLDER}'
"""The commit body's txn id, replaced per call. Each mark is a key with its sentinel value,
not followed by anything: wherever the key stands in the body the mark is the same text, and
it cannot occur elsewhere (inside a JSON string a quote is escaped, so ``"txnid":`` there is
``\\"txnid\\":``), nor can the id put in merge with a neighbouring number."""
_COMMIT_MARKS = (_TXN_MARK, "," + plpgsql.WRITES_MARK)
"""What the commit body's text must hold exactly once: the txn id (``commit_message``) and the
write list, with the comma the commit function removes along with it when there are none (so
``txnWrites`` may stand anywhere but first)."""
_OPEN_MARKS = (plpgsql.FROM_MARK, plpgsql.TO_MARK)


class _PerSecond:
    """An event body's JSON text that changes only with its ``timestamp`` (whole seconds):
    built once per second instead of per call (``json.dumps`` of the body was a twentieth of
    the Python an open+commit cost at 8 clients). Every text built must hold each of
    ``marks`` (the placeholders a call or the server-side function replaces) exactly once,
    else building it raises: a placeholder missing or doubled would leave the sentinel in, or
    change the wrong text in, every body written."""

    def __init__(
        self, build: Callable[[], str], now: Callable[[], int], marks: tuple[str, ...] = ()
    ) -> None:
        self._build = build
        self._now = now
        self._marks = marks
        self._cached: tuple[int, str] | None = None

    def text(self) -> str:
        now = self._now()
        cached = self._cached
        if cached is not None and cached[0] == now:
            return cached[1]
        text = self._build()
        for mark in self._marks:
            if text.count(mark) != 1:
                raise RuntimeError(
                    f"an event body holds {mark!r} {text.count(mark)} times, not once: {text}"
                )
        if _stamped(text, now):  # not across a second's turn
            self._cached = (now, text)
        return text


def _stamped(text: str, now: int) -> bool:
    """Whether the body's ``timestamp`` is ``now``, wherever the key stands."""
    stamp = f'"timestamp":{now}'
    return stamp + "," in text or stamp + "}" in text


class FunctionCalls(TxnPart):
    """The one-round-trip open_txns and commit_txn."""

    def __init__(self, shared: TxnShared) -> None:
        super().__init__(shared)
        self._open_body = _PerSecond(
            lambda: msg.to_json(self.messages.open_txn(plpgsql.FROM_SENTINEL, plpgsql.TO_SENTINEL)),
            self.messages.now,
            _OPEN_MARKS,
        )
        self._commit_body = _PerSecond(
            lambda: msg.to_json(
                self.messages.commit_txn(
                    _TXN_PLACEHOLDER,
                    [
                        hms.WriteEventInfo(
                            writeId=plpgsql.WRITE_ID_SENTINEL, database="@", table="@", files=None
                        )
                    ],
                )
            ),
            self.messages.now,
            _COMMIT_MARKS,
        )

    def commit_message(self, txn_id: int) -> str:
        """The COMMIT_TXN body the commit function completes (its write list a placeholder)."""
        return self._commit_body.text().replace(_TXN_MARK, f'"txnid":{int(txn_id)}', 1)

    def usable(self) -> bool:
        """Whether this call may take the function now."""
        db = self.db
        return (
            self.config.server_functions
            and db.folds_round_trips
            and "write.before_commit" not in failpoints.ACTIVE
        )

    def _call(self, fn: Callable[[PooledCursor], T]) -> T:
        """``fn`` on an autocommit connection's DB-API cursor, retried as
        ``Database.transaction`` retries."""
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.events.function_call(), self.db.autocommit_cursor() as cur:
                    return fn(cur)
            except DBAPIError as exc:
                if attempt > self.db.write_retries or not self.db.is_retryable(exc):
                    raise
                log.info("retrying a transaction function call (attempt %d)", attempt)
                time.sleep(min(0.5, 0.01 * (2**attempt)))

    def _recorded(
        self, event_type: str, row: Any, db: str | None = None, table: str | None = None
    ) -> None:
        """Hand the event the function wrote to the writer's cache (``record_commits``)."""
        if not self.events.recording:
            return
        event_id, event_time, body = row
        self.events.record_committed(
            [
                hms.NotificationEvent(
                    eventId=int(event_id),
                    eventTime=int(event_time),
                    eventType=event_type,
                    catName=None,
                    dbName=db,
                    tableName=table,
                    message=body,
                    messageFormat=msg.JSON_FORMAT,
                )
            ]
        )

    def _nl_id(self) -> int:
        return self.events.ids.allocate_alone(ids_module.NOTIFICATION_LOG, 1)[0]

    def open_txns(
        self,
        n: int,
        user: str,
        host: str,
        agent_info: str | None,
        txn_type: int,
        started: list[float],
        settled: SettledTxns | None,
        on_floor: bool = False,
    ) -> list[int]:
        """Txns._open's steps; ``started`` gets the moment the ids were taken; ``on_floor``:
        the watermark from ``settled`` (``Txns.floor_bounds_watermark``)."""
        params = pgsql.open_params(
            n,
            user or "",
            host or "",
            agent_info,
            txn_type,
            self.config.open_txn_timeout_ms,
            *settled_bounds(settled),
        )
        with_event = txn_type != hms.TxnType.READ_ONLY
        message = self._open_body.text() if with_event else None

        def run(cur: PooledCursor) -> list[int]:
            values = plpgsql.open_values(
                params,
                self.config.use_min_history_level,
                on_floor,
                self._nl_id() if with_event else None,
                message,
                msg.JSON_FORMAT,
                self.events.channel_for(msg.OPEN_TXN),  # None: OPEN_TXN is not announced
            )
            sent = time.monotonic()
            row = _one(cur, _OPEN, values)
            started.append(sent + float(row[1]))
            if with_event:
                self._recorded(msg.OPEN_TXN, row[2:])
            return [int(i) for i in row[0]]

        return self._call(run)

    def commit_txn(self, txn_id: int, excl_write_enabled: bool = True) -> bool:
        """Commit._commit's steps for a DEFAULT or READ_ONLY txn and its event; False when
        the txn needs the general path (not open, another type, an update or delete without
        ``excl_write_enabled``, whose write-conflict check may abort it: the function then
        changed nothing)."""
        temp_id = -random.randint(1, 2**62) if excl_write_enabled else None
        message = self.commit_message(txn_id)

        def run(cur: PooledCursor) -> bool:
            values = plpgsql.commit_values(
                txn_id,
                self.config.use_min_history_level,
                self.config.use_min_history_write_id,
                temp_id,
                self._nl_id(),
                message,
                msg.JSON_FORMAT,
                self.events.notify_channel,
            )
            row = _one(cur, _COMMIT, values)
            if row[0] != "done":
                return False
            if row[1] is not None:
                self._recorded(msg.COMMIT_TXN, row[1:])
            return True

        return self._call(run)

    def allocate_write_ids(
        self, db: str, table: str, txn_ids: list[int]
    ) -> list[tuple[int, int]] | None:
        """WriteIds._allocate's steps and its ALLOC_WRITE_ID_EVENT (``txn_ids`` ascending,
        distinct); None when a txn is not open or is read-only (the function then changed
        nothing and the general path names the error)."""
        message = msg.to_json(
            self.messages.alloc_write_id(
                [(t, plpgsql.WRITE_ID_LIST_SENTINEL) for t in txn_ids[:1]], db, table
            )
        ).replace('"txnIdList":[' + str(txn_ids[0]) + "]", _txn_id_list(txn_ids), 1)

        def run(cur: PooledCursor) -> list[tuple[int, int]] | None:
            values = {
                "txns": txn_ids,
                "db": db,
                "tbl": table,
                "nl_id": self._nl_id(),
                "message": message,
                "format": msg.JSON_FORMAT,
                "channel": self.events.channel_for(msg.ALLOC_WRITE_ID_EVENT),  # None
            }
            row = _one(cur, _ALLOCATE, values)
            if row[0] != "done":
                return None
            if row[3] is not None:
                self._recorded(msg.ALLOC_WRITE_ID_EVENT, row[3:], db, table)
            return [(int(t), int(w)) for t, w in zip(row[1], row[2], strict=True)]

        return self._call(run)

    def abort_txn(self, txn_id: int, reason: str) -> bool:
        """Abort._abort_txn_txn's steps and its ABORT_TXN; False when the txn is not open or
        was replayed (the general path then answers; the function changed nothing)."""
        message = msg.to_json(self.messages.abort_txn(txn_id, ["@"]))

        def run(cur: PooledCursor) -> bool:
            values = {
                "txn": txn_id,
                "reason": reason,
                "level": self.config.use_min_history_level,
                "write_id": self.config.use_min_history_write_id,
                "nl_id": self._nl_id(),
                "message": message,
                "format": msg.JSON_FORMAT,
                "channel": self.events.notify_channel,
            }
            row = _one(cur, _ABORT, values)
            if row[0] != "done":
                return False
            if row[1] is not None:
                self._recorded(msg.ABORT_TXN, row[1:])
            return True

        return self._call(run)


def _one(pooled: PooledCursor, call: Prepared, values: dict[str, Any]) -> Any:
    """The one row a function call returns (its functions return exactly one)."""
    cur = pooled.cursor
    cur.execute(call.pooled_text(pooled), values)
    row = cur.fetchone()
    if row is None or cur.rowcount != 1:
        raise RuntimeError(f"a transaction function returned {cur.rowcount} rows, not 1")
    return row


def _txn_id_list(txn_ids: list[int]) -> str:
    return '"txnIdList":[' + ",".join(str(t) for t in txn_ids) + "]"
