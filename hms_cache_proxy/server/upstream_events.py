"""The upstream-mode poller: tails the upstream's notification log over Thrift
(``get_current_notificationEventId``, ``get_next_notification``) and drops the cache entries of
every table and database an event names.

States: ``following`` (the log is read to its end every ``interval`` seconds; the cache may
answer), ``no_log`` (the upstream has no notification log: the calls fail, its event id is 0
and nothing was ever logged, or a write through this instance did not move it), ``unreachable``
(the last poll failed), ``starting``. The cache answers only while following and the last
complete poll is recent (``fresh``): a poller that cannot read the log stops the cache rather
than let it serve what it cannot check.

Events are applied in id order, only up to the first missing id; a batch that does not start
right after the position (the log was purged past it, or the upstream's log is another one)
empties the cache and the poller goes on from the batch's end. So does an event id that went
backwards (an upstream restored or re-created). Read-your-writes: ``catch_up`` reads the
upstream's current event id and waits until it is applied.

The last ``RECENT_APPLIED`` events applied are kept with the wall-clock time each was applied
(``describe``, shown in /readyz): when did this instance learn of event N.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from hms_cache_proxy.idl import hms
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.server.cached_calls import split_catalog
from hms_cache_proxy.server.reply_cache import ReplyCache
from hms_cache_proxy.server.upstream import UpstreamError
from hms_cache_proxy.server.upstream_client import UpstreamClient
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.events.alter_summary import AlterSummary, summarize
from hms_cache_proxy.store.events.recent import WAIT_MARK

log = logging.getLogger(__name__)

STARTING, FOLLOWING, NO_LOG, UNREACHABLE = "starting", "following", "no_log", "unreachable"

RECENT_APPLIED = 64
"""Applied events whose apply time is kept (bounded: a few KiB in /readyz)."""

_DATABASE_ONLY = frozenset(
    {"CREATE_DATABASE", "ALTER_DATABASE", "CREATE_FUNCTION", "DROP_FUNCTION"}
)
_CATALOG = frozenset({"CREATE_CATALOG", "ALTER_CATALOG", "DROP_CATALOG"})
_TABLE_LIST = frozenset({messages.CREATE_TABLE, messages.DROP_TABLE})
"""Events that add a table to its database's names or take one away (renames: ALTER_TABLE)."""
_CONSTRAINTS = frozenset(
    {
        messages.ADD_PRIMARYKEY,
        messages.ADD_FOREIGNKEY,
        messages.ADD_UNIQUECONSTRAINT,
        messages.ADD_NOTNULLCONSTRAINT,
        messages.ADD_DEFAULTCONSTRAINT,
        messages.ADD_CHECKCONSTRAINT,
        messages.DROP_CONSTRAINT,
        messages.DROP_TABLE,  # its constraints go, foreign keys into it too
    }
)
"""Events that change constraints (a table's own, or foreign keys naming it, of any table);
a table created with constraints logs their ADD_* events too. ALTER_TABLE: see _drop_altered;
an event about a whole database (DROP_DATABASE, one not known): see _drop."""


class UpstreamEvents:
    """The poller thread over ``client``, dropping entries of ``cache``."""

    def __init__(
        self,
        client: UpstreamClient,
        cache: ReplyCache,
        *,
        interval_seconds: float,
        wait_seconds: float = 0.0,
        batch: int = 1000,
        on_state: Callable[[str], None] | None = None,
    ) -> None:
        self._client = client
        self._cache = cache
        self._interval = interval_seconds
        self._wait = wait_seconds
        self._fresh_for = max(2.0, 10 * interval_seconds)
        self._batch = batch
        self._on_state = on_state
        self._cond = threading.Condition()
        self._state = STARTING
        self._reason = "not polled yet"
        self._position: int | None = None  # last event applied; None: to be read afresh
        self._applied: deque[tuple[int, float]] = deque(maxlen=RECENT_APPLIED)  # (id, time.time())
        self._check_position = False  # after a failure: did the upstream's log go backwards?
        self._polled_at = float("-inf")  # monotonic time of the last complete poll
        self._woken = False
        self._stopped = False
        self._thread: threading.Thread | None = None

    # -- for the pass-through processor ----------------------------------------------------------

    @property
    def state(self) -> str:
        return self._state

    @property
    def position(self) -> int | None:
        return self._position

    def describe(self) -> dict[str, Any]:
        """For /readyz and the logs. ``recent_applied``: [event id, unix time it was applied]
        of the last events applied, oldest first."""
        with self._cond:
            return {
                "state": self._state,
                "reason": self._reason,
                "position": self._position,
                "recent_applied": [[event_id, round(at, 6)] for event_id, at in self._applied],
            }

    def fresh(self) -> bool:
        """The log is followed and was read to its end lately: the cache may answer."""
        return self._state == FOLLOWING and time.monotonic() - self._polled_at <= self._fresh_for

    def wake(self) -> None:
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def catch_up(self, timeout: float, seen_before_write: int | None = None) -> bool:
        """Wait until every event the upstream has logged now is applied (read-your-writes).

        ``seen_before_write``: the position before a write that Hive logs passed through; if
        the upstream's event id has not moved past it, the upstream logs no events and the
        cache stops. False when the wait did not succeed (the caller asks the upstream)."""
        try:
            current = int(self._client.call("get_current_notificationEventId").eventId)
        except Exception as exc:  # an upstream that cannot say: nothing to wait for
            log.debug("catch-up: %s", exc)
            return False
        if seen_before_write is not None and current <= seen_before_write:
            self._no_log(
                f"a write through this instance did not move its event id ({current})", current
            )
            return False
        deadline = time.monotonic() + timeout
        self.wake()
        with self._cond:
            while self._position is None or self._position < current:
                left = deadline - time.monotonic()
                if left <= 0 or self._stopped or self._state != FOLLOWING:
                    return False
                self._cond.wait(left)
        return True

    # -- the thread ------------------------------------------------------------------------------

    def start(self) -> None:
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="upstream-events", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._client.close()

    def _run(self) -> None:
        while not self._stopped:
            again = False
            try:
                again = self.poll_once()
            except UpstreamError as exc:
                self._failed(str(exc))
            except Exception as exc:  # never let the thread die: report and go on
                log.exception("upstream event poller")
                self._failed(f"{type(exc).__name__}: {exc}")
            with self._cond:
                if not again and not self._woken and not self._stopped:
                    self._cond.wait(self._interval)
                self._woken = False

    def poll_once(self) -> bool:
        """One round: the start position when there is none, then the log to its end. True
        when the next round may start at once: the upstream held the read (a long poll)."""
        if (self._position is None or self._check_position) and not self._read_position():
            return False
        held = False
        while True:
            assert self._position is not None
            request = _request(self._position, self._batch, self._wait)
            sent = time.monotonic()
            try:
                response = self._client.call("get_next_notification", rqst=request)
            except UpstreamError:
                raise
            except Exception as exc:
                self._no_log(f"get_next_notification fails: {_name(exc)}", None)
                return False
            events = list(response.events or [])
            held = held or bool(events) or time.monotonic() - sent >= self._wait / 2 > 0
            if events:
                self._apply(events)
            if len(events) < self._batch:
                break
        if self._state in (STARTING, UNREACHABLE):
            self._set(FOLLOWING, f"at event {self._position}")
        self._polled_at = time.monotonic()
        metrics.LAST_POLL.set(time.time())
        with self._cond:
            self._cond.notify_all()
        return held

    def _read_position(self) -> bool:
        try:
            current = int(self._client.call("get_current_notificationEventId").eventId)
        except UpstreamError:
            raise
        except Exception as exc:
            self._no_log(f"get_current_notificationEventId fails: {_name(exc)}", None)
            return False
        self._check_position = False
        if self._position is not None and current >= self._position:
            return True  # the same log, read on from where we were
        if self._position is not None:
            log.warning(
                "upstream %s: event id went back from %d to %d: the cache starts over",
                self._client.uri,
                self._position,
                current,
            )
        self._cache.flush()
        self._set_position(current)
        if current == 0:
            self._set(NO_LOG, "its event id is 0 (no notification log, or nothing logged yet)")
        else:
            self._set(FOLLOWING, f"from event {current}")
        return True

    def _apply(self, events: list[Any]) -> None:
        assert self._position is not None
        if events[0].eventId != self._position + 1:
            log.warning(
                "upstream %s: events after %d are missing (next is %d): the cache starts over",
                self._client.uri,
                self._position,
                events[0].eventId,
            )
            self._cache.flush()
            metrics.INVALIDATIONS.labels("gap").inc()
            self._advance(int(events[-1].eventId))
            return
        if self._state == NO_LOG:
            self._cache.flush()  # entries kept by time only go: events say what changes now
        for event in events:
            if event.eventId != self._position + 1:
                break  # a hole: the next round starts there
            self._drop(event)
            self._advance(int(event.eventId))
        self._set(FOLLOWING, f"at event {self._position}")

    def _drop(self, event: Any) -> None:
        kind = str(event.eventType)
        metrics.EVENTS_APPLIED.labels(kind).inc()
        cache = self._cache
        if event.dbName:
            cat, db = split_catalog(event.catName, event.dbName)
            if event.tableName:
                cache.drop_table(cat, db, event.tableName)
                if kind in _TABLE_LIST:
                    cache.drop_table_names(cat, db)
            else:
                tables = kind not in _DATABASE_ONLY
                cache.drop_database(cat, db, tables=tables)
                if tables:  # its tables' constraints, and foreign keys naming them, may go
                    cache.drop_constraints()
        elif kind in _CATALOG:
            cache.flush()
        if kind in _CONSTRAINTS:
            cache.drop_constraints()
        if kind == messages.ALTER_TABLE:
            self._drop_altered(event)
        elif kind == "COMMIT_TXN" and event.message:
            try:
                body = messages.decode(event.message, event.messageFormat)
            except Exception:
                return
            for cat, db, table in messages.tables_altered(body):
                cache.drop_table(cat, db, table)

    def _drop_altered(self, event: Any) -> None:
        """ALTER_TABLE names the table after the change: a rename's old name is in the
        message, and a rename takes the name from its database's names and puts it in the new
        one's; a rename or a change of columns changes constraints (foreign keys name tables,
        constraints name columns by position). An unreadable message empties the cache (a
        rename's old database is not known)."""
        cache = self._cache
        cat, db = split_catalog(event.catName, event.dbName or "")
        try:
            change = _alter_summary(event)
            old_cat, old_db = split_catalog(change.cat_before or cat, change.db_before)
            old_name = change.table_before.lower()
        except Exception:
            log.warning(
                "upstream %s: ALTER_TABLE event %s unreadable: the cache starts over",
                self._client.uri,
                event.eventId,
            )
            cache.flush()
            return
        if (old_cat, old_db, old_name) != (cat, db, str(event.tableName).lower()):
            cache.drop_table(old_cat, old_db, old_name)
            cache.drop_table_names(old_cat, old_db)
            cache.drop_table_names(cat, db)
            cache.drop_constraints()
        elif change.columns_changed:
            cache.drop_constraints()

    # -- state -----------------------------------------------------------------------------------

    def _set_position(self, position: int) -> None:
        with self._cond:
            self._position = position
        metrics.POSITION.set(position)

    def _advance(self, event_id: int) -> None:
        """Event ``event_id`` is applied (its entries dropped, or the whole cache): the
        position moves to it and the time is kept."""
        at = time.time()
        with self._cond:
            self._position = event_id
            self._applied.append((event_id, at))
        metrics.POSITION.set(event_id)

    def _failed(self, reason: str) -> None:
        """The cache stops answering until a poll reads the log to its end again (what it
        missed meanwhile is applied first; the log keeps it)."""
        self._polled_at = float("-inf")
        self._check_position = True
        if self._state != NO_LOG:
            self._set(UNREACHABLE, reason)

    def _no_log(self, reason: str, position: int | None) -> None:
        self._cache.flush()
        if position is not None:
            self._set_position(position)
        self._set(NO_LOG, reason)

    def _set(self, state: str, reason: str) -> None:
        with self._cond:
            changed = state != self._state
            self._state, self._reason = state, reason
            self._cond.notify_all()
        if not changed:
            return
        if state == NO_LOG:
            log.warning("upstream %s has no notification log: %s", self._client.uri, reason)
        else:
            log.info("upstream %s notification log: %s (%s)", self._client.uri, state, reason)
        metrics.UPSTREAM_LOG.set(1 if state == FOLLOWING else 0)
        if self._on_state is not None:
            self._on_state(state)


def _alter_summary(event: Any) -> AlterSummary:
    """The ALTER_TABLE message read as plain JSON (alter_summary.py), or, when its TJSON is
    not plain JSON, decoded into Thrift objects (the slow way, exceptions propagate)."""
    try:
        return summarize(event.message, event.messageFormat)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    body = messages.decode(event.message, event.messageFormat)
    before, after = messages.table_before(body), messages.table_after(body)
    return AlterSummary(
        cat_before=before.catName,
        db_before=before.dbName,
        table_before=before.tableName,
        columns_changed=_columns(before) != _columns(after),
    )


def _columns(table: Any) -> tuple[Any, Any]:
    """What constraints name by position: the columns and the partition keys."""
    return (table.sd.cols if table.sd else None), table.partitionKeys


def _request(last: int, batch: int, wait: float) -> Any:
    skip = [f"{WAIT_MARK}{int(wait * 1000)}"] if wait > 0 else None
    return hms.NotificationEventRequest(lastEvent=last, maxEvents=batch, eventTypeSkipList=skip)


def _name(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc)
    return f"{type(exc).__name__}: {message}"[:300]
