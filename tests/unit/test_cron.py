"""Quartz cron evaluation for scheduled queries (store/cron.py)."""

from __future__ import annotations

import calendar

import pytest

from hms_cache_proxy.store import cron

AT = calendar.timegm((2023, 11, 14, 22, 13, 20))  # a Tuesday


def _utc(*parts: int) -> int:
    return calendar.timegm((*parts, 0, 0, 0)[:6])


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("0 */10 * * * ? *", _utc(2023, 11, 14, 22, 20, 0)),
        ("15 * * * * ?", _utc(2023, 11, 14, 22, 14, 15)),
        ("0 0 12 ? * MON-FRI", _utc(2023, 11, 15, 12, 0, 0)),
        ("0 0 12 ? * 1", _utc(2023, 11, 19, 12, 0, 0)),  # 1 is Sunday in Quartz
        ("0 30 1 1 * ?", _utc(2023, 12, 1, 1, 30, 0)),
        ("0 0 0 29 FEB ? 2028", _utc(2028, 2, 29, 0, 0, 0)),
        ("0 0 0 1,15 JAN ?", _utc(2024, 1, 1, 0, 0, 0)),
    ],
)
def test_next_execution(expression: str, expected: int) -> None:
    assert cron.next_execution(expression, AT) == expected


def test_the_next_time_is_strictly_later() -> None:
    at = _utc(2023, 11, 14, 22, 20, 0)
    assert cron.next_execution("0 */10 * * * ?", at) == _utc(2023, 11, 14, 22, 30, 0)


def test_a_schedule_that_never_fires_again() -> None:
    assert cron.next_execution("0 0 0 1 1 ? 2020", AT) is None


@pytest.mark.parametrize(
    "expression",
    ["", "1 2 3", "0 0 0 * * *", "0 0 0 ? * ?", "0 0 0 L * ?", "0 61 * * * ?", "0 0 0 ? * 2#1"],
)
def test_bad_expressions_are_refused(expression: str) -> None:
    with pytest.raises(cron.CronError):
        cron.parse(expression)
