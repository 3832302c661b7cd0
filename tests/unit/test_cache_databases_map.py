"""The databases map as a complete list (get_databases from the cache): complete once a whole
load is installed, kept complete by this service's own database events, and incomplete (the
database answers) after anything that removes an entry that may still exist."""

from __future__ import annotations

from typing import Any

import pytest

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.cache.cache import Cache
from hms_cache_proxy.store.cached.apply import EventApplier
from hms_cache_proxy.store.events import message_base, messages

OURS = messages.MessageBuilder(writer=message_base.WRITER_NAME)
STOCK = messages.MessageBuilder()  # a stock metastore's messages: no writer marker


class _NoLoads:
    def __init__(self) -> None:
        self.databases_requested = 0

    def request(self, key: Any, *, front: bool = False) -> None:
        pass

    def request_databases(self) -> None:
        self.databases_requested += 1


def _db(name: str, cat: str = "hive") -> hms.Database:
    return hms.Database(name=name, parameters={}, catalogName=cat, locationUri=f"file:/w/{name}")


def _loaded() -> Cache:
    cache = Cache(10**9)
    found = {(d.catalogName, d.name): (d, b"") for d in (_db("b"), _db("a"), _db("x", "other"))}
    assert cache.install_databases(found, 3)
    return cache


def _event(event_id: int, kind: str, body: dict[str, Any], name: str) -> hms.NotificationEvent:
    return hms.NotificationEvent(
        eventId=event_id,
        eventTime=0,
        eventType=kind,
        dbName=name,
        tableName=None,
        message=messages.encode(body),
        messageFormat=messages.DEFAULT_FORMAT,
        catName="hive",
    )


def _apply(cache: Cache, *events: hms.NotificationEvent) -> _NoLoads:
    loads = _NoLoads()
    EventApplier(cache, loads).apply(list(events))  # type: ignore[arg-type]
    return loads


def test_a_map_is_a_list_only_once_a_whole_load_is_installed() -> None:
    cache = Cache(10**9)
    assert cache.database_names("hive") is None
    cache = _loaded()
    assert cache.database_names("hive") == ["a", "b"]
    assert cache.database_names("other") == ["x"]
    assert cache.database_names("nowhere") == []


def test_our_own_database_events_keep_the_list_complete() -> None:
    cache = _loaded()
    before, after = _db("a"), _db("a")
    after.description = "changed"
    _apply(
        cache,
        _event(4, messages.CREATE_DATABASE, OURS.create_database(_db("c")), "c"),
        _event(5, messages.ALTER_DATABASE, OURS.alter_database(before, after), "a"),
        _event(6, messages.DROP_DATABASE, OURS.drop_database(_db("b")), "b"),
    )
    assert cache.database_names("hive") == ["a", "c"]
    assert cache.databases[("hive", "a")][0].description == "changed"


@pytest.mark.parametrize(
    "kind,body",
    [
        (messages.CREATE_DATABASE, STOCK.create_database(_db("c"))),
        (messages.ALTER_DATABASE, STOCK.alter_database(_db("a"), _db("a"))),
        (messages.DROP_DATABASE, STOCK.drop_database(_db("a"))),
        ("SOMETHING_NEW", {}),
    ],
)
def test_an_event_of_another_writer_makes_the_list_incomplete_until_a_load(
    kind: str, body: dict[str, Any]
) -> None:
    cache = _loaded()
    loads = _apply(cache, _event(4, kind, body, "c" if kind == messages.CREATE_DATABASE else "a"))
    assert cache.database_names("hive") is None
    assert loads.databases_requested == 1
    assert cache.install_databases({("hive", "c"): (_db("c"), b"")}, 4)
    assert cache.database_names("hive") == ["c"]


def test_emptying_the_cache_makes_the_list_incomplete() -> None:
    cache = _loaded()
    with cache.lock:
        cache.position = 5  # the applier's position when the cache was emptied
        cache.clear_locked()
    assert cache.database_names("hive") is None
    assert not cache.install_databases({("hive", "a"): (_db("a"), b"")}, 4)  # older: refused
    assert cache.database_names("hive") is None
