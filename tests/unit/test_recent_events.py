"""The window of recently applied events that answers get_next_notification from memory."""

from __future__ import annotations

from thriftpy2.thrift import TType

from hms_cache_proxy import thrift_bytes
from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.events.recent import RecentEvents


def ev(i: int, kind: str = "ALTER_TABLE") -> hms.NotificationEvent:
    return hms.NotificationEvent(eventId=i, eventTime=0, eventType=kind, message="{}")


def ids(events: list[hms.NotificationEvent] | None) -> list[int] | None:
    return None if events is None else [e.eventId for e in events]


def test_answers_from_its_start_position_on_and_leaves_older_requests_to_the_database() -> None:
    recent = RecentEvents(10)
    assert ids(recent.after(10, None)) == []  # nothing after the position yet
    recent.add([ev(11), ev(12), ev(13)])
    assert ids(recent.after(10, None)) == [11, 12, 13]
    assert ids(recent.after(12, None)) == [13]
    assert ids(recent.after(13, None)) == [] and ids(recent.after(99, None)) == []
    assert recent.after(9, None) is None
    assert recent.end == 13


def test_a_limit_and_skipped_types_as_the_database_path_applies_them() -> None:
    recent = RecentEvents(0, cap=3)
    recent.add([ev(1), ev(2, "OPEN_TXN"), ev(3), ev(4), ev(5)])
    assert ids(recent.after(0, 2)) == [1, 2]
    assert ids(recent.after(0, None)) == [1, 2, 3]  # the cap
    assert ids(recent.after(0, 10, ["OPEN_TXN"])) == [1, 3, 4]


def test_the_oldest_go_beyond_capacity_and_a_hole_or_reset_starts_over() -> None:
    recent = RecentEvents(0, capacity=3)
    recent.add([ev(i) for i in range(1, 6)])
    assert recent.after(1, None) is None and ids(recent.after(2, None)) == [3, 4, 5]
    recent.add([ev(9)])  # not after 5: only what follows 8 is known now
    assert recent.after(7, None) is None and ids(recent.after(8, None)) == [9]
    recent.reset(20)
    assert recent.after(9, None) is None and ids(recent.after(20, None)) == []


def test_the_same_request_is_encoded_once_until_the_window_moves() -> None:
    recent = RecentEvents(0)
    recent.add([ev(1), ev(2, "OPEN_TXN"), ev(3)])
    first = recent.after_encoded(0, None, ["OPEN_TXN"])
    assert all(recent.after_encoded(0, None, ["OPEN_TXN"]) is first for _ in range(99))
    assert recent.encodings == 1  # a hundred sidecars at one position: one encoding
    recent.add([ev(4)])  # the window moved: encoded afresh, with the new event
    assert ids(decoded(recent.after_encoded(0, None, ["OPEN_TXN"]))) == [1, 3, 4]
    assert recent.encodings == 2


def test_other_positions_limits_and_filters_get_answers_of_their_own() -> None:
    recent = RecentEvents(0, cap=3)
    recent.add([ev(1), ev(2, "OPEN_TXN"), ev(3), ev(4), ev(5)])
    asked = [(0, None, ()), (0, 2, ()), (0, 10, ("OPEN_TXN",)), (3, None, ()), (5, None, ())]
    for last, limit, skip in asked:
        assert decoded(recent.after_encoded(last, limit, skip)) == recent.after(last, limit, skip)
    assert recent.encodings == len(asked)
    recent.reset(10)
    assert recent.after_encoded(5, None) is None  # before the window: the database's
    assert decoded(recent.after_encoded(10, None)) == []


def decoded(value: bytes | None) -> list[hms.NotificationEvent] | None:
    """The events of an Encoded list, as the processor writes it in a response."""
    assert value is not None
    response = thrift_bytes.decode(
        hms.NotificationEventResponse, thrift_bytes.struct_of((1, TType.LIST, value))
    )
    return list(response.events)
