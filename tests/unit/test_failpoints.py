"""Failpoints: off unless named, the setting's syntax, and what each action does."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from hms_cache_proxy import failpoints
from hms_cache_proxy.config import Settings
from hms_cache_proxy.store.events.poller import contiguous


@pytest.fixture(autouse=True)
def off() -> Any:
    failpoints.clear()
    yield
    failpoints.clear()


def test_off_by_default_and_a_hit_does_nothing() -> None:
    assert failpoints.ACTIVE == {}
    failpoints.hit("load.after_snapshot", "d.t")


def test_a_setting_turns_named_failpoints_on() -> None:
    failpoints.configure(
        "load.after_snapshot=raise(database timeout); poller.before_apply=sleep(0)"
    )
    assert set(failpoints.ACTIVE) == {"load.after_snapshot", "poller.before_apply"}
    with pytest.raises(failpoints.FailpointError, match="database timeout"):
        failpoints.hit("load.after_snapshot", "d.t")
    failpoints.hit("poller.before_apply")
    failpoints.hit("write.before_commit")  # not named: off
    failpoints.configure("")
    assert failpoints.ACTIVE == {}


def test_a_share_fires_on_some_hits_only() -> None:
    failpoints.configure("write.before_commit=0%raise")
    for _ in range(50):
        failpoints.hit("write.before_commit")
    failpoints.configure("write.before_commit=100%raise")
    with pytest.raises(failpoints.FailpointError, match="write.before_commit"):
        failpoints.hit("write.before_commit", "x")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no.such.point=raise", "unknown failpoint 'no.such.point'"),
        ("load.after_snapshot", "action must be sleep"),
        ("load.after_snapshot=sleep(a)", "action must be sleep"),
        ("load.after_snapshot=explode", "action must be sleep"),
    ],
)
def test_malformed_settings_are_refused_with_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        failpoints.configure(spec)
    with pytest.raises(ValueError, match=message):
        Settings(failpoints=spec)
    assert failpoints.ACTIVE == {}


def test_tests_set_their_own_actions() -> None:
    seen: list[tuple[str, str]] = []
    failpoints.set("load.after_snapshot", lambda name, detail: seen.append((name, detail)))
    failpoints.hit("load.after_snapshot", "d.t")
    failpoints.clear("load.after_snapshot")
    failpoints.hit("load.after_snapshot", "d.u")
    assert seen == [("load.after_snapshot", "d.t")]


def _rows(*ids: int) -> list[Any]:
    return [SimpleNamespace(eventId=i) for i in ids]


def test_the_poller_applies_a_batch_only_up_to_its_first_hole() -> None:
    """Issue 14, finding 5: every id of a batch is checked, not only the first."""
    assert [r.eventId for r in contiguous(_rows(5, 6, 7))] == [5, 6, 7]
    assert [r.eventId for r in contiguous(_rows(5, 6, 8, 9))] == [5, 6]
    assert [r.eventId for r in contiguous(_rows(5))] == [5]
