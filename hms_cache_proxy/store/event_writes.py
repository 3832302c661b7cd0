"""The mark on a store method that appends notification events.

The caching store follows exactly the marked methods with a catch-up, so this instance reads
its own writes from its cache; tests/unit/test_event_writes.py fails when a method that
appends to the log is left unmarked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_MARK = "writes_events"


def writes_events(method: F) -> F:
    """Mark ``method`` as one that appends notification events (unchanged otherwise)."""
    setattr(method, _MARK, True)
    return method


def is_event_write(method: Any) -> bool:
    """Whether ``method`` (a function or a bound method) carries the mark."""
    return getattr(method, _MARK, False) is True
