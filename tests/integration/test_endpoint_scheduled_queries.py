"""Scheduled queries through Apache Thrift's client, on SQLite and PostgreSQL: create, alter,
enable, drop, polls and progress as Hive 4's ObjectStore answers them."""

from __future__ import annotations

import time

from sqlalchemy import select, update

from hms_cache_proxy.store.db import schema
from hms_cache_proxy.store.db.engine import Database
from tests.support.metastore import raises

EVERY_MINUTE = "0 * * * * ? *"


def _query(T, name, *, schedule=EVERY_MINUTE, enabled=True, ns="hive", next_execution=None):
    return T.ScheduledQuery(
        scheduleKey=T.ScheduledQueryKey(scheduleName=name, clusterNamespace=ns),
        enabled=enabled,
        schedule=schedule,
        user="alice",
        query="select 1",
        nextExecution=next_execution,
    )


def _maintain(client, T, kind, query):
    client.scheduled_query_maintenance(
        T.ScheduledQueryMaintenanceRequest(type=kind, scheduledQuery=query)
    )


def _make_due(database_url, name):
    """Moves a query's next execution into the past (as time passing would)."""
    db = Database(database_url)
    try:
        q = schema.SCHEDULED_QUERIES
        db.transaction(
            lambda conn: conn.execute(
                update(q).where(q.c.SCHEDULE_NAME == name).values(NEXT_EXECUTION=1)
            )
        )
    finally:
        db.dispose()


def test_create_get_alter_drop(client, T):
    kind = T.ScheduledQueryMaintenanceRequestType
    _maintain(client, T, kind.CREATE, _query(T, "sq1"))
    got = client.get_scheduled_query(T.ScheduledQueryKey("sq1", "hive"))
    assert (got.enabled, got.schedule, got.user, got.query) == (
        True,
        EVERY_MINUTE,
        "alice",
        "select 1",
    )
    assert time.time() < got.nextExecution <= time.time() + 61 and got.nextExecution % 60 == 0
    with raises(T.AlreadyExistsException, "Scheduled query with name: sq1@hive already exists."):
        _maintain(client, T, kind.CREATE, _query(T, "sq1"))
    with raises(T.InvalidInputException, contains="Invalid schedule: 1 2 3"):
        _maintain(client, T, kind.CREATE, _query(T, "bad", schedule="1 2 3"))

    altered = _query(T, "sq1", schedule="0 0 12 ? * MON-FRI", enabled=False, next_execution=77)
    _maintain(client, T, kind.ALTER, altered)
    got = client.get_scheduled_query(T.ScheduledQueryKey("sq1", "hive"))
    assert (got.enabled, got.schedule, got.nextExecution) == (False, "0 0 12 ? * MON-FRI", 77)

    _maintain(client, T, kind.DROP, _query(T, "sq1"))
    with raises(T.NoSuchObjectException, "There is no scheduled query for: sq1@hive"):
        client.get_scheduled_query(T.ScheduledQueryKey("sq1", "hive"))
    with raises(T.NoSuchObjectException, "Scheduled query with name: sq1@hive doesn't exists."):
        _maintain(client, T, kind.ALTER, _query(T, "sq1"))


def test_poll_runs_a_due_query_once_and_progress_finishes_it(client, T, database_url):
    kind = T.ScheduledQueryMaintenanceRequestType
    poll = T.ScheduledQueryPollRequest(clusterNamespace="hive")
    empty = client.scheduled_query_poll(poll)
    assert (empty.scheduleKey, empty.executionId, empty.query) == (None, None, None)
    _maintain(client, T, kind.CREATE, _query(T, "due"))
    _maintain(client, T, kind.CREATE, _query(T, "off", enabled=False))
    _maintain(client, T, kind.CREATE, _query(T, "other", ns="elsewhere"))
    assert client.scheduled_query_poll(poll).scheduleKey is None  # nothing due yet
    for name in ("due", "off", "other"):
        _make_due(database_url, name)

    got = client.scheduled_query_poll(poll)
    assert got.scheduleKey.scheduleName == "due" and got.user == "alice"
    assert got.query == "/* schedule: due */select 1"
    assert got.executionId > 0
    # the run is active: a second poll finds nothing (disabled and other namespaces never)
    assert client.scheduled_query_poll(poll).scheduleKey is None
    assert client.get_scheduled_query(got.scheduleKey).nextExecution > time.time()

    state = T.QueryState
    client.scheduled_query_progress(
        T.ScheduledQueryProgressInfo(got.executionId, state.EXECUTING, "q-1")
    )
    with raises(T.InvalidOperationException, "Invalid state change: EXECUTING=>INITED"):
        client.scheduled_query_progress(
            T.ScheduledQueryProgressInfo(got.executionId, state.INITED, "q-1")
        )
    client.scheduled_query_progress(
        T.ScheduledQueryProgressInfo(got.executionId, state.FAILED, "q-1", "x" * 1500)
    )
    with raises(T.InvalidOperationException, "Invalid state change: FAILED=>FINISHED"):
        client.scheduled_query_progress(
            T.ScheduledQueryProgressInfo(got.executionId, state.FINISHED, "q-1")
        )
    with raises(T.InvalidOperationException):
        client.scheduled_query_progress(T.ScheduledQueryProgressInfo(999999, state.FINISHED, "q"))

    db = Database(database_url)
    try:
        with db.read() as conn:
            row = conn.execute(
                select(schema.SCHEDULED_EXECUTIONS).where(
                    schema.SCHEDULED_EXECUTIONS.c.SCHEDULED_EXECUTION_ID == got.executionId
                )
            ).one()
            active = conn.execute(
                select(schema.SCHEDULED_QUERIES.c.ACTIVE_EXECUTION_ID).where(
                    schema.SCHEDULED_QUERIES.c.SCHEDULE_NAME == "due"
                )
            ).scalar_one()
    finally:
        db.dispose()
    assert (row.STATE, row.EXECUTOR_QUERY_ID, row.LAST_UPDATE_TIME) == ("FAILED", "q-1", None)
    assert len(row.ERROR_MESSAGE) == 1000 and row.ERROR_MESSAGE.endswith("...")
    assert row.END_TIME >= row.START_TIME and active is None

    # finished: the query can run again when it is next due
    _make_due(database_url, "due")
    again = client.scheduled_query_poll(poll)
    assert again.scheduleKey.scheduleName == "due" and again.executionId != got.executionId
    # dropping a query with executions removes them
    _maintain(client, T, kind.DROP, _query(T, "due"))
    assert client.scheduled_query_poll(poll).scheduleKey is None


def test_two_instances_polling_at_once_start_one_run(client, T, database_url, tmp_path):
    """Pollers on two instances of one database never both take the same due run."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.apache_thrift import apache_client
    from tests.support.server import running_service

    kind = T.ScheduledQueryMaintenanceRequestType
    with running_service(database_url, tmp_path / "warehouse2") as other:
        clients = []
        try:
            for port in (other.port, other.port):
                clients.append(apache_client("127.0.0.1", port))
            poll = T.ScheduledQueryPollRequest(clusterNamespace="hive")
            for round_ in range(5):
                name = f"race{round_}"
                _maintain(client, T, kind.CREATE, _query(T, name))
                _make_due(database_url, name)
                callers = [client] + [c for c, _ in clients]
                with ThreadPoolExecutor(len(callers)) as pool:
                    answers = list(pool.map(lambda c: c.scheduled_query_poll(poll), callers))
                taken = [a.executionId for a in answers if a.executionId is not None]
                assert len(taken) == 1, answers
                _maintain(client, T, kind.DROP, _query(T, name))
        finally:
            for _, transport in clients:
                transport.close()
