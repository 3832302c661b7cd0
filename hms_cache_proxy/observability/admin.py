"""What ``POST /admin/refresh`` and ``/admin/flush`` act on.

The HTTP layer authenticates and validates; the cache implements ``AdminTarget``. Until a cache
exists the service passes ``NoCacheAdmin``, which only says so.
"""

from __future__ import annotations

from typing import Any, Protocol


class AdminError(Exception):
    """A request the target cannot carry out; the message is shown to the caller."""

    status = 400


class AdminNotFound(AdminError):
    """The named database, table or partition is not known (answered with 404)."""

    status = 404


class AdminTarget(Protocol):
    """Refresh reloads the named scope from the database; flush drops it from the cache.

    Names arrive normalised (database and table in lower case). Both return a JSON-able dict
    that becomes the response body, and may raise ``AdminError`` / ``AdminNotFound``.
    """

    def refresh(
        self, db: str, table: str | None = None, partition: str | None = None
    ) -> dict[str, Any]: ...

    def flush(
        self, db: str, table: str | None = None, partition: str | None = None
    ) -> dict[str, Any]: ...


class PollerPause(Protocol):
    """A target that can stall its poller (``POST /admin/poller/pause?seconds=N``)."""

    def pause_poller(self, seconds: float) -> dict[str, Any]: ...


MAX_PAUSE_SECONDS = 300.0
"""Longest poller pause accepted: a fault for tests, not a way to switch the cache off."""


def scope(db: str, table: str | None, partition: str | None) -> dict[str, str]:
    """The named scope as a dict without the parts left out."""
    out = {"db": db}
    if table is not None:
        out["table"] = table
    if partition is not None:
        out["partition"] = partition
    return out


class NoCacheAdmin:
    """The admin target while the service has no cache: nothing to refresh or flush."""

    def refresh(
        self, db: str, table: str | None = None, partition: str | None = None
    ) -> dict[str, Any]:
        return {"refreshed": scope(db, table, partition), "note": "no cache"}

    def flush(
        self, db: str, table: str | None = None, partition: str | None = None
    ) -> dict[str, Any]:
        return {"flushed": scope(db, table, partition), "note": "no cache"}
