"""Quartz cron expressions, as Hive's scheduled queries use them for the next execution time.

Fields: seconds, minutes, hours, day of month, month, day of week (1 = SUN .. 7 = SAT, or
SUN..SAT) and an optional year; each ``*``, ``?`` (day fields), a number or name, ``a-b``, a
step ``x/n`` and lists of these. One of the two day fields must be ``?``, as Quartz requires.
Quartz's ``L``, ``W`` and ``#`` are refused (CronError). Times are UTC, as Hive's metastore
evaluates them.
"""

from __future__ import annotations

import calendar
import datetime
from dataclasses import dataclass

_MONTH_NAMES = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES, 1)}
DAYS = {d: i for i, d in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"], 1)}
_SEARCH_YEARS = 8


class CronError(ValueError):
    """The expression is not one this evaluator understands."""


def _value(text: str, low: int, high: int, names: dict[str, int]) -> int:
    upper = text.upper()
    if upper in names:
        return names[upper]
    if not text.isdigit():
        raise CronError(f"Illegal characters for this position: '{text}'")
    n = int(text)
    if not low <= n <= high:
        raise CronError(f"Value {n} out of range {low}-{high}")
    return n


def _field(text: str, low: int, high: int, names: dict[str, int], day: bool) -> set[int] | None:
    """The allowed values, or None for ``?`` (no constraint from this field)."""
    if text == "?":
        if not day:
            raise CronError("'?' can only be specified for Day-of-Month or Day-of-Week.")
        return None
    out: set[int] = set()
    for part in text.split(","):
        if any(c in part.upper() for c in "LW#") and part.upper() not in names:
            raise CronError(f"'{part}': L, W and # are not supported")
        base, _, step_text = part.partition("/")
        step = _value(step_text, 1, high, {}) if step_text else 1
        if base == "*":
            start, end = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            start, end = _value(a, low, high, names), _value(b, low, high, names)
        else:
            start = _value(base, low, high, names)
            end = high if step_text else start
        if end < start:  # Quartz wraps ranges such as FRI-MON
            values = list(range(start, high + 1)) + list(range(low, end + 1))
        else:
            values = list(range(start, end + 1))
        out.update(values[::step])
    return out


@dataclass(frozen=True)
class Cron:
    seconds: set[int]
    minutes: set[int]
    hours: set[int]
    days_of_month: set[int] | None
    months: set[int]
    days_of_week: set[int] | None
    years: set[int] | None

    def _day_matches(self, day: datetime.date) -> bool:
        if self.months and day.month not in self.months:
            return False
        if self.years is not None and day.year not in self.years:
            return False
        if self.days_of_month is not None and day.day not in self.days_of_month:
            return False
        quartz_dow = (day.isoweekday() % 7) + 1  # Monday=1 -> 2, Sunday=7 -> 1
        return self.days_of_week is None or quartz_dow in self.days_of_week

    def next_after(self, after: int) -> int | None:
        """The first matching second strictly after ``after`` (epoch seconds, UTC), or None
        when there is none within the next years."""
        start = datetime.datetime.fromtimestamp(after + 1, datetime.UTC)
        day = start.date()
        last = day.replace(year=day.year + _SEARCH_YEARS, day=1)
        while day < last:
            if self._day_matches(day):
                floor = start.time() if day == start.date() else datetime.time(0, 0, 0)
                found = self._time_on(floor)
                if found is not None:
                    moment = datetime.datetime.combine(day, found, datetime.UTC)
                    return calendar.timegm(moment.utctimetuple())
            day += datetime.timedelta(days=1)
        return None

    def _time_on(self, floor: datetime.time) -> datetime.time | None:
        for h in sorted(self.hours):
            if h < floor.hour:
                continue
            for m in sorted(self.minutes):
                if h == floor.hour and m < floor.minute:
                    continue
                for s in sorted(self.seconds):
                    if h == floor.hour and m == floor.minute and s < floor.second:
                        continue
                    return datetime.time(h, m, s)
        return None


def parse(expression: str) -> Cron:
    fields = (expression or "").split()
    if len(fields) not in (6, 7):
        raise CronError(f"Unexpected end of expression: '{expression}'")
    dom = _field(fields[3], 1, 31, {}, True)
    dow = _field(fields[5], 1, 7, DAYS, True)
    if (dom is None) == (dow is None):
        raise CronError(
            "Support for specifying both a day-of-week AND a day-of-month parameter is not "
            "implemented."
            if dom is not None
            else "'?' can only be specified for one of Day-of-Month or Day-of-Week."
        )
    return Cron(
        seconds=_field(fields[0], 0, 59, {}, False) or set(),
        minutes=_field(fields[1], 0, 59, {}, False) or set(),
        hours=_field(fields[2], 0, 23, {}, False) or set(),
        days_of_month=dom,
        months=_field(fields[4], 1, 12, MONTHS, False) or set(),
        days_of_week=dow,
        years=_field(fields[6], 1970, 2199, {}, False) if len(fields) == 7 else None,
    )


def next_execution(expression: str, after: int) -> int | None:
    """Quartz's getNextValidTimeAfter in epoch seconds (None: never again)."""
    return parse(expression).next_after(after)
