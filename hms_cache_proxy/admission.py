"""Who may open one more connection: a global limit, a share per client address, a reserve.

Used by the Thrift port and the HTTP endpoint alike. Without a share per client, one host
opening idle connections takes every slot and everyone else is refused; without a reserve,
a handful of hosts at their share still can. So the last ``reserved`` slots go only to
clients holding fewer than ``reserved_per_client`` connections: a new client (or one with
a connection or two) always finds a slot unless the reserve itself is exhausted by many
distinct addresses. Refusals are counted by reason and logged at most once per interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# Why a connection was refused (the ``reason`` label of the refusal metrics).
GLOBAL_LIMIT = "max_connections"
CLIENT_LIMIT = "max_connections_per_client"
RESERVE = "reserved_connections"


@dataclass(frozen=True)
class ConnectionLimits:
    """``per_client`` 0 means no share per client; ``reserved`` 0 means no reserve."""

    total: int
    per_client: int = 0
    reserved: int = 0
    reserved_per_client: int = 1

    def __post_init__(self) -> None:
        if self.total < 1:
            raise ValueError("the connection limit must be at least 1")
        if not 0 <= self.reserved < self.total:
            raise ValueError("the reserve must be smaller than the connection limit")
        if self.reserved_per_client < 1:
            raise ValueError("the reserve's per-client threshold must be at least 1")


class Admission:
    """Counts open connections per client address; thread-safe."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self._held: dict[str, int] = {}
        self._total = 0
        self._lock = threading.Lock()

    def admit(self, client: str) -> str | None:
        """Take a slot for ``client``: None when admitted, else the reason it was refused."""
        lim = self.limits
        with self._lock:
            held = self._held.get(client, 0)
            if self._total >= lim.total:
                return GLOBAL_LIMIT
            if lim.per_client and held >= lim.per_client:
                return CLIENT_LIMIT
            if self._total >= lim.total - lim.reserved and held >= lim.reserved_per_client:
                return RESERVE
            self._held[client] = held + 1
            self._total += 1
            return None

    def release(self, client: str) -> None:
        """Give back a slot taken by ``admit``."""
        with self._lock:
            held = self._held.get(client, 0)
            if held <= 1:
                self._held.pop(client, None)
            else:
                self._held[client] = held - 1
            self._total = max(0, self._total - 1)

    @property
    def total(self) -> int:
        with self._lock:
            return self._total

    def held_by(self, client: str) -> int:
        with self._lock:
            return self._held.get(client, 0)


def client_address(peer: object) -> str:
    """The address part of an accepted socket's peer (IPv4-mapped IPv6 as plain IPv4)."""
    host = peer[0] if isinstance(peer, tuple) and peer else peer
    text = str(host)
    return text[7:] if text.startswith("::ffff:") and "." in text else text


class QuietLog:
    """Logs a kind of event at most once per ``interval`` seconds, with a count of the rest.

    An attack produces refusals by the thousand; the first one is logged at once, the others
    are counted into the next line ("... and 999 more like it since the last such line").
    """

    def __init__(
        self,
        logger: logging.Logger,
        level: int = logging.WARNING,
        interval: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.level = level
        self.interval = interval
        self._clock = clock
        self._next: dict[str, float] = {}
        self._skipped: dict[str, int] = {}
        self._lock = threading.Lock()

    def log(self, kind: str, msg: str, *args: object) -> bool:
        """Log ``msg % args`` unless a ``kind`` line was logged within the interval."""
        now = self._clock()
        with self._lock:
            if now < self._next.get(kind, 0.0):
                self._skipped[kind] = self._skipped.get(kind, 0) + 1
                return False
            skipped = self._skipped.pop(kind, 0)
            self._next[kind] = now + self.interval
        if skipped:
            msg += " (and %d more like it since the last such line)"
            args = (*args, skipped)
        self.logger.log(self.level, msg, *args, stacklevel=2)
        return True
