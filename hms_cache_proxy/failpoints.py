"""Failpoints: named places in the code where a test widens a race window on purpose.

A failpoint is off unless the ``failpoints`` setting (``HMS_CACHE_PROXY_FAILPOINTS``) names it,
or a test sets it in the process. Off, ``hit(name)`` is one lookup in an empty dict. The
setting is a ``;``-separated list of ``name=action``; an action is ``sleep(SECONDS)``,
``raise`` or ``raise(MESSAGE)``, optionally preceded by a percentage (``25%sleep(0.2)``: one
hit in four). Tests may also ``set(name, fn)``: ``fn(name, detail)`` then runs at every hit (it can
block on an event the test releases, which makes an interleaving deterministic).

The names (where each is hit):

- ``load.after_snapshot``: a table load has read its snapshot and not installed it yet;
- ``load.stats_after_snapshot``: a statistics load has read its rows, not installed them;
- ``poller.before_apply``: the poller has read a batch of events and not applied it yet;
- ``write.before_commit``: a write transaction has done its work and holds its locks
  (the notification sequence row included) just before it commits.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable

Action = Callable[[str, str], None]
"""``action(name, detail)``: ``detail`` says what the code was doing (e.g. the table loaded)."""

NAMES = frozenset(
    {
        "load.after_snapshot",
        "load.stats_after_snapshot",
        "poller.before_apply",
        "write.before_commit",
    }
)

ACTIVE: dict[str, Action] = {}
"""The failpoints that are on; empty (and ``hit`` free) unless a setting or test turned one on."""

_lock = threading.Lock()
_SPEC = re.compile(r"^(?:(\d+(?:\.\d+)?)%)?(sleep\(([\d.]+)\)|raise(?:\((.*)\))?)$")


class FailpointError(RuntimeError):
    """What a ``raise`` failpoint throws (an injected failure, e.g. a database timeout)."""


def hit(name: str, detail: str = "") -> None:
    """Run the action of failpoint ``name`` if it is on (``detail``: what is being done)."""
    if ACTIVE:
        action = ACTIVE.get(name)
        if action is not None:
            action(name, detail)


def set(name: str, action: Action) -> None:  # noqa: A001 - the failpoint vocabulary
    """Turn ``name`` on with ``action`` (tests)."""
    _known(name)
    with _lock:
        ACTIVE[name] = action


def clear(name: str | None = None) -> None:
    """Turn one failpoint (or all of them) off."""
    with _lock:
        if name is None:
            ACTIVE.clear()
        else:
            ACTIVE.pop(name, None)


def configure(spec: str | None) -> None:
    """Turn on the failpoints a setting names (``name=action;...``); ValueError if malformed."""
    parsed = parse(spec)
    with _lock:
        ACTIVE.clear()
        ACTIVE.update(parsed)


def parse(spec: str | None) -> dict[str, Action]:
    out: dict[str, Action] = {}
    for item in (spec or "").split(";"):
        item = item.strip()
        if not item:
            continue
        name, sep, text = item.partition("=")
        name = name.strip()
        _known(name)
        m = _SPEC.match(text.strip()) if sep else None
        if m is None:
            raise ValueError(
                f"failpoint {name!r}: action must be sleep(SECONDS), raise or raise(MESSAGE), "
                f"optionally preceded by a percentage such as 25%; got {text.strip()!r}"
            )
        out[name] = _action(m)
    return out


def _known(name: str) -> None:
    if name not in NAMES:
        raise ValueError(f"unknown failpoint {name!r}; known: {', '.join(sorted(NAMES))}")


def _action(m: re.Match[str]) -> Action:
    share = float(m.group(1)) / 100 if m.group(1) else 1.0
    if m.group(3) is not None:
        seconds = float(m.group(3))

        def act(_name: str, _detail: str) -> None:
            time.sleep(seconds)

    else:
        message = m.group(4)

        def act(name: str, detail: str) -> None:
            raise FailpointError(message or f"failpoint {name} ({detail})")

    if share >= 1.0:
        return act

    def maybe(name: str, detail: str) -> None:
        if random.random() < share:
            act(name, detail)

    return maybe
