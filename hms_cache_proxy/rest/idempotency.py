"""Idempotency-Key: a mutation retried with the same key gets the first answer, not a second
application. Answers are kept in this instance's memory for the advertised lifetime; a retry
with a key still in flight waits for the first attempt's answer."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

Answer = tuple[int, bytes]
MAX_KEYS = 100_000
MAX_BYTES = 64 * 1024 * 1024
"""Answers kept at most (the oldest are forgotten first)."""
MAX_KEY_LENGTH = 256


class IdempotencyKeys:
    def __init__(self, lifetime_seconds: float) -> None:
        self.lifetime = lifetime_seconds
        self._done: OrderedDict[tuple[str, ...], tuple[float, Answer]] = OrderedDict()
        self._running: dict[tuple[str, ...], threading.Event] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def run(self, key: tuple[str, ...], work: Callable[[], Answer]) -> Answer:
        """``work``'s answer, or the answer already given under ``key`` (a 5xx is not kept:
        its outcome is unknown, the retry must find out)."""
        while True:
            with self._lock:
                self._expire()
                done = self._done.get(key)
                if done is not None:
                    return done[1]
                running = self._running.get(key)
                if running is None:
                    mine = self._running[key] = threading.Event()
                    break
            running.wait()
        try:
            answer = work()
            if answer[0] < 500:
                with self._lock:
                    self._done[key] = (time.monotonic() + self.lifetime, answer)
                    self._bytes += len(answer[1])
                    while len(self._done) > MAX_KEYS or self._bytes > MAX_BYTES:
                        self._bytes -= len(self._done.popitem(last=False)[1][1][1])
            return answer
        finally:
            with self._lock:
                del self._running[key]
            mine.set()

    def _expire(self) -> None:
        now = time.monotonic()
        while self._done:
            key, (until, _) = next(iter(self._done.items()))
            if until > now:
                return
            self._bytes -= len(self._done.pop(key)[1][1])
