"""The event bodies the open and commit functions complete are built once per second of their
``timestamp`` and reused (store/txn/function_calls.py): each call's text must be exactly what
building it for that call gives, also across a second's turn and for any txn id."""

from __future__ import annotations

from pathlib import Path

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


def _calls(tmp_path: Path, clock: Clock) -> tuple[FunctionCalls, MessageBuilder]:
    db = Database(f"sqlite:///{tmp_path / 'unused.db'}")
    messages = MessageBuilder(server="thrift://h:9083", clock=clock, writer=WRITER_NAME)
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
