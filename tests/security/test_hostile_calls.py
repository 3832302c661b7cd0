"""Findings of issue 12, each run as an attack against a real server on 127.0.0.1: no call can
take the server hostage (patterns, filters, struct-heavy requests, slow statements), and every
one is answered with the method's declared exception and a message a user can act on.

Bounded: every client has a socket timeout, every loop a fixed count. "Responsive" is checked
by another client's calls succeeding within their socket timeout while the attack runs, not by
timing the attack."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from thrift.Thrift import TApplicationException

from tests.support.apache_thrift import apache_client, load_apache_modules
from tests.support.metastore import partition, table
from tests.support.server import running_service

T = load_apache_modules().ttypes

LONG_NAME = "a" * 60
PATTERNS = ["*a*a*a*a*a*a*a*b", "*a" * 20 + "*b", "|".join(["*a" * 12 + "*b"] * 8)]


@pytest.fixture
def clients() -> Iterator[Callable[..., Any]]:
    """Opens Apache Thrift clients (closed at the end)."""
    transports = []

    def open_client(port: int, timeout: float = 60.0) -> Any:
        client, transport = apache_client("127.0.0.1", port, timeout=timeout)
        transports.append(transport)
        return client

    yield open_client
    for t in transports:
        t.close()


def _while_attacking(attack: Callable[[], Any], bystander: Callable[[], Any], rounds: int) -> Any:
    """Runs ``attack`` in a thread while ``bystander`` makes ``rounds`` calls, each of which must
    be answered within its client's socket timeout; returns what the attack returned."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = attack()
        except Exception as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    for _ in range(rounds):
        bystander()
    thread.join(120)
    assert not thread.is_alive(), "the attacking call was not answered"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


CACHE_ON_AND_OFF = pytest.mark.parametrize(
    "cache_enabled", [True, False], ids=["cache_on", "cache_off"]
)
"""The calls below are answered by the caching store (the default) or the database path."""


# -- 2: pattern blow-up ----------------------------------------------------------------------------


@CACHE_ON_AND_OFF
def test_backtracking_patterns_answer_and_others_stay_served(
    database_url: str, tmp_path: Path, clients: Callable[..., Any], cache_enabled: bool
) -> None:
    with running_service(database_url, tmp_path / "wh", cache_enabled=cache_enabled) as svc:
        setup = clients(svc.port)
        setup.create_database(T.Database(name=LONG_NAME, parameters={}))
        for db in ("default", LONG_NAME):
            setup.create_table(table(T, db, LONG_NAME))
            setup.create_table(table(T, db, LONG_NAME + "b"))
        attacker, bystander = clients(svc.port), clients(svc.port, timeout=5.0)

        def attack() -> list[Any]:
            answers = []
            for pattern in PATTERNS:
                answers.append(attacker.get_tables("default", pattern))
                answers.append(attacker.get_tables_by_type("default", pattern, "MANAGED_TABLE"))
                answers.append(attacker.get_databases(pattern))
                answers.append(
                    sorted(
                        (m.dbName, m.tableName)
                        for m in attacker.get_table_meta(pattern, pattern, None)
                    )
                )
                answers.append(attacker.get_functions("default", pattern))
            return answers

        answers = _while_attacking(attack, lambda: bystander.get_all_databases(), rounds=20)
        tables, by_type, dbs, metas, functions = answers[:5]
        assert tables == by_type == [LONG_NAME + "b"]
        assert dbs == []  # the database's name has no b
        assert metas == []
        assert functions == []
        # the same patterns still match what they should
        assert attacker.get_tables("default", "*a*a*b") == [LONG_NAME + "b"]
        assert attacker.get_databases("*A*A*") == [LONG_NAME]


# -- 6: filter CPU ---------------------------------------------------------------------------------


def _ors(n: int) -> str:
    return " OR ".join(f'day = "d{i}"' for i in range(n))


@CACHE_ON_AND_OFF
def test_huge_and_deep_filters_are_refused_with_the_setting_named(
    database_url: str, tmp_path: Path, clients: Callable[..., Any], cache_enabled: bool
) -> None:
    with running_service(database_url, tmp_path / "wh", cache_enabled=cache_enabled) as svc:
        setup = clients(svc.port)
        setup.create_table(table(T, "default", "events", keys=["day:string"]))
        setup.add_partitions([partition(T, "default", "events", [f"d{i}"]) for i in range(30)])
        attacker, bystander = clients(svc.port), clients(svc.port, timeout=5.0)

        def attack() -> list[str]:
            refusals = []
            for text in (_ors(100_000), _ors(200_000), _ors(10_001)):
                with pytest.raises(T.MetaException) as refused:
                    attacker.get_partitions_by_filter("default", "events", text, -1)
                refusals.append(refused.value.message)
            with pytest.raises(T.MetaException) as deep:
                attacker.get_num_partitions_by_filter(
                    "default", "events", "(" * 50_000 + 'day = "d1"' + ")" * 50_000
                )
            refusals.append(deep.value.message)
            return refusals

        refusals = _while_attacking(attack, lambda: bystander.get_all_databases(), rounds=20)
        assert "partition_filter_max_length (1,000,000)" in refusals[0]
        assert "partition_filter_max_length" in refusals[1]
        assert "more than 10,000 values (partition_filter_max_terms)" in refusals[2]
        assert "nest more than 100 deep" in refusals[3]
        assert all(len(m) < 600 for m in refusals)  # the filter is quoted in part only
        # within the limits a wide filter is answered, right
        wide = attacker.get_partitions_by_filter("default", "events", _ors(10_000), -1)
        assert sorted(p.values[0] for p in wide) == sorted(f"d{i}" for i in range(30))
        assert attacker.get_num_partitions_by_filter("default", "events", "day LIKE '%1%'") == 12


# -- 7: memory amplification -----------------------------------------------------------------------


def test_a_request_of_many_empty_structs_is_refused_and_the_connection_goes_on(
    sqlite_url: str, tmp_path: Path, clients: Callable[..., Any]
) -> None:
    with running_service(sqlite_url, tmp_path / "wh", max_decoded_structures=50_000) as svc:
        c = clients(svc.port)
        c.create_table(table(T, "default", "events", keys=["day:string"]))
        empty = [T.Partition() for _ in range(60_000)]  # 60 KB on the wire
        with pytest.raises(TApplicationException) as refused:
            c.add_partitions(empty)
        assert refused.value.type == TApplicationException.PROTOCOL_ERROR
        assert "max_decoded_structures = 50000" in refused.value.message
        assert c.get_partition_names("default", "events", -1) == []  # nothing written
        assert c.get_all_databases() == ["default"]  # the same connection still serves


# -- the per-statement deadline --------------------------------------------------------------------


@pytest.mark.postgres
def test_a_statement_past_the_deadline_fails_with_a_message_naming_no_host(
    pg_server: Any, pg_url: str, tmp_path: Path, clients: Callable[..., Any]
) -> None:
    with running_service(
        pg_url, tmp_path / "wh", cache_enabled=False, database_statement_timeout_seconds=1
    ) as svc:
        c = clients(svc.port)
        assert c.get_all_databases() == ["default"]
        blocker = pg_server.connect(pg_url.rsplit("/", 1)[1])
        try:
            with blocker.cursor() as cur:  # holds the table until rollback: reads must wait
                cur.execute('LOCK TABLE "DBS" IN ACCESS EXCLUSIVE MODE')
            with pytest.raises(T.MetaException) as slow:
                c.get_all_databases()
        finally:
            blocker.rollback()
            blocker.close()
        message = slow.value.message
        assert message.startswith("the call took too long")
        assert "database_statement_timeout_seconds" in message
        for leak in ("SELECT", "DBS", "127.0.0.1", str(pg_server.port), "postgres"):
            assert leak not in message, leak
        assert c.get_all_databases() == ["default"]  # served again once the lock is gone


# -- Also: get_notification_events_count without a database ----------------------------------------


@CACHE_ON_AND_OFF
def test_events_count_without_a_database_counts_every_event(
    database_url: str, tmp_path: Path, clients: Callable[..., Any], cache_enabled: bool
) -> None:
    with running_service(database_url, tmp_path / "wh", cache_enabled=cache_enabled) as svc:
        c = clients(svc.port)
        c.create_database(T.Database(name="one", parameters={}))
        c.create_table(table(T, "one", "t"))
        c.create_database(T.Database(name="two", parameters={}))
        total = len(c.get_next_notification(T.NotificationEventRequest(lastEvent=0)).events)
        assert total >= 3

        def count(db: str | None) -> int:
            rqst = T.NotificationEventsCountRequest(fromEventId=0, dbName=db)
            return c.get_notification_events_count(rqst).eventsCount

        assert count("") == total
        assert count("*") == total
        assert count("one") == 2  # its CREATE_DATABASE and CREATE_TABLE
        assert count("two") == 1
