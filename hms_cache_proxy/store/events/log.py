"""The NOTIFICATION_LOG: appending events inside a write transaction, and reading them back.

Every metadata change writes its events in the transaction that makes the change, as its last
step. ``append`` locks the one NOTIFICATION_SEQUENCE row (``SELECT "NEXT_EVENT_ID" ... FOR
UPDATE``, as Hive's NotificationStoreImpl does), numbers the events from NEXT_EVENT_ID, moves it
on and inserts the rows. The row lock is held from there to the commit, so writers commit in
event-id order and a reader that sees event N has seen every event before it (no gaps appear
except where the cleaner purged old events). Messages are encoded before the lock is taken, so
the lock is held only for three short statements.

The readers follow Hive's semantics for ``get_next_notification``,
``get_current_notificationEventId`` and ``get_notification_events_count`` (Hive 4's
NotificationStoreImpl, formerly in ObjectStore).
All SQL on NOTIFICATION_LOG and NOTIFICATION_SEQUENCE lives in this module.
"""

from __future__ import annotations

import contextlib
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import ids as ids_module
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import commit_after
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.db.prepared import Prepared
from hms_cache_proxy.store.events import messages

DEFAULT_CATALOG = "hive"
DEFAULT_MAX_EVENT_RESPONSE = 1_000_000
"""Hive's metastore.max.event.response default: the most events one response carries."""

CURRENT_EVENT_ID_SQL = 'SELECT "NEXT_EVENT_ID" FROM "NOTIFICATION_SEQUENCE"'
"""NEXT_EVENT_ID as plain SQL, for a DB-API cursor (PostgreSQL and SQLite alike)."""
_PREPARED = "hms_current_event_id"

_ADVANCE = Prepared(
    "hms_event_ids_advance",
    'UPDATE "NOTIFICATION_SEQUENCE" SET "NEXT_EVENT_ID" = "NEXT_EVENT_ID" + %(hms_events)s',
    {"hms_events": "bigint"},
    at_connect=True,
)
_RESERVED_SQL = (
    'SELECT q.n, (SELECT "EVENT_TIME" FROM "NOTIFICATION_LOG" '
    'WHERE "EVENT_ID" = q.n - %(hms_events)s - 1){also} '
    'FROM (SELECT (SELECT max("NEXT_EVENT_ID") FROM "NOTIFICATION_SEQUENCE") AS n) AS q'
)
"""PostgreSQL (psycopg2 placeholders, see one_statement): ``_ADVANCE`` takes the sequence
row's lock and moves it on, then this, a new statement and so a snapshot taken after the lock
was granted, reads the new NEXT_EVENT_ID and the previous event's time (``also``: the caller's
extra columns). Sent together: one round trip; always one row (NULLs when the sequence has no
row yet).

Both are prepared on every pooled session (``Prepared(at_connect=True)``) and go as EXECUTE
inside the write transaction: sent as text, PostgreSQL planned them on every write that logs
events from Python (issue 23: the ids' read alone, 0.107 ms of planning per acid_insert against
0.024 ms of running; docs/benchmarks.md, stop 37)."""
_RESERVED: dict[str, Prepared] = {}
_RESERVED_LOCK = threading.Lock()


def _reserved_read(also: str) -> Prepared:
    """``_RESERVED_SQL`` with the extra columns ``also`` (a fixed text per caller, no
    placeholders), prepared under a name derived from that text. A variant first seen here is
    registered for connect then: the sessions prepare it at their next checkout and send its
    text until they have."""
    found = _RESERVED.get(also)
    if found is None:
        with _RESERVED_LOCK:
            found = _RESERVED.get(also)
            if found is None:
                suffix = f"_{zlib.crc32(also.encode()):08x}" if also else ""
                found = _RESERVED[also] = Prepared(
                    "hms_event_ids_reserved" + suffix,
                    _RESERVED_SQL.format(also=also),
                    {"hms_events": "bigint"},
                    at_connect=True,
                )
    return found


_reserved_read("")  # the plain append's, prepared from the first checkout on

_INSERT_SQL = (
    'INSERT INTO "NOTIFICATION_LOG" ("NL_ID", "EVENT_ID", "EVENT_TIME", "EVENT_TYPE", '
    '"CAT_NAME", "DB_NAME", "TBL_NAME", "MESSAGE", "MESSAGE_FORMAT") VALUES {values}'
)


_EVENT_COLUMNS = tuple(
    getattr(schema.NOTIFICATION_LOG.c, name)
    for name in (
        "EVENT_ID",
        "EVENT_TIME",
        "EVENT_TYPE",
        "CAT_NAME",
        "DB_NAME",
        "TBL_NAME",
        "MESSAGE",
        "MESSAGE_FORMAT",
    )
)
"""A NotificationEvent's columns, in the order ``_events`` reads them."""


@dataclass(frozen=True)
class Reservation:
    """Event ids taken under the sequence row's lock (``EventLog.reserve``)."""

    first: int
    """The first of the ids."""
    previous_time: int
    """EVENT_TIME of the event before ``first`` (0 when purged or none)."""
    extra: tuple[Any, ...]
    """The caller's extra columns, read in the same statement."""


_KEEP_COMMITTED = 256
"""Most committed events ``take_committed`` keeps per thread (a thread whose writes no cache
takes, open_txns for one, would otherwise collect them without end; fewer only means the cache
reads the log instead)."""
_KEEP_UNSETTLED = 4096
"""At most this many event ids of unfinished transactions are tracked for the poller."""
_KEEP_BODIES = 256
"""At most this many message bodies of events this process appended are kept (``body_of``);
an event whose body was let go is decoded from its text, as one read from the log is."""
_KEEP_BODY_CHARS = 16384
"""A body is kept only if its encoded message is at most this long: the bodies kept cost at
most about ``_KEEP_BODIES`` times this (times what gzip saved) of memory, however large the
partition lists one client writes; a larger event is decoded from its text."""

NOTIFY_CHANNEL = "hms_notification_log"
"""PostgreSQL channel that ``append`` notifies (payload: the last new event id) on commit."""

UNANNOUNCED_TYPES = frozenset({messages.OPEN_TXN, messages.ALLOC_WRITE_ID_EVENT})
"""Event types written without a NOTIFY: an open or a write-id allocation changes no answer
any cache gives until a later event of its transaction (a write, its commit or abort:
announced, and with a higher id, so applied after it) does, and a read that must reflect it
anyway (strong mode, a granted lock) asks the database's position, not the notifications
(docs/cache.md, "Events without a NOTIFY"). Half the notifications of an open+commit cycle,
two of an ACID insert's four."""


@dataclass(frozen=True)
class NewEvent:
    """One event to append: its type, its message body and the object it concerns."""

    event_type: str
    message: dict  # the body, encoded by the log in its configured format
    cat_name: str | None = DEFAULT_CATALOG
    db_name: str | None = None
    table_name: str | None = None


def one_statement(conn: Connection) -> bool:
    """Whether ``conn`` takes the hand-written PostgreSQL statements (several steps in one
    round trip, sent as text without SQLAlchemy's compilation): PostgreSQL through psycopg2,
    whose client-side parameters also allow several statements in one call."""
    dialect = conn.dialect
    return dialect.name == "postgresql" and dialect.driver == "psycopg2"


def _normalize(name: str) -> str:
    """Hive's normalizeIdentifier: names are stored trimmed and in lower case."""
    return name.strip().lower()


class EventLog:
    """Writer and reader of NOTIFICATION_LOG for one message format.

    ``max_event_response`` caps every ``next_events`` answer (metastore.max.event.response).
    ``notify_channel``: on PostgreSQL, ``append`` sends ``pg_notify(channel, last_event_id)``
    in the writing transaction, so listeners wake when it commits; None turns it off.
    """

    def __init__(
        self,
        ids: IdAllocator,
        message_format: str = messages.GZIP_FORMAT,
        *,
        max_event_response: int = DEFAULT_MAX_EVENT_RESPONSE,
        notify_channel: str | None = NOTIFY_CHANNEL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ids = ids
        self.message_format = messages.canonical_format(message_format)  # unknown: ValueError
        self.max_event_response = max(1, max_event_response)
        self.notify_channel = notify_channel
        self._clock = clock
        self._recording = False
        self._local = threading.local()
        self._recent: dict[int, Any] = {}  # event id -> NotificationEvent, committed here
        self._recent_lock = threading.Lock()
        self._recent_changed = threading.Condition(self._recent_lock)
        self.last_write_started = float("-inf")
        """time.monotonic() of this process's last write that appends events (a hint for the
        poller: the events a NOTIFY announces may be its own, about to be recorded)."""
        self._unsettled: set[int] = set()
        """Event ids this process's open transactions appended (held from before the round
        trip that inserts them, which may carry the COMMIT, to the transaction's end): a
        poller woken for one waits for the writer."""
        self._calls_in_flight = 0
        """Server-side function calls under way (their event ids are learned only from the
        reply): while one is, an announced event may be its, about to be recorded."""
        self.newest_here = 0
        """The newest event id this process appended and committed (with record_commits)."""
        self._waiting = 0
        """Threads in ``wait_committed_here`` (the poller): writers wake them only then, and a
        call's end only when it was the last one under way (nothing else shortens a wait)."""
        self._bodies: dict[int, tuple[Any, dict]] = {}
        """Event id -> (the NotificationEvent ``append`` made, the body its message encodes),
        for ``body_of``."""

    # -- this instance's own committed events ----------------------------------------------------

    def record_commits(self, db: Any) -> None:
        """From now on remember, per thread, the events this process appends in ``db``'s write
        transactions once they have committed, for ``take_committed``: the writer's cache
        applies them from memory instead of reading the log back. Events of a transaction that
        rolls back or fails at its commit (a retried one) are forgotten."""
        db.on_transaction_end(self._on_end)
        self._recording = True

    def body_of(self, event: Any) -> dict | None:
        """The body ``event``'s message encodes, if ``event`` is a NotificationEvent this
        process appended (recording, recently); else None. The cache applies its own events
        from this dict rather than decode the message text again (gzip, base64 and JSON: most
        of what applying an ALTER_PARTITION of an insert cost). The object itself is checked,
        not only its id, so an event of a rolled-back transaction, whose id another writer then
        took, is never mistaken for that writer's. The dict is shared: read it, never change
        it. A body is handed out once (the event is then applied) and let go."""
        found = self._bodies.pop(event.eventId, None)
        return found[1] if found is not None and found[0] is event else None

    def take_committed(self) -> list[Any]:
        """The NotificationEvents this thread's transactions appended and committed since the
        last call, in id order (at most the last ``_KEEP_COMMITTED``)."""
        done: list[Any] = getattr(self._local, "committed", [])
        self._local.committed = []
        return done

    def note_current(self, event_id: int | None) -> None:
        """Remember, for this thread, the last event id a write's own statement saw committed
        (None: forget it); ``take_current`` hands it to the cache's catch-up after the write."""
        self._local.current = event_id

    def take_current(self) -> int | None:
        """The event id ``note_current`` remembered for this thread (then forgotten), if any:
        a cache that has applied every event up to it has nothing to read back."""
        found: int | None = getattr(self._local, "current", None)
        self._local.current = None
        return found

    def _pending(self) -> dict[int, list[Any]]:
        pending = getattr(self._local, "pending", None)
        if pending is None:
            pending = self._local.pending = {}
        return pending

    # Keyed by the Connection object (the one ``append`` got is the one the transaction ends
    # on); nothing of it is touched, so this also works on a connection the database has cut.
    def _on_end(self, conn: Connection, committed: bool) -> None:
        events = self._pending().pop(id(conn), None)
        if events and committed:
            self.record_committed(events)
        if events:
            with self._recent_lock:
                self._unsettled.difference_update(e.eventId for e in events)
                if not committed:  # nobody applies them: let their bodies go now
                    kept = self._bodies
                    for e in events:
                        found = kept.get(e.eventId)
                        if found is not None and found[0] is e:
                            del kept[e.eventId]
                if self._waiting:
                    self._recent_changed.notify_all()

    @contextlib.contextmanager
    def function_call(self) -> Iterator[None]:
        """Around a server-side function call that appends events: the poller, woken by its
        NOTIFY, waits for the call's thread to record them (``record_committed``) rather than
        read them back from the log."""
        self.last_write_started = time.monotonic()
        if not self._recording:  # nobody waits for what it records (no cache here)
            yield
            return
        with self._recent_lock:
            self._calls_in_flight += 1
        try:
            yield
        finally:
            with self._recent_lock:
                self._calls_in_flight -= 1
                # A waiter's time limit shrinks only when no call is left under way; the
                # events a call recorded have woken it already (record_committed).
                if self._waiting and not self._calls_in_flight:
                    self._recent_changed.notify_all()

    @property
    def recording(self) -> bool:
        """Whether committed events are remembered (``record_commits``: a cache applies them)."""
        return self._recording

    def record_committed(self, events: list[Any]) -> None:
        """Remember NotificationEvents this thread wrote and committed outside ``Database.
        transaction`` (a server-side function's, in its own implicit transaction), as
        ``record_commits`` does for the transaction's; nothing when not recording."""
        if events and self._recording:
            done = getattr(self._local, "committed", None)
            if done is None:
                done = self._local.committed = []
            done.extend(events)
            if len(done) > _KEEP_COMMITTED:
                del done[:-_KEEP_COMMITTED]
            with self._recent_lock:
                recent = self._recent
                for e in events:
                    recent[e.eventId] = e
                self.newest_here = max(self.newest_here, events[-1].eventId)
                if self._waiting:
                    self._recent_changed.notify_all()
                while len(recent) > _KEEP_COMMITTED:
                    del recent[next(iter(recent))]

    def committed_here(self, first: int, last: int) -> list[Any] | None:
        """Events ``first``..``last`` if this process appended and committed every one of
        them (recently), in id order; else None. The poller, woken by a NOTIFY for them,
        applies them from memory instead of reading them back."""
        if last < first or last - first >= _KEEP_COMMITTED:
            return None
        with self._recent_lock:
            return self._recorded_run_locked(first, last)

    def _recorded_run_locked(self, first: int, last: int) -> list[Any] | None:
        """Events ``first``..``last`` from the recorded ones, or None at the first one missing
        (checked by identity: ``None in`` a list of events would call each event's Python
        ``__eq__``)."""
        recent = self._recent
        found = []
        for i in range(first, last + 1):
            event = recent.get(i)
            if event is None:
                return None
            found.append(event)
        return found

    def with_committed_before(self, own: list[Any], position: int) -> list[Any]:
        """``own`` (this thread's committed events, in id order) preceded by the events
        after ``position`` that other threads of this process committed before them, when
        this process committed and recorded every event from ``position + 1`` on; else
        ``own`` unchanged. With several writers on one instance another thread's events
        often come between the cache's position and a writer's own: those are known here
        already, and applying them from memory saves reading them back from the log. Events
        of ``own`` at or before ``position`` (the poller applied them: a commit's, an
        abort's) are looked past."""
        fresh = [e for e in own if e.eventId > position]
        if not fresh or fresh[0].eventId == position + 1:
            return own
        found = self.committed_here(position + 1, fresh[-1].eventId)
        return own if found is None else found

    def writing_recently(self, within: float = 0.5) -> bool:
        """Whether this process started a write that appends events in the last ``within``
        seconds."""
        return time.monotonic() - self.last_write_started < within

    def wait_committed_here(
        self, first: int, last: int, timeout: float, writer_timeout: float = 0.0
    ) -> list[Any] | None:
        """``committed_here``, waiting up to ``timeout`` for the writer's thread to record
        them: a NOTIFY reaches the poller as soon as the commit does, often before the thread
        that wrote the events has its reply (and has recorded them). Up to ``writer_timeout``
        while a writer of this process still holds one of them (its transaction has not
        ended) or a function call is under way: on a busy machine that thread may wait
        longer than ``timeout`` for a core, and reading its events back would cost more. Only
        while every missing one may still be recorded here: an announced id that is neither
        recorded nor held by a writer of this process (with no function call under way) is
        another process's, so the log is read anyway and waiting longer only delays it."""
        if last < first or last - first >= _KEEP_COMMITTED:
            return None
        start = time.monotonic()
        with self._recent_changed:
            while True:
                found = self._recorded_run_locked(first, last)
                if found is not None:
                    return found
                now = time.monotonic()
                limit = timeout
                recent, unsettled = self._recent, self._unsettled
                if self._calls_in_flight or all(
                    i in recent or i in unsettled for i in range(first, last + 1)
                ):
                    limit = max(timeout, writer_timeout)
                left = start + limit - now
                if left <= 0:
                    return None
                self._waiting += 1
                try:
                    self._recent_changed.wait(left)
                finally:
                    self._waiting -= 1

    def _remember(
        self,
        conn: Connection,
        events: Sequence[NewEvent],
        bodies: list[str],
        event_ids: list[int],
        event_time: int,
    ) -> None:
        made = [
            hms.NotificationEvent(
                eventId=event_id,
                eventTime=event_time,
                eventType=e.event_type,
                catName=e.cat_name,
                dbName=e.db_name,
                tableName=e.table_name,
                message=body,
                messageFormat=self.message_format,
            )
            for e, body, event_id in zip(events, bodies, event_ids, strict=True)
        ]
        with self._recent_lock:
            if len(self._unsettled) > _KEEP_UNSETTLED:
                self._unsettled.clear()  # a bound, should a transaction's end go unseen
            self._unsettled.update(event_ids)
            kept = self._bodies
            for made_event, e in zip(made, events, strict=True):
                kept.pop(made_event.eventId, None)  # a rolled-back one's: this is newer
                if len(made_event.message) <= _KEEP_BODY_CHARS:
                    kept[made_event.eventId] = (made_event, e.message)
            while len(kept) > _KEEP_BODIES:
                del kept[next(iter(kept))]
        self._pending().setdefault(id(conn), []).extend(made)

    # -- writing ---------------------------------------------------------------------------------

    def append(
        self,
        conn: Connection,
        events: Sequence[NewEvent],
        *,
        before: str = "",
        params: dict[str, Any] | None = None,
        last: bool = False,
    ) -> list[int]:
        """Append ``events`` in the caller's write transaction; returns their EVENT_IDs.

        Call it as the last step before the commit: from here on the sequence row is locked.
        On PostgreSQL through psycopg2 (``one_statement``), ``before`` is the caller's own
        statement text (ending in ``"; "``, named placeholders filled from ``params``) sent in
        the same round trip as the sequence lock, and ``last`` folds the COMMIT into the
        insert (``engine.commit_after``): nothing may run on ``conn`` after it. Elsewhere
        ``before`` must be empty.
        """
        if not events:
            if before:
                sql = before.rstrip("; ") + (commit_after(conn) if last else "")
                conn.exec_driver_sql(sql, params)
            return []
        self.last_write_started = time.monotonic()
        bodies = [messages.encode(e.message, self.message_format) for e in events]
        nl_ids = self.ids.allocate(conn, ids_module.NOTIFICATION_LOG, len(events))
        if one_statement(conn):
            reservation = self.reserve(conn, len(events), before=before, params=params)
            return self.write(conn, reservation, events, bodies, nl_ids, last=last)
        if before:
            raise ValueError("append(before=...) needs PostgreSQL through psycopg2")
        first = self._take_event_ids(conn, len(events))
        event_time = max(int(self._clock()), self._previous_time(conn, first))
        event_ids = list(range(first, first + len(events)))
        fmt = self.message_format
        rows = [
            {
                "NL_ID": nl_id,
                "EVENT_ID": event_id,
                "EVENT_TIME": event_time,
                "EVENT_TYPE": e.event_type,
                "CAT_NAME": e.cat_name,
                "DB_NAME": e.db_name,
                "TBL_NAME": e.table_name,
                "MESSAGE": body,
                "MESSAGE_FORMAT": fmt,
            }
            for nl_id, event_id, e, body in zip(nl_ids, event_ids, events, bodies, strict=True)
        ]
        conn.execute(insert(schema.NOTIFICATION_LOG), rows)
        channel = self.channel_for(events)
        if channel and conn.dialect.name == "postgresql":
            conn.execute(select(func.pg_notify(channel, str(event_ids[-1]))))
        if self._recording:
            self._remember(conn, events, bodies, event_ids, event_time)
        return event_ids

    def reserve(
        self,
        conn: Connection,
        n: int,
        *,
        before: str = "",
        params: dict[str, Any] | None = None,
        also: str = "",
    ) -> Reservation:
        """PostgreSQL through psycopg2: take ``n`` event ids under the sequence row's lock in
        one round trip, after the caller's statement ``before`` (see ``append``); ``also``:
        extra SQL expressions (each after a comma) read with them, into ``extra``."""
        values = {**(params or {}), "hms_events": n}
        sql = before + _ADVANCE.text(conn) + "; " + _reserved_read(also).text(conn)
        row = conn.exec_driver_sql(sql, values).one()
        if row[0] is None:  # no sequence row yet: create it as the general path does
            first = self._take_event_ids(conn, n)
            return Reservation(first, self._previous_time(conn, first), tuple(row[2:]))
        previous = 0 if row[1] is None else int(row[1])
        return Reservation(int(row[0]) - n, previous, tuple(row[2:]))

    def write(
        self,
        conn: Connection,
        reservation: Reservation,
        events: Sequence[NewEvent],
        bodies: list[str] | None = None,
        nl_ids: list[int] | None = None,
        *,
        last: bool = False,
    ) -> list[int]:
        """Insert ``events`` under ids ``reserve`` took (and notify), in one round trip; with
        ``last`` the COMMIT travels with them. The time is taken under the sequence lock and
        never goes below the previous event's (clocks of several hosts differ): a purge by
        age then always cuts a prefix of the log, never a hole in the middle of it."""
        fmt = self.message_format
        if bodies is None:
            bodies = [messages.encode(e.message, fmt) for e in events]
        if nl_ids is None:
            nl_ids = self.ids.allocate(conn, ids_module.NOTIFICATION_LOG, len(events))
        first = reservation.first
        event_ids = list(range(first, first + len(events)))
        event_time = max(int(self._clock()), reservation.previous_time)
        rows: list[Any] = []
        for e, nl_id, event_id, body in zip(events, nl_ids, event_ids, bodies, strict=True):
            rows += [nl_id, event_id, event_time, e.event_type, e.cat_name, e.db_name]
            rows += [e.table_name, body, fmt]
        sql = _INSERT_SQL.format(
            values=", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s, %s)"] * len(events))
        )
        channel = self.channel_for(events)
        if channel:
            sql += "; SELECT pg_notify(%s, %s)"
            rows += [channel, str(event_ids[-1])]
        if last:
            sql += commit_after(conn)
        if self._recording:
            # Before the round trip: with ``last`` it commits and notifies, and a poller woken
            # before this thread has its reply must find the ids held here (``_unsettled``),
            # or it reads them back from the log. Should the statement fail, the
            # transaction's end forgets them (``_on_end``).
            self._remember(conn, events, bodies, event_ids, event_time)
        conn.exec_driver_sql(sql, tuple(rows))
        return event_ids

    def channel_for(self, events: Sequence[NewEvent] | str) -> str | None:
        """The channel to notify for ``events`` (or one event of that type), None when
        every one of them is of an ``UNANNOUNCED_TYPES`` type (or notifying is off)."""
        types = [events] if isinstance(events, str) else [e.event_type for e in events]
        if all(t in UNANNOUNCED_TYPES for t in types):
            return None
        return self.notify_channel

    @staticmethod
    def _previous_time(conn: Connection, first: int) -> int:
        """EVENT_TIME of the event just before ``first`` (0 when purged or none)."""
        nl = schema.NOTIFICATION_LOG
        value = conn.execute(select(nl.c.EVENT_TIME).where(nl.c.EVENT_ID == first - 1)).scalar()
        return 0 if value is None else int(value)

    @staticmethod
    def _take_event_ids(conn: Connection, n: int) -> int:
        """The first of ``n`` event ids, advancing NEXT_EVENT_ID by ``n``.

        One UPDATE ... RETURNING both takes the row lock (held to commit, so ids follow commit
        order) and moves the sequence: a round trip less than select-for-update, then update.
        The row (1) is created if the table is empty.
        """
        seq = schema.NOTIFICATION_SEQUENCE
        advance = (
            update(seq).values(NEXT_EVENT_ID=seq.c.NEXT_EVENT_ID + n).returning(seq.c.NEXT_EVENT_ID)
        )
        after = conn.execute(advance).scalar()
        if after is None:
            try:
                with conn.begin_nested():
                    conn.execute(insert(seq).values(NNI_ID=1, NEXT_EVENT_ID=1))
            except IntegrityError:
                pass  # created by a concurrent writer; its row is advanced under the lock below
            after = conn.execute(advance).scalar_one()
        return int(after) - n

    # -- reading ---------------------------------------------------------------------------------

    def current_event_id(self, conn: Connection) -> int:
        """The id of the last event handed out: NEXT_EVENT_ID - 1, or 0 when there is none."""
        value = conn.execute(select(schema.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID)).scalar()
        return 0 if value is None else int(value) - 1

    @staticmethod
    def current_event_id_dbapi(cursor: Any, prepared: bool = False) -> int:
        """``current_event_id`` on a bare DB-API cursor: one indexed single-row read, without
        SQLAlchemy's per-statement work (the cache's strong-mode check runs it per read).
        ``prepared``: the cursor's PostgreSQL session ran ``prepare_current_event_id``."""
        cursor.execute(f"EXECUTE {_PREPARED}" if prepared else CURRENT_EVENT_ID_SQL)
        row = cursor.fetchone()
        return 0 if row is None or row[0] is None else int(row[0]) - 1

    @staticmethod
    def prepare_current_event_id(cursor: Any) -> None:
        """PostgreSQL: plan the single-row read once for this session."""
        cursor.execute(f"PREPARE {_PREPARED} AS {CURRENT_EVENT_ID_SQL}")

    @staticmethod
    def newest_event_id(conn: Connection) -> int | None:
        """The largest EVENT_ID in the log, None when it is empty."""
        value = conn.execute(select(func.max(schema.NOTIFICATION_LOG.c.EVENT_ID))).scalar()
        return None if value is None else int(value)

    @staticmethod
    def purge_before(conn: Connection, event_id: int) -> int:
        """Delete the events older than ``event_id``, as Hive's event cleaner does by age, and
        return how many went (the consistency checker purges behind a lagging instance)."""
        log_table = schema.NOTIFICATION_LOG
        return conn.execute(delete(log_table).where(log_table.c.EVENT_ID < event_id)).rowcount

    def oldest_event_id(self, conn: Connection) -> int | None:
        """The smallest EVENT_ID still in the log (older ones were purged), None when empty."""
        value = conn.execute(select(func.min(schema.NOTIFICATION_LOG.c.EVENT_ID))).scalar()
        return None if value is None else int(value)

    def next_events(
        self,
        conn: Connection,
        last_event: int,
        max_events: int | None,
        skip_types: Sequence[str] = (),
        cat_name: str | None = None,
        db_name: str | None = None,
        table_names: Sequence[str] | None = None,
        event_types: Sequence[str] | None = None,
        upto: int | None = None,
    ) -> list[Any]:
        """Events after ``last_event`` in id order, as ``get_next_notification`` returns them.

        At most ``max_events`` when that is positive and below the configured maximum, else
        the maximum. Filters: catalog, database, any of ``table_names``, any of
        ``event_types``, none of ``skip_types``; names are compared in lower case. ``upto``
        (the poller's NEXT_EVENT_ID - 1): no event above it, and no larger LIMIT than the ids
        between (see ``_bounded``).
        """
        nl = schema.NOTIFICATION_LOG
        cond = [nl.c.EVENT_ID > last_event]
        if cat_name is not None:
            cond.append(nl.c.CAT_NAME == _normalize(cat_name))
        if db_name is not None:
            cond.append(nl.c.DB_NAME == _normalize(db_name))
        if table_names:
            cond.append(nl.c.TBL_NAME.in_([_normalize(t) for t in table_names]))
        if event_types:
            cond.append(nl.c.EVENT_TYPE.in_(list(event_types)))
        if skip_types:
            cond.append(nl.c.EVENT_TYPE.not_in(list(skip_types)))
        cap = self.max_event_response
        limit = max_events if max_events is not None and 0 < max_events < cap else cap
        if upto is not None:
            cond.append(nl.c.EVENT_ID <= upto)
            limit = _bounded(limit, last_event, upto)
        query = select(*_EVENT_COLUMNS).where(and_(*cond)).order_by(nl.c.EVENT_ID).limit(limit)
        return _events(conn.execute(query))

    def current_and_next_events_dbapi(
        self, cursor: Any, last_event: int, limit: int
    ) -> tuple[int, list[Any]]:
        """NEXT_EVENT_ID - 1 and at most ``limit`` events after ``last_event`` up to it, as
        ``next_events`` returns them, in one statement on a bare psycopg2 cursor (the
        poller's LISTEN session, autocommit, where ``listener_session_sql`` prepared it).

        One statement needs no REPEATABLE READ transaction: its parts share one snapshot,
        and every id below a committed NEXT_EVENT_ID belongs to a committed transaction
        (ids are taken under the sequence row's lock held until commit, by ``append`` and by
        Hive alike), so the events up to it are all there. One round trip instead of three.
        """
        cap = self.max_event_response
        cursor.execute(
            f"EXECUTE {_LISTENER_READ} (%(after)s, %(limit)s)",
            {"after": last_event, "limit": limit if 0 < limit < cap else cap},
        )
        found = cursor.fetchall()
        nxt = found[0][0] if found else None
        current = 0 if nxt is None else int(nxt) - 1
        # In id order as the lateral read gives them; SQL promises no order without an
        # ORDER BY at the top (one there would add a Sort to the plan), so sort to be sure.
        rows = sorted((r[1:] for r in found if r[1] is not None), key=lambda r: r[0])
        return current, _events(rows)

    @staticmethod
    def listener_session_sql() -> str:
        """What a LISTEN session runs once when it starts (with its LISTEN, one round trip):
        the preparation of ``current_and_next_events_dbapi``'s statement."""
        return f"PREPARE {_LISTENER_READ} (bigint, bigint) AS {_LISTENER_READ_SQL}"

    def count_events(
        self,
        conn: Connection,
        from_event: int,
        db_name: str,
        cat_name: str | None = None,
        to_event: int | None = None,
        limit: int | None = None,
        table_names: Sequence[str] | None = None,
    ) -> int:
        """``get_notification_events_count``: events after ``from_event`` (up to ``to_event``).

        As in Hive: ``db_name`` "*" means every database, and events with no database or no
        catalog (transaction events) are counted for any; the catalog defaults to "hive";
        the count is capped at ``limit`` when one is given.
        """
        nl = schema.NOTIFICATION_LOG
        cat = DEFAULT_CATALOG if cat_name is None else cat_name
        cond = [
            nl.c.EVENT_ID > from_event,
            or_(nl.c.CAT_NAME == cat, nl.c.CAT_NAME.is_(None)),
        ]
        if db_name != "*":
            cond.append(or_(nl.c.DB_NAME == db_name.lower(), nl.c.DB_NAME.is_(None)))
        if to_event is not None:
            cond.append(nl.c.EVENT_ID <= to_event)
        if table_names:
            cond.append(nl.c.TBL_NAME.in_([t.lower() for t in table_names]))
        count = int(conn.execute(select(func.count(nl.c.EVENT_ID)).where(and_(*cond))).scalar_one())
        if limit is not None and count > limit:
            count = limit
        return count


_LISTENER_READ = "hms_current_and_next_events"
_LISTENER_READ_SQL = (
    'SELECT q.n, {outer} FROM (SELECT max("NEXT_EVENT_ID") AS n FROM "NOTIFICATION_SEQUENCE") AS q '
    'LEFT JOIN LATERAL (SELECT {inner} FROM "NOTIFICATION_LOG" '
    'WHERE "EVENT_ID" > $1 AND "EVENT_ID" < q.n ORDER BY "EVENT_ID" '
    "LIMIT (SELECT greatest(least($2, q.n - 1 - $1), 0))) AS l ON true"
).format(
    outer=", ".join(f'l."{c.name}"' for c in _EVENT_COLUMNS),
    inner=", ".join(f'"{c.name}"' for c in _EVENT_COLUMNS),
)
"""PostgreSQL, prepared once per LISTEN session ($1 the position, $2 the batch size):
NEXT_EVENT_ID and the events after $1 below it, in one statement and so one snapshot; always
at least one row (NULL event columns when there is no event). Prepared: planning the lateral
join cost more than running it (0.15 ms). The LIMIT is ``_bounded``'s, computed in the
statement: a LIMIT the planner cannot know keeps the EVENT_ID index scan on a log without
statistics, where the bare bounds (estimated at a few rows) made it a bitmap scan and sort of
every event in the range."""


def _bounded(limit: int, last_event: int, upto: int) -> int:
    """The LIMIT of a read of the ids after ``last_event`` up to ``upto``: no more than there
    are ids between. PostgreSQL plans an unbounded ``EVENT_ID > x ORDER BY EVENT_ID LIMIT
    1000`` on a log its statistics do not know (never analyzed, autovacuum off, a fresh
    database) as a scan and sort of the whole table (4 ms and 1,000 buffers at 30,000 events,
    growing with the log); a LIMIT of the few ids a poll expects keeps the index read."""
    return max(1, min(limit, upto - last_event))


def _events(rows: Any) -> list[Any]:
    """NotificationEvents from NOTIFICATION_LOG rows of ``next_events``'s columns."""
    event = hms.NotificationEvent
    return [
        event(
            eventId=r[0],
            eventTime=r[1],
            eventType=r[2],
            catName=r[3],
            dbName=r[4],
            tableName=r[5],
            message=r[6],
            messageFormat=r[7],
        )
        for r in rows
    ]
