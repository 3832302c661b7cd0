"""The event bodies the open and commit functions complete are built once per second of their
``timestamp`` and reused (store/txn/function_calls.py): each call's text must be exactly what
building it for that call gives, also across a second's turn, for any txn id, and wherever the
body's keys stand (the placeholders are a key with its sentinel value, checked to occur once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hms_cache_proxy.idl import hms
from hms_cache_proxy.store.db.engine import Database
from hms_cache_proxy.store.db.ids import IdAllocator
from hms_cache_proxy.store.events import messages as msg
from hms_cache_proxy.store.events.log import EventLog
from hms_cache_proxy.store.events.messages import WRITER_NAME, MessageBuilder
from hms_cache_proxy.store.txn import plpgsql
from hms_cache_proxy.store.txn.function_calls import FunctionCalls, _PerSecond
from hms_cache_proxy.store.txn.txn_base import TxnShared


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class KeysReversed(MessageBuilder):
    """The bodies with their keys in the opposite order (``txnid`` and ``timestamp`` last),
    counting the commit bodies built."""

    commit_builds = 0

    def commit_txn(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.commit_builds += 1
        return dict(reversed(super().commit_txn(*args, **kwargs).items()))

    def open_txn(self, from_txn_id: int, to_txn_id: int) -> dict[str, Any]:
        return dict(reversed(super().open_txn(from_txn_id, to_txn_id).items()))


def _calls(
    tmp_path: Path, clock: Clock, builder: type[MessageBuilder] = MessageBuilder
) -> tuple[FunctionCalls, MessageBuilder]:
    db = Database(f"sqlite:///{tmp_path / 'unused.db'}")
    messages = builder(server="thrift://h:9083", clock=clock, writer=WRITER_NAME)
    return FunctionCalls(TxnShared(db, EventLog(IdAllocator(db)), messages)), messages


def _commit_built(messages: MessageBuilder, txn_id: int) -> str:
    sentinel = hms.WriteEventInfo(
        writeId=plpgsql.WRITE_ID_SENTINEL, database="@", table="@", files=None
    )
    return msg.to_json(messages.commit_txn(txn_id, [sentinel]))


def test_commit_body_is_the_built_one_for_every_txn_and_second(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000.2)
    calls, messages = _calls(tmp_path, clock)
    for txn_id in (1, 7, 123456789012, 2**62):
        assert calls.commit_message(txn_id) == _commit_built(messages, txn_id)
    assert plpgsql.WRITES_MARK in calls.commit_message(5)
    clock.t = 1_700_000_001.0  # the next second: a new timestamp
    assert calls.commit_message(9) == _commit_built(messages, 9)
    assert '"timestamp":1700000001,' in calls.commit_message(9)


def test_open_body_follows_the_clock(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000.5)
    calls, messages = _calls(tmp_path, clock)
    built = msg.to_json(messages.open_txn(plpgsql.FROM_SENTINEL, plpgsql.TO_SENTINEL))
    assert calls._open_body.text() == built
    clock.t += 1
    assert calls._open_body.text() != built
    assert calls._open_body.text() == msg.to_json(
        messages.open_txn(plpgsql.FROM_SENTINEL, plpgsql.TO_SENTINEL)
    )


def test_a_body_built_across_a_second_turn_is_not_kept() -> None:
    seconds = iter([10, 11, 11, 11])
    builds: list[int] = []

    def build() -> str:
        builds.append(1)
        return '{"timestamp":11,"x":1}'

    body = _PerSecond(build, lambda: next(seconds))
    assert body.text() == '{"timestamp":11,"x":1}'  # asked at 10, built at 11: not cached
    assert body.text() == '{"timestamp":11,"x":1}'  # built again, now kept for second 11
    assert body.text() == '{"timestamp":11,"x":1}'
    assert len(builds) == 2


# Ids whose digits are also elsewhere in the body: the timestamp (1700000000), part of it, the
# placeholder's own digits, the write-id sentinel's, and the largest id.
_IDS = (1, 17, 1_700_000_000, 7_000_000_000, 7000000000000000009, 7000000000000000003, 2**63 - 1)


def test_commit_message_decodes_to_the_body_built_for_that_txn(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000.2)
    calls, messages = _calls(tmp_path, clock)
    for txn_id in _IDS:
        text = calls.commit_message(txn_id)
        assert json.loads(text) == json.loads(_commit_built(messages, txn_id))
        assert json.loads(text)["txnid"] == txn_id
        assert json.loads(text)["timestamp"] == 1_700_000_000


def test_the_bodies_hold_wherever_their_keys_stand(tmp_path: Path) -> None:
    """``txnid`` and ``timestamp`` last (no comma after them): the id still goes in, the body
    is still kept for its second, and the write list still comes out whole or not at all as
    the commit function does it."""
    clock = Clock(1_700_000_000.2)
    calls, messages = _calls(tmp_path, clock, KeysReversed)
    assert isinstance(messages, KeysReversed)
    for txn_id in _IDS:
        text = calls.commit_message(txn_id)
        built = json.loads(_commit_built(messages, txn_id))
        assert json.loads(text) == built and built["txnid"] == txn_id
        without_writes = json.loads(text.replace("," + plpgsql.WRITES_MARK, "", 1))
        assert without_writes == {k: v for k, v in built.items() if k != msg.TXN_WRITES}
    assert messages.commit_builds == 1 + len(_IDS)  # one kept body, and the test's own
    opened = calls._open_body.text()
    assert calls._open_body.text() is opened  # kept for its second
    assert json.loads(opened) == json.loads(
        msg.to_json(messages.open_txn(plpgsql.FROM_SENTINEL, plpgsql.TO_SENTINEL))
    )


@pytest.mark.parametrize(
    "body", ['{"timestamp":11,"x":1}', '{"timestamp":11,"x":1,"y":{"x":1}}'], ids=["none", "two"]
)
def test_a_body_without_its_placeholder_exactly_once_is_refused(body: str) -> None:
    per_second = _PerSecond(lambda: body, lambda: 11, ('"x":1',) if "y" in body else ('"z":1',))
    with pytest.raises(RuntimeError, match="times, not once"):
        per_second.text()


def test_a_body_with_its_timestamp_last_is_kept() -> None:
    builds: list[int] = []

    def build() -> str:
        builds.append(1)
        return '{"x":1,"timestamp":11}'

    body = _PerSecond(build, lambda: 11)
    assert body.text() == body.text() == '{"x":1,"timestamp":11}'
    assert len(builds) == 1
