"""Strong mode's shared position query: a read never relies on a query that started before it
arrived, and one query serves every read that arrived while the previous one ran."""

from __future__ import annotations

import threading
import time

from hms_cache_proxy.store.cached.strong import PositionBarrier


class _Poller:
    def __init__(self, position: int) -> None:
        self.position = position
        self.woken = 0

    def wake(self) -> None:
        self.woken += 1

    def apply_recorded(self, target: int) -> bool:
        return self.position >= target

    def wait_for(self, position: int, timeout: float) -> bool:
        return self.position >= position


def test_reads_share_queries_that_started_after_they_arrived() -> None:
    started: list[int] = []
    release = threading.Event()
    counter = [100]

    def read() -> int:
        counter[0] += 1
        started.append(counter[0])
        if len(started) == 1:
            release.wait(5)  # the first query is slow: reads arrive meanwhile
        return counter[0]

    barrier = PositionBarrier(read, _Poller(10**9))
    results: dict[str, int] = {}

    def call(name: str) -> None:
        results[name] = barrier.database_position()

    first = threading.Thread(target=call, args=("first",))
    first.start()
    time.sleep(0.05)
    later = [threading.Thread(target=call, args=(f"later{i}",)) for i in range(5)]
    for t in later:
        t.start()
    time.sleep(0.05)
    release.set()
    for t in [first, *later]:
        t.join(5)
    # The first query served only the first read; one more query served all five later ones.
    assert len(started) == 2
    assert results["first"] == 101
    assert all(results[f"later{i}"] == 102 for i in range(5))


def test_a_cache_behind_the_database_waits_for_the_poller() -> None:
    poller = _Poller(5)
    barrier = PositionBarrier(lambda: 7, poller, wait_seconds=0.01)
    assert not barrier.wait_current() and poller.woken == 1
    poller.position = 7
    assert barrier.wait_current()


def test_an_answer_read_at_the_database_position_needs_no_wait() -> None:
    """``_read`` keeps the answer it took at ``applied`` when that covers the position query;
    ``reach`` wakes the poller only for a target it has not applied."""
    poller = _Poller(7)
    barrier = PositionBarrier(lambda: 7, poller, wait_seconds=0.01)
    assert barrier.applied == 7 and barrier.database_position() == 7
    assert barrier.reach(7) and poller.woken == 0
    assert not barrier.reach(8) and poller.woken == 1
