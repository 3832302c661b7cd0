"""The upstream-mode poller's rules, event by event, on a real ReplyCache: what each event drops
(docs/cache.md, "In upstream mode"); the integration tests in test_upstream_cache_lists.py show
them against a central instance's own events."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from hms_cache_proxy.idl import hms, service
from hms_cache_proxy.server.reply_cache import (
    CONSTRAINTS,
    DATABASE,
    TABLE,
    TABLE_NAMES,
    ReplyCache,
    Subject,
)
from hms_cache_proxy.server.upstream import UpstreamPool
from hms_cache_proxy.server.upstream_client import UpstreamClient
from hms_cache_proxy.server.upstream_events import RECENT_APPLIED, UpstreamEvents
from hms_cache_proxy.store.events import messages
from tests.support.metastore import cols, table

SUBJECTS = {
    "table": Subject(TABLE, "hive", "sales", "orders"),
    "database": Subject(DATABASE, "hive", "sales"),
    "names": Subject(TABLE_NAMES, "hive", "sales"),
    "constraints": Subject(CONSTRAINTS),
    "other": Subject(TABLE, "hive", "other", "t"),
}


def _after(*events: Any) -> set[str]:
    """The entries left after the poller applied ``events`` (ids 1, 2, ...)."""
    cache = ReplyCache(1 << 20)
    for name, subject in SUBJECTS.items():
        cache.install(cache.ticket(subject), ((), name, b""), b"reply")
    client = UpstreamClient(service, UpstreamPool("127.0.0.1", 9))  # never called here
    poller = UpstreamEvents(client, cache, interval_seconds=1)
    poller._set_position(0)
    poller._apply([_numbered(i + 1, e) for i, e in enumerate(events)])
    return {name for name in SUBJECTS if cache.get(((), name, b"")) is not None}


def _numbered(event_id: int, event: Any) -> Any:
    event.eventId = event_id
    return event


def _event(kind: str, db: str | None = "sales", table: str | None = None, **kw: Any) -> Any:
    return hms.NotificationEvent(
        eventId=0, eventTime=0, eventType=kind, dbName=db, tableName=table, **kw
    )


def test_each_kind_of_event_drops_what_it_changes() -> None:
    everything = set(SUBJECTS)
    assert _after(_event("ALTER_DATABASE")) == everything - {"database"}
    assert _after(_event("ADD_PARTITION", table="orders")) == everything - {"table"}
    assert _after(_event("CREATE_TABLE", table="new")) == everything - {"names"}
    assert _after(_event("ADD_PRIMARYKEY", table="orders")) == everything - {
        "table",
        "constraints",
    }
    left = everything - {"table", "database", "names", "constraints"}
    assert _after(_event("DROP_DATABASE")) == left
    assert _after(_event("SOME_FUTURE_DATABASE_EVENT")) == left  # unknown: as a drop
    assert _after(_event("OPEN_TXN", db=None)) == everything


def test_an_unreadable_alter_table_empties_the_cache() -> None:
    garbled = _event("ALTER_TABLE", table="orders", message="{not json", messageFormat="json-0.2")
    assert _after(garbled) == set()


def _altered(after_change: Any, *, skewed: bool = False) -> Any:
    before = table(hms, "sales", "orders", keys=["day:string"])
    if skewed:  # TJSON with list keys: not plain JSON, read the full way
        before.sd.skewedInfo = hms.SkewedInfo(
            skewedColNames=["a"], skewedColValues=[["1"]], skewedColValueLocationMaps={("1",): "x"}
        )
    after = copy.deepcopy(before)
    after_change(after)
    message = messages.encode(messages.alter_table(before, after))
    return _event(
        "ALTER_TABLE",
        db=after.dbName,
        table=after.tableName,
        message=message,
        messageFormat=messages.DEFAULT_FORMAT,
    )


@pytest.mark.parametrize("skewed", [False, True])
def test_an_alter_table_drops_names_and_constraints_only_as_its_change_needs(
    skewed: bool,
) -> None:
    everything = set(SUBJECTS)

    def params(t: Any) -> None:
        t.parameters = {"k": "v"}

    def column(t: Any) -> None:
        t.sd.cols = cols(hms, "a:int", "b:bigint")

    def rename(t: Any) -> None:
        t.tableName = "orders_old"

    assert _after(_altered(params, skewed=skewed)) == everything - {"table"}
    assert _after(_altered(column, skewed=skewed)) == everything - {"table", "constraints"}
    assert _after(_altered(rename, skewed=skewed)) == everything - {
        "table",
        "names",
        "constraints",
    }


def test_the_last_events_applied_are_kept_with_their_times_and_no_more() -> None:
    client = UpstreamClient(service, UpstreamPool("127.0.0.1", 9))  # never called here
    poller = UpstreamEvents(client, ReplyCache(1 << 20), interval_seconds=1)
    poller._set_position(0)
    before = time.time()
    poller._apply([_numbered(i + 1, _event("ALTER_DATABASE")) for i in range(RECENT_APPLIED + 36)])
    applied = poller.describe()["recent_applied"]
    assert [event_id for event_id, _ in applied] == list(range(37, RECENT_APPLIED + 37))
    assert all(before <= at <= time.time() for _, at in applied)
