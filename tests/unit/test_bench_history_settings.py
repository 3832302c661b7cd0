"""With ``*_history`` cases the bench's servers run no housekeeping rounds (a round would remove
the history while those cases run), unless --setting says otherwise."""

from __future__ import annotations

from hms_cache_proxy.bench.case_catalog import case_by_name
from hms_cache_proxy.bench.command import _history_settings


def test_history_cases_turn_housekeeping_rounds_off() -> None:
    cases = [case_by_name("txn_open_commit"), case_by_name("get_open_txns_history")]
    assert _history_settings(cases) == {"txn_housekeeping_interval_seconds": 0}


def test_without_history_cases_housekeeping_stays_as_configured() -> None:
    assert _history_settings([case_by_name("txn_open_commit"), case_by_name("get_table")]) == {}
