"""Tails NOTIFICATION_LOG in event-id order and hands each batch to the cache's applier.

Event ids are handed out under the NOTIFICATION_SEQUENCE row lock held until commit, so the
log grows without gaps in commit order; a gap can only mean events were purged (by age) before
this instance read them. Every id of a batch is checked: only the events before a hole are
applied, and the hole is reported when the next round starts at it (``on_gap``): the cache
forgets everything rather than serve on without those events.

On PostgreSQL every writer sends ``NOTIFY hms_notification_log`` in the event's transaction
(store/events/log.py; not for an OPEN_TXN or ALLOC_WRITE_ID_EVENT alone, which the next
announced event, a strong read's position or a lock grant brings in: docs/cache.md); the
poller LISTENs on a dedicated connection and polls as soon as a notification arrives, so a
change made through one instance reaches the others at once.
While LISTEN works an idle instance sends nothing: every ``safety_interval`` seconds it reads
NEXT_EVENT_ID on the LISTEN connection itself (one statement, no pooled connection) and catches
up only when that shows events it has not applied. The catch-up a notification (or the safety
check) calls for runs on the LISTEN session too, one statement per batch (NEXT_EVENT_ID and the
events below it in one snapshot), so a write on one instance makes no other instance check out
a pooled connection; notifications
that come during it stay queued on the session and are read next. Each new LISTEN session is
followed by a catch-up (notifications sent while none was listening are lost). Polling every
``interval`` seconds with pooled connections is the mode on SQLite, with ``listen`` off, and
while the LISTEN connection is down.
Writers on this instance call ``catch_up`` themselves after their write commits, and
strong-mode reads call ``wake``/``wait_for``. A notification names the backend that sent it:
one not of this process's pool (``Database.backend_pids``) announces another instance's
events, which the poller reads at once; for its own it waits briefly for the writer's thread
to record them and applies them from memory, then lets the next notifications gather for a
moment (``_OWN_GATHER_SECONDS``) so that one wake-up applies several commits' events.

The LISTEN session also carries a lease (``lease_key``): a session advisory lock tried when
the session starts and at each safety check, so exactly one live instance holds it
(``leader``; the transaction housekeeping runs there) and none opens a connection to ask.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from hms_cache_proxy import failpoints
from hms_cache_proxy.observability import metrics
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.events.log import CURRENT_EVENT_ID_SQL, NOTIFY_CHANNEL, EventLog
from hms_cache_proxy.store.events.recent import RecentEvents

log = logging.getLogger(__name__)

GAP_PURGED = "events_purged"
"""on_gap reason: the log no longer holds the events after our position."""

_OWN_EVENTS_WAIT_SECONDS = 0.005
"""How long the poller, woken by a NOTIFY while this instance is writing, waits for the
writer's thread to record the announced events before reading them from the log."""
_OWN_WRITER_WAIT_SECONDS = 0.2
"""How long it waits while a writer of this instance still holds one of those events (or a
server-side function call is under way): on a loaded machine the writer's thread can wait
that long for a core, and it will record them or drop them on a rollback."""
_OWN_LOCK_SLICE_SECONDS = 0.001
"""While the poller waits for the poll lock to apply own events, how often it looks whether
the lock's holder has applied them meanwhile (``Poller._applied_from_memory``)."""
_OWN_GATHER_SECONDS = 0.002
"""After applying this instance's own announced events, how long the poller lets further
notifications gather before it reads them (``Poller._gather_own``)."""


def _announcement(
    notifies: Sequence[Any], own_pids: frozenset[int] | None
) -> tuple[int | None, bool | None]:
    """The highest event id the notifications announce (their payload: the writer's last new
    event id; None when any payload is not one, then the log must be read), and whether every
    notification came from one of ``own_pids`` (the backends of this process's pooled
    sessions: its own commits; None when that is not known)."""
    ids = []
    own: bool | None = own_pids is not None
    for n in notifies:
        payload = getattr(n, "payload", "")
        if not payload.isdigit():
            return None, None
        ids.append(int(payload))
        if own_pids is not None and getattr(n, "pid", None) not in own_pids:
            own = False
    return (max(ids) if ids else None), own


class Poller:
    """Applies the log from ``position`` on, in batches of at most ``batch_size`` events."""

    def __init__(
        self,
        db: Database,
        events: EventLog,
        apply: Callable[[Sequence[Any]], None],
        on_gap: Callable[[str], None],
        *,
        position: int,
        interval: float = 1.0,
        batch_size: int = 1000,
        listen: bool = True,
        safety_interval: float = 60.0,
        lease_key: int | None = None,
        recent: RecentEvents | None = None,
    ) -> None:
        """``recent``: where the events applied are kept for get_next_notification."""
        self.db = db
        self.events = events
        self._apply = apply
        self._on_gap = on_gap
        self._position = position
        self.interval = interval
        self.safety_interval = max(interval, safety_interval)
        self.lease_key = lease_key
        self.leader = False
        self.batch_size = batch_size
        # Behind a transaction pooler, LISTEN needs a direct connection (database_listen_url).
        self.listen = (
            listen
            and db.dialect == "postgresql"
            and (db.pooler != "transaction" or db.listen_url is not None)
        )
        self.last_current = position
        self.listening = False
        self._poll_lock = threading.Lock()
        self._moved = threading.Condition()
        self._stopped = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._fds_open = [self._wake_r, self._wake_w]
        self._thread: threading.Thread | None = None
        self._listener: Any = None
        # Held for every statement and poll() on the LISTEN session: one at a time on it.
        self.listener_lock = threading.Lock()
        self._retry_at = 0.0
        self._listen_warned = -60.0
        self.recent = recent
        metrics.POSITION.set(position)

    @property
    def position(self) -> int:
        return self._position

    def caught_up(self) -> bool:
        """The last poll found nothing newer than what is applied, and every event this
        process committed is applied (a commit's events reach the cache after the call has
        answered, by the poller: until then the cache is behind, not stale)."""
        return self._position >= max(self.last_current, self.events.newest_here)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="hms-cache-poller", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        self.wake()
        if self._thread is not None:
            self._thread.join(timeout)
        self._close_listener()
        fds, self._fds_open = self._fds_open, []  # a second stop closes nothing
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    def stall(self, seconds: float, wait: float = 30.0) -> bool:
        """Hold the poll lock for ``seconds`` from a thread of its own, as a poll stuck on a
        slow database would: nothing is applied meanwhile (the poller, writers' catch-ups and
        strong-mode waits all queue behind it). A fault the consistency checker injects
        (``POST /admin/poller/pause``); ``stop`` ends a stall early. Returns once the stall
        holds the lock (True; a poll under way finishes first, so ``position`` then stays
        put until the stall ends), or False if it could not take it within ``wait`` seconds."""
        held = threading.Event()

        def hold() -> None:
            with self._poll_lock:
                held.set()
                self._stopped.wait(seconds)

        threading.Thread(target=hold, name="hms-cache-poller-stall", daemon=True).start()
        return held.wait(wait)

    def wake(self) -> None:
        """Poll now (a strong-mode read is waiting)."""
        if not self._fds_open:
            return  # stopped: the descriptor's number may belong to something else now
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    # -- polling -------------------------------------------------------------------------------

    def apply_own(
        self, events: Sequence[Any], *, read: bool = True, seen: int | None = None
    ) -> int:
        """After a write on this instance: apply its committed ``events`` (NotificationEvents,
        in id order) from memory when they follow the position without a gap, which saves
        reading them back; else (other writers' events in between, or none of ours) catch up
        from the log, or with ``read`` False leave them to the poller. With ``read`` False a
        poll under way is not waited for either: it or the next one (our commit's NOTIFY
        wakes it) applies them from the log. ``seen``: the last event id the write's own
        statement saw committed; once the position has reached it, nothing is read. Returns
        the position reached."""
        if seen is not None and not events and self._position >= seen:
            return self._position
        if not self._poll_lock.acquire(blocking=read):
            return self._position
        try:
            return self._apply_own_locked(events, read=read, seen=seen)
        finally:
            self._poll_lock.release()

    def _apply_own_locked(
        self, events: Sequence[Any], *, read: bool, seen: int | None = None
    ) -> int:
        """``apply_own`` with the poll lock held."""
        fresh = [e for e in events if e.eventId > self._position]
        if events and not fresh:
            return self._position  # the poller has applied them already
        ids = [e.eventId for e in fresh]
        if fresh and ids == list(range(self._position + 1, self._position + 1 + len(ids))):
            failpoints.hit("poller.before_apply", f"events {ids[0]}..{ids[-1]}")
            self._apply(fresh)
            self._keep(fresh)
            self._advance(ids[-1])
            self.last_current = max(self.last_current, ids[-1])
            return self._position
        if seen is not None and (self._position >= seen or self._apply_recorded_locked(seen)):
            return self._position
        return self._catch_up_locked() if read else self._position

    def apply_recorded(self, target: int) -> bool:
        """Apply the events up to ``target`` from memory when this process committed and
        recorded every one after the position (its own writes, some announced by no NOTIFY:
        ``log.UNANNOUNCED_TYPES``), without waiting for a poll under way; True once the
        position has reached ``target``. A strong-mode read behind the database's position
        tries this before it wakes the poller to read the log."""
        if self._position >= target:
            return True
        if not self._poll_lock.acquire(blocking=False):
            return False
        try:
            return self._position >= target or self._apply_recorded_locked(target)
        finally:
            self._poll_lock.release()

    def _apply_recorded_locked(self, target: int) -> bool:
        """``apply_recorded`` with the poll lock held."""
        run = self.events.committed_here(self._position + 1, target)
        if run is None:
            return False
        ids = [e.eventId for e in run]
        failpoints.hit("poller.before_apply", f"events {ids[0]}..{ids[-1]}")
        self._apply(run)
        self._keep(run)
        self._advance(ids[-1])
        self.last_current = max(self.last_current, ids[-1])
        return True

    def catch_up(self) -> int:
        """Apply every event the log holds now; returns the position reached."""
        with self._poll_lock:
            return self._catch_up_locked()

    def _catch_up_locked(self, listener: Any = None) -> int:
        """Read with a pooled connection, or (the poller's thread only) on ``listener``."""
        while True:
            if listener is None:
                current, rows = self._read_pooled()
            else:
                current, rows = self._read_on_listener(listener)
            self.last_current = max(self.last_current, current)
            if current <= self._position:
                self._lag(current, None)
                return self._position
            if not rows or rows[0].eventId != self._position + 1:
                log.warning(
                    "events %d..%d are no longer in the log (purged); the cache starts over",
                    self._position + 1,
                    (rows[0].eventId - 1) if rows else current,
                )
                self._on_gap(GAP_PURGED)
                if not rows:
                    if self.recent is not None:
                        self.recent.reset(current)
                    self._advance(current)
                    self._lag(current, None)
                    return self._position
            rows = contiguous(rows)
            failpoints.hit("poller.before_apply", f"events {rows[0].eventId}..{rows[-1].eventId}")
            self._apply(rows)
            self._keep(rows)
            self._advance(rows[-1].eventId)
            self._lag(current, rows[0].eventTime)
            if self._position >= current:
                return self._position

    def _read_pooled(self) -> tuple[int, Sequence[Any]]:
        """NEXT_EVENT_ID - 1 and the next batch after the position, in one read snapshot."""
        with self.db.read() as conn:
            current = self.events.current_event_id(conn)
            rows: Sequence[Any] = []
            if current > self._position:
                rows = self.events.next_events(conn, self._position, self.batch_size, upto=current)
        return current, rows

    def _read_on_listener(self, listener: Any) -> tuple[int, Sequence[Any]]:
        """``_read_pooled`` on the LISTEN session, in one round trip: a single statement
        reads NEXT_EVENT_ID and the batch below it in one snapshot (``EventLog.
        current_and_next_events_dbapi``), under the statement timeout set when the session
        began. Notifications that come meanwhile stay queued in ``listener.notifies``
        (``_run`` looks there before it waits). A failure closes the session: the next round
        polls with the pool, or listens again and catches up."""
        try:
            with self.listener_lock, listener.cursor() as cur:
                return self.events.current_and_next_events_dbapi(
                    cur, self._position, self.batch_size
                )
        except Exception as exc:
            self._listener_failed(exc)
            raise

    def _keep(self, events: Sequence[Any]) -> None:
        if self.recent is not None:
            self.recent.add(events)

    def _advance(self, position: int) -> None:
        with self._moved:
            self._position = position
            self._moved.notify_all()
        metrics.POSITION.set(position)

    def _lag(self, current: int, oldest_time: int | None) -> None:
        metrics.LAST_POLL.set(time.time())  # a read of the log that reached its end
        behind = max(0, current - self._position)
        metrics.LAG_EVENTS.set(behind)
        if behind == 0 or oldest_time is None:
            metrics.LAG_SECONDS.set(0)
        else:
            metrics.LAG_SECONDS.set(max(0.0, time.time() - oldest_time))

    def wait_for(self, position: int, timeout: float) -> bool:
        """Block until ``position`` is applied (True) or ``timeout`` passes (False)."""
        deadline = time.monotonic() + timeout
        with self._moved:
            while self._position < position:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._moved.wait(left)
        return True

    def _run(self) -> None:
        while not self._stopped.is_set():
            listener = self._ensure_listener()
            fds = [self._wake_r] + ([listener] if listener is not None else [])
            try:
                if listener is not None and listener.notifies:
                    # Queued while a read ran on the session: libpq has taken them off the
                    # socket already, so it would not show readable for them.
                    ready = [listener]
                else:
                    ready = _readable(fds, self.safety_interval if listener else self.interval)
            except (OSError, ValueError):
                ready = []
                self._close_listener()
            if self._stopped.is_set():
                return
            if not ready and listener is not None:
                # The safety check: one statement on the LISTEN session; a catch-up only
                # when it shows events not applied (a notification that never came).
                try:
                    if self._check_on_listener(listener) <= self._position:
                        continue
                except Exception as exc:  # noqa: BLE001 - the connection broke: poll meanwhile
                    self._listener_failed(exc)
            if self._wake_r in ready:
                try:
                    while os.read(self._wake_r, 4096):
                        pass
                except (BlockingIOError, OSError):
                    pass
            announced: int | None = None
            own: bool | None = None
            if listener is not None and listener in ready:
                try:
                    with self.listener_lock:
                        listener.poll()
                        own_pids = getattr(self.db, "backend_pids", None)
                        announced, own = _announcement(listener.notifies, own_pids)
                        listener.notifies.clear()
                except Exception as exc:  # noqa: BLE001 - the connection broke: poll meanwhile
                    self._listener_failed(exc)
            # Only events already applied were announced (this instance's own writes, applied
            # from memory: nothing to read), or all of them are this instance's own and are
            # applied from memory now. own False: a notification from a backend not of this
            # process's pool (another instance's commit): those events are in the log only,
            # read it at once rather than wait for writers of this process first.
            if (
                announced is not None
                and self._wake_r not in ready
                and (
                    announced <= self._position
                    or (own is not False and self._applied_from_memory(announced))
                )
            ):
                if own:
                    self._gather_own()
                continue
            try:
                # On the LISTEN session when there is one: the connection this instance
                # holds anyway, so a write elsewhere makes no instance check one out.
                with self._poll_lock:
                    self._catch_up_locked(self._listener)
            except Exception:  # noqa: BLE001 - the database may be down; retry next round
                log.warning("polling the notification log failed", exc_info=True)
                self._stopped.wait(min(5.0, max(self.interval, 0.5)))

    def _gather_own(self) -> None:
        """After this instance's own notifications: let the next ones gather for
        ``_OWN_GATHER_SECONDS`` (a wake, from a strong read or ``stop``, ends it at once), so
        that one wake-up reads and applies several commits' events rather than one each.
        Nothing waits for the poller to apply this process's own events: its writes catch up
        in their own thread, its txn calls' events are left to the poller or a write's
        catch-up, whichever comes first (docs/cache.md)."""
        try:
            _readable([self._wake_r], _OWN_GATHER_SECONDS)
        except (OSError, ValueError):
            pass

    def _applied_from_memory(self, announced: int) -> bool:
        """Apply the events up to ``announced`` from memory if this process committed all of
        them, waiting briefly for a writer's thread to record them; True when that reached
        ``announced``."""
        own = self.events.committed_here(self._position + 1, announced)
        if own is None and self.events.writing_recently():
            # Likely this instance's own write whose thread has not recorded its events
            # yet: waiting a moment saves reading them back from the log.
            own = self.events.wait_committed_here(
                self._position + 1,
                announced,
                _OWN_EVENTS_WAIT_SECONDS,
                _OWN_WRITER_WAIT_SECONDS,
            )
        if own is None:
            return False
        # Waiting for the poll lock, not giving up: a writer's thread holding it is applying
        # its own events (or catching up) and soon lets go; without it these events, known
        # here, would be read back from the log under the same lock. But not past the moment
        # the holder has applied them (a writer's catch-up reading the log often does): then
        # there is nothing left to do, and taking the lock only queues writers behind this.
        while self._position < announced:
            if self._poll_lock.acquire(timeout=_OWN_LOCK_SLICE_SECONDS):
                break
        else:
            return True
        try:
            return self._apply_own_locked(own, read=False) >= announced
        finally:
            self._poll_lock.release()

    # -- LISTEN ----------------------------------------------------------------------------------

    def _ensure_listener(self) -> Any:
        if not self.listen or self._listener is not None:
            return self._listener
        now = time.monotonic()
        if now < self._retry_at:
            return None
        try:
            self._listener = listen_connection(self.db)
            self.listening = True
            self._try_lease(self._listener)
            # Events committed while nobody listened were announced to nobody: read them.
            self.wake()
        except Exception as exc:  # noqa: BLE001 - fall back to polling, try again later
            self._listener_failed(exc)
            if now - self._listen_warned >= 60.0:  # once a minute while it lasts
                self._listen_warned = now
                log.warning(
                    "cannot LISTEN for notification events; polling every %gs",
                    self.interval,
                    exc_info=True,
                )
            self._retry_at = now + 5.0
        return self._listener

    def _listener_failed(self, exc: BaseException) -> None:
        """An error on the LISTEN session (or opening it): counted and, when PostgreSQL
        refused the connection, recorded as the pools' errors are (the session is outside
        SQLAlchemy, whose hook counts theirs); the session is closed."""
        self.db.raw_error(exc)
        self._close_listener()

    def _close_listener(self) -> None:
        if self._listener is not None:
            try:
                self._listener.close()
            except Exception:  # noqa: BLE001
                pass
        self._listener = None
        self.listening = False
        self.leader = False  # the session's advisory lock went with it
        self._retry_at = time.monotonic() + 1.0

    def _try_lease(self, listener: Any) -> None:
        """Take the lease on the LISTEN session if nobody holds it (no-op when held)."""
        if self.lease_key is None or self.leader:
            return
        with self.listener_lock, listener.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(%s)", (self.lease_key,))
            row = cur.fetchone()
        self.leader = bool(row and row[0])
        if self.leader:
            log.info("this instance holds the housekeeping lease")

    def _check_on_listener(self, listener: Any) -> int:
        """NEXT_EVENT_ID - 1 read on the LISTEN session (trying the lease in the same round
        trip when this instance does not hold it). A notification that came with the answer
        may announce a commit the statement did not see: then the answer is raised past the
        position, so that a catch-up follows."""
        lease = self.lease_key is not None and not self.leader
        sql = CURRENT_EVENT_ID_SQL.replace(
            " FROM", ", pg_try_advisory_lock(%s) FROM" if lease else " FROM", 1
        )
        with self.listener_lock, listener.cursor() as cur:
            cur.execute(sql, (self.lease_key,) if lease else None)
            row = cur.fetchone()
            announced = bool(listener.notifies)
            listener.notifies.clear()
        if lease and row is not None and row[1]:
            self.leader = True
            log.info("this instance holds the housekeeping lease")
        current = 0 if row is None or row[0] is None else int(row[0]) - 1
        self.last_current = max(self.last_current, current)
        if announced:
            return max(current, self._position + 1)
        if current <= self._position:
            self._lag(current, None)
        return current


def contiguous(rows: Sequence[Any]) -> Sequence[Any]:
    """The rows up to the first hole in their event ids. Every id of a batch is checked, not
    only the first: a hole in the middle (events purged out of order) is then found at the
    start of the next round, where ``catch_up`` reports it."""
    first = rows[0].eventId
    for i, row in enumerate(rows):
        if row.eventId != first + i:
            return rows[:i]
    return rows


_KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


def raw_connection(db: Database) -> Any:
    """A new DB-API connection to the metastore database outside SQLAlchemy's pool, in
    autocommit mode (each statement sees the latest committed state); to
    ``database_listen_url`` when set (a direct one next to a transaction pooler)."""
    engine = db.read_engine
    args, kwargs = engine.dialect.create_connect_args(db.listen_url or engine.url)
    if db.dialect == "postgresql":
        import psycopg2

        kwargs = {k: v for k, v in kwargs.items() if k != "options"}
        kwargs.setdefault("connect_timeout", max(1, int(db.timeout_seconds)))
        # A LISTEN session waits in silence: TCP keepalives find a dead peer within about a
        # minute, so the poller falls back to polling instead of waiting for nothing.
        for key, value in _KEEPALIVES.items():
            kwargs.setdefault(key, value)
        conn = psycopg2.connect(*args, application_name=db.application_name, **kwargs)
        conn.autocommit = True
        return conn
    import sqlite3

    (path,) = args  # pysqlite's arguments: the database file alone
    conn = sqlite3.connect(
        path, timeout=db.timeout_seconds, check_same_thread=False, isolation_level=None
    )
    return conn


def listen_connection(db: Database) -> Any:
    """A PostgreSQL connection LISTENing on the notification channel, with the pool's
    statement timeout as a session setting (its reads are single autocommit statements:
    no transaction to SET LOCAL it in) and the log read prepared, in one round trip."""
    conn = raw_connection(db)
    ms = int(db.statement_timeout_seconds * 1000)
    with conn.cursor() as cur:
        cur.execute(
            f"SET statement_timeout = {ms}; LISTEN {NOTIFY_CHANNEL}; "
            + EventLog.listener_session_sql()
        )
    return conn


class SequenceReader:
    """NEXT_EVENT_ID - 1 for strong-mode reads, over a pooled autocommit connection (on
    PostgreSQL the statement is prepared once per pooled connection): no connection of its
    own, so an idle instance holds none for it."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def current(self) -> int:
        if self.db.dialect != "postgresql":
            with self.db.read() as conn:
                value = conn.exec_driver_sql(CURRENT_EVENT_ID_SQL).scalar()
            return 0 if value is None else int(value) - 1
        for attempt in (1, 2):
            raw = self.db.autocommit_engine.raw_connection()
            try:
                info = raw.info
                cur = raw.cursor()
                try:
                    if self.db.pooler == "transaction":  # no session to prepare in
                        return EventLog.current_event_id_dbapi(cur, prepared=False)
                    if not info.get(_SEQUENCE_PREPARED):
                        EventLog.prepare_current_event_id(cur)
                        info[_SEQUENCE_PREPARED] = True
                    return EventLog.current_event_id_dbapi(cur, prepared=True)
                finally:
                    cur.close()
            except Exception:
                raw.invalidate()  # a broken connection is not reused; the next one is new
                if attempt == 2:
                    raise
            finally:
                raw.close()  # back to the pool
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Nothing to close (kept for the callers' symmetry)."""


_SEQUENCE_PREPARED = "hms_sequence_prepared"
"""Pooled connection info key: the session prepared the NEXT_EVENT_ID read."""


def _readable(sources: list[Any], timeout: float) -> list[Any]:
    """Which of ``sources`` (descriptors, or objects with fileno()) can be read within
    ``timeout`` seconds. poll(2), not select(2): a busy server's descriptors pass 1023."""
    waiter = select.poll()
    by_fd: dict[int, Any] = {}
    for source in sources:
        fd = source if isinstance(source, int) else source.fileno()
        by_fd[fd] = source
        waiter.register(fd, select.POLLIN)
    return [by_fd[fd] for fd, _ in waiter.poll(timeout * 1000)]
