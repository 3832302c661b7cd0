"""bench's --setting / --cache-setting values: YAML values, errors naming the flag."""

from __future__ import annotations

import pytest

from hms_cache_proxy.bench.command import _parse_settings


def test_values_are_read_as_yaml() -> None:
    got = _parse_settings(["txn_use_min_history_level=false", "cache_max_bytes=4096"], "--setting")
    assert got == {"txn_use_min_history_level": False, "cache_max_bytes": 4096}


def test_an_item_without_a_value_names_its_flag() -> None:
    with pytest.raises(ValueError, match="--setting 'txn_use_min_history_level': expected"):
        _parse_settings(["txn_use_min_history_level"], "--setting")
