"""NOTIFICATION_LOG writer and reader on SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import random
import select as io_select
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest
from sqlalchemy import delete, func, select
from sqlalchemy.engine import make_url

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events import messages
from hms_cache_proxy.store.events.log import NOTIFY_CHANNEL, EventLog, NewEvent
from hms_cache_proxy.store.sql.bootstrap import init_db

WAREHOUSE = "file:/tmp/hms-warehouse"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest) -> Iterator[Database]:
    url = request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url")
    database = Database(url)
    init_db(database, WAREHOUSE)
    yield database
    database.dispose()


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[Database]:
    database = Database(pg_url, pool_size=12)
    init_db(database, WAREHOUSE)
    yield database
    database.dispose()


def new_log(db: Database, fmt: str = messages.GZIP_FORMAT, **kw) -> EventLog:
    return EventLog(IdAllocator(db), fmt, **kw)


def body(i: int) -> dict:
    return {"server": "", "servicePrincipal": "", "db": "d", "n": i, "text": "é/\x01"}


def ev(
    i: int,
    event_type: str = messages.ALTER_TABLE,
    db_name: str | None = "d",
    table: str | None = "t",
    cat: str | None = "hive",
) -> NewEvent:
    return NewEvent(event_type, body(i), cat_name=cat, db_name=db_name, table_name=table)


def write(db: Database, log: EventLog, events: list[NewEvent]) -> list[int]:
    return db.transaction(lambda conn: log.append(conn, events))


def read(db: Database, fn):
    with db.read() as conn:
        return fn(conn)


# -- writing ------------------------------------------------------------------------------------


def test_append_numbers_events_from_next_event_id(db: Database) -> None:
    log = new_log(db, clock=lambda: 1700000000.7)
    assert read(db, log.current_event_id) == 0  # seed row NEXT_EVENT_ID = 1
    assert read(db, log.oldest_event_id) is None
    assert write(db, log, [ev(1), ev(2), ev(3)]) == [1, 2, 3]
    assert write(db, log, [ev(4)]) == [4]
    assert write(db, log, []) == []
    assert read(db, log.current_event_id) == 4
    assert read(db, log.oldest_event_id) == 1
    with db.read() as conn:
        rows = conn.execute(
            select(schema.NOTIFICATION_LOG).order_by(schema.NOTIFICATION_LOG.c.EVENT_ID)
        )
        rows = [r._mapping for r in rows]
        nxt = conn.execute(select(schema.NOTIFICATION_SEQUENCE.c.NEXT_EVENT_ID)).scalar_one()
    assert nxt == 5
    assert [r["EVENT_ID"] for r in rows] == [1, 2, 3, 4]
    assert len({r["NL_ID"] for r in rows}) == 4
    assert {r["EVENT_TIME"] for r in rows} == {1700000000}
    assert {r["MESSAGE_FORMAT"] for r in rows} == {"gzip(json-2.0)"}
    assert (rows[0]["CAT_NAME"], rows[0]["DB_NAME"], rows[0]["TBL_NAME"]) == ("hive", "d", "t")


def test_event_time_never_goes_below_the_previous_event(db: Database) -> None:
    """Issue 14: times taken under the sequence lock, never below the event before, so a purge
    by age cuts a prefix of the log and never a hole (hosts' clocks differ)."""
    times = iter([1700000100.0, 1700000050.0, 1700000200.0])
    log = new_log(db, clock=lambda: next(times))
    write(db, log, [ev(1)])
    write(db, log, [ev(2)])  # a writer whose clock is behind
    write(db, log, [ev(3)])
    with db.read() as conn:
        nl = schema.NOTIFICATION_LOG
        got = list(conn.execute(select(nl.c.EVENT_TIME).order_by(nl.c.EVENT_ID)).scalars())
    assert got == [1700000100, 1700000100, 1700000200]


def test_rolled_back_events_leave_no_gap(db: Database) -> None:
    log = new_log(db)
    write(db, log, [ev(1)])

    def fail(conn):
        log.append(conn, [ev(2), ev(3)])
        raise RuntimeError("the change failed after its events were appended")

    with pytest.raises(RuntimeError):
        db.transaction(fail)
    assert read(db, log.current_event_id) == 1
    assert write(db, log, [ev(4)]) == [2]


def test_missing_sequence_row_is_created(db: Database) -> None:
    db.transaction(lambda conn: conn.execute(delete(schema.NOTIFICATION_SEQUENCE)))
    log = new_log(db)
    assert read(db, log.current_event_id) == 0
    assert write(db, log, [ev(1), ev(2)]) == [1, 2]
    assert read(db, log.current_event_id) == 2


def test_format_names(db: Database) -> None:
    with pytest.raises(ValueError, match="thrift-json"):
        new_log(db, "thrift-json")
    assert new_log(db, "GZIP").message_format == "gzip(json-2.0)"
    assert new_log(db, "JSON-0.2").message_format == "json-0.2"


@pytest.mark.parametrize("fmt", [messages.JSON_FORMAT, messages.GZIP_FORMAT])
def test_messages_round_trip(db: Database, fmt: str) -> None:
    log = new_log(db, fmt)
    mb = messages.MessageBuilder(server="thrift://hms:9083")
    tbl = hms.Table(
        tableName="t",
        dbName="d",
        tableType="MANAGED_TABLE",
        parameters={"k": "v é"},
        partitionKeys=[hms.FieldSchema(name="p", type="int")],
    )
    parts = [hms.Partition(values=[str(i)], dbName="d", tableName="t") for i in range(50)]
    bodies = [
        mb.create_table(tbl, valid_write_ids="d.t:1:9223372036854775807::"),
        mb.add_partition(tbl, parts),
    ]
    write(
        db,
        log,
        [
            NewEvent(messages.CREATE_TABLE, bodies[0], db_name="d", table_name="t"),
            NewEvent(messages.ADD_PARTITION, bodies[1], db_name="d", table_name="t"),
        ],
    )
    events = read(db, lambda c: log.next_events(c, 0, None))
    assert [e.eventType for e in events] == [messages.CREATE_TABLE, messages.ADD_PARTITION]
    assert all(e.messageFormat == fmt and e.catName == "hive" for e in events)
    assert [messages.decode(e.message, e.messageFormat) for e in events] == bodies
    assert messages.partitions(messages.decode(events[1].message, fmt)) == parts
    assert (
        messages.valid_write_ids(messages.decode(events[0].message, fmt))
        == "d.t:1:9223372036854775807::"
    )
    if fmt == messages.JSON_FORMAT:
        assert events[0].message == messages.to_json(bodies[0])


# -- reading ------------------------------------------------------------------------------------


def seed(db: Database, log: EventLog) -> None:
    write(
        db,
        log,
        [
            ev(1, messages.CREATE_DATABASE, table=None),  # 1
            ev(2, messages.CREATE_TABLE, table="t1"),  # 2
            ev(3, messages.ADD_PARTITION, table="t1"),  # 3
            ev(
                4, messages.OPEN_TXN, db_name=None, table=None, cat=None
            ),  # 4: no catalog, no database
            ev(5, messages.CREATE_TABLE, db_name="other", table="t1"),  # 5
            ev(6, messages.ALTER_TABLE, table="t2"),  # 6
            ev(7, messages.CREATE_TABLE, table="t3", cat="spark"),  # 7
            ev(8, messages.COMMIT_TXN, db_name=None, table=None, cat=None),  # 8
        ],
    )


def ids_of(events) -> list[int]:
    return [e.eventId for e in events]


def test_next_events_filters(db: Database) -> None:
    log = new_log(db)
    seed(db, log)

    def nxt(last: int = 0, max_events: int | None = None, **kw) -> list[int]:
        return ids_of(read(db, lambda c: log.next_events(c, last, max_events, **kw)))

    assert nxt() == [1, 2, 3, 4, 5, 6, 7, 8]
    assert nxt(5) == [6, 7, 8]
    assert nxt(8) == []
    assert nxt(0, 3) == [1, 2, 3]
    assert nxt(2, 0) == [3, 4, 5, 6, 7, 8]  # 0 or negative: the configured maximum
    assert nxt(db_name="D") == [1, 2, 3, 6, 7]  # names compare in lower case
    assert nxt(cat_name="spark") == [7]
    assert nxt(cat_name="hive", db_name="d", table_names=["T1", "t2"]) == [2, 3, 6]
    assert nxt(skip_types=[messages.CREATE_TABLE, messages.OPEN_TXN]) == [1, 3, 6, 8]
    assert nxt(event_types=[messages.OPEN_TXN, messages.COMMIT_TXN]) == [4, 8]
    e = read(db, lambda c: log.next_events(c, 3, 1))[0]
    assert (e.eventId, e.eventType, e.catName, e.dbName, e.tableName) == (
        4,
        messages.OPEN_TXN,
        None,
        None,
        None,
    )
    capped = new_log(db, max_event_response=2)
    assert ids_of(read(db, lambda c: capped.next_events(c, 0, 5))) == [1, 2]
    assert ids_of(read(db, lambda c: capped.next_events(c, 0, 1))) == [1]


def test_count_events(db: Database) -> None:
    log = new_log(db)
    seed(db, log)

    def count(frm: int, dbn: str, **kw) -> int:
        return read(db, lambda c: log.count_events(c, frm, dbn, **kw))

    # Hive: events of that database plus those with no database (transactions); catalog
    # "hive" by default, plus events with no catalog; "*" is every database.
    assert count(0, "d") == 6  # 1 2 3 4 6 8 (7 is in catalog spark)
    assert count(0, "D") == 6
    assert count(0, "*") == 7
    assert count(0, "*", cat_name="spark") == 3  # 4, 7, 8
    assert count(3, "d") == 3  # 4 6 8
    assert count(0, "d", to_event=4) == 4
    assert count(0, "d", limit=2) == 2
    assert count(0, "d", table_names=["T1"]) == 2  # 2 3
    assert count(0, "other") == 3  # 4 5 8
    assert count(8, "*") == 0


def test_oldest_event_after_purge(db: Database) -> None:
    log = new_log(db)
    seed(db, log)
    db.transaction(
        lambda conn: conn.execute(
            delete(schema.NOTIFICATION_LOG).where(schema.NOTIFICATION_LOG.c.EVENT_ID < 4)
        )
    )
    assert read(db, log.oldest_event_id) == 4
    assert read(db, log.current_event_id) == 8
    assert ids_of(read(db, lambda c: log.next_events(c, 0, None)))[:1] == [4]


# -- concurrency --------------------------------------------------------------------------------


def run_writers(db: Database, log: EventLog, writers: int, txns: int, hold: float) -> list[int]:
    """``writers`` threads, each committing ``txns`` transactions of 1-3 events."""
    errors: list[BaseException] = []
    got: list[int] = []
    got_lock = threading.Lock()

    def writer(w: int) -> None:
        rnd = random.Random(w)
        try:
            for t in range(txns):
                n = rnd.randint(1, 3)

                def work(conn, n=n, t=t):
                    ids = log.append(conn, [ev(w * 1000 + t * 10 + k) for k in range(n)])
                    time.sleep(rnd.random() * hold)  # hold the sequence lock until commit
                    return ids

                ids = db.transaction(work)
                with got_lock:
                    got.extend(ids)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return got


@pytest.mark.postgres
def test_concurrent_writers_get_gap_free_ids_in_commit_order(pg_db: Database) -> None:
    log = new_log(pg_db)
    stop = threading.Event()
    seen: list[int] = []
    reader_errors: list[str] = []

    def reader() -> None:
        # Tails the log as a poller would: a reader must never see event N before N-1, which
        # would happen if a transaction holding a lower id committed after a higher one.
        last = 0
        while not stop.is_set() or last < read(pg_db, log.current_event_id):
            events = read(pg_db, lambda c, last=last: log.next_events(c, last, 100))
            for e in events:
                if e.eventId != last + 1:
                    reader_errors.append(f"saw {e.eventId} after {last}")
                last = e.eventId
                seen.append(e.eventId)
            time.sleep(0.001)

    tail = threading.Thread(target=reader)
    tail.start()
    try:
        got = run_writers(pg_db, log, writers=8, txns=25, hold=0.003)
    finally:
        stop.set()
        tail.join(timeout=60)
    total = len(got)
    assert sorted(got) == list(range(1, total + 1))
    assert not reader_errors, reader_errors[:5]
    assert seen == list(range(1, total + 1))
    with pg_db.read() as conn:
        ids = conn.execute(select(schema.NOTIFICATION_LOG.c.EVENT_ID)).scalars().all()
        nl = conn.execute(
            select(func.count(func.distinct(schema.NOTIFICATION_LOG.c.NL_ID)))
        ).scalar()
    assert sorted(ids) == list(range(1, total + 1)) and nl == total
    assert read(pg_db, log.current_event_id) == total


def test_concurrent_writers_on_sqlite(sqlite_url: str) -> None:
    db = Database(sqlite_url)
    init_db(db, WAREHOUSE)
    try:
        log = new_log(db)
        got = run_writers(db, log, writers=4, txns=10, hold=0.001)
        assert sorted(got) == list(range(1, len(got) + 1))
        assert read(db, log.current_event_id) == len(got)
    finally:
        db.dispose()


@pytest.mark.postgres
def test_listeners_are_notified_on_commit(pg_db: Database) -> None:
    url = make_url(pg_db.describe())
    conn = psycopg2.connect(host=url.host, port=url.port, user=url.username, dbname=url.database)
    conn.autocommit = True
    try:
        conn.cursor().execute(f"LISTEN {NOTIFY_CHANNEL}")
        log = new_log(pg_db)
        write(pg_db, log, [ev(1), ev(2)])
        deadline = time.monotonic() + 10
        payloads: list[str] = []
        while not payloads and time.monotonic() < deadline:
            if io_select.select([conn], [], [], 0.5)[0]:
                conn.poll()
                payloads = [n.payload for n in conn.notifies]
        assert payloads == ["2"]
    finally:
        conn.close()


# -- this instance's own committed events (the writer's cache applies them from memory) ---------


def test_committed_events_are_recorded_and_rolled_back_ones_forgotten(db: Database) -> None:
    log = new_log(db)
    log.record_commits(db)
    first = write(db, log, [ev(1), ev(2)])

    def fail(conn) -> None:
        log.append(conn, [ev(3)])
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        db.transaction(fail)
    second = write(db, log, [ev(4)])

    taken = log.take_committed()
    assert [e.eventId for e in taken] == first + second
    with db.read() as conn:
        stored = log.next_events(conn, first[0] - 1, None)
    assert [(e.eventId, e.eventType, e.message, e.messageFormat) for e in taken] == [
        (e.eventId, e.eventType, e.message, e.messageFormat) for e in stored
    ]
    assert log.take_committed() == []
    # Every thread's committed events, by id, for the poller; a range reaching an id this
    # process did not commit (or an empty range) gives None.
    here = log.committed_here(first[0], second[-1])
    assert [e.eventId for e in here] == first + second
    assert log.committed_here(first[0], second[-1] + 1) is None
    assert log.committed_here(second[-1], second[-1] - 1) is None


def test_the_poller_can_wait_for_own_events_a_writer_has_not_recorded_yet(db: Database) -> None:
    """A NOTIFY reaches the poller with the commit, before the writing thread has recorded
    its events: ``wait_committed_here`` gives them once that thread records them, and None
    when it never does; a write marks the log as ``writing_recently``."""
    log = new_log(db)
    log.record_commits(db)
    assert not log.writing_recently()
    [event_id] = write(db, log, [ev(1)])
    assert log.writing_recently()
    later = hms.NotificationEvent(
        eventId=event_id + 1, eventTime=1, eventType="CREATE_TABLE", message="{}"
    )
    recorder = threading.Timer(0.05, log.record_committed, args=([later],))
    recorder.start()
    assert log.committed_here(event_id, event_id + 1) is None
    found = log.wait_committed_here(event_id, event_id + 1, timeout=10.0)
    recorder.join()
    assert found is not None and [e.eventId for e in found] == [event_id, event_id + 1]
    assert log.wait_committed_here(event_id, event_id + 2, timeout=0.05) is None


def test_the_poller_waits_longer_only_while_a_writer_of_this_process_holds_the_events(
    db: Database,
) -> None:
    """Past the short wait, ``wait_committed_here`` keeps waiting while a transaction of this
    process has appended one of the announced events and not ended (or a server-side
    function call is under way), and gives up at the short wait otherwise: on a loaded
    machine the writer's thread can wait longer for a core than the poller waits."""
    log = new_log(db)
    log.record_commits(db)
    [first] = write(db, log, [ev(1)])
    appended = threading.Event()
    finish = threading.Event()

    def hold(conn: Any) -> None:
        log.append(conn, [ev(2)])
        appended.set()
        finish.wait(30)

    def writer() -> None:
        db.transaction(hold)

    thread = threading.Thread(target=writer)
    thread.start()
    assert appended.wait(30)
    announced = first + 1
    # announced + 1 is nobody's here (another process's): the short wait only, though our
    # writer still holds announced (waiting for it would not save reading the log).
    began = time.monotonic()
    assert log.wait_committed_here(first, announced + 1, timeout=0.01, writer_timeout=30) is None
    assert time.monotonic() - began < 20, "waited the writer's 30 s for another's event"
    threading.Timer(0.1, finish.set).start()
    found = log.wait_committed_here(first, announced, timeout=0.01, writer_timeout=30)
    thread.join()
    assert found is not None and [e.eventId for e in found] == [first, announced]

    # A rolled-back writer's ids stop holding the poller.
    def roll_back(conn: Any) -> None:
        log.append(conn, [ev(3)])
        raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        db.transaction(roll_back)
    assert log.wait_committed_here(announced + 1, announced + 1, 0.01, writer_timeout=30) is None
    # A function call under way holds it until the call records its event.
    later = hms.NotificationEvent(
        eventId=announced + 5, eventTime=1, eventType="OPEN_TXN", message="{}"
    )

    def call() -> None:
        with log.function_call():
            finish.clear()
            time.sleep(0.1)
            log.record_committed([later])

    caller = threading.Thread(target=call)
    caller.start()
    found = log.wait_committed_here(announced + 5, announced + 5, 0.01, writer_timeout=30)
    caller.join()
    assert found == [later]


def test_a_waiting_poller_is_woken_by_the_record_and_by_the_last_calls_end(db: Database) -> None:
    """Writers notify a poller waiting in ``wait_committed_here`` only when one waits: it is
    woken when the events it waits for are recorded (while another call is still under way),
    and when the last function call under way ends without them (its wait then falls back to
    the short one). Either way it must
    not sit out the long ``writer_timeout`` (10 minutes here; the test allows 60 s)."""
    log = new_log(db)
    log.record_commits(db)
    [first] = write(db, log, [ev(1)])
    event = hms.NotificationEvent(
        eventId=first + 1, eventTime=1, eventType="OPEN_TXN", message="{}"
    )

    def waited(last: int) -> tuple[threading.Thread, list[Any]]:
        got: list[Any] = []
        waiter = threading.Thread(
            target=lambda: got.append(log.wait_committed_here(last, last, 0.01, 600))
        )
        return waiter, got

    holding, release = threading.Event(), threading.Event()

    def another_call() -> None:  # under way throughout the first round: its end wakes nobody
        with log.function_call():
            holding.set()
            release.wait(300)

    holder = threading.Thread(target=another_call, daemon=True)
    holder.start()
    assert holding.wait(30)
    for records in (True, False):
        in_call, leave = threading.Event(), threading.Event()

        def call(
            records: bool = records,
            in_call: threading.Event = in_call,
            leave: threading.Event = leave,
        ) -> None:
            with log.function_call():
                in_call.set()
                leave.wait(30)
                if records:
                    log.record_committed([event])

        caller = threading.Thread(target=call)
        caller.start()
        assert in_call.wait(30)
        waiter, got = waited(first + 1 if records else first + 2)
        waiter.start()
        while not log._waiting and waiter.is_alive():
            time.sleep(0.005)
        leave.set()
        caller.join(30)
        waiter.join(60)
        assert not waiter.is_alive()
        assert got == ([[event]] if records else [None])
        release.set()
        holder.join(30)


def _forbid_log_reads(monkeypatch: pytest.MonkeyPatch, log: EventLog) -> None:
    def no_read(*args, **kwargs):
        raise AssertionError("read the log")

    monkeypatch.setattr(log, "next_events", no_read)


def _poller(db: Database, log: EventLog, applied: list[int]):
    from hms_cache_proxy.store.events.poller import Poller

    position = read(db, log.current_event_id)
    return Poller(
        db,
        log,
        lambda rows: applied.extend(e.eventId for e in rows),
        lambda reason: None,
        position=position,
        listen=False,
    )


def test_own_events_following_the_position_are_applied_without_reading_the_log(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = new_log(db)
    log.record_commits(db)
    applied: list[int] = []
    poller = _poller(db, log, applied)
    ids = write(db, log, [ev(1), ev(2)])
    _forbid_log_reads(monkeypatch, log)
    assert poller.apply_own(log.take_committed()) == ids[-1]
    assert applied == ids


def test_own_events_after_someone_elses_are_read_from_the_log(db: Database) -> None:
    log, other = new_log(db), new_log(db)
    log.record_commits(db)
    applied: list[int] = []
    poller = _poller(db, log, applied)
    theirs = write(db, other, [ev(1)])  # another writer's event comes first
    mine = write(db, log, [ev(2)])
    own = log.take_committed()
    assert [e.eventId for e in own] == mine
    assert poller.apply_own(own) == mine[-1]
    assert applied == theirs + mine


def test_own_events_after_another_threads_are_applied_with_them_without_reading_the_log(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = new_log(db)
    log.record_commits(db)
    applied: list[int] = []
    poller = _poller(db, log, applied)
    theirs: list[int] = []
    # Another thread of this process commits first (its events are not this thread's).
    other = threading.Thread(target=lambda: theirs.extend(write(db, log, [ev(1), ev(2)])))
    other.start()
    other.join()
    mine = write(db, log, [ev(3)])
    own = log.take_committed()
    assert [e.eventId for e in own] == mine
    _forbid_log_reads(monkeypatch, log)
    with pytest.raises(AssertionError, match="read the log"):
        poller.apply_own(own)  # alone, not next: read back
    assert poller.apply_own(log.with_committed_before(own, poller.position)) == mine[-1]
    assert applied == theirs + mine


def test_own_events_after_someone_elses_are_left_as_they_are(db: Database) -> None:
    log, other = new_log(db), new_log(db)
    log.record_commits(db)
    position = read(db, log.current_event_id)
    write(db, other, [ev(1)])  # another process's event: not known here
    write(db, log, [ev(2)])
    own = log.take_committed()
    assert log.with_committed_before(own, position) == own
    assert log.with_committed_before(own, position + 1) == own  # next already: as it is


def test_own_events_the_poller_applied_are_looked_past(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread's committed events the poller applied already (a commit's, which the call
    leaves to it) do not keep the thread's next write from taking another thread's events
    in between from memory."""
    log = new_log(db)
    log.record_commits(db)
    applied: list[int] = []
    poller = _poller(db, log, applied)
    committed = write(db, log, [ev(1)])  # this thread's commit: the poller applies it
    assert poller.apply_own(log.committed_here(committed[0], committed[-1]) or []) == committed[-1]
    theirs: list[int] = []
    other = threading.Thread(target=lambda: theirs.extend(write(db, log, [ev(2)])))
    other.start()
    other.join()
    mine = write(db, log, [ev(3)])
    own = log.take_committed()
    assert [e.eventId for e in own] == committed + mine
    _forbid_log_reads(monkeypatch, log)
    assert poller.apply_own(log.with_committed_before(own, poller.position)) == mine[-1]
    assert applied == committed + theirs + mine


def test_a_rolled_back_writes_bodies_are_let_go(db: Database) -> None:
    """The bodies a write kept for the cache (``body_of``) go when its transaction ends
    without a commit: nobody would apply its events."""
    log = new_log(db)
    log.record_commits(db)

    def fail(conn) -> None:
        log.append(conn, [ev(1), ev(2)])
        assert len(log._bodies) == 2
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        db.transaction(fail)
    assert log._bodies == {}
    kept = write(db, log, [ev(3)])
    assert list(log._bodies) == kept  # a committed write's stay until applied


def test_own_events_not_next_are_left_to_the_poller_when_reading_is_not_asked(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, other = new_log(db), new_log(db)
    log.record_commits(db)
    applied: list[int] = []
    poller = _poller(db, log, applied)
    start = poller.position
    write(db, other, [ev(1)])
    write(db, log, [ev(2)])
    _forbid_log_reads(monkeypatch, log)
    assert poller.apply_own(log.take_committed(), read=False) == start
    assert applied == []


def test_events_this_process_recorded_are_applied_up_to_a_position_without_reading_the_log(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An open's event (announced by no NOTIFY) a caller could not apply at once is applied
    from memory when a strong read's position query (``apply_recorded``) or a granted lock
    (``apply_own(seen=...)``) shows it; an event of another process in the range is read
    from the log."""
    log, other = new_log(db), new_log(db)
    log.record_commits(db)
    applied: list[int] = []
    poller = _poller(db, log, applied)
    first = write(db, log, [ev(1)])
    log.take_committed()  # the caller's absorb found a poll under way: left behind
    with monkeypatch.context() as patched:
        _forbid_log_reads(patched, log)
        assert poller.apply_recorded(first[-1]) and applied == first
        second = write(db, log, [ev(2), ev(3)])
        log.take_committed()
        assert poller.apply_own([], seen=second[-1]) == second[-1]
        assert applied == first + second
        theirs = write(db, other, [ev(4)])
        mine = write(db, log, [ev(5)])
        log.take_committed()
        assert not poller.apply_recorded(mine[-1]) and applied == first + second
    assert poller.apply_own([], seen=mine[-1]) == mine[-1]
    assert applied == first + second + theirs + mine


# -- the poller's catch-up on its LISTEN session ---------------------------------------------


def _sessions(db: Database, name: str) -> int:
    with db.read() as conn:
        return conn.exec_driver_sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %(n)s", {"n": name}
        ).scalar()


@pytest.mark.postgres
def test_listening_poller_reads_new_events_on_its_listen_session(
    pg_db: Database, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hms_cache_proxy.store.events.poller import Poller

    here = Database(pg_url, instance_name="listening-poller")
    writer = new_log(pg_db)  # another instance's writes
    log = new_log(here)
    applied: list[hms.NotificationEvent] = []
    pooled: list[str] = []

    def no_pool():
        pooled.append("read")
        raise AssertionError("checked out a pooled connection")

    monkeypatch.setattr(here, "read", no_pool)
    first = write(pg_db, writer, [ev(0)])
    poller = Poller(
        here,
        log,
        applied.extend,
        lambda reason: None,
        position=first[-1],
        safety_interval=600,  # no safety check: only notifications move it
    )
    during: list[int] = []
    real = log.current_and_next_events_dbapi

    def write_meanwhile(*args, **kwargs):
        found = real(*args, **kwargs)
        if not during and found[1]:  # committed just after the session read events
            during.extend(write(pg_db, writer, [ev(9)]))
        return found

    monkeypatch.setattr(log, "current_and_next_events_dbapi", write_meanwhile)
    poller.start()
    try:
        deadline = time.monotonic() + 10
        while not poller.listening and time.monotonic() < deadline:
            time.sleep(0.05)
        assert poller.listening
        ids = write(pg_db, writer, [ev(1), ev(2)])
        assert poller.wait_for(ids[-1], 10)
        # The event committed during that read announced itself while the session was in
        # its transaction: its notification must not be lost (no safety check comes).
        assert during and poller.wait_for(during[-1], 10)
        # Only the LISTEN session: no pooled connection of this instance's was opened.
        assert _sessions(pg_db, here.application_name) == 1
    finally:
        poller.stop()
        here.dispose()
    assert pooled == []
    with pg_db.read() as conn:
        stored = writer.next_events(conn, first[-1], None)
    assert [e.eventId for e in stored] == ids + during
    assert [(e.eventId, e.eventType, e.message, e.messageFormat, e.tableName) for e in applied] == [
        (e.eventId, e.eventType, e.message, e.messageFormat, e.tableName) for e in stored
    ]


class _CountingSession:
    """A LISTEN session whose cursors keep every statement text they send (one each call:
    a round trip)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.sent: list[str] = []

    def cursor(self) -> _CountingCursor:
        return _CountingCursor(self.conn.cursor(), self.sent)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


class _CountingCursor:
    def __init__(self, cursor: Any, sent: list[str]) -> None:
        self.cursor = cursor
        self.sent = sent

    def execute(self, sql: str, values: Any = None) -> None:
        self.sent.append(sql)
        self.cursor.execute(sql, values)

    def __enter__(self) -> _CountingCursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cursor.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cursor, name)


def _listening_poller(db: Database, position: int, **kw: Any) -> tuple[Any, list[Any]]:
    from hms_cache_proxy.store.events.poller import Poller

    applied: list[Any] = []
    poller = Poller(db, new_log(db), applied.extend, lambda reason: None, position=position, **kw)
    return poller, applied


@pytest.mark.postgres
def test_a_read_on_the_listen_session_is_one_round_trip(pg_db: Database) -> None:
    """The poller's read on its LISTEN session is one statement, outside any transaction
    (issue 23: three round trips per read, on every instance for every other's events)."""
    from hms_cache_proxy.store.events.poller import listen_connection

    writer = new_log(pg_db)
    first = write(pg_db, writer, [ev(0)])
    poller, applied = _listening_poller(pg_db, first[-1], batch_size=2)
    session = _CountingSession(listen_connection(pg_db))
    try:
        ids = write(pg_db, writer, [ev(1), ev(2), ev(3)])
        current, rows = poller._read_on_listener(session)
        assert len(session.sent) == 1, session.sent
        assert current == ids[-1]
        assert [e.eventId for e in rows] == ids[:2]  # the batch size; the rest next round
        assert session.conn.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_IDLE
        session.sent.clear()
        assert poller._catch_up_locked(session) == ids[-1]
        assert len(session.sent) == 2  # two batches, a statement each
        with pg_db.read() as conn:
            stored = writer.next_events(conn, first[-1], None)
        assert [
            (e.eventId, e.eventTime, e.eventType, e.catName, e.dbName, e.tableName, e.message)
            for e in applied
        ] == [
            (e.eventId, e.eventTime, e.eventType, e.catName, e.dbName, e.tableName, e.message)
            for e in stored
        ]
        assert all(e.messageFormat == messages.GZIP_FORMAT for e in applied)
        session.sent.clear()
        assert poller._read_on_listener(session) == (ids[-1], [])  # nothing new: one row still
        assert len(session.sent) == 1
    finally:
        session.conn.close()


@pytest.mark.postgres
def test_the_listen_session_has_the_pools_statement_timeout(pg_url: str) -> None:
    """Its reads are single autocommit statements: the timeout is a session setting."""
    from hms_cache_proxy.store.events.poller import listen_connection

    db = Database(pg_url, statement_timeout_seconds=7)
    init_db(db, WAREHOUSE)
    conn = listen_connection(db)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW statement_timeout")
            assert cur.fetchone()[0] == "7s"
    finally:
        conn.close()
        db.dispose()


@pytest.mark.postgres
def test_a_listen_session_read_sees_no_event_of_an_uncommitted_writer(pg_db: Database) -> None:
    """A writer holding the sequence row's lock (its ids taken, its events inserted, not yet
    committed): the one-statement read shows neither the new NEXT_EVENT_ID nor the events,
    then both once it commits. An event row above the NEXT_EVENT_ID the read sees is not read
    (the rows are bounded by the same snapshot's NEXT_EVENT_ID)."""
    from hms_cache_proxy.store.events.poller import listen_connection

    writer = new_log(pg_db)
    first = write(pg_db, writer, [ev(0)])
    poller, _ = _listening_poller(pg_db, first[-1])
    session = listen_connection(pg_db)
    appended, release = threading.Event(), threading.Event()
    taken: list[int] = []

    def hold(conn: Any) -> None:
        taken.extend(writer.append(conn, [ev(1), ev(2)]))
        appended.set()
        assert release.wait(30)

    holder = threading.Thread(target=lambda: pg_db.transaction(hold))
    holder.start()
    try:
        assert appended.wait(30)
        assert poller._read_on_listener(session) == (first[-1], [])
        release.set()
        holder.join(30)
        current, rows = poller._read_on_listener(session)
        assert current == taken[-1] and [e.eventId for e in rows] == taken
        # A row past NEXT_EVENT_ID - 1 (no writer's commit moved the sequence to it).
        with session.cursor() as cur:
            cur.execute(
                'INSERT INTO "NOTIFICATION_LOG" ("NL_ID", "EVENT_ID", "EVENT_TIME", '
                '"EVENT_TYPE", "MESSAGE", "MESSAGE_FORMAT") VALUES (%s, %s, 0, %s, %s, %s)',
                (10**9, taken[-1] + 1, messages.OPEN_TXN, "{}", messages.JSON_FORMAT),
            )
        current, rows = poller._read_on_listener(session)
        assert current == taken[-1] and [e.eventId for e in rows] == taken
    finally:
        release.set()
        holder.join(30)
        session.close()


@pytest.mark.postgres
def test_poller_without_listen_session_catches_up_with_the_pool(pg_db: Database) -> None:
    from hms_cache_proxy.store.events.poller import Poller

    writer, log = new_log(pg_db), new_log(pg_db)
    applied: list[int] = []
    poller = Poller(
        pg_db,
        log,
        lambda rows: applied.extend(e.eventId for e in rows),
        lambda reason: None,
        position=read(pg_db, log.current_event_id),
        interval=0.1,
        listen=False,
    )
    poller.start()
    try:
        ids = write(pg_db, writer, [ev(1), ev(2)])
        assert poller.wait_for(ids[-1], 10)
    finally:
        poller.stop()
    assert applied == ids
    assert poller._listener is None


# -- this process's own commits vs another instance's, on a listening poller ------------------


@pytest.mark.postgres
def test_backend_pids_follow_the_pooled_sessions(pg_url: str) -> None:
    """``Database.backend_pids`` holds the PostgreSQL backend of every pooled session (a
    NOTIFY carries the sender's), and forgets a session once it is closed."""
    here = Database(pg_url)
    try:
        assert here.backend_pids == frozenset()
        with here.read() as conn:
            pid = conn.exec_driver_sql("SELECT pg_backend_pid()").scalar()
        assert pid in (here.backend_pids or ())
        here.dispose()
        assert pid not in (here.backend_pids or ())
    finally:
        here.dispose()
    assert Database("sqlite://").backend_pids is None


def _listening(db: Database, log: EventLog, applied: list[tuple[int, str]], position: int):
    from hms_cache_proxy.store.events.poller import Poller

    poller = Poller(
        db,
        log,
        lambda rows: applied.extend((e.eventId, threading.current_thread().name) for e in rows),
        lambda reason: None,
        position=position,
        safety_interval=600,  # no safety check: only notifications (and wake) move it
    )
    poller.start()
    deadline = time.monotonic() + 10
    while not poller.listening and time.monotonic() < deadline:
        time.sleep(0.02)
    assert poller.listening
    return poller


@pytest.mark.postgres
def test_another_instances_events_are_read_without_waiting_for_own_writers(
    pg_db: Database, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events another instance committed are in the log only: the poller reads them at once,
    even while a write of this process is under way (which it would otherwise wait for)."""
    from hms_cache_proxy.store.events import poller as poller_module

    here = Database(pg_url)
    log, other = new_log(here), new_log(pg_db)
    log.record_commits(here)
    applied: list[tuple[int, str]] = []
    monkeypatch.setattr(poller_module, "_OWN_WRITER_WAIT_SECONDS", 60.0)
    poller = _listening(here, log, applied, read(here, log.current_event_id))
    release = threading.Event()

    def call_under_way() -> None:
        with log.function_call():
            release.wait(30)

    caller = threading.Thread(target=call_under_way)
    caller.start()
    try:
        theirs = write(pg_db, other, [ev(1)])
        assert poller.wait_for(theirs[-1], 10)
    finally:
        release.set()
        caller.join()
        poller.stop()
        here.dispose()
    assert applied == [(theirs[-1], "hms-cache-poller")]


@pytest.mark.postgres
def test_own_notifications_that_gather_are_all_applied_from_memory(
    pg_db: Database, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After applying this process's own announced events the poller lets the next
    notifications gather (``_gather_own``) before it reads them: writes committed meanwhile,
    whose threads apply nothing themselves (as a txn call whose absorb lost the race), are
    still applied, every one, from memory and in order, without reading the log."""
    from hms_cache_proxy.store.events import poller as poller_module

    monkeypatch.setattr(poller_module, "_OWN_GATHER_SECONDS", 0.2)  # the writes land in it
    here = Database(pg_url)
    log = new_log(here)
    log.record_commits(here)
    applied: list[tuple[int, str]] = []
    poller = _listening(here, log, applied, read(here, log.current_event_id))
    log_reads: list[int] = []
    real = poller._catch_up_locked

    def counted(listener: Any = None) -> int:
        log_reads.append(poller.position)
        return real(listener)

    monkeypatch.setattr(poller, "_catch_up_locked", counted)
    try:
        ids: list[int] = []
        for i in range(6):
            ids += write(here, log, [ev(i)])
            log.take_committed()  # nobody applies them but the poller
        assert poller.wait_for(ids[-1], 10), (poller.position, ids)
    finally:
        poller.stop()
        here.dispose()
    assert [i for i, _ in applied] == ids
    assert log_reads == []


class _WatchedLock:
    """A poll lock that tells when the poller's own thread asks for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.poller_asked = threading.Event()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if threading.current_thread().name == "hms-cache-poller":
            self.poller_asked.set()
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@pytest.mark.postgres
def test_own_events_are_applied_from_memory_after_a_writer_lets_the_poll_lock_go(
    pg_db: Database, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer's thread holding the poll lock (applying its own events, or catching up) when
    the poller has this process's announced events from memory: the poller waits for the
    lock and applies them, rather than read them back from the log under it."""
    from hms_cache_proxy.store.events.poller import Poller

    here = Database(pg_url)
    log = new_log(here)
    log.record_commits(here)
    applied: list[tuple[int, str]] = []
    poller = Poller(
        here,
        log,
        lambda rows: applied.extend((e.eventId, threading.current_thread().name) for e in rows),
        lambda reason: None,
        position=read(here, log.current_event_id),
        safety_interval=600,  # no safety check: only notifications move it
    )
    lock = _WatchedLock()
    monkeypatch.setattr(poller, "_poll_lock", lock)
    log_reads: list[int] = []
    real = log.current_and_next_events_dbapi

    def counted(cursor: Any, last_event: int, limit: int) -> tuple[int, list[Any]]:
        current, rows = real(cursor, last_event, limit)
        if rows:  # events read back from the log
            log_reads.append(last_event)
        return current, rows

    monkeypatch.setattr(log, "current_and_next_events_dbapi", counted)
    held, release = threading.Event(), threading.Event()

    def writer_holding_the_lock() -> None:
        with lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=writer_holding_the_lock)
    poller.start()
    try:
        deadline = time.monotonic() + 10
        while not poller.listening and time.monotonic() < deadline:
            time.sleep(0.02)
        assert poller.listening
        first = write(here, log, [ev(0)])  # after it the session's first catch-up is done
        log.take_committed()
        assert poller.wait_for(first[-1], 10)
        log_reads.clear()
        lock.poller_asked.clear()
        holder.start()
        assert held.wait(10)
        ids = write(here, log, [ev(1), ev(2)])
        log.take_committed()  # nobody applies them but the poller
        assert lock.poller_asked.wait(10)  # the poller has them and wants the lock
        release.set()
        assert poller.wait_for(ids[-1], 10)
    finally:
        release.set()
        if holder.ident is not None:
            holder.join(30)
        poller.stop()
        here.dispose()
    assert [a for a in applied if a[0] in ids] == [(i, "hms-cache-poller") for i in ids]
    assert log_reads == []


@pytest.mark.postgres
def test_events_whose_insert_carries_the_commit_are_held_before_it_returns(pg_url: str) -> None:
    """``append(last=True)`` folds the COMMIT (and so the NOTIFY) into the insert's round
    trip: a poller woken by it before the writer's thread has its reply must find the ids
    held by this process (and wait for their record), not take them for another process's
    and read them back from the log."""
    from sqlalchemy import event

    here = Database(pg_url)
    init_db(here, WAREHOUSE)
    log = new_log(here)
    log.record_commits(here)
    first = read(here, log.current_event_id) + 1
    found: list[Any] = []

    def poller_woken_by_the_commit() -> None:
        # No short wait: only ids held or recorded here keep it waiting.
        found.append(log.wait_committed_here(first, first + 1, 0.0, 30.0))

    def after(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if 'INSERT INTO "NOTIFICATION_LOG"' not in statement:
            return
        waiter = threading.Thread(target=poller_woken_by_the_commit)
        waiter.start()
        deadline = time.monotonic() + 10
        while not log._waiting and waiter.is_alive() and time.monotonic() < deadline:
            time.sleep(0.005)
        threads.append(waiter)

    threads: list[threading.Thread] = []
    event.listen(here.read_engine, "after_cursor_execute", after)
    try:
        ids = here.transaction(lambda conn: log.append(conn, [ev(1), ev(2)], last=True))
        assert ids == [first, first + 1]
        assert len(threads) == 1
        threads[0].join(30)
    finally:
        event.remove(here.read_engine, "after_cursor_execute", after)
        here.dispose()
    assert found and found[0] is not None
    assert [e.eventId for e in found[0]] == ids
