"""Upstream mode with its cache: a sidecar in front of a central instance (this project's server
in database mode on PostgreSQL) answers the hot reads from the replies it kept, and drops them
by the events of the central instance's notification log (docs/cache.md, "In upstream mode")."""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import sqlalchemy as sa

from hms_cache_proxy.app import Service, build_service
from hms_cache_proxy.observability import metrics, status
from hms_cache_proxy.server.upstream_events import FOLLOWING, UNREACHABLE
from hms_cache_proxy.store.events.recent import WAIT_MARK
from tests.integration.test_txn_calls import allocate, commit, open_txns, transactional_table
from tests.integration.test_upstream_passthrough import proxy_settings
from tests.support.apache_thrift import apache_client
from tests.support.metastore import partition, table
from tests.support.server import free_port, running_service

pytestmark = pytest.mark.postgres

IDLE = 3600.0  # a poll interval that never passes in a test: the poller reads when woken


def forwarded(method: str) -> float:
    """Calls of ``method`` the sidecars of this process forwarded to their upstream."""
    value = metrics.REGISTRY.get_sample_value(
        "hms_upstream_calls_total", {"method": method, "outcome": "ok"}
    )
    return value or 0.0


def until(check: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.02)


@pytest.fixture
def central(pg_url: str, tmp_path: Path) -> Iterator[Service]:
    with running_service(pg_url, tmp_path / "warehouse") as svc:
        _log_an_event(svc.port)
        yield svc


def _log_an_event(port: int) -> None:
    """A log with an event in it: at event id 0 a sidecar cannot tell it from no log."""
    client, transport = apache_client("127.0.0.1", port)
    try:
        client.create_database(client.get_database("default").__class__(name="seed"))
    finally:
        transport.close()


@pytest.fixture
def start_sidecar(central: Service) -> Iterator[Callable[..., Service]]:
    started: list[Service] = []

    def _start(**overrides: Any) -> Service:
        svc = build_service(proxy_settings(f"thrift://127.0.0.1:{central.port}", **overrides))
        svc.start_background()
        started.append(svc)
        assert svc.sidecar is not None
        until(svc.sidecar.answering, "the sidecar follows the central instance's log")
        return svc

    yield _start
    for svc in started:
        svc.stop(grace_seconds=5)


@pytest.fixture
def connect() -> Iterator[Callable[[int], Any]]:
    transports = []

    def _connect(port: int) -> Any:
        client, transport = apache_client("127.0.0.1", port)
        transports.append(transport)
        return client

    yield _connect
    for t in transports:
        t.close()


class Quiet(NamedTuple):
    """A client of a sidecar whose poller reads the log only when a test wakes it
    (``_applied``), a client of the central instance, and the sidecar's event follower."""

    client: Any
    direct: Any
    events: Any


@pytest.fixture
def quiet(central: Service, start_sidecar: Callable[..., Service], connect: Any) -> Quiet:
    sidecar = start_sidecar(upstream_poll_interval_seconds=IDLE, upstream_wait_seconds=0)
    assert sidecar.sidecar is not None
    return Quiet(connect(sidecar.port), connect(central.port), sidecar.sidecar.events)


def _orders(client: Any, T: Any) -> None:
    client.create_database(T.Database(name="sales"))
    client.create_table(table(T, "sales", "orders", keys=["day:string"]))
    client.add_partitions([partition(T, "sales", "orders", [d]) for d in ("1", "2")])


def _set_param(client: Any, key: str, value: str) -> None:
    t = client.get_table("sales", "orders")
    t.parameters[key] = value
    client.alter_table("sales", "orders", t)


def test_a_repeated_read_is_answered_from_the_cache_as_the_upstream_answers_it(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar()
    client, direct = connect(sidecar.port), connect(central.port)
    _orders(client, T)
    first = client.get_table("sales", "orders")
    before = forwarded("get_table"), forwarded("get_partitions"), forwarded("get_database")
    for _ in range(3):
        assert client.get_table("sales", "orders") == first
        assert client.get_partitions("sales", "orders", -1) == direct.get_partitions(
            "sales", "orders", -1
        )
        assert client.get_database("sales") == direct.get_database("sales")
    after = forwarded("get_table"), forwarded("get_partitions"), forwarded("get_database")
    assert after[0] == before[0]  # every get_table from the cache
    assert after[1] - before[1] <= 1 and after[2] - before[2] <= 1  # the first one loads
    assert first == direct.get_table("sales", "orders")


def test_a_write_through_the_central_instance_reaches_the_sidecar(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar(upstream_poll_interval_seconds=0.05)
    client, direct = connect(sidecar.port), connect(central.port)
    _orders(direct, T)
    assert client.get_partition_names("sales", "orders", -1) == ["day=1", "day=2"]
    direct.add_partitions([partition(T, "sales", "orders", ["3"])])
    until(
        lambda: client.get_partition_names("sales", "orders", -1) == ["day=1", "day=2", "day=3"],
        "the sidecar answers the partition added through the central instance",
    )


def test_the_sidecar_long_polls_this_service_and_learns_of_a_write_without_polling_again(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    # No poll interval passes in this test: only the held read returns when the event comes.
    sidecar = start_sidecar(upstream_poll_interval_seconds=IDLE, upstream_wait_seconds=5)
    client, direct = connect(sidecar.port), connect(central.port)
    _orders(direct, T)
    assert sidecar.sidecar is not None
    _applied(sidecar.sidecar.events, direct)
    assert "k" not in client.get_table("sales", "orders").parameters  # now an entry
    _set_param(direct, "k", "1")
    until(
        lambda: client.get_table("sales", "orders").parameters.get("k") == "1",
        "the held read returns with the write's event",
        timeout=20,
    )


def test_a_write_through_the_sidecar_is_read_back_on_that_connection_at_once(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar(upstream_poll_interval_seconds=IDLE, upstream_wait_seconds=0)
    client = connect(sidecar.port)
    _orders(client, T)
    for n in range(5):
        assert client.get_table("sales", "orders").parameters.get("n") == (
            str(n - 1) if n else None
        )
        _set_param(client, "n", str(n))
        assert client.get_table("sales", "orders").parameters["n"] == str(n)


def test_a_table_renamed_elsewhere_is_gone_under_its_old_name(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar(upstream_poll_interval_seconds=IDLE, upstream_wait_seconds=0)
    assert sidecar.sidecar is not None
    client, direct = connect(sidecar.port), connect(central.port)
    _orders(direct, T)
    events = sidecar.sidecar.events
    _applied(events, direct)  # the entry below is then dropped by the rename's event only
    assert client.get_table("sales", "orders").tableName == "orders"
    renamed = direct.get_table("sales", "orders")
    renamed.tableName = "orders_old"
    direct.alter_table("sales", "orders", renamed)  # the event names the new name
    _applied(events, direct)
    with pytest.raises(T.NoSuchObjectException):
        client.get_table("sales", "orders")
    assert client.get_table("sales", "orders_old").tableName == "orders_old"


def _applied(events: Any, direct: Any) -> None:
    """Wake the poller and wait until it has applied every event the upstream logged."""
    last = direct.get_current_notificationEventId().eventId
    events.wake()
    until(lambda: events.position == last, f"the poller applies event {last}")


def test_transactional_reads_use_an_entry_only_for_the_same_write_id_list(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar()
    client, direct = connect(sidecar.port), connect(central.port)
    transactional_table(client, T, "t")
    (txn,) = open_txns(client, T, 1)
    allocate(client, T, "t", [txn])

    def read(c: Any, snapshot: str) -> Any:
        request = T.GetTableRequest(dbName="default", tblName="t", validWriteIdList=snapshot)
        return c.get_table_req(request).table

    open_snapshot = "default.t:1:1:1:"  # write id 1 open
    assert read(client, open_snapshot) == read(direct, open_snapshot)
    commit(client, T, txn)
    committed = "default.t:1:9223372036854775807::"
    loads = forwarded("get_table_req")
    assert read(client, committed) == read(direct, committed)
    assert forwarded("get_table_req") == loads + 1  # another write-id list: not the entry
    again = forwarded("get_table_req")
    assert read(client, committed) == read(direct, committed)
    assert read(client, open_snapshot) == read(direct, open_snapshot)
    assert forwarded("get_table_req") == again  # both answered by their own entries


def test_each_session_has_entries_of_its_own(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar()
    alice, bob = connect(sidecar.port), connect(sidecar.port)
    _orders(alice, T)
    alice.set_ugi("alice", [])
    bob.set_ugi("bob", [])
    alice.get_table("sales", "orders")
    loads = forwarded("get_table")
    bob.get_table("sales", "orders")  # bob's own request: the upstream authorizes it
    assert forwarded("get_table") == loads + 1
    bob.get_table("sales", "orders")
    assert forwarded("get_table") == loads + 1


@contextlib.contextmanager
def woken_sidecar_on_the_database_log(
    pg_url: str, workdir: Path
) -> Iterator[tuple[Service, Service]]:
    """(sidecar, central): a central instance with its cache off, which reads its notification
    log from the database (where a test can change it), and a sidecar in front of it whose
    poller reads only when woken, already following the log."""
    with running_service(pg_url, workdir, cache_enabled=False) as central:
        _log_an_event(central.port)
        sidecar = build_service(
            proxy_settings(
                f"thrift://127.0.0.1:{central.port}",
                upstream_poll_interval_seconds=IDLE,
                upstream_wait_seconds=0,
            )
        )
        sidecar.start_background()
        try:
            assert sidecar.sidecar is not None
            until(sidecar.sidecar.answering, "the sidecar follows the upstream's log")
            yield sidecar, central
        finally:
            sidecar.stop(grace_seconds=5)


def test_a_hole_in_the_upstreams_log_empties_the_cache(
    pg_url: str, tmp_path: Path, connect: Any, T: Any
) -> None:
    # The upstream reads its log from the database (cache off), where the hole is made.
    with woken_sidecar_on_the_database_log(pg_url, tmp_path / "w") as (sidecar, central):
        _hole(sidecar, central, connect, T, pg_url)


def _hole(sidecar: Service, central: Service, connect: Any, T: Any, pg_url: str) -> None:
    assert sidecar.sidecar is not None
    client, direct = connect(sidecar.port), connect(central.port)
    _orders(direct, T)
    events = sidecar.sidecar.events
    _applied(events, direct)  # the entry below is then dropped by the events after it only
    assert "k" not in client.get_table("sales", "orders").parameters
    first = direct.get_current_notificationEventId().eventId + 1
    _set_param(direct, "k", "1")
    _set_param(direct, "k", "2")
    direct.create_table(table(T, "sales", "other"))
    last = direct.get_current_notificationEventId().eventId
    engine = sa.create_engine(pg_url)
    try:
        with engine.begin() as conn:  # the events about orders are gone, another follows
            conn.execute(
                sa.text('DELETE FROM "NOTIFICATION_LOG" WHERE "EVENT_ID" BETWEEN :a AND :b'),
                {"a": first, "b": last - 1},
            )
    finally:
        engine.dispose()
    events.wake()
    until(lambda: events.position == last, "the poller reads past the hole")
    assert client.get_table("sales", "orders").parameters["k"] == "2"


def test_an_unreachable_upstream_stops_the_cache_and_its_missed_events_are_applied_after(
    pg_url: str, tmp_path: Path, connect: Any, T: Any
) -> None:
    port = free_port()
    sidecar = build_service(
        proxy_settings(f"thrift://127.0.0.1:{port}", upstream_poll_interval_seconds=0.05)
    )
    assert sidecar.sidecar is not None
    events = sidecar.sidecar.events
    try:
        with running_service(pg_url, tmp_path / "w", port=port):
            _log_an_event(port)
            sidecar.start_background()
            until(sidecar.sidecar.answering, "the sidecar follows the central instance's log")
            client = connect(sidecar.port)
            _orders(client, T)
            assert len(client.get_partitions("sales", "orders", -1)) == 2  # now an entry
        until(lambda: events.state == UNREACHABLE, "the sidecar notices the upstream is gone")
        with pytest.raises(T.MetaException):
            client.get_partitions("sales", "orders", -1)  # not the entry: it cannot be checked
        with running_service(pg_url, tmp_path / "w") as other:  # a write the sidecar misses
            connect(other.port).add_partitions([partition(T, "sales", "orders", ["3"])])
        with running_service(pg_url, tmp_path / "w", port=port):
            until(sidecar.sidecar.answering, "the sidecar follows the restarted upstream")
            assert events.state == FOLLOWING
            parts = client.get_partitions("sales", "orders", -1)
            assert [p.values for p in parts] == [["1"], ["2"], ["3"]]
    finally:
        sidecar.stop(grace_seconds=5)


def _in_table_load() -> bool:
    """Whether the caller runs inside a cache load (store/sql/cacheload.py)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith(os.path.join("store", "sql", "cacheload.py")):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class _Statements:
    """SQL statements the central instance runs on threads other than its poller's; ``read_texts``
    lists those reading the notification log or its sequence (a write's own events excepted:
    they lock the sequence row with an UPDATE and insert; and a table load's read of the
    sequence, the position its snapshot reflects: whether the central loads a table again in
    the window depends on timing, not on who follows it), each with its thread."""

    def __init__(self, svc: Service) -> None:
        assert svc.database is not None
        self.engines = svc.database.engines()
        self.count = 0
        self.read_texts: list[str] = []
        for engine in self.engines:
            sa.event.listen(engine, "before_cursor_execute", self._seen)

    def _seen(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        thread = threading.current_thread().name
        if thread != "hms-cache-poller":
            self.count += 1
            text = statement.lstrip().upper()
            reads_log = text.startswith(("SELECT", "EXECUTE")) and "NOTIFICATION_" in text
            if reads_log and not _in_table_load():
                self.read_texts.append(f"{thread}: {statement[:200]}")

    def close(self) -> None:
        for engine in self.engines:
            sa.event.remove(engine, "before_cursor_execute", self._seen)


def test_the_central_instance_answers_notification_reads_from_its_pollers_events(
    central: Service, connect: Any, T: Any
) -> None:
    client = connect(central.port)
    start = client.get_current_notificationEventId().eventId
    _orders(client, T)
    _set_param(client, "k", "v")  # read back at once below: its own writes are included
    assert central.store is not None
    from_database = central.store.next_notifications(start, None)
    statements = _Statements(central)
    try:
        request = T.NotificationEventRequest(lastEvent=start)
        for _ in range(20):
            answer = client.get_next_notification(request).events
        tail = client.get_next_notification(T.NotificationEventRequest(lastEvent=start + 2))
        skipped = client.get_next_notification(
            T.NotificationEventRequest(lastEvent=start, eventTypeSkipList=["ADD_PARTITION"])
        )
        assert client.get_current_notificationEventId().eventId == from_database[-1].eventId
        assert statements.count == 0  # not one statement for 23 reads of the log
        client.get_notification_events_count(T.NotificationEventsCountRequest(fromEventId=0))
        assert statements.count > 0  # (the count sees the statements there are)
    finally:
        statements.close()
    assert [(e.eventId, e.eventType, e.message) for e in answer] == [
        (e.eventId, e.eventType, e.message) for e in from_database
    ]
    assert [e.eventType for e in answer][-1] == "ALTER_TABLE"
    assert [e.eventId for e in tail.events] == [e.eventId for e in answer][2:]
    assert "ADD_PARTITION" not in [e.eventType for e in skipped.events]


def _encodings() -> float:
    value = metrics.REGISTRY.get_sample_value("hms_cache_notification_answers_encoded_total")
    return value or 0.0


def test_held_reads_at_one_position_get_one_encoded_answer_and_others_their_own(
    central: Service, connect: Any, T: Any
) -> None:
    direct = connect(central.port)
    _orders(direct, T)
    start = direct.get_current_notificationEventId().eventId
    wait = [f"{WAIT_MARK}10000"]
    held_skips = [wait] * 5 + [[*wait, "ALTER_TABLE"]]
    clients = [connect(central.port) for _ in held_skips]
    answers: list[Any] = [None] * len(held_skips)

    def held(i: int) -> None:
        request = T.NotificationEventRequest(lastEvent=start, eventTypeSkipList=held_skips[i])
        answers[i] = clients[i].get_next_notification(request).events

    threads = [threading.Thread(target=held, args=(i,)) for i in range(len(held_skips))]
    for th in threads:
        th.start()
    time.sleep(0.5)  # all held (one that comes later is answered the same: the window stays)
    before = _encodings()
    _set_param(direct, "k", "v")
    for th in threads:
        th.join(30)
    assert _encodings() - before == 2  # two different requests held: one encoding each
    assert [[(e.eventId, e.eventType) for e in a] for a in answers[:5]] == [
        [(start + 1, "ALTER_TABLE")]
    ] * 5
    assert answers[5] == []  # its filter leaves the new event out
    again = direct.get_next_notification(T.NotificationEventRequest(lastEvent=start))
    earlier = direct.get_next_notification(T.NotificationEventRequest(lastEvent=start - 1))
    assert _encodings() - before == 3  # "again" is the held ones' answer: only "earlier" is new
    assert again.events == answers[0]
    assert [e.eventId for e in earlier.events] == [start, start + 1]
    assert earlier.events[-1] == answers[0][0]


def _newest_logged(pg_url: str) -> int:
    """The newest event id in the database's log, read past the central instance."""
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            value = conn.execute(sa.text('SELECT max("EVENT_ID") FROM "NOTIFICATION_LOG"'))
            return int(value.scalar_one())
    finally:
        engine.dispose()


def _central_reads(method: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "hms_requests_total", {"method": method, "outcome": "ok"}
    )
    return value or 0.0


def test_a_sidecar_following_the_central_instance_costs_it_no_read_of_its_log(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any, pg_url: str
) -> None:
    direct = connect(central.port)
    _orders(direct, T)
    statements = _Statements(central)
    try:
        asked = _central_reads("get_current_notificationEventId")
        sidecar = start_sidecar(upstream_poll_interval_seconds=0.02, upstream_wait_seconds=0)
        assert sidecar.sidecar is not None
        polls = _central_reads("get_next_notification")
        until(lambda: _central_reads("get_next_notification") >= polls + 20, "20 polls")
        assert statements.count == 0  # its start and its polling: not one statement
        client = connect(sidecar.port)
        for n in range(5):  # each read after a write asks the central for its event id
            _set_param(client, "n", str(n))
            assert client.get_table("sales", "orders").parameters["n"] == str(n)
            assert direct.get_current_notificationEventId().eventId == _newest_logged(pg_url)
        assert _central_reads("get_current_notificationEventId") >= asked + 6
        assert statements.read_texts == []  # the writes' own statements only
        assert statements.count > 0
    finally:
        statements.close()


def test_the_central_instances_event_id_includes_its_writes_before_its_poller_applies_them(
    central: Service, connect: Any, T: Any, pg_url: str
) -> None:
    client, other = connect(central.port), connect(central.port)
    assert central.cache is not None
    assert central.cache.poller.stall(30)  # nothing is applied until stop ends the stall
    position = central.cache.poller.position
    for _ in range(3):
        open_txns(client, T, 1)  # its OPEN_TXN is left to the poller (which is stalled)
        newest = _newest_logged(pg_url)
        assert newest > position == central.cache.poller.position
        assert client.get_current_notificationEventId().eventId == newest
        assert other.get_current_notificationEventId().eventId == newest


def test_upstream_cache_off_forwards_every_read(central: Service, connect: Any, T: Any) -> None:
    svc = build_service(proxy_settings(f"thrift://127.0.0.1:{central.port}", upstream_cache=False))
    svc.start_background()
    try:
        assert svc.sidecar is None
        client = connect(svc.port)
        loads = forwarded("get_database")
        for _ in range(3):
            client.get_database("default")
        assert forwarded("get_database") == loads + 3
    finally:
        svc.stop(grace_seconds=5)


def test_readyz_reports_the_upstream_cache(
    central: Service, start_sidecar: Callable[..., Service]
) -> None:
    sidecar = start_sidecar()
    detail = sidecar.readiness.snapshot()["upstream_cache"]
    assert detail["answering"] is True and detail["by_time"] is False
    assert detail["notification_log"]["state"] == FOLLOWING


def test_readyz_lists_the_events_applied_with_the_time_each_was_applied(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar(metrics_port=0)
    writer = connect(central.port)
    before = time.time()
    writer.create_database(T.Database(name="learnt"))
    event_id = writer.get_current_notificationEventId().eventId
    assert sidecar.sidecar is not None
    until(lambda: (sidecar.sidecar.events.position or 0) >= event_id, "the sidecar applied it")
    conn = http.client.HTTPConnection("127.0.0.1", sidecar.metrics_port, timeout=30)
    try:
        conn.request("GET", "/readyz")
        log = json.loads(conn.getresponse().read())["upstream_cache"]["notification_log"]
    finally:
        conn.close()
    assert log["position"] >= event_id
    applied = dict(log["recent_applied"])
    assert list(applied) == sorted(applied)  # oldest first
    assert before <= applied[event_id] <= time.time()  # applied after the write was sent


def test_status_shows_the_upstream_log_followed_and_the_last_event_applied(
    central: Service, start_sidecar: Callable[..., Service], connect: Any, T: Any
) -> None:
    sidecar = start_sidecar(metrics_port=0)
    writer = connect(central.port)
    writer.create_database(T.Database(name="status_seen"))
    event_id = writer.get_current_notificationEventId().eventId
    assert sidecar.sidecar is not None
    until(lambda: (sidecar.sidecar.events.position or 0) >= event_id, "the sidecar applied it")
    out = io.StringIO()
    status.run(f"http://127.0.0.1:{sidecar.metrics_port}", out=out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("upstream:"))
    assert line.startswith(f"upstream:   log {FOLLOWING} (")
    assert f"last applied event {event_id:,}, " in line and line.endswith(" s ago")
